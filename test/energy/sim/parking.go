package sim

import (
	"container/heap"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/park"
)

// Parking is the power-off of Joulie's own arm: pkg/park's Decide, the
// decision core joulie-controller runs, carried out on the simulated
// cluster as the controller and the agents carry it out on a real one.
//
//   - awake → parking: the node is tainted joulie.io/parked (here: cordoned
//     in the scheduler, which no simulated pod tolerates either, so it
//     places alike, and the arms without the GPU taint can leave
//     TaintToleration out; the taint is on the node object the controller
//     reads);
//   - parking → parked: the agent restores the caps, reports parked and
//     switches the host off (the physics' shutdown, then off);
//   - parking → awake: a pod landed or the reserve needs the node: the
//     taint goes;
//   - parked → waking: the BMC starts the host (the physics' boot; a node
//     still shutting down boots once it is off);
//   - waking → awake: once Ready, the taint goes.
//
// With Params.ReserveFor performance, every pass also labels the nodes
// Decide holds as the warm reserve joulie.io/warm-reserve=true and takes
// the label off the others, before the transitions, as the controller
// does; the simulated extender's filter (pkg/scoring.Filter) then keeps
// standard pods off them, and a node losing the label retries the queue.
//
// The controller runs a pass on every reconcile, when a pod finds no node
// (a pending pod is a watch event: the pass runs parkWatchDelay later,
// once for every pod arriving by then) and when a node becomes Ready.

// parkWatchDelay is how long after a pod is found unschedulable the
// controller's parking pass runs: its informer's event and workqueue, and
// coalescing the pods that arrive together. A stated assumption.
const parkWatchDelay = time.Second

// periodicPark marks the evPark events of a parking arm without the rest
// of Joulie, which recur every reconcile interval.
const periodicPark = 1

// parkingState is what the controller and the agents of a parking arm
// hold per node, as the API holds it: the NodePowerProfile spec's
// powerState, powerStateSince and wakeAttempts, and the agent's status.
type parkingState struct {
	state    joulie.PowerState
	since    time.Time
	attempts int
	// agentParked: the agent reported parked (it switched the host off)
	// and has not come back.
	agentParked bool
	// bootAfterOff: a wake came while the host was still shutting down.
	bootAfterOff bool
	// requested is the sum of the requests of the node's jobs, kept for
	// Decide; stale when dirty.
	requested v1.ResourceList
	dirty     bool
}

// parking is a parking arm's controller state.
type parking struct {
	params park.Params
	// arrivals are the recent performance arrivals by family of the node
	// each landed on, for the reserve.
	arrivals map[string][]park.Arrival
	nodes    []park.Node
	pending  []*v1.Pod
	// passAt is when a pass is due for pending pods (-1: none).
	passAt time.Duration
	// warm counts the nodes labelled joulie.io/warm-reserve; with it 0
	// and ReserveFor any, a pass has no label to look at.
	warm int
	// Transitions count what the passes did.
	parks, aborts, wakes, failures int
}

func (p *parking) init(s *simulation) {
	p.params = park.DefaultParams()
	if s.opts.Parking != nil {
		p.params = *s.opts.Parking
	}
	p.arrivals = map[string][]park.Arrival{}
	p.passAt = -1
	for _, n := range s.nodes {
		n.park.dirty = true
	}
}

// familyOf is node n's hardware family as the controller's view names it.
func familyOf(n *nodeState) string {
	if n.view != nil && n.view.Family != "" {
		return n.view.Family
	}
	if n.spec.GPUs > 0 {
		return n.spec.GPUModel
	}
	return n.spec.CPUModel
}

// parkArrival records that performance job j landed on node n.
func (s *simulation) parkArrival(j *jobState, n *nodeState) {
	if s.spec.PowerOff != Parking || !j.perfPod {
		return
	}
	f := familyOf(n)
	s.parking.arrivals[f] = append(s.parking.arrivals[f], park.Arrival{Time: epoch.Add(j.job.Arrival), Requests: j.pod.Spec.Containers[0].Resources.Requests})
}

// parkSoon asks for a pass parkWatchDelay from now, unless one is due.
func (s *simulation) parkSoon() {
	if s.spec.PowerOff != Parking || s.parking.passAt >= 0 {
		return
	}
	s.parking.passAt = s.now + parkWatchDelay
	heap.Push(&s.events, event{t: s.parking.passAt, kind: evPark})
}

// parkPass is one pass of the controller's parking: Decide over the
// cluster as the API shows it, then its transitions carried out.
func (s *simulation) parkPass(ctx context.Context) error {
	if s.spec.PowerOff != Parking {
		return nil
	}
	p := &s.parking
	if p.passAt >= 0 && p.passAt <= s.now {
		p.passAt = -1
	}
	now := epoch.Add(s.now)
	cut := now.Add(-p.params.Lookback)
	for f, as := range p.arrivals {
		p.arrivals[f] = slices.DeleteFunc(as, func(a park.Arrival) bool { return a.Time.Before(cut) })
	}
	p.nodes = p.nodes[:0]
	for _, n := range s.nodes {
		pn := park.Node{Node: n.obj, Family: familyOf(n), State: n.park.state, Since: n.park.since, WakeAttempts: n.park.attempts,
			Ready: n.state == awake, Workloads: len(n.running), Pods: len(n.running), Requested: s.requested(n)}
		if pn.Ready {
			// A simulated host that is on renews its heartbeat and Lease
			// all the time; one that is off renews neither.
			pn.Heartbeat, pn.Renewed = now, now
		}
		pn.AgentState = joulie.PowerAwake
		if n.park.agentParked {
			pn.AgentState = joulie.PowerParked
		}
		if len(n.running) == 0 {
			pn.EmptySince = epoch.Add(n.emptySince)
		}
		p.nodes = append(p.nodes, pn)
	}
	p.pending = p.pending[:0]
	for _, idx := range s.queue {
		p.pending = append(p.pending, s.jobs[idx].pod)
	}
	res := park.Decide(park.Input{Now: now, Nodes: p.nodes, Pending: p.pending, Arrivals: p.arrivals, PodsKnown: true}, p.params)
	freed, err := s.labelWarmReserve(res)
	if err != nil {
		return err
	}
	for _, t := range res.Transitions {
		n := s.nodes[s.byName[t.Node]]
		if err := s.carryOut(n, t, now); err != nil {
			return err
		}
		freed = freed || t.To == joulie.PowerAwake
	}
	if freed {
		s.retry(ctx, nil)
	}
	return nil
}

// labelWarmReserve labels the nodes res holds as the warm reserve and
// takes the label off the others, as the controller's pass does, and
// reports whether a node lost it (room for the queue).
func (s *simulation) labelWarmReserve(res park.Result) (bool, error) {
	p := &s.parking
	if p.warm == 0 && p.params.ReserveFor != park.ReserveForPerformance {
		return false, nil
	}
	held := map[string]bool{}
	for _, name := range res.WarmReserve() {
		held[name] = true
	}
	released := false
	for _, n := range s.nodes {
		want := held[n.spec.Name]
		if (n.obj.Labels[joulie.LabelWarmReserve] == "true") == want {
			continue
		}
		l := maps.Clone(n.obj.Labels)
		if want {
			l[joulie.LabelWarmReserve] = "true"
			p.warm++
		} else {
			delete(l, joulie.LabelWarmReserve)
			p.warm--
			released = true
		}
		n.obj = n.obj.DeepCopy()
		n.obj.Labels = l
		s.ctl.nodes[n.idx] = n.obj
		if err := s.sched.SetNodeLabels(n.spec.Name, l); err != nil {
			return false, fmt.Errorf("sim: label node %s %s: %w", n.spec.Name, joulie.LabelWarmReserve, err)
		}
	}
	return released, nil
}

// carryOut does transition t to node n, as the controller writes it and
// the agent or the BMC acts on it.
func (s *simulation) carryOut(n *nodeState, t park.Transition, now time.Time) error {
	from := n.park.state
	if from.Awake() {
		from = joulie.PowerAwake
	}
	if from != t.From {
		return fmt.Errorf("sim: park moves node %s from %s, but it is %s", n.spec.Name, t.From, from)
	}
	n.park.state, n.park.since, n.park.attempts = t.To, now, t.WakeAttempts
	switch t.To {
	case joulie.PowerParking:
		s.parking.parks++
		return s.setParkedTaint(n, true)
	case joulie.PowerParked:
		// The agent restores the caps (there are none on an empty eco
		// node worth counting: it draws idle), reports parked and powers
		// off.
		n.park.agentParked = true
		s.power.shutdowns++
		s.setState(n, shuttingDown)
		s.pushPower(s.now+s.model.Power.Shutdown, n, stepOff)
	case joulie.PowerWaking:
		s.parking.wakes++
		switch n.state {
		case off:
			s.bootParked(n)
		case shuttingDown:
			n.park.bootAfterOff = true
		}
	case joulie.PowerAwake:
		if t.From == joulie.PowerParking {
			s.parking.aborts++
		}
		return s.setParkedTaint(n, false)
	case joulie.PowerWakeFailed:
		s.parking.failures++
	}
	return nil
}

// bootParked starts the boot of parked node n.
func (s *simulation) bootParked(n *nodeState) {
	s.power.boots++
	s.setState(n, booting)
	s.pushPower(s.now+s.model.Power.BootTime(n.spec.GPUs > 0), n, stepReady)
}

// parkedOff is node n's shutdown ending in a parking arm.
func (s *simulation) parkedOff(n *nodeState) {
	if n.park.bootAfterOff {
		n.park.bootAfterOff = false
		s.bootParked(n)
	}
}

// parkedReady is node n Ready after a boot in a parking arm: its agent is
// back, and the controller, told by the node's watch, runs a pass that
// lifts the taint.
func (s *simulation) parkedReady(ctx context.Context, n *nodeState) error {
	n.park.agentParked = false
	return s.parkPass(ctx)
}

// setParkedTaint puts the joulie.io/parked taint on node n's object, which
// the controller's plan and parking read, and cordons it in the scheduler,
// which the taint stands for; or takes both away.
func (s *simulation) setParkedTaint(n *nodeState, on bool) error {
	o := n.obj.DeepCopy()
	o.Spec.Taints = slices.DeleteFunc(o.Spec.Taints, func(t v1.Taint) bool { return t.Key == joulie.TaintParked })
	if on {
		o.Spec.Taints = append(o.Spec.Taints, v1.Taint{Key: joulie.TaintParked, Effect: v1.TaintEffectNoSchedule})
	}
	n.obj = o
	s.ctl.nodes[n.idx] = o
	if err := s.sched.SetNodeUnschedulable(n.spec.Name, on); err != nil {
		return fmt.Errorf("sim: taint node %s: %w", n.spec.Name, err)
	}
	return nil
}

// requested is the sum of the requests of node n's jobs, as Decide takes
// it.
func (s *simulation) requested(n *nodeState) v1.ResourceList {
	if !n.park.dirty {
		return n.park.requested
	}
	var cpu, mem int64
	gpus := 0
	for _, idx := range n.running {
		j := s.jobs[idx].job
		cpu += j.CPUMilli
		mem += j.MemoryMiB
		gpus += j.GPUs
	}
	r := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(mem<<20, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(int64(len(n.running)), resource.DecimalSI),
	}
	if gpus > 0 {
		r[joulie.ResourceNVIDIAGPU] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	n.park.requested, n.park.dirty = r, false
	return r
}
