package park

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

const (
	cpuFam = "cpu:amd-epyc-9654"
	gpuFam = "gpu:nvidia-h100-sxm"
)

// node is an awake, Ready, parkable node of family with cpus cores (and 8
// GPUs for the GPU family), empty for an hour, changed by mods.
func node(name, family string, cpus int, mods ...func(*Node)) Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(cpus), resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	if strings.HasPrefix(family, "gpu:") {
		alloc[joulie.ResourceNVIDIAGPU] = resource.MustParse("8")
	}
	n := Node{
		Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{joulie.LabelParkable: "true", "kubernetes.io/hostname": name}},
			Status: corev1.NodeStatus{Allocatable: alloc}},
		Family: family, State: joulie.PowerAwake, AgentState: joulie.PowerAwake, Ready: true,
		EmptySince: t0.Add(-time.Hour),
	}
	for _, m := range mods {
		m(&n)
	}
	return n
}

func in(state joulie.PowerState, ago time.Duration) func(*Node) {
	return func(n *Node) {
		n.State, n.Since = state, t0.Add(-ago)
		if !state.Awake() {
			n.Node.Spec.Taints = append(n.Node.Spec.Taints, corev1.Taint{Key: joulie.TaintParked, Effect: corev1.TaintEffectNoSchedule})
			n.EmptySince = time.Time{}
		}
		if state == joulie.PowerParked || state == joulie.PowerWaking || state == joulie.PowerWakeFailed {
			// Switched off: the node lifecycle controller's taints too.
			n.Ready, n.AgentState = false, joulie.PowerParked
			n.Node.Spec.Taints = append(n.Node.Spec.Taints,
				corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
				corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute})
		}
	}
}

func attempts(k int) func(*Node) { return func(n *Node) { n.WakeAttempts = k } }

// back is a host on again: Ready, its agent reporting awake, its kubelet
// renewing its heartbeat and Lease.
func back(n *Node) {
	n.Ready, n.AgentState, n.Heartbeat, n.Renewed = true, joulie.PowerAwake, t0.Add(-time.Second), t0.Add(-time.Second)
}

// answered is a parked host whose agent answered the parked spec awake
// for reason, and that stayed on.
func answered(reason string) func(*Node) {
	return func(n *Node) {
		back(n)
		n.AgentAnswered, n.AgentReason = true, reason
	}
}

// cycles checks whether the first transition allows a power cycle.
func cycles(want bool) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		if len(r.Transitions) == 0 || r.Transitions[0].Cycle != want {
			t.Errorf("transitions %+v, want the first with Cycle %v", r.Transitions, want)
		}
	}
}

// bound puts pods that no DaemonSet controls on the node.
func bound(pods ...string) func(*Node) {
	return func(n *Node) { n.Bound, n.Workloads, n.Pods = pods, len(pods), len(pods) }
}

// joulieCordon is the controller's own cordon of a node it parked.
func joulieCordon(n *Node) {
	n.Node.Spec.Unschedulable = true
	n.Node.Annotations = map[string]string{joulie.AnnotationCordonedForPark: "true"}
}

// strands checks the pods the result reports stranded, as "pod@node:state".
func strands(want ...string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		var got []string
		for _, s := range r.Stranded {
			got = append(got, fmt.Sprintf("%s@%s:%s", s.Pod, s.Node, s.State))
			if s.Reason == "" {
				t.Errorf("stranded pod %s has no reason", s.Pod)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("stranded %q, want %q", got, want)
		}
	}
}

func hostSelector(h string) []corev1.NodeSelector {
	return []corev1.NodeSelector{{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{h}}}}}}}
}

func busy(pods int) func(*Node) {
	return func(n *Node) {
		n.Workloads, n.Pods, n.EmptySince = pods, pods, time.Time{}
		n.Requested = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(pods), resource.DecimalSI)}
	}
}

func emptyFor(d time.Duration) func(*Node) { return func(n *Node) { n.EmptySince = t0.Add(-d) } }

func label(k, v string) func(*Node) { return func(n *Node) { n.Node.Labels[k] = v } }

func unlabel(k string) func(*Node) { return func(n *Node) { delete(n.Node.Labels, k) } }

func taint(key string, effect corev1.TaintEffect) func(*Node) {
	return func(n *Node) {
		n.Node.Spec.Taints = append(n.Node.Spec.Taints, corev1.Taint{Key: key, Value: "x", Effect: effect})
	}
}

// pod is a pending pod asking for cpus cores and gpus GPUs.
func pod(name string, cpus, gpus int, mods ...func(*corev1.Pod)) *corev1.Pod {
	req := corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(cpus), resource.DecimalSI)}
	if gpus > 0 {
		req[joulie.ResourceNVIDIAGPU] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: req}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	for _, m := range mods {
		m(p)
	}
	return p
}

func performance(p *corev1.Pod) {
	p.Annotations = map[string]string{joulie.AnnotationWorkloadClass: joulie.WorkloadClassPerformance}
}

func onHost(h string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": h} }
}

func tolerate(key string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
}

func arrivals(n int, cpus int, spread time.Duration) []Arrival {
	out := make([]Arrival, n)
	for i := range out {
		out[i] = Arrival{Time: t0.Add(-spread * time.Duration(i+1) / time.Duration(n)),
			Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(cpus), resource.DecimalSI)}}
	}
	return out
}

// noFloor leaves the reserve out of cases about pending pods.
func noFloor(s *Params) { s.ReserveFloor = 0 }

// forPerformance keeps the warm reserve for performance pods, with a
// reserve floor of floor.
func forPerformance(floor int) func(*Params) {
	return func(s *Params) { s.ReserveFor, s.ReserveFloor = ReserveForPerformance, floor }
}

// maxGap prices the reserve: a family keeps one only while its
// performance pods arrive at least once per gap.
func maxGap(gap time.Duration) func(*Params) {
	return func(s *Params) { s.ReserveMaxGap = gap }
}

// shifted moves arrivals ago earlier.
func shifted(as []Arrival, ago time.Duration) []Arrival {
	for i := range as {
		as[i].Time = as[i].Time.Add(-ago)
	}
	return as
}

// family checks the only family's reserve, arrivals and sparseness.
func reserveOf(reserve, arrivals int, sparse bool) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		if len(r.Families) != 1 {
			t.Fatalf("families %+v, want one", r.Families)
		}
		if f := r.Families[0]; f.Reserve != reserve || f.Arrivals != arrivals || f.Sparse != sparse {
			t.Errorf("family %+v, want reserve %d, %d arrivals, sparse %v", f, reserve, arrivals, sparse)
		}
	}
}

// warmReserve labels a node as held for performance pods.
var warmReserve = label(joulie.LabelWarmReserve, "true")

// holds checks the nodes the result holds as the warm reserve.
func holds(names ...string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		t.Helper()
		if got := r.WarmReserve(); !slices.Equal(got, names) {
			t.Errorf("warm reserve %q, want %q", got, names)
		}
	}
}

func show(ts []Transition) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = fmt.Sprintf("%s %s>%s", t.Node, t.From, t.To)
		if t.To == joulie.PowerWaking {
			out[i] += fmt.Sprintf("#%d", t.WakeAttempts)
		}
	}
	return out
}

func TestDecide(t *testing.T) {
	type tc struct {
		name        string
		nodes       []Node
		pending     []*corev1.Pod
		arrivals    map[string][]Arrival
		podsUnknown bool
		volumes     map[string][]corev1.NodeSelector
		settings    func(*Params)
		want        []string
		// reason, when set, must be in the first transition's reason.
		reason string
		check  func(t *testing.T, r Result)
	}
	cases := []tc{
		// Parks.
		{name: "empty nodes settled past the reserve park, the longest empty first",
			nodes: []Node{node("a", cpuFam, 64, emptyFor(20*time.Minute)), node("b", cpuFam, 64, emptyFor(2*time.Hour)),
				node("c", cpuFam, 64, emptyFor(time.Hour))},
			want: []string{"b awake>parking", "c awake>parking"}, reason: "empty for 2h0m0s"},
		{name: "an empty node not settled yet stays awake",
			nodes: []Node{node("a", cpuFam, 64, emptyFor(9*time.Minute)), node("b", cpuFam, 64)},
			want:  []string{"b awake>parking"}},
		{name: "the reserve floor keeps the last idle node awake",
			nodes: []Node{node("a", cpuFam, 64)}},
		{name: "a larger reserve floor keeps more idle nodes",
			nodes:    []Node{node("a", cpuFam, 64), node("b", cpuFam, 64), node("c", cpuFam, 64)},
			settings: func(s *Params) { s.ReserveFloor = 2 },
			want:     []string{"a awake>parking"}},
		{name: "busy nodes are not idle: they leave the reserve to the empty ones",
			nodes: []Node{node("a", cpuFam, 64, busy(1)), node("b", cpuFam, 64), node("c", cpuFam, 64, busy(3))}},
		{name: "a DaemonSet pod does not keep a node awake",
			nodes: []Node{node("a", cpuFam, 64, func(n *Node) { n.Pods = 1 }), node("b", cpuFam, 64, busy(1)), node("c", cpuFam, 64)},
			want:  []string{"a awake>parking"}},
		{name: "an idle node a pending pod will take is not parked",
			nodes:   []Node{node("a", cpuFam, 64), node("b", cpuFam, 64)},
			pending: []*corev1.Pod{pod("p", 8, 0, onHost("a"))},
			want:    nil},
		{name: "nothing is parked while the pods are unknown",
			nodes:       []Node{node("a", cpuFam, 64), node("b", cpuFam, 64), node("c", cpuFam, 64)},
			podsUnknown: true},

		// The never rules: b would park (a keeps the reserve) but for one
		// thing.
		{name: "never a node without the parkable label",
			nodes: []Node{node("a", cpuFam, 64, unlabel(joulie.LabelParkable)), node("b", cpuFam, 64, unlabel(joulie.LabelParkable))}},
		{name: "never a node with the parkable label other than true",
			nodes: []Node{node("a", cpuFam, 64, unlabel(joulie.LabelParkable)), node("b", cpuFam, 64, label(joulie.LabelParkable, "yes"))}},
		{name: "never a reserved node",
			nodes: []Node{node("a", cpuFam, 64, unlabel(joulie.LabelParkable)), node("b", cpuFam, 64, label(joulie.LabelReserved, "true"))}},
		{name: "never a control-plane node",
			nodes: []Node{node("a", cpuFam, 64, unlabel(joulie.LabelParkable)), node("b", cpuFam, 64, label(LabelControlPlane, ""))}},
		{name: "never a node of the legacy master role",
			nodes: []Node{node("a", cpuFam, 64, unlabel(joulie.LabelParkable)), node("b", cpuFam, 64, label("node-role.kubernetes.io/master", ""))}},
		{name: "never a node with non-DaemonSet pods, even one empty long ago by its record",
			nodes: []Node{node("a", cpuFam, 64, unlabel(joulie.LabelParkable)), node("b", cpuFam, 64, func(n *Node) { n.Workloads = 1 })}},
		{name: "never a node that is not Ready",
			nodes: []Node{node("a", cpuFam, 64, unlabel(joulie.LabelParkable)), node("b", cpuFam, 64, func(n *Node) { n.Ready = false })}},
		{name: "never a cordoned node",
			nodes: []Node{node("a", cpuFam, 64, unlabel(joulie.LabelParkable)), node("b", cpuFam, 64, func(n *Node) { n.Node.Spec.Unschedulable = true })}},
		{name: "never a node whose agent does not report awake",
			nodes: []Node{node("a", cpuFam, 64, unlabel(joulie.LabelParkable)), node("b", cpuFam, 64, func(n *Node) { n.AgentState = "" })}},
		{name: "the same pair parks when nothing forbids it",
			nodes: []Node{node("a", cpuFam, 64, unlabel(joulie.LabelParkable)), node("b", cpuFam, 64)},
			want:  []string{"b awake>parking"}},

		// One family at a time.
		{name: "one family parks at a time: the one whose node has been empty longest",
			nodes: []Node{node("c1", cpuFam, 64), node("c2", cpuFam, 64, emptyFor(3*time.Hour)), node("g1", gpuFam, 64), node("g2", gpuFam, 64), node("g3", gpuFam, 64)},
			want:  []string{"c2 awake>parking"}},
		{name: "a family still parking does not starve another whose nodes have waited longer",
			nodes: []Node{node("c1", cpuFam, 64, in(joulie.PowerParking, 5*time.Second)), node("c2", cpuFam, 64), node("c3", cpuFam, 64),
				node("g1", gpuFam, 64, emptyFor(3*time.Hour)), node("g2", gpuFam, 64), node("g3", gpuFam, 64), node("g4", gpuFam, 64)},
			want: []string{"g1 awake>parking", "g2 awake>parking", "g3 awake>parking"}},

		// Park progress.
		{name: "a park finishes after the grace while the node is still empty",
			nodes:  []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, in(joulie.PowerParking, 31*time.Second))},
			want:   []string{"b parking>parked"},
			reason: "empty 31s after the taint"},
		{name: "a park waits out the grace",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, in(joulie.PowerParking, 10*time.Second))}},
		{name: "a pod that landed during the park aborts it",
			nodes:  []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, in(joulie.PowerParking, time.Minute), busy(1))},
			want:   []string{"b parking>awake"},
			reason: "1 pods landed"},
		{name: "a park does not finish while the pods are unknown",
			nodes:       []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, in(joulie.PowerParking, time.Minute))},
			podsUnknown: true},
		{name: "removing the parkable label aborts a park",
			nodes:  []Node{node("a", cpuFam, 64, busy(1)), node("b", cpuFam, 64, in(joulie.PowerParking, time.Minute), unlabel(joulie.LabelParkable))},
			want:   []string{"b parking>awake"},
			reason: "not labelled joulie.io/parkable=true"},
		{name: "a configured selector parks the nodes it selects, without the label",
			nodes: []Node{node("a", cpuFam, 64, unlabel(joulie.LabelParkable), label("pool", "batch")),
				node("b", cpuFam, 64, unlabel(joulie.LabelParkable), label("pool", "batch")),
				node("c", cpuFam, 64, label("pool", "interactive"))},
			settings: func(s *Params) { s.Parkable = labels.SelectorFromSet(labels.Set{"pool": "batch"}) },
			// c, labelled parkable but not selected, stays awake and is
			// the family's reserve.
			want: []string{"a awake>parking", "b awake>parking"}},
		{name: "a configured selector aborts the park of a node it stops selecting",
			nodes:    []Node{node("a", cpuFam, 64, busy(1)), node("b", cpuFam, 64, in(joulie.PowerParking, time.Minute), label("pool", "interactive"))},
			settings: func(s *Params) { s.Parkable = labels.SelectorFromSet(labels.Set{"pool": "batch"}) },
			want:     []string{"b parking>awake"},
			reason:   `not selected by parking.nodeSelector "pool=batch"`},
		{name: "a pending pod that fits a node being parked aborts that park rather than waking another",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 64, in(joulie.PowerParking, time.Minute)),
				node("c", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 8, 0)},
			want:     []string{"b parking>awake"}, reason: "pending pod default/p"},

		// Wake progress.
		{name: "a waking node Ready with its agent up is awake",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWaking, 3*time.Minute), attempts(2), back)},
			want:  []string{"a waking>awake"}, reason: "after wake attempt 2"},
		{name: "a waking node Ready while its agent still reports parked is not back yet",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWaking, 3*time.Minute), attempts(1), func(n *Node) { n.Ready = true })}},
		{name: "a waking node within the resume timeout waits",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWaking, 9*time.Minute), attempts(1))}},
		{name: "a waking node past the resume timeout is woken again, by a power cycle if need be",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWaking, 10*time.Minute), attempts(1))},
			want:  []string{"a waking>waking#2"}, reason: "trying again (2 of 3)", check: cycles(true)},
		{name: "… but a host whose kubelet renews its Lease since the wake is never power cycled",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWaking, 10*time.Minute), attempts(1), back,
				func(n *Node) { n.Heartbeat = t0.Add(-time.Hour) })},
			want: []string{"a waking>waking#2"}, reason: "so the host is up: powering on again, never cycling", check: cycles(false)},
		{name: "a waking node past the resume timeout after the last attempt has failed to wake",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWaking, 10*time.Minute), attempts(3))},
			want:  []string{"a waking>wake-failed"}, reason: "after the last of 3 wake attempts"},
		{name: "a node that failed to wake stays so, even if the family is short",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWakeFailed, time.Hour), attempts(3))}},
		{name: "a node that failed to wake and came back Ready is awake",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWakeFailed, time.Hour), attempts(3), back)},
			want:  []string{"a wake-failed>awake"}},
		{name: "a parked node no longer labelled parkable is woken",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour), unlabel(joulie.LabelParkable))},
			want:  []string{"b parked>waking#1"}},

		// Wake confirmation: only a heartbeat and a Lease renewed since the
		// wake tell a host that is on from a Ready condition left over.
		{name: "a waking node Ready with its last heartbeat from before the wake is not back",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWaking, 3*time.Minute), attempts(1), back,
				func(n *Node) { n.Heartbeat = t0.Add(-time.Hour) })}},
		{name: "… but one whose agent answered the wake awake, its Lease renewed since, is awake: the host never went off",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWaking, 3*time.Minute), attempts(1), answered(""),
				func(n *Node) { n.Heartbeat = t0.Add(-time.Hour) })},
			want: []string{"a waking>awake"}, reason: "its agent answered the wake awake"},
		{name: "… not while its Lease is older than the wake",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWaking, 3*time.Minute), attempts(1), answered(""),
				func(n *Node) { n.Heartbeat, n.Renewed = t0.Add(-time.Hour), t0.Add(-time.Hour) })}},
		{name: "… nor while its agent has not answered the wake",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWaking, 3*time.Minute), attempts(1), back,
				func(n *Node) { n.Heartbeat, n.AgentAnswered = t0.Add(-time.Hour), false })}},
		{name: "a heartbeat in the second of the wake counts: the API keeps both to the second",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWaking, 0), attempts(1), back,
				func(n *Node) {
					n.Since = t0.Add(400 * time.Millisecond)
					n.Heartbeat, n.Renewed = t0, t0.Add(700*time.Millisecond)
				})},
			want: []string{"a waking>awake"}},
		{name: "a waking node Ready without a Lease renewed since the wake is not back",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWaking, 3*time.Minute), attempts(1), back,
				func(n *Node) { n.Renewed = time.Time{} })}},
		{name: "a node that failed to wake, Ready with a heartbeat from before, is not back",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerWakeFailed, time.Hour), attempts(3), back,
				func(n *Node) { n.Heartbeat, n.Renewed = t0.Add(-2*time.Hour), t0.Add(-2*time.Hour) })}},

		// A host that is on again while recorded parked.
		{name: "a parked node whose agent answered awake and that renews is awake, without a wake",
			settings: noFloor,
			nodes:    []Node{node("a", cpuFam, 64, busy(1)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Minute), answered("PowerOffNotAllowed"))},
			want:     []string{"b parked>awake"},
			reason:   "PowerOffNotAllowed"},
		{name: "… booted by hand after the park: the same",
			settings: noFloor,
			nodes:    []Node{node("a", cpuFam, 64, busy(1)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Minute), answered("BootedAfterPark"))},
			want:     []string{"b parked>awake"},
			reason:   "BootedAfterPark"},
		{name: "… but not on the status the agent reported before the park",
			settings: noFloor,
			nodes: []Node{node("a", cpuFam, 64, busy(1)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Minute), answered("PowerOffNotAllowed"),
				func(n *Node) { n.AgentAnswered = false })}},
		{name: "… even with no Ready heartbeat since the park: a host that never went off posts none",
			settings: noFloor,
			nodes: []Node{node("a", cpuFam, 64, busy(1)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Minute), answered("PowerOffFailed"),
				func(n *Node) { n.Heartbeat = t0.Add(-2 * time.Hour) })},
			want: []string{"b parked>awake"}},
		{name: "… nor with a Lease not renewed since the park",
			settings: noFloor,
			nodes: []Node{node("a", cpuFam, 64, busy(1)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Minute), answered("PowerOffFailed"),
				func(n *Node) { n.Renewed = t0.Add(-2 * time.Minute) })}},
		{name: "… nor while its agent reports parked",
			settings: noFloor,
			nodes: []Node{node("a", cpuFam, 64, busy(1)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Minute), answered("PoweringOff"),
				func(n *Node) { n.AgentState = joulie.PowerParked })}},
		{name: "a refused power-off says why the host stayed on",
			settings: noFloor,
			nodes: []Node{node("a", cpuFam, 64, busy(1)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Minute), answered("PowerOffRefused"),
				func(n *Node) { n.AgentMessage = "pod ml/pinned is bound to the node" })},
			want:   []string{"b parked>awake"},
			reason: "(PowerOffRefused: pod ml/pinned is bound to the node)"},
		{name: "a host back on is not parked again before it settles anew",
			settings: noFloor,
			nodes: []Node{node("a", cpuFam, 64, busy(1)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Minute), answered("PowerOffRefused"),
				emptyFor(time.Second))},
			want: []string{"b parked>awake"}},

		// Pods bound to nodes that are not awake.
		{name: "a pod bound to a parked node wakes it",
			nodes:  []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour), bound("default/p"))},
			want:   []string{"b parked>waking#1"},
			reason: "pod default/p is bound to the node",
			check:  strands()},
		{name: "a pod bound to a parked node waits for the wake rate, and is told so",
			nodes:    []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour), bound("default/p", "default/q"))},
			settings: func(s *Params) { s.WakesPerMinute = 0 },
			check:    strands("default/p@b:parked", "default/q@b:parked")},
		{name: "a pod bound to a node that failed to wake is told so",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, in(joulie.PowerWakeFailed, time.Hour), attempts(3), bound("default/p"))},
			check: strands("default/p@b:wake-failed")},
		{name: "a pod bound to a node whose last wake timed out is told so",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, in(joulie.PowerWaking, 10*time.Minute), attempts(3), bound("default/p"))},
			want:  []string{"b waking>wake-failed"},
			check: strands("default/p@b:wake-failed")},
		{name: "a pod bound to a waking node waits for it quietly",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, in(joulie.PowerWaking, time.Minute), attempts(1), bound("default/p"))},
			check: strands()},

		// The controller's own cordon.
		{name: "Joulie's own cordon does not stop the park it belongs to",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, in(joulie.PowerParking, time.Minute), joulieCordon)},
			want:  []string{"b parking>parked"}},
		{name: "an admin's cordon aborts a park",
			nodes:  []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, in(joulie.PowerParking, time.Minute), func(n *Node) { n.Node.Spec.Unschedulable = true })},
			want:   []string{"b parking>awake"},
			reason: "cordoned"},
		{name: "a parked node under Joulie's cordon takes a pending pod",
			nodes:    []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour), joulieCordon)},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 8, 0)},
			want:     []string{"b parked>waking#1"}},
		{name: "a parked node an admin cordoned takes no pending pod",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour),
				func(n *Node) { n.Node.Spec.Unschedulable = true })},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 8, 0)}},

		// Volumes that live on one node.
		{name: "a pending pod with a local volume wakes the parked node the volume is on, not the roomiest",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 128, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 8, 0)},
			volumes:  map[string][]corev1.NodeSelector{"default/p": hostSelector("c")},
			want:     []string{"c parked>waking#1"}},
		{name: "… and without the volume the roomiest",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 128, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 8, 0)},
			want:     []string{"b parked>waking#1"}},
		{name: "a pending pod whose volume lives on an awake node with room wakes nothing",
			nodes:    []Node{node("a", cpuFam, 64, busy(32)), node("b", cpuFam, 128, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 8, 0)},
			volumes:  map[string][]corev1.NodeSelector{"default/p": hostSelector("a")}},
		{name: "every volume's constraint must match",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 128, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 8, 0)},
			volumes:  map[string][]corev1.NodeSelector{"default/p": append(hostSelector("c"), hostSelector("b")...)},
			check:    func(t *testing.T, r Result) { unplaceable(t, r, 1) }},
		{name: "a volume that cannot be resolved yet wakes nothing",
			nodes:    []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 128, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 8, 0)},
			volumes:  map[string][]corev1.NodeSelector{"default/p": {{}}},
			check:    func(t *testing.T, r Result) { unplaceable(t, r, 1) }},

		// Waking for pending pods.
		{name: "a pending pod that fits an awake node wakes nothing",
			nodes:    []Node{node("a", cpuFam, 64, busy(32)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 0)}},
		{name: "a pending pod that fits no awake node wakes a parked node that fits it",
			nodes:    []Node{node("a", cpuFam, 64, busy(60)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 0)},
			want:     []string{"b parked>waking#1"}, reason: "pending pod default/p fits no awake node"},
		{name: "pending pods fill the awake room first: what overflows it wakes a node",
			nodes:    []Node{node("a", cpuFam, 64, busy(32)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p1", 20, 0), pod("p2", 20, 0)},
			want:     []string{"b parked>waking#1"}, reason: "default/p2"},
		{name: "the fewest nodes: two pods share one large parked node rather than two small ones",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("small1", cpuFam, 16, in(joulie.PowerParked, time.Hour)),
				node("small2", cpuFam, 16, in(joulie.PowerParked, time.Hour)), node("large", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p1", 12, 0), pod("p2", 12, 0)},
			want:     []string{"large parked>waking#1"}},
		{name: "the fewest nodes: pods that need two nodes wake two",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 16, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 16, in(joulie.PowerParked, time.Hour)), node("d", cpuFam, 16, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p1", 10, 0), pod("p2", 10, 0), pod("p3", 4, 0)},
			want:     []string{"b parked>waking#1", "c parked>waking#1"}},
		{name: "a CPU pod wakes a CPU node rather than a GPU node with more room",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("cpu", cpuFam, 64, in(joulie.PowerParked, time.Hour)),
				node("gpu", gpuFam, 192, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 0)},
			want:     []string{"cpu parked>waking#1"}},
		{name: "a GPU pod wakes a GPU node",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("cpu", cpuFam, 256, in(joulie.PowerParked, time.Hour)),
				node("gpu", gpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 4)},
			want:     []string{"gpu parked>waking#1"}},
		{name: "a CPU pod wakes a GPU node when no CPU node fits",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("cpu", cpuFam, 8, in(joulie.PowerParked, time.Hour)),
				node("gpu", gpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 0)},
			want:     []string{"gpu parked>waking#1"}},
		{name: "a pending pod's node selector picks the parked node it names",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 0, onHost("c"))},
			want:     []string{"c parked>waking#1"}},
		{name: "a pending pod's required node affinity rules out a parked node",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 64, in(joulie.PowerParked, time.Hour), label("zone", "z2"))},
			settings: noFloor,
			pending: []*corev1.Pod{pod("p", 16, 0, func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z2"}}}}}}}}
			})},
			want: []string{"c parked>waking#1"}},
		{name: "a taint the pod does not tolerate rules out a parked node; being off does not",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour), taint("gpu-only", corev1.TaintEffectNoSchedule)),
				node("c", cpuFam, 32, in(joulie.PowerParked, time.Hour), taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 0)},
			want:     []string{"c parked>waking#1"}},
		{name: "a tolerated taint does not rule out a parked node",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour), taint("gpu-only", corev1.TaintEffectNoSchedule)),
				node("c", cpuFam, 32, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 0, tolerate("gpu-only"))},
			want:     []string{"b parked>waking#1"}},
		{name: "an awake node with an untolerated taint is no room for the pod",
			nodes:    []Node{node("a", cpuFam, 64, busy(1), taint("maintenance", corev1.TaintEffectNoSchedule)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 0)},
			want:     []string{"b parked>waking#1"}},
		{name: "a pending pod a waking node will take wakes nothing more",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 64, in(joulie.PowerWaking, time.Minute), attempts(1)),
				node("c", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 0)}},
		{name: "a pending DaemonSet pod wakes nothing",
			nodes:    []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending: []*corev1.Pod{pod("ds", 1, 0, onHost("b"), func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: new(true)}}
			})}},
		{name: "a pending pod too large for every node wakes nothing",
			nodes:    []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 128, 0)},
			check: func(t *testing.T, r Result) {
				if r.Unplaceable != 1 {
					t.Errorf("unplaceable %d, want 1", r.Unplaceable)
				}
			}},
		{name: "a node without room for one more pod is no room",
			nodes:    []Node{node("a", cpuFam, 64, busy(1), func(n *Node) { n.Pods = 110 }), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 1, 0)},
			want:     []string{"b parked>waking#1"}},

		// Rates.
		{name: "the park rate counts the parks the profiles record in the last minute",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerParked, 30*time.Second)), node("b", cpuFam, 64, in(joulie.PowerParking, 20*time.Second)),
				node("c", cpuFam, 64), node("d", cpuFam, 64), node("e", cpuFam, 64)},
			settings: func(s *Params) { s.ParksPerMinute = 3 },
			want:     []string{"c awake>parking"}},
		{name: "parks older than a minute do not count against the rate",
			nodes: []Node{node("a", cpuFam, 64, in(joulie.PowerParked, 2*time.Minute)), node("b", cpuFam, 64, in(joulie.PowerParked, 61*time.Second)),
				node("c", cpuFam, 64), node("d", cpuFam, 64), node("e", cpuFam, 64)},
			settings: func(s *Params) { s.ParksPerMinute = 2 },
			want:     []string{"c awake>parking", "d awake>parking"}},
		{name: "a park rate of zero parks nothing",
			nodes:    []Node{node("a", cpuFam, 64), node("b", cpuFam, 64)},
			settings: func(s *Params) { s.ParksPerMinute = 0 }},
		{name: "the wake rate limits wakes for pending pods, performance pods first",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 64, in(joulie.PowerParked, time.Hour)), node("d", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			pending:  []*corev1.Pod{pod("big", 60, 0), pod("perf1", 40, 0, performance), pod("perf2", 40, 0, performance)},
			settings: func(s *Params) { s.WakesPerMinute = 2 },
			want:     []string{"b parked>waking#1", "c parked>waking#1"},
			check: func(t *testing.T, r Result) {
				for _, tr := range r.Transitions {
					if !strings.Contains(tr.Reason, "perf") {
						t.Errorf("%s woken for %q, want for a performance pod", tr.Node, tr.Reason)
					}
				}
				if r.WaitingForRate != 1 {
					t.Errorf("waiting for the rate %d, want 1", r.WaitingForRate)
				}
			}},
		{name: "the wake rate counts wakes in flight and nodes woken within the minute",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("w", cpuFam, 64, in(joulie.PowerWaking, 30*time.Second), attempts(1)),
				node("x", cpuFam, 64, busy(64), in(joulie.PowerAwake, 10*time.Second), attempts(1)),
				node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour)), node("c", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			pending:  []*corev1.Pod{pod("p1", 64, 0), pod("p2", 64, 0), pod("p3", 64, 0)},
			settings: func(s *Params) { s.WakesPerMinute = 3 },
			want:     []string{"b parked>waking#1"}},

		// The reserve.
		{name: "performance arrivals at the mean rate over one boot time grow the reserve",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64), node("c", cpuFam, 64), node("d", cpuFam, 64),
				node("e", cpuFam, 64), node("f", cpuFam, 64)},
			// 12 arrivals of half a node in the hour: 6 nodes an hour, 0.5
			// per 5-minute boot, so ceil(0.5) + 1 = 2 stay.
			arrivals: map[string][]Arrival{cpuFam: arrivals(12, 32, 59*time.Minute)},
			settings: func(s *Params) { s.ReserveSizing = ReserveMean },
			want:     []string{"a awake>parking", "b awake>parking", "c awake>parking", "d awake>parking"},
			check: func(t *testing.T, r Result) {
				if f := r.Families[0]; f.Reserve != 2 || f.Demand != 0.5 {
					t.Errorf("family %+v, want demand 0.5 and reserve 2", f)
				}
			}},
		{name: "a burst of performance arrivals within one boot time sizes the peak reserve",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64), node("c", cpuFam, 64), node("d", cpuFam, 64),
				node("e", cpuFam, 64), node("f", cpuFam, 64)},
			// The same 12 arrivals of half a node, but 6 of them within four
			// minutes: a burst of 3 nodes in one boot time, which the mean
			// rate (0.5) would miss, so 3 + 1 = 4 stay.
			arrivals: map[string][]Arrival{cpuFam: append(arrivals(6, 32, 59*time.Minute), arrivals(6, 32, 4*time.Minute)...)},
			want:     []string{"a awake>parking", "b awake>parking"},
			check: func(t *testing.T, r Result) {
				if f := r.Families[0]; f.Reserve != 4 || f.Demand != 3 {
					t.Errorf("family %+v, want demand 3 and reserve 4", f)
				}
			}},
		{name: "arrivals in another family or before the lookback do not count",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64), node("c", cpuFam, 64)},
			arrivals: map[string][]Arrival{gpuFam: arrivals(100, 64, 10*time.Minute),
				cpuFam: {{Time: t0.Add(-61 * time.Minute), Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("640")}}}},
			want: []string{"a awake>parking", "b awake>parking"}},
		{name: "a family below its reserve wakes a parked node",
			nodes: []Node{node("a", cpuFam, 64, busy(3)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			want: []string{"b parked>waking#1"}, reason: "family cpu:amd-epyc-9654 has 0 idle and 0 waking nodes of a reserve of 1"},
		{name: "a family below its reserve aborts a park before waking a node",
			nodes: []Node{node("a", cpuFam, 64, busy(3)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 64, in(joulie.PowerParking, 5*time.Second))},
			want: []string{"c parking>awake"}},
		{name: "a node waking for the reserve counts toward it",
			nodes: []Node{node("a", cpuFam, 64, busy(3)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 64, in(joulie.PowerWaking, time.Minute), attempts(1))}},
		{name: "a node waking for a pending pod does not count toward the reserve",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 64, in(joulie.PowerWaking, time.Minute), attempts(1))},
			pending: []*corev1.Pod{pod("p", 32, 0)},
			want:    []string{"b parked>waking#1"}, reason: "reserve"},
		{name: "a bigger performance demand wakes more of the family",
			nodes: []Node{node("a", cpuFam, 64, busy(3)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 64, in(joulie.PowerParked, time.Hour)), node("d", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			// 24 whole nodes an hour: 2 per boot time, reserve 3.
			arrivals: map[string][]Arrival{cpuFam: arrivals(24, 64, 50*time.Minute)},
			want:     []string{"b parked>waking#1", "c parked>waking#1", "d parked>waking#1"}},

		// What the extender's filter keeps a performance pod off.
		{name: "a pending performance pod does not count an awake eco node as room: it wakes a parked node",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("e", cpuFam, 64, emptyFor(5*time.Minute), label(joulie.LabelPowerProfile, string(joulie.ProfileEco))),
				node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 0, performance)},
			want:     []string{"b parked>waking#1"}, reason: "pending pod default/p"},
		{name: "… nor a draining one",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("e", cpuFam, 64, emptyFor(5*time.Minute), label(joulie.LabelDraining, "true")),
				node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 0, performance)},
			want:     []string{"b parked>waking#1"}},
		{name: "a pending standard pod counts an awake eco node as room",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("e", cpuFam, 64, label(joulie.LabelPowerProfile, string(joulie.ProfileEco))),
				node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: noFloor,
			pending:  []*corev1.Pod{pod("p", 16, 0)}},

		// The reserve priced by the gap between performance arrivals
		// (parking.reserveMaxGap).
		{name: "a family without performance arrivals keeps no reserve once the gap is priced",
			nodes:    []Node{node("a", cpuFam, 64), node("b", cpuFam, 64, busy(1))},
			settings: maxGap(10 * time.Minute),
			want:     []string{"a awake>parking"}, reason: "family cpu:amd-epyc-9654 keeps no reserve: no performance pod arrived in the last 1h0m0s",
			check: reserveOf(0, 0, true)},
		{name: "arrivals fewer than one per gap over the lookback keep no reserve, even with the last just now",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64), node("c", cpuFam, 64, busy(1))},
			// 4 arrivals 12 minutes apart and one a minute ago: 5 in the
			// hour, where one per 10 minutes (6) would pay.
			arrivals: map[string][]Arrival{cpuFam: append(arrivals(4, 32, 48*time.Minute), arrivals(1, 32, time.Minute)...)},
			settings: maxGap(10 * time.Minute),
			want:     []string{"a awake>parking", "b awake>parking"}, reason: "5 performance arrivals in the last 1h0m0s",
			check: reserveOf(0, 5, true)},
		{name: "arrivals at least one per gap, the last within it, keep the reserve",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64), node("c", cpuFam, 64), node("d", cpuFam, 64, busy(1))},
			// 6 arrivals of half a node, 9 minutes apart, the last 9
			// minutes ago: the peak within one boot time is half a node,
			// so ceil(0.5) + 1 = 2 stay.
			arrivals: map[string][]Arrival{cpuFam: arrivals(6, 32, 54*time.Minute)},
			settings: maxGap(10 * time.Minute),
			want:     []string{"a awake>parking"},
			check:    reserveOf(2, 6, false)},
		{name: "a burst that ended longer than the gap ago keeps no reserve",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64), node("c", cpuFam, 64, busy(1))},
			// 12 arrivals within two minutes, 30 minutes ago.
			arrivals: map[string][]Arrival{cpuFam: shifted(arrivals(12, 32, 2*time.Minute), 30*time.Minute)},
			settings: maxGap(10 * time.Minute),
			want:     []string{"a awake>parking", "b awake>parking"},
			check:    reserveOf(0, 12, true)},
		{name: "a family whose performance work is sparse wakes nothing for a reserve",
			nodes: []Node{node("a", cpuFam, 64, busy(3)), node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour)),
				node("c", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: maxGap(10 * time.Minute)},
		{name: "a family whose performance work is sparse holds no warm reserve",
			nodes: []Node{node("a", cpuFam, 64, warmReserve), node("b", cpuFam, 64, busy(1))},
			settings: func(s *Params) {
				forPerformance(1)(s)
				maxGap(10 * time.Minute)(s)
			},
			want:  []string{"a awake>parking"},
			check: holds()},

		// The warm reserve kept for performance pods (reserveFor:
		// performance).
		{name: "a pending standard pod does not count a warm-reserve node as room: it wakes a parked node",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("r", cpuFam, 64, warmReserve),
				node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: forPerformance(1),
			pending:  []*corev1.Pod{pod("p", 16, 0)},
			want:     []string{"b parked>waking#1"}, reason: "pending pod default/p fits no awake node",
			// r stays idle, so it stays the reserve.
			check: holds("r")},
		{name: "a pending performance pod counts a warm-reserve node as room",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("r", cpuFam, 64, warmReserve),
				node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: forPerformance(1),
			pending:  []*corev1.Pod{pod("p", 16, 0, performance)},
			// r is the pod's, so b wakes for the reserve, not for the pod.
			want: []string{"b parked>waking#1"}, reason: "of a reserve of 1",
			check: holds()},
		{name: "a standard pod that only the warm reserve fits waits rather than take it",
			nodes:    []Node{node("a", cpuFam, 64, busy(64)), node("r", cpuFam, 64, warmReserve)},
			settings: forPerformance(1),
			pending:  []*corev1.Pod{pod("p", 16, 0)},
			check: func(t *testing.T, r Result) {
				holds("r")(t, r)
				if r.WaitingForReserve != 1 || r.Unplaceable != 0 {
					t.Errorf("waiting for the reserve %d, unplaceable %d; want 1 and 0", r.WaitingForReserve, r.Unplaceable)
				}
			}},
		// Found replaying a sparse cluster: a CPU pod larger than every
		// CPU node, on the one GPU node of its family, which the reserve
		// held idle for ever.
		{name: "a standard pod that no node but the reserve could ever take is given the reserve node",
			nodes:    []Node{node("a", cpuFam, 32, busy(2)), node("r", gpuFam, 64, warmReserve)},
			settings: forPerformance(1),
			pending:  []*corev1.Pod{pod("p", 48, 0)},
			check: func(t *testing.T, r Result) {
				holds()(t, r)
				if r.ReserveReleased != 1 || r.WaitingForReserve != 0 || r.Unplaceable != 0 {
					t.Errorf("released %d, waiting for the reserve %d, unplaceable %d; want 1, 0 and 0", r.ReserveReleased, r.WaitingForReserve, r.Unplaceable)
				}
			}},
		{name: "a standard pod that a parked node outside the reserve fits wakes it rather than take the reserve",
			nodes: []Node{node("a", cpuFam, 32, busy(2)), node("r", gpuFam, 64, warmReserve),
				node("q", gpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: forPerformance(1),
			pending:  []*corev1.Pod{pod("p", 48, 0)},
			want:     []string{"q parked>waking#1"}, reason: "pending pod default/p fits no awake node but fits this one",
			check: func(t *testing.T, r Result) {
				holds("r")(t, r)
				if r.ReserveReleased != 0 {
					t.Errorf("released %d, want 0", r.ReserveReleased)
				}
			}},
		{name: "a standard pod that a busy node outside the reserve could take waits for it",
			nodes:    []Node{node("a", cpuFam, 64, busy(40)), node("r", cpuFam, 64, warmReserve)},
			settings: forPerformance(1),
			pending:  []*corev1.Pod{pod("p", 48, 0)},
			check: func(t *testing.T, r Result) {
				holds("r")(t, r)
				if r.ReserveReleased != 0 || r.WaitingForReserve != 1 {
					t.Errorf("released %d, waiting for the reserve %d; want 0 and 1", r.ReserveReleased, r.WaitingForReserve)
				}
			}},
		{name: "a warm-reserve label left over still keeps standard pods off with reserveFor any",
			nodes: []Node{node("a", cpuFam, 64, busy(64)), node("r", cpuFam, 64, warmReserve),
				node("b", cpuFam, 64, in(joulie.PowerParked, time.Hour))},
			settings: func(s *Params) { s.ReserveFloor = 1 },
			pending:  []*corev1.Pod{pod("p", 16, 0)},
			want:     []string{"b parked>waking#1"}, reason: "pending pod default/p",
			check: holds()},
		{name: "with reserveFor any nothing is held: a labelled node parks like any other",
			nodes: []Node{node("a", cpuFam, 64, warmReserve, emptyFor(2*time.Hour)), node("b", cpuFam, 64)},
			want:  []string{"a awake>parking"},
			check: holds()},
		{name: "the reserve holds the labelled node, and the park takes another",
			nodes:    []Node{node("a", cpuFam, 64, warmReserve, emptyFor(2*time.Hour)), node("b", cpuFam, 64)},
			settings: forPerformance(1),
			want:     []string{"b awake>parking"},
			check:    holds("a")},
		{name: "the reserve holds labelled nodes first, then the most recently emptied, then the later name",
			nodes: []Node{node("c1", cpuFam, 64, emptyFor(3*time.Hour)), node("c2", cpuFam, 64, emptyFor(20*time.Minute)),
				node("c3", cpuFam, 64, emptyFor(20*time.Minute)), node("c4", cpuFam, 64, warmReserve, emptyFor(2*time.Hour))},
			settings: forPerformance(2),
			want:     []string{"c1 awake>parking", "c2 awake>parking"},
			check:    holds("c3", "c4")},
		{name: "the reserve holds a node the park may not take before a parkable one",
			nodes:    []Node{node("a", cpuFam, 64, unlabel(joulie.LabelParkable), emptyFor(2*time.Hour)), node("b", cpuFam, 64)},
			settings: forPerformance(1),
			want:     []string{"b awake>parking"},
			check:    holds("a")},
		{name: "the reserve holds at most Reserve nodes: labelled nodes beyond it may park",
			nodes:    []Node{node("a", cpuFam, 64, warmReserve), node("b", cpuFam, 64, warmReserve), node("c", cpuFam, 64, warmReserve)},
			settings: forPerformance(1),
			want:     []string{"a awake>parking", "b awake>parking"},
			check:    holds("c")},
		{name: "busy, claimed, reserved and control-plane nodes are never held",
			nodes: []Node{node("busy", cpuFam, 64, busy(1), warmReserve), node("claimed", cpuFam, 64),
				node("cp", cpuFam, 64, label(LabelControlPlane, "")), node("reserved", cpuFam, 64, label(joulie.LabelReserved, "true")),
				node("z", cpuFam, 64)},
			settings: forPerformance(3),
			pending:  []*corev1.Pod{pod("p", 8, 0, performance, onHost("claimed"))},
			check:    holds("z")},
		{name: "nothing is held while the pods are unknown, since every node would look idle",
			nodes:       []Node{node("a", cpuFam, 64), node("b", cpuFam, 64)},
			settings:    forPerformance(1),
			podsUnknown: true,
			check:       holds()},
		{name: "each family holds its own reserve",
			nodes: []Node{node("c1", cpuFam, 64), node("c2", cpuFam, 64, emptyFor(5*time.Minute)),
				node("g1", gpuFam, 64, warmReserve), node("g2", gpuFam, 64)},
			settings: forPerformance(1),
			// The CPU family parks first: c1 has been empty longest.
			want:  []string{"c1 awake>parking"},
			check: holds("c2", "g1")},
		// Emptied at the same time, the park takes the earlier name first;
		// the reserve holds the node the park would keep, so the same node
		// is switched off whichever pods the reserve is kept for.
		{name: "with nodes emptied together, the reserve holds the one the park would keep",
			nodes:    []Node{node("a", cpuFam, 64), node("b", cpuFam, 64)},
			settings: forPerformance(1),
			want:     []string{"a awake>parking"},
			check:    holds("b")},
		{name: "… and the same node parks with reserveFor any",
			nodes: []Node{node("a", cpuFam, 64), node("b", cpuFam, 64)},
			want:  []string{"a awake>parking"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := DefaultParams()
			// Nothing is held unless a case asks for it (forPerformance),
			// and the reserve is kept whatever the gap between performance
			// arrivals unless a case prices it (maxGap): most cases are
			// about the floor and the demand, which the gap rule would
			// zero for want of arrivals.
			s.ReserveFor, s.ReserveMaxGap = ReserveForAny, 0
			if c.settings != nil {
				c.settings(&s)
			}
			r := Decide(Input{Now: t0, Nodes: c.nodes, Pending: c.pending, Arrivals: c.arrivals, PodsKnown: !c.podsUnknown, Volumes: c.volumes}, s)
			if got := show(r.Transitions); !slices.Equal(got, c.want) {
				t.Errorf("transitions %q, want %q", got, c.want)
				for _, tr := range r.Transitions {
					t.Logf("%s: %s", tr.Node, tr.Reason)
				}
			}
			if c.reason != "" && (len(r.Transitions) == 0 || !strings.Contains(r.Transitions[0].Reason, c.reason)) {
				t.Errorf("reasons %+v, want the first to say %q", r.Transitions, c.reason)
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

func unplaceable(t *testing.T, r Result, want int) {
	t.Helper()
	if r.Unplaceable != want {
		t.Errorf("unplaceable %d, want %d", r.Unplaceable, want)
	}
}

func TestParamsValidate(t *testing.T) {
	if err := DefaultParams().Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
	for _, c := range []struct {
		key string
		mod func(*Params)
	}{
		{"parking.settleTime", func(s *Params) { s.SettleTime = -time.Second }},
		{"parking.reserveFloor", func(s *Params) { s.ReserveFloor = -1 }},
		{"parking.reserveMaxGap", func(s *Params) { s.ReserveMaxGap = -time.Minute }},
		{"parking.lookback", func(s *Params) { s.Lookback = 0 }},
		{"parking.reserveSizing", func(s *Params) { s.ReserveSizing = "max" }},
		{"parking.reserveFor", func(s *Params) { s.ReserveFor = "standard" }},
		{"parking.reserveFor", func(s *Params) { s.ReserveFor = "" }},
		{"parking.parksPerMinute", func(s *Params) { s.ParksPerMinute = -1 }},
		{"parking.wakesPerMinute", func(s *Params) { s.WakesPerMinute = -1 }},
		{"parking.grace", func(s *Params) { s.ParkGrace = -time.Second }},
		{"parking.resumeTimeout", func(s *Params) { s.ResumeTimeout = 0 }},
		{"parking.maxWakeAttempts", func(s *Params) { s.MaxWakeAttempts = 0 }},
	} {
		s := DefaultParams()
		c.mod(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: error %v, want one naming the key", c.key, err)
		}
	}
}

func TestPodRequestsCountInitContainersAndOverhead(t *testing.T) {
	p := pod("p", 2, 0)
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	if got := PodRequests(p)[corev1.ResourceCPU]; got.MilliValue() != 3500 {
		t.Errorf("cpu request %s, want 3500m: the larger of init and app containers, plus overhead", got.String())
	}
}

func TestNodeReadyReadsTheReadyCondition(t *testing.T) {
	n := &corev1.Node{}
	if NodeReady(n) {
		t.Error("a node without conditions is Ready")
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue},
		{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
	if NodeReady(n) {
		t.Error("a node whose Ready is Unknown is Ready")
	}
	n.Status.Conditions[1].Status = corev1.ConditionTrue
	if !NodeReady(n) {
		t.Error("a node whose Ready is True is not Ready")
	}
}
