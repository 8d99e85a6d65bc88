package park

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/pkg/workload"
)

// Labels that mark a control-plane node; such a node is never parked.
const (
	LabelControlPlane       = "node-role.kubernetes.io/control-plane"
	labelLegacyControlPlane = "node-role.kubernetes.io/master"
)

// rateWindow is the window the rate limits count over.
const rateWindow = time.Minute

// Node is one node as parking sees it.
type Node struct {
	// Node is the node object: labels, taints, allocatable, unschedulable.
	Node *corev1.Node
	// Family is the node's hardware family, hwview's View.Family (the GPU
	// model for GPU nodes, the CPU model otherwise), the same notion of
	// family as the policy's family floor.
	Family string
	// State, Since and WakeAttempts are the NodePowerProfile spec's
	// powerState (empty means awake), powerStateSince and wakeAttempts.
	State        joulie.PowerState
	Since        time.Time
	WakeAttempts int
	// AgentState is the NodePowerProfile status's powerState, what the
	// node's agent reports: awake while it runs, parked once it has
	// restored the caps to switch the host off.
	AgentState joulie.PowerState
	// AgentAnswered is true when that status answers the spec as it is
	// now (status.observedGeneration >= metadata.generation): right after
	// the controller records a park, the status still answers the spec
	// before it. AgentReason is the reason of the agent's Parked
	// condition (PowerOffNotAllowed, PowerOffFailed, BootedAfterPark,
	// PowerOffRefused...), "" without one.
	AgentAnswered bool
	AgentReason   string
	// AgentMessage is that condition's message (the pod the agent's last
	// check found, say), carried into the reason of the move to awake so
	// that the node's Awake Event says why the host stayed on.
	AgentMessage string
	// Ready is the node's Ready condition (NodeReady).
	Ready bool
	// Heartbeat is the Ready condition's lastHeartbeatTime, and Renewed
	// the renewTime of the node's Lease in kube-node-lease; zero when
	// unknown. A host that is really on renews both; a Ready condition
	// left from before a park renews neither.
	Heartbeat, Renewed time.Time
	// Workloads counts the active pods on the node that no DaemonSet
	// controls; Pods counts all its active pods, for its pod capacity.
	Workloads int
	Pods      int
	// Requested is the sum of PodRequests of the active pods on the node.
	Requested corev1.ResourceList
	// EmptySince is when the node last became empty of non-DaemonSet pods;
	// zero when it is not empty or the caller does not know since when.
	EmptySince time.Time
	// Bound names ("namespace/name") the pods that no DaemonSet controls
	// bound to the node, sorted; the controller fills it only for nodes
	// that are not awake, where such a pod must wake the node or be told
	// why it cannot. Workloads counts them all the same.
	Bound []string
}

// Arrival is one performance pod's arrival: when it was created and what
// it requests.
type Arrival struct {
	Time     time.Time
	Requests corev1.ResourceList
}

// Input is one snapshot.
type Input struct {
	Now   time.Time
	Nodes []Node
	// Pending are pods the scheduler could not place. Bound, finished and
	// DaemonSet pods among them are ignored.
	Pending []*corev1.Pod
	// Volumes are, per pending pod ("namespace/name"), node selectors a
	// node must all match for the pod's volumes to be usable there: a
	// local PersistentVolume's node affinity, or the allowed topologies of
	// the StorageClass of a claim still to be provisioned. A selector with
	// no terms matches no node (a claim that cannot be resolved yet).
	Volumes map[string][]corev1.NodeSelector
	// Arrivals are the recent performance arrivals per hardware family
	// (the family of the node each landed on), at least Lookback of them.
	Arrivals map[string][]Arrival
	// PodsKnown is false when the caller cannot read the pods (its cache is
	// not synced, or a read failed): then nothing is parked, since an empty
	// node cannot be told from an unknown one.
	PodsKnown bool
}

// Transition is one node's move from one power state to another.
type Transition struct {
	Node   string
	Family string
	From   joulie.PowerState
	To     joulie.PowerState
	// WakeAttempts is the spec's wakeAttempts after the move: 0 when a
	// park starts, one more on every wake tried, kept once awake so the
	// profile shows what the last wake took.
	WakeAttempts int
	// Reason says why, for an operator (Events, logs).
	Reason string
	// Cycle is set on a wake retry the waker may power cycle: one whose
	// node's kubelet has not renewed its Lease since the last attempt. A
	// host whose kubelet renews is up, perhaps with pods running (it
	// never went off, or posts no fresh Ready heartbeat yet): a power
	// cycle would destroy their work, so its retry only powers on.
	Cycle bool
}

// Wake reports whether the transition asks the node to start: the caller
// calls its waker after recording the state.
func (t Transition) Wake() bool { return t.To == joulie.PowerWaking }

// Family is a hardware family's parking summary after the transitions.
type Family struct {
	Name string
	// Demand is the performance demand expected over one boot time, in
	// nodes of the family; Reserve = ceil(Demand) + the floor, or 0 when
	// Sparse.
	Demand  float64
	Reserve int
	// Arrivals counts the family's performance arrivals in the lookback.
	// Sparse says they came too seldom for a reserve to pay
	// (Params.ReserveMaxGap): on average more than the gap apart, or none
	// within the last gap; the family then keeps no reserve.
	Arrivals int
	Sparse   bool
	// Idle counts awake, Ready, schedulable nodes without workloads and
	// not claimed by a pending pod; Waking includes the wakes of this pass.
	Idle, Parking, Parked, Waking, WakeFailed int
	// WarmReserve names, with ReserveForPerformance, the idle nodes held as
	// the family's reserve for performance pods, at most Reserve of them,
	// sorted by name; empty otherwise. The controller labels them
	// joulie.io/warm-reserve and takes the label off every other node.
	WarmReserve []string
}

// Stranded is a pod bound to a node that is not awake and that this pass
// does not wake: the pod cannot run until an operator acts or a limit
// lets the wake go.
type Stranded struct {
	Pod, Node string
	// State is the node's state after the pass; Reason says why the pod
	// waits, for a Warning Event on it.
	State  joulie.PowerState
	Reason string
}

// Result is Decide's outcome.
type Result struct {
	// Transitions are sorted by node name; nodes that stay are absent.
	Transitions []Transition
	Families    []Family
	// Stranded are the pods bound to nodes that stay off, sorted by pod.
	Stranded []Stranded
	// WaitingForRate counts pending pods a parked node would take but that
	// wait for the wake rate limit; Unplaceable counts pending pods no
	// node fits, awake or not; WaitingForReserve counts pending standard
	// pods that only a node of the warm reserve fits, which they are kept
	// off, and that wait for a node to free up. ReserveReleased counts the
	// reserve nodes given up this pass to a pending standard pod that no
	// other node could ever take, even empty: those nodes are not held,
	// so the controller takes their label off and the pod may land.
	WaitingForRate, Unplaceable, WaitingForReserve, ReserveReleased int
}

// WarmReserve is every family's WarmReserve, sorted by name.
func (r Result) WarmReserve() []string {
	var out []string
	for _, f := range r.Families {
		out = append(out, f.WarmReserve...)
	}
	slices.Sort(out)
	return out
}

// state is one node during a pass.
type state struct {
	*Node
	cur     joulie.PowerState // the state after this pass's transitions
	moved   bool
	free    nodeFree
	claimed bool // a pending pod was placed on it in this pass
	held    bool // held as its family's warm reserve in this pass
	// released: a pending standard pod fits no node but this one of the
	// reserve, even empty, so the reserve gives it up (onlyTheReserveEver).
	released bool
}

// Decide returns the transitions to carry out now. It never moves a node
// twice in one pass, and a node it does not mention stays as it is.
func Decide(in Input, s Params) Result {
	nodes := make([]*state, len(in.Nodes))
	for i := range in.Nodes {
		n := &in.Nodes[i]
		cur := n.State
		if cur.Awake() {
			cur = joulie.PowerAwake
		}
		nodes[i] = &state{Node: n, cur: cur}
	}
	slices.SortFunc(nodes, func(a, b *state) int { return strings.Compare(a.Node.Node.Name, b.Node.Node.Name) })
	d := &decider{in: in, s: s, nodes: nodes}
	d.parkBudget = s.ParksPerMinute - d.recent(func(n *state) bool {
		return n.State == joulie.PowerParking || n.State == joulie.PowerParked
	})
	d.wakeBudget = s.WakesPerMinute - d.recent(func(n *state) bool {
		return n.State == joulie.PowerWaking || (n.State.Awake() && n.WakeAttempts > 0)
	})

	d.progress()
	d.placePending()
	fams := d.families()
	d.refillReserves(fams)
	d.finishParks()
	if in.PodsKnown {
		// Unknown pods make every node look idle: hold nothing rather
		// than label busy nodes as the reserve.
		d.holdReserves(fams)
		d.park(fams)
	}
	res := Result{Transitions: d.out, Stranded: d.stranded, WaitingForRate: d.waiting, Unplaceable: d.unplaceable, WaitingForReserve: d.forReserve,
		ReserveReleased: d.reserveReleased}
	slices.SortFunc(res.Transitions, func(a, b Transition) int { return strings.Compare(a.Node, b.Node) })
	slices.SortFunc(res.Stranded, func(a, b Stranded) int { return strings.Compare(a.Pod, b.Pod) })
	for _, name := range sortedKeys(fams) {
		f := fams[name]
		f.count()
		res.Families = append(res.Families, f.Family)
	}
	return res
}

type decider struct {
	in                               Input
	s                                Params
	nodes                            []*state
	out                              []Transition
	stranded                         []Stranded
	parkBudget, wakeBudget           int
	waiting, unplaceable, forReserve int
	reserveReleased                  int
	dims                             dims // the pending pods' resources
}

// recent counts the nodes whose recorded state matches and changed within
// the rate window: parks and wakes started in the last minute, as the API
// records them.
func (d *decider) recent(match func(*state) bool) int {
	n := 0
	for _, x := range d.nodes {
		if match(x) && !x.Since.IsZero() && d.in.Now.Sub(x.Since) < rateWindow {
			n++
		}
	}
	return n
}

func (d *decider) move(n *state, to joulie.PowerState, attempts int, reason string, args ...any) {
	d.out = append(d.out, Transition{Node: n.Node.Node.Name, Family: n.Family, From: n.cur, To: to,
		WakeAttempts: attempts, Reason: fmt.Sprintf(reason, args...)})
	n.cur, n.moved = to, true
}

// backSince reports whether the node is back since t: Ready with a
// heartbeat and a Lease renewal after t, and its agent no longer reports
// parked. A node just switched off may still show Ready until the node
// lifecycle controller notices, and its last heartbeat and renewal are
// from before it went off, so only renewals after t tell a host that is
// on from one that was.
//
// The Ready condition's heartbeat, like powerStateSince, is stored to the
// second, so a heartbeat in the same second as t counts (the Lease's
// renewTime, to the microsecond, must still be later): a heartbeat left
// from before a park is older than the park by its grace at least.
func backSince(n *state, t time.Time) bool {
	return n.Ready && n.AgentState != joulie.PowerParked && !n.Heartbeat.Before(t.Truncate(time.Second)) && n.Renewed.After(t)
}

// stayedOn reports whether a parked node's host is on: its agent has
// answered the parked spec awake (it refused or failed to power off, or
// the host was booted by hand), and the node is Ready with its Lease
// renewed since the park. No fresh Ready heartbeat is asked for, unlike
// backSince: a host that never went off posts none until its kubelet's
// next status report (minutes), and an agent that powers off answers the
// parked spec parked, never awake, so the answer alone tells the two
// apart.
func stayedOn(n *state) bool {
	return answeredSince(n, n.Since)
}

// answeredSince reports whether n's agent has answered its spec as it is
// now awake, and the node is Ready with its Lease renewed since t. Under a
// waking spec that is a host that never went off (a wake that caught the
// park before the agent powered off, say): its agent runs, since it
// answered a spec written after t, and its kubelet runs, so the host is
// on, though its next Ready heartbeat may be minutes away. Waiting for
// that heartbeat left such a node waking through resume timeouts while a
// pod waited for it (TestParkingUnderFaults, under make check's load).
func answeredSince(n *state, t time.Time) bool {
	return n.AgentAnswered && n.AgentState == joulie.PowerAwake && n.Ready && n.Renewed.After(t)
}

// strand records that the pods bound to n wait for it while it stays off.
func (d *decider) strand(n *state, reason string, args ...any) {
	why := fmt.Sprintf(reason, args...)
	for _, p := range n.Bound {
		d.stranded = append(d.stranded, Stranded{Pod: p, Node: n.Node.Node.Name, State: n.cur, Reason: why})
	}
}

// boundText names the pods bound to n for a reason: the first of them and
// how many more.
func boundText(n *state) string {
	switch {
	case len(n.Bound) == 0:
		return fmt.Sprintf("%d pods that no DaemonSet controls are", n.Workloads)
	case len(n.Bound) == 1:
		return "pod " + n.Bound[0] + " is"
	}
	return fmt.Sprintf("pod %s and %d more are", n.Bound[0], len(n.Bound)-1)
}

// progress carries wakes in flight one step on and aborts the parks that
// may not go on. Parks that may go on finish in finishParks, after the
// pending pods have had the chance to claim the node.
func (d *decider) progress() {
	now := d.in.Now
	for _, n := range d.nodes {
		switch n.cur {
		case joulie.PowerWaking:
			switch {
			case backSince(n, n.Since):
				d.move(n, joulie.PowerAwake, n.WakeAttempts, "Ready, with a heartbeat and Lease renewed since the wake and the agent up, %s after wake attempt %d",
					now.Sub(n.Since).Round(time.Second), n.WakeAttempts)
			case answeredSince(n, n.Since):
				d.move(n, joulie.PowerAwake, n.WakeAttempts, "the host is on: its agent answered the wake awake and the node is Ready with its Lease renewed since, %s after wake attempt %d (it never went off, so no fresh heartbeat is waited for)",
					now.Sub(n.Since).Round(time.Second), n.WakeAttempts)
			case now.Sub(n.Since) < d.s.ResumeTimeout:
			case n.WakeAttempts < d.s.MaxWakeAttempts:
				if d.wakeBudget > 0 {
					d.wakeBudget--
					alive := n.Renewed.After(n.Since)
					how := "trying again"
					if alive {
						how = "its kubelet renews its Lease, so the host is up: powering on again, never cycling"
					}
					d.move(n, joulie.PowerWaking, n.WakeAttempts+1, "not back %s after wake attempt %d; %s (%d of %d)",
						d.s.ResumeTimeout, n.WakeAttempts, how, n.WakeAttempts+1, d.s.MaxWakeAttempts)
					d.out[len(d.out)-1].Cycle = !alive
				}
			default:
				d.move(n, joulie.PowerWakeFailed, n.WakeAttempts, "not Ready %s after the last of %d wake attempts; check the host and its BMC, then power it on by hand",
					d.s.ResumeTimeout, n.WakeAttempts)
				if n.Workloads > 0 {
					d.strand(n, "the node failed to wake after %d attempts; an operator must power it on (check the host and its BMC)", n.WakeAttempts)
				}
			}
		case joulie.PowerWakeFailed:
			switch {
			case backSince(n, n.Since):
				d.move(n, joulie.PowerAwake, n.WakeAttempts, "Ready, with a heartbeat and Lease renewed and the agent up, after it had failed to wake")
			case n.Workloads > 0:
				d.strand(n, "the node failed to wake after %d attempts; an operator must power it on (check the host and its BMC)", n.WakeAttempts)
			}
		case joulie.PowerParking:
			switch {
			case n.Workloads > 0:
				d.move(n, joulie.PowerAwake, 0, "park aborted: %d pods landed on the node while it was being parked", n.Workloads)
			case labelBlocker(d.s, n.Node.Node) != "":
				d.move(n, joulie.PowerAwake, 0, "park aborted: %s", labelBlocker(d.s, n.Node.Node))
			}
		case joulie.PowerParked:
			switch {
			case stayedOn(n):
				// Nothing to wake: the host is on, and a node recorded
				// parked would stay tainted and out of every count.
				reason := n.AgentReason
				if reason == "" {
					reason = "no reason given"
				}
				if n.AgentMessage != "" {
					reason += ": " + n.AgentMessage
				}
				d.move(n, joulie.PowerAwake, 0, "the host is on: its agent answered the park awake (%s), and the node is Ready with a heartbeat and Lease renewed since the park", reason)
			case n.Workloads > 0:
				if d.wakeBudget <= 0 {
					d.strand(n, "%s; the wake waits for parking.wakesPerMinute (%d)", "the node is parked", d.s.WakesPerMinute)
					break
				}
				d.wakeBudget--
				d.move(n, joulie.PowerWaking, 1, "%s bound to the node", boundText(n))
			case !d.s.parkable(n.Node.Node.Labels):
				if d.wakeBudget > 0 {
					d.wakeBudget--
					d.move(n, joulie.PowerWaking, 1, "no longer %s", d.s.parkableText())
				}
			}
		}
	}
}

// finishParks moves the parks whose grace has passed, and that nothing
// aborted, to parked. While the pods are unknown no park finishes, since
// one may have landed.
func (d *decider) finishParks() {
	if !d.in.PodsKnown {
		return
	}
	for _, n := range d.nodes {
		if n.cur == joulie.PowerParking && !n.moved && d.in.Now.Sub(n.Since) >= d.s.ParkGrace {
			d.move(n, joulie.PowerParked, 0, "empty %s after the taint; the agent switches it off",
				d.in.Now.Sub(n.Since).Round(time.Second))
		}
	}
}

// labelBlocker is why the node's labels or spec forbid parking it, or "".
func labelBlocker(s Params, n *corev1.Node) string {
	l := n.Labels
	switch {
	case !s.parkable(l):
		return "not " + s.parkableText()
	case l[joulie.LabelReserved] == "true":
		return fmt.Sprintf("reserved (%s=true)", joulie.LabelReserved)
	case hasKey(l, LabelControlPlane) || hasKey(l, labelLegacyControlPlane):
		return "a control-plane node"
	case cordoned(n):
		return "cordoned"
	}
	return ""
}

// CordonedForPark reports whether n's cordon is the controller's own,
// set when it recorded n parked (joulie.io/cordoned-for-park).
func CordonedForPark(n *corev1.Node) bool {
	return n.Spec.Unschedulable && n.Annotations[joulie.AnnotationCordonedForPark] == "true"
}

// cordoned reports whether someone other than parking cordoned n: the
// controller's own cordon of a parked node says no more than its taint,
// and is lifted when the node is awake.
func cordoned(n *corev1.Node) bool {
	return n.Spec.Unschedulable && !CordonedForPark(n)
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// ParkBlocker is why node n may not be parked at all under s, or "" when
// it may (settle time, reserve and rates aside): the never rules.
func ParkBlocker(s Params, n *Node) string {
	if r := labelBlocker(s, n.Node); r != "" {
		return r
	}
	switch {
	case n.Workloads > 0:
		return fmt.Sprintf("runs %d pods that no DaemonSet controls", n.Workloads)
	case !n.Ready:
		return "not Ready"
	case n.AgentState != joulie.PowerAwake:
		return "its agent does not report awake, so nothing would switch it off"
	}
	return ""
}

// placePending puts the pods the scheduler could not place, performance
// first and the largest first, on the capacity that will take them: an
// awake node (the scheduler will place it there: nothing to do), a node
// already waking, a node being parked (the park is aborted), a node this
// pass wakes, and last a parked node newly woken, of the family the pod
// needs where one fits and the one with the most room otherwise, so that
// the fewest nodes are woken. A node labelled joulie.io/warm-reserve is
// room for performance pods only, since the extender turns every other pod
// away from it.
func (d *decider) placePending() {
	pods, dims := prepare(d.in.Pending, d.in.Volumes)
	if len(pods) == 0 {
		return // most passes: nothing waits, so no node's room is needed
	}
	d.dims = dims
	for _, n := range d.nodes {
		n.free = newNodeFree(n.Node, dims)
	}
	var awake, coming, parking, parked []*state
	for _, n := range d.nodes {
		switch n.cur {
		case joulie.PowerAwake:
			if n.Ready {
				awake = append(awake, n)
			}
		case joulie.PowerWaking:
			coming = append(coming, n)
		case joulie.PowerParking:
			parking = append(parking, n)
		case joulie.PowerParked:
			parked = append(parked, n)
		}
	}
	fitIn := func(p *pendingPod, list []*state, off bool) *state {
		for _, n := range list {
			if n.free.hasRoom(p.req) && schedulable(p, n.Node.Node, off) && takes(p, n) {
				return n
			}
		}
		return nil
	}
	// onlyReserve reports whether p, a standard pod that fits nowhere
	// else, would fit an awake node of the warm reserve.
	onlyReserve := func(p *pendingPod) bool {
		if p.perf {
			return false
		}
		for _, n := range awake {
			if warm(n) && n.free.hasRoom(p.req) && schedulable(p, n.Node.Node, false) {
				return true
			}
		}
		return false
	}
	for _, p := range pods {
		if n := fitIn(p, awake, false); n != nil {
			n.free.take(p.req)
			n.claimed = true
			continue
		}
		if n := fitIn(p, coming, true); n != nil {
			n.free.take(p.req)
			n.claimed = true
			continue
		}
		if n := fitIn(p, parking, true); n != nil {
			n.free.take(p.req)
			n.claimed = true
			if n.cur == joulie.PowerParking {
				d.move(n, joulie.PowerAwake, 0, "park aborted: pending pod %s fits no awake node but fits this one", podName(p.pod))
			}
			continue
		}
		n := d.pickParked(p, parked)
		if n == nil {
			if r := d.onlyTheReserveEver(p); r != nil {
				// Waiting would be for ever: no node outside the reserve
				// could take the pod even empty. The reserve gives it up,
				// and the pass refills the reserve from what is parked.
				r.released = true
				r.free.take(p.req)
				r.claimed = true
				d.reserveReleased++
				continue
			}
			if onlyReserve(p) {
				d.forReserve++
			} else {
				d.unplaceable++
			}
			continue
		}
		if d.wakeBudget <= 0 {
			d.waiting++
			continue
		}
		d.wakeBudget--
		d.move(n, joulie.PowerWaking, 1, "pending pod %s fits no awake node but fits this one", podName(p.pod))
		n.free.take(p.req)
		n.claimed = true
		// It takes the next pods before another parked node is woken.
		coming = append(coming, n)
	}
}

// onlyTheReserveEver returns, for a standard pod that fits nowhere now, an
// awake node of the warm reserve it fits when no node outside the reserve,
// in whatever power state, could take it even with nothing on it: its
// wait for a node to free up would never end, since the reserve is kept
// idle. Nil otherwise, and for performance pods, which the reserve admits.
func (d *decider) onlyTheReserveEver(p *pendingPod) *state {
	if p.perf {
		return nil
	}
	var reserve *state
	for _, n := range d.nodes {
		if n.cur == joulie.PowerWakeFailed {
			continue
		}
		empty := newNodeFree(&Node{Node: n.Node.Node}, d.dims)
		if !empty.hasRoom(p.req) || !schedulable(p, n.Node.Node, n.cur != joulie.PowerAwake) {
			continue
		}
		if !warm(n) {
			return nil // it may free up, or wake: the pod waits for it
		}
		if reserve == nil && n.cur == joulie.PowerAwake && n.Ready && !n.released && n.free.hasRoom(p.req) {
			reserve = n
		}
	}
	return reserve
}

// warm reports whether node n carries the warm reserve's label.
func warm(n *state) bool {
	return n.Node.Node.Labels[joulie.LabelWarmReserve] == "true"
}

// admits reports whether the extender lets pending pod p onto node n as
// far as the warm reserve goes: performance pods anywhere, other pods only
// on nodes without the label. It reads the label, not the setting, as the
// extender does: a label left from an earlier setting still turns pods
// away until the controller removes it.
func admits(p *pendingPod, n *state) bool {
	return p.perf || !warm(n)
}

// takes reports whether pending pod p may land on node n as it is now, as
// far as the extender's filter goes (scoring.Filter): admits, and for a
// performance pod a node whose labels say eco or draining does not count
// as room, since the extender keeps the pod off it. Counting it left a
// performance pod waiting, a parked node unwoken, until the plan turned
// that node back (over an hour, seen on the sparse six-family cluster).
// Parked nodes are judged by admits alone: their labels are the plan's
// of before the park, and the plan places a woken node anew.
func takes(p *pendingPod, n *state) bool {
	if !admits(p, n) {
		return false
	}
	return !p.perf || scoring.Filter(true, nil, scoring.LabelsOf(n.Node.Node)) == scoring.Admit
}

// pickParked chooses the parked node to wake for p, or nil when none fits.
func (d *decider) pickParked(p *pendingPod, parked []*state) *state {
	var best *state
	for _, n := range parked {
		if n.cur != joulie.PowerParked || !n.free.hasRoom(p.req) || !schedulable(p, n.Node.Node, true) || !admits(p, n) {
			continue
		}
		if best == nil || better(p, n, best) {
			best = n
		}
	}
	return best
}

// better reports whether a is a better node to wake for p than b: first a
// node of the kind of family p needs (a GPU family for a pod that asks for
// GPUs, a CPU-only family for one that does not, so a CPU job does not
// wake a GPU server), then the one with the most free CPU, which takes the
// most of the pods after it, then by name.
func better(p *pendingPod, a, b *state) bool {
	if na, nb := needed(p, a), needed(p, b); na != nb {
		return na
	}
	if ca, cb := a.free.cpu(), b.free.cpu(); ca != cb {
		return ca > cb
	}
	return a.Node.Node.Name < b.Node.Node.Name
}

func needed(p *pendingPod, n *state) bool {
	return (p.gpus > 0) == strings.HasPrefix(n.Family, "gpu:")
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// prepare keeps the pending pods that may wake a node, parses their
// constraints once, and orders them: performance pods first, then the
// largest (GPUs, then CPU, then memory), then by name, so that the pods
// that matter most are placed first and first-fit decreasing packs them
// onto few nodes.
func prepare(pending []*corev1.Pod, volumes map[string][]corev1.NodeSelector) ([]*pendingPod, dims) {
	out := make([]*pendingPod, 0, len(pending))
	var d dims
	d.index(corev1.ResourceCPU) // the tie-break between nodes to wake
	for _, p := range pending {
		if p == nil || p.Spec.NodeName != "" || !workload.IsActive(p) || workload.IsDaemonSet(p) {
			continue
		}
		req := PodRequests(p)
		for name, q := range req {
			if name != corev1.ResourcePods && !q.IsZero() {
				d.index(name)
			}
		}
		gpus := req[joulie.ResourceNVIDIAGPU]
		gpus.Add(req[joulie.ResourceAMDGPU])
		cpu, mem := req[corev1.ResourceCPU], req[corev1.ResourceMemory]
		pp := &pendingPod{pod: p, perf: workload.Classify(p) == workload.Performance, requests: req,
			affinity: nodeaffinity.GetRequiredNodeAffinity(p),
			gpus:     gpus.MilliValue(), cpu: cpu.MilliValue(), mem: mem.MilliValue()}
		for i := range volumes[podName(p)] {
			pp.volumes = append(pp.volumes, nodeaffinity.NewLazyErrorNodeSelector(&volumes[podName(p)][i]))
		}
		out = append(out, pp)
	}
	for _, p := range out {
		p.req = d.vector(p.requests)
	}
	slices.SortStableFunc(out, func(a, b *pendingPod) int {
		if a.perf != b.perf {
			if a.perf {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.gpus, a.gpus); c != 0 {
			return c
		}
		if c := cmp.Compare(b.cpu, a.cpu); c != 0 {
			return c
		}
		if c := cmp.Compare(b.mem, a.mem); c != 0 {
			return c
		}
		return strings.Compare(podName(a.pod), podName(b.pod))
	})
	return out, d
}

// family is one hardware family during a pass.
type family struct {
	Family
	nodes []*state
}

func (f *family) count() {
	f.Idle, f.Parking, f.Parked, f.Waking, f.WakeFailed = 0, 0, 0, 0, 0
	for _, n := range f.nodes {
		switch n.cur {
		case joulie.PowerAwake:
			if idle(n) {
				f.Idle++
			}
		case joulie.PowerParking:
			f.Parking++
		case joulie.PowerParked:
			f.Parked++
		case joulie.PowerWaking:
			f.Waking++
		case joulie.PowerWakeFailed:
			f.WakeFailed++
		}
	}
}

// idle reports whether an awake node is free for the next arrival: Ready,
// schedulable, without workloads and not taken by a pending pod.
func idle(n *state) bool {
	return n.cur == joulie.PowerAwake && n.Ready && !cordoned(n.Node.Node) && n.Workloads == 0 && !n.claimed
}

// families groups the nodes by family and sizes each family's reserve.
func (d *decider) families() map[string]*family {
	fams := map[string]*family{}
	for _, n := range d.nodes {
		f := fams[n.Family]
		if f == nil {
			f = &family{Family: Family{Name: n.Family}}
			fams[n.Family] = f
		}
		f.nodes = append(f.nodes, n)
	}
	for _, f := range fams {
		f.Demand = demand(f.nodes, d.in.Arrivals[f.Name], d.in.Now, d.s)
		f.Reserve = int(math.Ceil(f.Demand-1e-9)) + d.s.ReserveFloor
		f.Arrivals, f.Sparse = sparse(d.in.Arrivals[f.Name], d.in.Now, d.s)
		if f.Sparse {
			f.Reserve = 0
		}
		f.count()
	}
	return fams
}

// demand is the performance demand expected to arrive over one boot time,
// in nodes of the family. Each arrival of the lookback window counts as
// the share of an average node of the family it takes (its largest share
// of any resource it asks for). ReserveMean scales the window's sum to one
// boot time; ReservePeak takes the largest sum that arrived within any one
// boot time of the window.
func demand(nodes []*state, arrivals []Arrival, now time.Time, s Params) float64 {
	if len(arrivals) == 0 || len(nodes) == 0 || s.Lookback <= 0 {
		return 0
	}
	// Quantities are read in place and the family's totals kept as a short
	// list: demand runs for every family on every pass over every recent
	// arrival, and building maps for them was most of a pass's cost in the
	// simulator.
	sums := resources{}
	for _, n := range nodes {
		for name, q := range n.Node.Node.Status.Allocatable {
			sums[name] += q.MilliValue()
		}
	}
	type total struct {
		name  corev1.ResourceName
		milli int64
	}
	totals := make([]total, 0, len(sums))
	for name, v := range sums {
		if v > 0 && name != corev1.ResourcePods {
			totals = append(totals, total{name, v})
		}
	}
	type share struct {
		t time.Time
		v float64
	}
	var shares []share
	var sum float64
	for _, a := range arrivals {
		if a.Time.After(now) || now.Sub(a.Time) > s.Lookback {
			continue
		}
		v := 0.0
		for _, t := range totals {
			if q, ok := a.Requests[t.name]; ok {
				v = max(v, float64(q.MilliValue())*float64(len(nodes))/float64(t.milli))
			}
		}
		shares = append(shares, share{a.Time, v})
		sum += v
	}
	if s.ReserveSizing != ReservePeak || s.BootTime <= 0 {
		return sum * float64(s.BootTime) / float64(s.Lookback)
	}
	// The largest sum over a sliding interval of one boot time.
	slices.SortFunc(shares, func(a, b share) int { return a.t.Compare(b.t) })
	peak, in, lo := 0.0, 0.0, 0
	for _, x := range shares {
		in += x.v
		for x.t.Sub(shares[lo].t) >= s.BootTime {
			in -= shares[lo].v
			lo++
		}
		peak = max(peak, in)
	}
	return peak
}

// sparse counts the arrivals of the lookback and reports whether they are
// too sparse for a reserve to pay (Params.ReserveMaxGap): fewer than one
// per gap over the lookback, or none within the last gap. A reserve node
// sits idle for about one gap before an arrival takes it, so the gap is
// the idle time the reserve spends per boot wait it saves.
func sparse(arrivals []Arrival, now time.Time, s Params) (int, bool) {
	n := 0
	var last time.Time
	for _, a := range arrivals {
		if a.Time.After(now) || now.Sub(a.Time) > s.Lookback {
			continue
		}
		n++
		if a.Time.After(last) {
			last = a.Time
		}
	}
	if s.ReserveMaxGap <= 0 {
		return n, false
	}
	// n arrivals over the lookback are on average Lookback/n apart.
	return n, n == 0 || time.Duration(n)*s.ReserveMaxGap < s.Lookback || now.Sub(last) > s.ReserveMaxGap
}

// refillReserves wakes nodes of a family whose idle and waking nodes fall
// short of its reserve: parks in progress are aborted first (the node is
// still on), then parked nodes are woken.
func (d *decider) refillReserves(fams map[string]*family) {
	for _, name := range sortedKeys(fams) {
		f := fams[name]
		short := f.Reserve - f.Idle - f.unclaimedWaking()
		for _, n := range f.nodes {
			if short <= 0 {
				break
			}
			if n.cur == joulie.PowerParking && !n.moved && n.Ready && n.Workloads == 0 {
				d.move(n, joulie.PowerAwake, 0, "park aborted: family %s has %d idle nodes of a reserve of %d", f.Name, f.Idle, f.Reserve)
				short--
			}
		}
		for _, n := range f.nodes {
			if short <= 0 || d.wakeBudget <= 0 {
				break
			}
			if n.cur == joulie.PowerParked && !n.moved {
				d.wakeBudget--
				d.move(n, joulie.PowerWaking, 1, "family %s has %d idle and %d waking nodes of a reserve of %d (expected performance demand %.2f nodes per boot time)",
					f.Name, f.Idle, f.unclaimedWaking(), f.Reserve, f.Demand)
				short--
			}
		}
		f.count()
	}
}

func (f *family) unclaimedWaking() int {
	n := 0
	for _, x := range f.nodes {
		if x.cur == joulie.PowerWaking && !x.claimed {
			n++
		}
	}
	return n
}

// holdReserves chooses, with ReserveForPerformance, the nodes each family
// holds as its warm reserve: up to Reserve of its idle nodes, those already
// labelled first (so the label does not wander between passes and the
// scheduler's view stays put), then those the park would keep anyway (it
// may not park them, or they were emptied most recently, or, emptied at
// the same time, they come later by name, as the park takes them last).
// Holding what the park would keep leaves the same nodes switched off
// whichever pods the reserve is kept for.
// The park leaves held nodes alone. Reserved and control-plane nodes are
// never held: Joulie writes no label of its own there.
func (d *decider) holdReserves(fams map[string]*family) {
	if d.s.ReserveFor != ReserveForPerformance {
		return
	}
	for _, name := range sortedKeys(fams) {
		f := fams[name]
		var cands []*state
		for _, n := range f.nodes {
			l := n.Node.Node.Labels
			if !idle(n) || n.released || l[joulie.LabelReserved] == "true" || hasKey(l, LabelControlPlane) || hasKey(l, labelLegacyControlPlane) {
				continue
			}
			cands = append(cands, n)
		}
		slices.SortStableFunc(cands, func(a, b *state) int {
			if wa, wb := warm(a), warm(b); wa != wb {
				if wa {
					return -1
				}
				return 1
			}
			if ka, kb := ParkBlocker(d.s, a.Node) != "", ParkBlocker(d.s, b.Node) != ""; ka != kb {
				if ka {
					return -1
				}
				return 1
			}
			// An unknown EmptySince is not a park candidate: it counts as
			// the most recent.
			if ea, eb := a.EmptySince, b.EmptySince; !ea.Equal(eb) {
				switch {
				case ea.IsZero():
					return -1
				case eb.IsZero():
					return 1
				}
				return eb.Compare(ea)
			}
			return strings.Compare(b.Node.Node.Name, a.Node.Node.Name)
		})
		cands = cands[:min(len(cands), max(0, f.Reserve))]
		for _, n := range cands {
			n.held = true
			f.WarmReserve = append(f.WarmReserve, n.Node.Node.Name)
		}
		slices.Sort(f.WarmReserve)
	}
}

// park starts parks: in one hardware family per pass, the one whose
// longest-empty candidate has waited longest (so a family that keeps
// emptying nodes cannot starve another: GPU servers idle at several times
// a CPU server's draw), the nodes empty longest first, as long as the
// family keeps its reserve idle and the park rate allows.
func (d *decider) park(fams map[string]*family) {
	if d.parkBudget <= 0 {
		return
	}
	var best *family
	var bestCands []*state
	for _, name := range sortedKeys(fams) {
		f := fams[name]
		var cands []*state
		for _, n := range f.nodes {
			if n.cur != joulie.PowerAwake || n.moved || n.held || !idle(n) || ParkBlocker(d.s, n.Node) != "" {
				continue
			}
			if n.EmptySince.IsZero() || d.in.Now.Sub(n.EmptySince) < d.s.SettleTime {
				continue
			}
			cands = append(cands, n)
		}
		// Only the surplus may go, and the longest empty go first.
		slices.SortStableFunc(cands, func(a, b *state) int { return a.EmptySince.Compare(b.EmptySince) })
		if surplus := f.Idle - f.Reserve; surplus < len(cands) {
			cands = cands[:max(0, surplus)]
		}
		if len(cands) > 0 && (best == nil || cands[0].EmptySince.Before(bestCands[0].EmptySince)) {
			best, bestCands = f, cands
		}
	}
	if best == nil {
		return
	}
	for _, n := range bestCands {
		if d.parkBudget <= 0 {
			break
		}
		d.parkBudget--
		if best.Sparse {
			d.move(n, joulie.PowerParking, 0, "empty for %s; family %s keeps no reserve: %s",
				d.in.Now.Sub(n.EmptySince).Round(time.Second), best.Name, d.sparseText(best))
		} else {
			d.move(n, joulie.PowerParking, 0, "empty for %s; family %s keeps %d idle nodes for a reserve of %d",
				d.in.Now.Sub(n.EmptySince).Round(time.Second), best.Name, best.Idle-1, best.Reserve)
		}
		best.Idle--
	}
}

// sparseText says why a Sparse family keeps no reserve, for a reason.
func (d *decider) sparseText(f *family) string {
	if f.Arrivals == 0 {
		return fmt.Sprintf("no performance pod arrived in the last %s", d.s.Lookback)
	}
	return fmt.Sprintf("%d performance arrivals in the last %s, fewer than one per %s or none in the last %s (parking.reserveMaxGap)",
		f.Arrivals, d.s.Lookback, d.s.ReserveMaxGap, d.s.ReserveMaxGap)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
