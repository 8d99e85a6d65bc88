package schedplugin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/scoring"
)

func nodeInfo(name string, labels map[string]string, cpu, gpus string, pods ...*corev1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), joulie.ResourceNVIDIAGPU: resource.MustParse(gpus),
		}},
	})
	return ni
}

func pod(name, class, cpu, gpus string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: map[string]string{joulie.AnnotationWorkloadClass: class}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}
	if gpus != "" {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{joulie.ResourceNVIDIAGPU: resource.MustParse(gpus)}
		p.Spec.Containers[0].Resources.Requests[joulie.ResourceNVIDIAGPU] = resource.MustParse(gpus)
	}
	return p
}

func twin(name string, class joulie.SchedulableClass) *joulie.NodeTwin {
	return &joulie.NodeTwin{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: joulie.NodeTwinStatus{
		SchedulableClass: class, PredictedPowerHeadroomScore: 60,
		PowerMeasurement: &joulie.PowerMeasurement{Source: joulie.SourceAgent, MeasuredNodePowerW: 400, NodeCappedPowerW: 1000, NodeTdpW: 1200},
		LastUpdated:      metav1.NewTime(time.Now()),
	}}
}

// The plugin turns pods away as the extender does: performance pods
// from eco and draining nodes (by twin, or by the scheduler's labels
// without one), other pods from the warm reserve.
func TestFilterAsTheExtender(t *testing.T) {
	p := newTestPlugin()
	p.view.Store(build([]*joulie.NodeTwin{twin("perf", joulie.ClassPerformance), twin("eco", joulie.ClassEco), twin("drain", joulie.ClassDraining)}, nil, nil))
	p.reserves.set(nodeInfo("reserve", map[string]string{joulie.LabelWarmReserve: "true"}, "64", "0").Node())
	nodes := map[string]fwk.NodeInfo{
		"perf":       nodeInfo("perf", nil, "64", "0"),
		"eco":        nodeInfo("eco", nil, "64", "0"),
		"drain":      nodeInfo("drain", nil, "64", "0"),
		"eco-label":  nodeInfo("eco-label", map[string]string{joulie.LabelPowerProfile: "eco"}, "64", "0"),
		"reserve":    nodeInfo("reserve", map[string]string{joulie.LabelWarmReserve: "true"}, "64", "0"),
		"not-joulie": nodeInfo("not-joulie", nil, "64", "0"),
	}
	for _, tc := range []struct {
		class    string
		rejected map[string]bool
	}{
		{"performance", map[string]bool{"eco": true, "drain": true, "eco-label": true}},
		{"standard", map[string]bool{"reserve": true}},
	} {
		state := framework.NewCycleState()
		po := pod("p", tc.class, "1", "")
		if _, st := p.PreFilter(context.Background(), state, po, nil); !st.IsSuccess() {
			t.Fatal(st)
		}
		for name, ni := range nodes {
			st := p.Filter(context.Background(), state, po, ni)
			if got := !st.IsSuccess(); got != tc.rejected[name] {
				t.Errorf("%s pod on %s: rejected %v (%v), want %v", tc.class, name, got, st, tc.rejected[name])
			}
			if !st.IsSuccess() && st.Code() != fwk.UnschedulableAndUnresolvable {
				t.Errorf("%s pod on %s: code %v, want UnschedulableAndUnresolvable", tc.class, name, st.Code())
			}
		}
	}
}

// The score reads the fill the scheduler counts, the pods it has placed
// on the node, GPUs included: a fuller node scores higher for a standard
// pod in pack mode, as the extender's score does from its own count.
func TestScoreReadsTheSchedulersFill(t *testing.T) {
	ni := nodeInfo("a", nil, "64", "8", pod("x", "standard", "16", "2"), pod("y", "standard", "8", "1"))
	e := (&view{}).entryOf(ni.Node())
	if got, want := e.fill(ni), (scoring.Fill{AllocatableCPU: 64, RequestedCPU: 24, AllocatableGPUs: 8, RequestedGPUs: 3}); got != want {
		t.Fatalf("fill %+v, want %+v", got, want)
	}

	p := newTestPlugin()
	p.view.Store(build([]*joulie.NodeTwin{twin("full", joulie.ClassPerformance), twin("empty", joulie.ClassPerformance)}, nil, nil))
	full := nodeInfo("full", nil, "64", "0", pod("x", "standard", "48", ""))
	empty := nodeInfo("empty", nil, "64", "0")
	state := framework.NewCycleState()
	po := pod("p", "standard", "4", "")
	if _, st := p.PreFilter(context.Background(), state, po, nil); !st.IsSkip() {
		t.Fatalf("standard pod without a warm reserve: %v, want its filter skipped", st)
	}
	if st := p.PreScore(context.Background(), state, po, nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	sFull, st1 := p.Score(context.Background(), state, po, full)
	sEmpty, st2 := p.Score(context.Background(), state, po, empty)
	if !st1.IsSuccess() || !st2.IsSuccess() {
		t.Fatal(st1, st2)
	}
	if sFull <= sEmpty || sFull > fwk.MaxNodeScore || sEmpty < 0 {
		t.Fatalf("full node %d, empty node %d: want the full one higher, both in 0..%d", sFull, sEmpty, fwk.MaxNodeScore)
	}
	c, err := read(state)
	if err != nil {
		t.Fatal(err)
	}
	if want := scoring.ExtenderPriority(c.batch.Score(c.view.nodes["full"].Twin, c.view.nodes["full"].Hardware, schedulersFill(full)), fwk.MaxNodeScore); sFull != want {
		t.Fatalf("score %d, the extender's formula gives %d", sFull, want)
	}
}

// Without PreFilter's state, Filter and Score fail rather than guess.
func TestNoCycleStateIsAnError(t *testing.T) {
	p := newTestPlugin()
	ni := nodeInfo("a", nil, "64", "0")
	if st := p.Filter(context.Background(), framework.NewCycleState(), pod("p", "standard", "1", ""), ni); st.Code() != fwk.Error {
		t.Fatalf("filter without state: %v", st)
	}
	if _, st := p.Score(context.Background(), framework.NewCycleState(), pod("p", "standard", "1", ""), ni); st.Code() != fwk.Error {
		t.Fatalf("score without state: %v", st)
	}
}

func newTestPlugin() *Plugin {
	p := &Plugin{params: scoring.DefaultParams()}
	p.view.Store(&view{nodes: map[string]*scoring.Node{}})
	p.reserves.names = map[string]bool{}
	return p
}

// The filter is skipped only for pods no node can turn away, and only
// while that holds: a standard pod while no node is the warm reserve, a
// DaemonSet's standard pod always; a performance pod never.
func TestPreFilterSkipsOnlyWhatNothingRejects(t *testing.T) {
	p := newTestPlugin()
	ds := pod("ds", "standard", "1", "")
	ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "u", Controller: ptr.To(true)}}
	reserve := nodeInfo("r", map[string]string{joulie.LabelWarmReserve: "true"}, "64", "0").Node()
	for _, step := range []struct {
		what                   string
		change                 func()
		standard, daemon, perf bool // skipped
	}{
		{"no reserve", func() {}, true, true, false},
		{"a reserve labelled", func() { p.reserves.set(reserve) }, false, true, false},
		{"its label gone", func() {
			r := reserve.DeepCopy()
			r.Labels = nil
			p.reserves.set(r)
		}, true, true, false},
		{"labelled again, then deleted", func() { p.reserves.set(reserve); p.reserves.remove(reserve) }, true, true, false},
	} {
		step.change()
		for _, tc := range []struct {
			pod  *corev1.Pod
			skip bool
		}{{pod("s", "standard", "1", ""), step.standard}, {ds, step.daemon}, {pod("p", "performance", "1", ""), step.perf}} {
			_, st := p.PreFilter(context.Background(), framework.NewCycleState(), tc.pod, nil)
			if st.IsSkip() != tc.skip || (!st.IsSkip() && !st.IsSuccess()) {
				t.Errorf("%s: pod %s: %v, want skipped %v", step.what, tc.pod.Name, st, tc.skip)
			}
		}
	}
}

// schedulersFill is the node's fill read whole from the NodeInfo, as the
// plugin read it before it kept entries: what the entries must agree
// with.
func schedulersFill(n fwk.NodeInfo) scoring.Fill {
	alloc, req := n.GetAllocatable(), n.GetRequested()
	gpus := func(r fwk.Resource) int64 {
		s := r.GetScalarResources()
		return s[joulie.ResourceNVIDIAGPU] + s[joulie.ResourceAMDGPU]
	}
	return scoring.Fill{
		AllocatableCPU:  float64(alloc.GetMilliCPU()) / 1000,
		RequestedCPU:    float64(req.GetMilliCPU()) / 1000,
		AllocatableGPUs: float64(gpus(alloc)),
		RequestedGPUs:   float64(gpus(req)),
	}
}

// Filter and Score give the same answers whether a node's entry comes
// from the view or is worked out afresh, and the answers the extender's
// functions give on the node's labels and the scheduler's whole fill:
// random nodes (labels, twins, CPUs, GPUs, pods) and pods of each class,
// in each scoring mode.
func TestEntriesAnswerAsTheNodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 1))
	classes := []joulie.SchedulableClass{joulie.ClassPerformance, joulie.ClassEco, joulie.ClassDraining}
	var twins []*joulie.NodeTwin
	var infos []fwk.NodeInfo
	var objects []*corev1.Node
	for i := range 200 {
		name := fmt.Sprintf("n%d", i)
		if rng.IntN(4) > 0 {
			twins = append(twins, twin(name, classes[rng.IntN(len(classes))]))
		}
		l := map[string]string{}
		if rng.IntN(2) == 0 {
			l[joulie.LabelPowerProfile] = []string{"performance", "eco"}[rng.IntN(2)]
		}
		if rng.IntN(5) == 0 {
			l[joulie.LabelDraining] = "true"
		}
		if rng.IntN(8) == 0 {
			l[joulie.LabelWarmReserve] = "true"
		}
		gpus := []string{"0", "0", "0", "4", "8"}[rng.IntN(5)]
		var pods []*corev1.Pod
		for k := range rng.IntN(4) {
			g := ""
			if gpus != "0" && rng.IntN(2) == 0 {
				g = "1"
			}
			pods = append(pods, pod(fmt.Sprintf("%s-%d", name, k), "standard", fmt.Sprint(1+rng.IntN(16)), g))
		}
		ni := nodeInfo(name, l, fmt.Sprint(32*(1+rng.IntN(6))), gpus, pods...)
		infos = append(infos, ni)
		if rng.IntN(10) > 0 { // some Nodes newer than the view
			objects = append(objects, ni.Node())
		}
	}
	for _, mode := range []scoring.Mode{scoring.ModePack, scoring.ModePackStandard, scoring.ModeHeadroom} {
		p := newTestPlugin()
		p.params.Mode = mode
		p.reserves.names["any"] = true
		p.reserves.count.Store(1)
		v := build(twins, nil, objects)
		for _, po := range []*corev1.Pod{pod("s", "standard", "2", ""), pod("g", "standard", "2", "1"), pod("p", "performance", "8", ""), pod("pg", "performance", "8", "2")} {
			for _, ni := range infos {
				node := ni.Node()
				fresh := v.entryOf(node)
				if got := v.entry(node); got != fresh {
					t.Fatalf("%s: entry %+v, afresh %+v", node.Name, got, fresh)
				}
				if got, want := fresh.fill(ni), schedulersFill(ni); got.AllocatableCPU != want.AllocatableCPU || got.RequestedCPU != want.RequestedCPU ||
					got.AllocatableGPUs != want.AllocatableGPUs || (want.AllocatableGPUs > 0 && got.RequestedGPUs != want.RequestedGPUs) {
					t.Fatalf("%s: fill %+v, the scheduler's %+v", node.Name, got, want)
				}
			}
			state := framework.NewCycleState()
			p.view.Store(v)
			if _, st := p.PreFilter(context.Background(), state, po, nil); !st.IsSuccess() {
				t.Fatal(st)
			}
			if st := p.PreScore(context.Background(), state, po, nil); !st.IsSuccess() {
				t.Fatal(st)
			}
			c, err := read(state)
			if err != nil {
				t.Fatal(err)
			}
			for _, ni := range infos {
				node := ni.Node()
				var tw *scoring.Twin
				n := v.nodes[node.Name]
				if n != nil {
					tw = n.Twin
				} else {
					n = &scoring.Node{}
				}
				verdict := scoring.FilterPod(c.pod, tw, scoring.LabelsOf(node))
				if st := p.Filter(context.Background(), state, po, ni); st.IsSuccess() != (verdict == scoring.Admit) {
					t.Errorf("%s, pod %s on %s: filter %v, the extender's verdict %v", mode, po.Name, node.Name, st, verdict)
				}
				want := scoring.ExtenderPriority(c.batch.Score(n.Twin, n.Hardware, schedulersFill(ni)), fwk.MaxNodeScore)
				if got, st := p.Score(context.Background(), state, po, ni); !st.IsSuccess() || got != want {
					t.Errorf("%s, pod %s on %s: score %d (%v), the extender's formula gives %d", mode, po.Name, node.Name, got, st, want)
				}
			}
		}
	}
}

// A Node changed after the view was built is read from the object the
// scheduler holds, not from the view's entry for the old one: a node
// labelled eco a moment ago already turns performance pods away.
func TestAChangedNodeIsNotReadFromTheView(t *testing.T) {
	old := nodeInfo("a", map[string]string{joulie.LabelPowerProfile: "performance"}, "64", "0")
	p := newTestPlugin()
	p.view.Store(build(nil, nil, []*corev1.Node{old.Node()}))
	now := nodeInfo("a", map[string]string{joulie.LabelPowerProfile: "eco"}, "64", "0")
	po := pod("p", "performance", "1", "")
	state := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), state, po, nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := p.Filter(context.Background(), state, po, old); !st.IsSuccess() {
		t.Fatalf("the old object, labelled performance: %v", st)
	}
	if st := p.Filter(context.Background(), state, po, now); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("the new object, labelled eco, not yet in the view: %v, want UnschedulableAndUnresolvable", st)
	}
}

// PreFilter hands the scheduler the nodes the filter admits, out of the
// ones it is given, so that it examines no others: for a performance pod
// the nodes neither eco nor draining, for a standard pod all but the
// warm reserve; nil (every node) when the filter admits them all.
func TestPreFilterNarrowsToTheAdmittedNodes(t *testing.T) {
	p := newTestPlugin()
	p.view.Store(build([]*joulie.NodeTwin{twin("perf", joulie.ClassPerformance), twin("eco", joulie.ClassEco)}, nil, nil))
	all := []fwk.NodeInfo{
		nodeInfo("perf", nil, "64", "0"),
		nodeInfo("eco", nil, "64", "0"),
		nodeInfo("drain", map[string]string{joulie.LabelDraining: "true"}, "64", "0"),
		nodeInfo("reserve", map[string]string{joulie.LabelWarmReserve: "true"}, "64", "0"),
		nodeInfo("plain", nil, "64", "0"),
	}
	p.reserves.set(all[3].Node())
	for _, tc := range []struct {
		pod   *corev1.Pod
		nodes []fwk.NodeInfo
		want  []string // nil: every node
	}{
		{pod("p", "performance", "1", ""), all, []string{"perf", "reserve", "plain"}},
		{pod("s", "standard", "1", ""), all, []string{"perf", "eco", "drain", "plain"}},
		{pod("p", "performance", "1", ""), []fwk.NodeInfo{all[0], all[4]}, nil},
		{pod("p", "performance", "1", ""), []fwk.NodeInfo{all[1]}, []string{}},
	} {
		res, st := p.PreFilter(context.Background(), framework.NewCycleState(), tc.pod, tc.nodes)
		if !st.IsSuccess() {
			t.Fatalf("pod %s: %v", tc.pod.Name, st)
		}
		if tc.want == nil {
			if !res.AllNodes() {
				t.Errorf("pod %s over %d nodes: %v, want every node", tc.pod.Name, len(tc.nodes), res.NodeNames)
			}
			continue
		}
		if res.AllNodes() || !res.NodeNames.Equal(sets.New(tc.want...)) {
			t.Errorf("pod %s over %d nodes: %v, want %v", tc.pod.Name, len(tc.nodes), res, tc.want)
		}
	}
}
