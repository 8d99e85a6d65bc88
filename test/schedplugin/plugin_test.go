package schedplugin

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	p.view.Store(build([]*joulie.NodeTwin{twin("perf", joulie.ClassPerformance), twin("eco", joulie.ClassEco), twin("drain", joulie.ClassDraining)}, nil))
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
			if !st.IsSuccess() && st.Code() != fwk.Unschedulable {
				t.Errorf("%s pod on %s: code %v, want Unschedulable", tc.class, name, st.Code())
			}
		}
	}
}

// The score reads the fill the scheduler counts, the pods it has placed
// on the node, GPUs included: a fuller node scores higher for a standard
// pod in pack mode, as the extender's score does from its own count.
func TestScoreReadsTheSchedulersFill(t *testing.T) {
	ni := nodeInfo("a", nil, "64", "8", pod("x", "standard", "16", "2"), pod("y", "standard", "8", "1"))
	if got, want := fillOf(ni), (scoring.Fill{AllocatableCPU: 64, RequestedCPU: 24, AllocatableGPUs: 8, RequestedGPUs: 3}); got != want {
		t.Fatalf("fill %+v, want %+v", got, want)
	}

	p := newTestPlugin()
	p.view.Store(build([]*joulie.NodeTwin{twin("full", joulie.ClassPerformance), twin("empty", joulie.ClassPerformance)}, nil))
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
	if want := scoring.ExtenderPriority(c.batch.Score(c.view.nodes["full"].Twin, c.view.nodes["full"].Hardware, fillOf(full)), fwk.MaxNodeScore); sFull != want {
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
