package plan

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/intent"
	"joulie.io/joulie/pkg/plan/plantest"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/powerest"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func params(p string) Params {
	sel, _ := labels.Parse(joulie.LabelManaged + "=true")
	return Params{NodeSelector: sel, Policy: p, StaticHPFrac: 0.5, Queue: policy.DefaultQueueAware(),
		Interval: time.Minute, Intent: intent.Default(), RackCapacityW: 50000, MeasurementMaxAge: 3 * time.Minute,
		Coefficients: powerest.DefaultCoefficients()}
}

func byName(r Result) map[string]NodePlan {
	m := map[string]NodePlan{}
	for _, n := range r.Nodes {
		m[n.Name] = n
	}
	return m
}

func TestMixedClusterStaticPartitionKeepsEachFamily(t *testing.T) {
	in := Inputs{Now: t0, Nodes: []*corev1.Node{plantest.GPUNode("gpu-a", 8, nil), plantest.GPUNode("gpu-b", 8, nil), plantest.CPUNode("cpu-a", nil), plantest.CPUNode("cpu-b", nil)}}
	r := Compute(in, params(PolicyStaticPartition))
	if r.Eligible != 4 || r.HPCount != 2 {
		t.Fatalf("eligible %d, hp %d; want 4, 2", r.Eligible, r.HPCount)
	}
	got := byName(r)
	// One performance node per family: the densest GPU node and the
	// densest CPU node (ties by name).
	for name, want := range map[string]joulie.Profile{"gpu-a": "performance", "gpu-b": "eco", "cpu-a": "performance", "cpu-b": "eco"} {
		if got[name].Decision.Profile != want {
			t.Errorf("%s: %s, want %s", name, got[name].Decision.Profile, want)
		}
	}
	eco := got["gpu-b"]
	if *eco.Spec.CPU.PackagePowerCapPctOfMax != 60 || *eco.Spec.GPU.PowerCap.CapPctOfMax != 60 || eco.Twin.SchedulableClass != joulie.ClassEco {
		t.Errorf("eco GPU node spec %+v twin class %s", eco.Spec, eco.Twin.SchedulableClass)
	}
	if got["cpu-b"].Spec.GPU != nil {
		t.Error("a CPU-only node got a GPU target")
	}
	if pm := eco.Twin.PowerMeasurement; pm.Source != joulie.SourceStatic || pm.NodeCappedPowerW != round1(pm.NodeTdpW*0.6) {
		t.Errorf("eco power measurement %+v: want static, capped at 60%% of TDP", pm)
	}
}

func TestPerformancePodsDrainBeforeEco(t *testing.T) {
	// gpu-b is performance today (its labels say so) and runs a
	// performance pod; the plan wants it eco.
	nodes := []*corev1.Node{plantest.GPUNode("gpu-a", 8, nil), plantest.GPUNode("gpu-b", 4, map[string]string{joulie.LabelPowerProfile: "performance"})}
	pods := []*corev1.Pod{plantest.PerfPod("train", "gpu-b", corev1.PodRunning)}
	in := Inputs{Now: t0, Nodes: nodes, PerfPods: CountPerformancePods(pods)}
	s := params(PolicyStaticPartition)
	got := byName(Compute(in, s))["gpu-b"]
	if got.Planned != joulie.ProfileEco || got.Decision.Next != policy.DrainingPerformance || got.Decision.Profile != joulie.ProfileEco ||
		!got.Decision.Draining || got.Twin.SchedulableClass != joulie.ClassDraining || got.Decision.Transition != policy.Defer {
		t.Fatalf("gpu-b with a running performance pod: %+v", got.Decision)
	}
	// Next tick: labels say draining; the pod finished.
	nodes[1].Labels[joulie.LabelPowerProfile], nodes[1].Labels[joulie.LabelDraining] = "eco", "true"
	pods[0].Status.Phase = corev1.PodSucceeded
	in.PerfPods = CountPerformancePods(pods)
	got = byName(Compute(in, s))["gpu-b"]
	if got.Decision.Next != policy.ActiveEco || got.Decision.Draining || got.Twin.SchedulableClass != joulie.ClassEco || got.Decision.Transition != policy.Unblocked {
		t.Fatalf("gpu-b after the pod ended: %+v", got.Decision)
	}
}

// Under GuardDrain a node planned eco is labelled eco and draining but
// its NodePowerProfile keeps the performance caps until it has drained
// for DrainDwell; the plan says when to look again.
func TestGuardDrainPublishesEcoCapsOnlyAfterTheDrain(t *testing.T) {
	nodes := []*corev1.Node{plantest.GPUNode("gpu-a", 8, nil), plantest.GPUNode("gpu-b", 4, nil)}
	s := params(PolicyStaticPartition)
	s.Guard, s.DrainDwell = policy.GuardDrain, 15*time.Second
	in := Inputs{Now: t0, Nodes: nodes, PerfPods: map[string]int{}}
	r := Compute(in, s)
	got := byName(r)["gpu-b"]
	if got.Decision.Next != policy.DrainingPerformance || got.Decision.Profile != joulie.ProfileEco || got.Decision.Transition != policy.Drain {
		t.Fatalf("a fresh node planned eco: %+v, want draining", got.Decision)
	}
	if got.Spec.Profile != joulie.ProfilePerformance || *got.Spec.CPU.PackagePowerCapPctOfMax != 100 || got.Caps != nil {
		t.Fatalf("a draining node publishes %+v, want its performance caps", got.Spec)
	}
	if r.Replan != 15*time.Second {
		t.Fatalf("Replan %s, want the drain dwell", r.Replan)
	}
	// The labels written, 10 s later: still draining, 5 s to go.
	nodes[1].Labels[joulie.LabelPowerProfile], nodes[1].Labels[joulie.LabelDraining] = "eco", "true"
	in.Profiles = map[string]*joulie.NodePowerProfile{"gpu-b": {ObjectMeta: metav1.ObjectMeta{Name: "gpu-b",
		Annotations: map[string]string{AnnotationLastTransition: t0.Format(time.RFC3339)}}}}
	in.Now = t0.Add(10 * time.Second)
	r = Compute(in, s)
	if got = byName(r)["gpu-b"]; got.Decision.Next != policy.DrainingPerformance || got.Spec.Profile != joulie.ProfilePerformance || r.Replan != 5*time.Second {
		t.Fatalf("10 s into the drain: %+v, spec %s, replan %s", got.Decision, got.Spec.Profile, r.Replan)
	}
	// A performance pod bound in the meantime holds it, and no replan is
	// due: the pod's end changes the cluster and plans again.
	in.PerfPods = map[string]int{"gpu-b": 1}
	in.Now = t0.Add(time.Minute)
	r = Compute(in, s)
	if got = byName(r)["gpu-b"]; got.Decision.Next != policy.DrainingPerformance || got.Spec.Profile != joulie.ProfilePerformance || r.Replan != 0 {
		t.Fatalf("draining with a performance pod: %+v, spec %s, replan %s", got.Decision, got.Spec.Profile, r.Replan)
	}
	in.PerfPods = map[string]int{}
	r = Compute(in, s)
	if got = byName(r)["gpu-b"]; got.Decision.Next != policy.ActiveEco || got.Spec.Profile != joulie.ProfileEco || *got.Spec.CPU.PackagePowerCapPctOfMax != 60 {
		t.Fatalf("drained: %+v, spec %+v", got.Decision, got.Spec)
	}
}

func TestIneligibleNodesLeaveThePlanAndAreReleased(t *testing.T) {
	cordoned := plantest.GPUNode("gpu-c", 8, map[string]string{joulie.LabelPowerProfile: "eco", joulie.LabelDraining: "false"})
	cordoned.Spec.Unschedulable = true
	reserved := plantest.CPUNode("cpu-r", map[string]string{joulie.LabelReserved: "true"})
	unmanaged := plantest.CPUNode("cpu-u", nil)
	delete(unmanaged.Labels, joulie.LabelManaged)
	parked := plantest.CPUNode("cpu-p", nil)
	parked.Spec.Taints = []corev1.Taint{{Key: joulie.TaintParked, Effect: corev1.TaintEffectNoSchedule}}
	in := Inputs{Now: t0, Nodes: []*corev1.Node{plantest.GPUNode("gpu-a", 8, nil), cordoned, reserved, unmanaged, parked},
		Profiles: map[string]*joulie.NodePowerProfile{"gpu-c": {ObjectMeta: metav1.ObjectMeta{Name: "gpu-c"}}}}
	r := Compute(in, params(PolicyStaticPartition))
	if r.Eligible != 1 {
		t.Fatalf("eligible %d, want 1", r.Eligible)
	}
	got := byName(r)
	if _, ok := got["cpu-r"]; ok {
		t.Error("a reserved node without a profile was planned")
	}
	if _, ok := got["cpu-u"]; ok {
		t.Error("an unselected node was planned")
	}
	if _, ok := got["cpu-p"]; ok {
		t.Error("a parked node without a profile was planned")
	}
	c, ok := got["gpu-c"]
	if !ok || c.Managed || c.Decision.Profile != joulie.ProfilePerformance || *c.Spec.CPU.PackagePowerCapPctOfMax != 100 {
		t.Errorf("cordoned eco node: %+v; want released to performance, uncapped", c)
	}
}

func TestQueuePressureRaisesThePerformanceCount(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 10 {
		nodes = append(nodes, plantest.CPUNode(fmt.Sprintf("n%02d", i), nil))
	}
	s := params(PolicyQueueAware)
	prev := -1
	for _, p := range []int{0, 10, 61, 75, 91, 500} {
		var pods []*corev1.Pod
		for i := range p {
			pods = append(pods, plantest.PerfPod(fmt.Sprintf("p%d", i), "", corev1.PodPending))
		}
		r := Compute(Inputs{Now: t0, Nodes: nodes, PerfPods: CountPerformancePods(pods)}, s)
		if r.HPCount < prev || r.HPCount > 10 {
			t.Errorf("P=%d: hp %d after %d; want monotonic within [0,10]", p, r.HPCount, prev)
		}
		if p == 75 && r.HPCount != 8 {
			t.Errorf("P=75: hp %d, want ceil(75/10)=8", r.HPCount)
		}
		prev = r.HPCount
	}
	if prev != 10 {
		t.Errorf("heavy pressure: hp %d, want all 10", prev)
	}
}

func TestDwellHoldsEcoButNeverPerformance(t *testing.T) {
	s := params(PolicyStaticPartition)
	s.MinEcoDwell = 5 * time.Minute
	just := t0.Add(-time.Minute).Format(time.RFC3339)
	prof := func(name string) *joulie.NodePowerProfile {
		return &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{AnnotationLastTransition: just}}}
	}
	nodes := []*corev1.Node{plantest.GPUNode("a", 8, map[string]string{joulie.LabelPowerProfile: "performance"}),
		plantest.GPUNode("b", 8, map[string]string{joulie.LabelPowerProfile: "performance"})}
	in := Inputs{Now: t0, Nodes: nodes, Profiles: map[string]*joulie.NodePowerProfile{"a": prof("a"), "b": prof("b")}}
	b := byName(Compute(in, s))["b"]
	if b.Planned != joulie.ProfileEco || b.Decision.Profile != joulie.ProfilePerformance || b.Decision.Transition != policy.Dwell {
		t.Fatalf("eco one minute after a change: %+v", b.Decision)
	}
	in.Now = t0.Add(5 * time.Minute)
	b = byName(Compute(in, s))["b"]
	if b.Decision.Profile != joulie.ProfileEco || !b.LastTransition.Equal(in.Now) {
		t.Fatalf("eco after the dwell: %+v at %v", b.Decision, b.LastTransition)
	}
}

func TestTwinUsesAgentPowerFacilityAndTrend(t *testing.T) {
	pue, temp, it := 1.3, 30.0, 30000.0
	n := plantest.GPUNode("g", 4, nil)
	in := Inputs{Now: t0, Nodes: []*corev1.Node{n},
		Profiles: map[string]*joulie.NodePowerProfile{"g": {ObjectMeta: metav1.ObjectMeta{Name: "g"},
			Status: joulie.NodePowerProfileStatus{MeasuredPower: &joulie.MeasuredPower{NodePowerWatts: 1234.5, Time: metav1.NewTime(t0.Add(-time.Minute))}}}},
		Facility: Facility{AmbientTempC: &temp, ITPowerW: &it, PUE: &pue}, Trends: map[string]float64{"g": -42}}
	g := byName(Compute(in, params(PolicyStaticPartition)))["g"]
	pm := g.Twin.PowerMeasurement
	if pm.Source != joulie.SourceAgent || pm.MeasuredNodePowerW != 1234.5 || pm.PowerTrendWPerMin != -42 {
		t.Errorf("power measurement %+v", pm)
	}
	if g.Twin.PredictedPsuStressScore != 60 || g.Twin.EstimatedPUE == nil || *g.Twin.EstimatedPUE != 1.3 {
		t.Errorf("PSU stress %v (want 60 from 30 kW IT power), PUE %v", g.Twin.PredictedPsuStressScore, g.Twin.EstimatedPUE)
	}
	// 30 °C adds 5 points over the same node at 20 °C.
	in.Facility.AmbientTempC = nil
	cool := byName(Compute(in, params(PolicyStaticPartition)))["g"]
	if d := g.Twin.PredictedCoolingStressScore - cool.Twin.PredictedCoolingStressScore; d < 4.95 || d > 5.05 {
		t.Errorf("10 °C warmer adds %v cooling stress points, want 5", d)
	}
	// Kepler stands in when the agent's reading is too old, and a stale
	// Kepler reading falls back to the static estimate.
	in.Now = t0.Add(10 * time.Minute)
	in.KeplerPower = map[string]NodeReading{"g": {Watts: 999, Time: in.Now.Add(-time.Minute)}}
	if pm := byName(Compute(in, params(PolicyStaticPartition)))["g"].Twin.PowerMeasurement; pm.Source != joulie.SourceKepler || pm.MeasuredNodePowerW != 999 {
		t.Errorf("with a fresh Kepler reading: %+v", pm)
	}
	in.KeplerPower["g"] = NodeReading{Watts: 999, Time: t0}
	if pm := byName(Compute(in, params(PolicyStaticPartition)))["g"].Twin.PowerMeasurement; pm.Source != joulie.SourceStatic || pm.MeasuredNodePowerW != pm.NodeCappedPowerW {
		t.Errorf("with only 10-minute-old readings: %+v", pm)
	}
}

func TestComputeIsDeterministic(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 50 {
		nodes = append(nodes, plantest.GPUNode(fmt.Sprintf("g%02d", i), 1+i%8, nil), plantest.CPUNode(fmt.Sprintf("c%02d", i), nil))
	}
	s := params(PolicyQueueAware)
	a := Compute(Inputs{Now: t0, Nodes: nodes}, s)
	// The same cluster listed in another order plans the same.
	rev := make([]*corev1.Node, len(nodes))
	for i, n := range nodes {
		rev[len(nodes)-1-i] = n
	}
	b := Compute(Inputs{Now: t0, Nodes: rev}, s)
	for i := range a.Nodes {
		if a.Nodes[i].Name != b.Nodes[i].Name || a.Nodes[i].Decision != b.Nodes[i].Decision {
			t.Fatalf("node %d differs: %+v vs %+v", i, a.Nodes[i].Decision, b.Nodes[i].Decision)
		}
	}
}

func TestTrendSlope(t *testing.T) {
	tr := NewTrends(5 * time.Minute)
	for i := range 5 {
		tr.Observe("n", t0.Add(time.Duration(i)*time.Minute), 1000+100*float64(i))
	}
	tr.Observe("n", t0, 5000) // a replayed old reading is ignored
	if got := tr.Slopes(t0.Add(4 * time.Minute))["n"]; got < 99.99 || got > 100.01 {
		t.Errorf("slope %v W/min, want 100", got)
	}
	// Past the window every sample ages out.
	if got, ok := tr.Slopes(t0.Add(time.Hour))["n"]; ok || got != 0 {
		t.Errorf("after an hour: %v, %v; want no trend", got, ok)
	}
	tr.Observe("m", t0, 100)
	if got := tr.Slopes(t0)["m"]; got != 0 {
		t.Errorf("one sample gives slope %v, want 0", got)
	}
}

// rule_swap_v1 exists to show a swap every RECONCILE_INTERVAL. With the
// default 5-minute MIN_ECO_DWELL the node that just returned to
// performance would be held there, and the swap would only happen every
// five or six intervals. Each step applies the previous step's outcome the
// way the controller publishes it (labels and the transition annotation).
func TestRuleSwapSwapsEveryIntervalDespiteTheDwell(t *testing.T) {
	s := params(PolicyRuleSwap)
	s.MinEcoDwell = 5 * time.Minute // the controller's default
	nodes := []*corev1.Node{plantest.CPUNode("a", nil), plantest.CPUNode("b", nil), plantest.CPUNode("c", nil)}
	profiles := map[string]*joulie.NodePowerProfile{}
	prevEco := ""
	for step := range 8 {
		now := t0.Add(time.Duration(step) * s.Interval)
		r := Compute(Inputs{Now: now, Nodes: nodes, Profiles: profiles}, s)
		var eco []string
		for _, p := range r.Nodes {
			if p.Decision.Profile == joulie.ProfileEco {
				eco = append(eco, p.Name)
			}
		}
		if len(eco) != 1 {
			t.Fatalf("step %d: eco nodes %v, want exactly one", step, eco)
		}
		if eco[0] == prevEco {
			t.Fatalf("step %d (%v after the last): %s is still the eco node; rule_swap_v1 must swap every interval",
				step, s.Interval, eco[0])
		}
		prevEco = eco[0]
		for _, p := range r.Nodes {
			n := nodes[slices.IndexFunc(nodes, func(n *corev1.Node) bool { return n.Name == p.Name })]
			n.Labels[joulie.LabelPowerProfile] = string(p.Decision.Profile)
			n.Labels[joulie.LabelDraining] = fmt.Sprint(p.Decision.Draining)
			profiles[p.Name] = &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: p.Name,
				Annotations: map[string]string{AnnotationLastTransition: p.LastTransition.UTC().Format(time.RFC3339)}}}
		}
	}
}

// Each source of powerMeasurement, in SPEC.md's order: the agent's fresh
// reading, Kepler's, the utilization model of the pods' requests, and the
// cap-based budget when the model has nothing to stand on.
func TestPowerMeasurementSources(t *testing.T) {
	// g: 2 × EPYC 9654 (96 cores, 400 W max, 0.18 × 360 = 64.8 W idle
	// each) and 4 × H100 SXM (700 W max, 0.10 × 700 = 70 W idle each),
	// uncapped: a budget of 800 + 2800 = 3600 W and 409.6 W idle.
	const idleW, cappedW = 2*64.8 + 4*70, 2*400 + 4*700
	// 64 of 192 cores: 0.8 × 64/192 × 800; one standard GPU: 0.6 × 1/4 ×
	// 2800; two performance GPUs: 0.9 × 2/4 × 2800.
	const busyW = idleW + 0.8*64/192*800 + 0.6*1/4*2800 + 0.9*2/4*2800
	busy := PodLoads([]*corev1.Pod{
		plantest.Requesting("std", "g", "48", "1", "", corev1.PodRunning),
		plantest.Requesting("perf", "g", "16", "2", joulie.WorkloadClassPerformance, corev1.PodRunning),
		plantest.Requesting("done", "g", "96", "1", "", corev1.PodSucceeded),    // finished: draws nothing
		plantest.Requesting("queued", "", "96", "4", "", corev1.PodPending),     // not on a node yet
		plantest.Requesting("elsewhere", "h", "96", "4", "", corev1.PodRunning), // another node
	})
	full := PodLoads([]*corev1.Pod{plantest.Requesting("all", "g", "192", "4", joulie.WorkloadClassPerformance, corev1.PodRunning)})
	agent := map[string]*joulie.NodePowerProfile{"g": {ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Status: joulie.NodePowerProfileStatus{MeasuredPower: &joulie.MeasuredPower{NodePowerWatts: 1234.5, Time: metav1.NewTime(t0.Add(-time.Minute))}}}}
	staleAgent := map[string]*joulie.NodePowerProfile{"g": {ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Status: joulie.NodePowerProfileStatus{MeasuredPower: &joulie.MeasuredPower{NodePowerWatts: 1234.5, Time: metav1.NewTime(t0.Add(-10 * time.Minute))}}}}
	kepler := map[string]NodeReading{"g": {Watts: 999, Time: t0.Add(-time.Minute)}}
	staleKepler := map[string]NodeReading{"g": {Watts: 999, Time: t0.Add(-10 * time.Minute)}}
	known := plantest.GPUNode("g", 4, nil)
	// No hardware labels, GPUs only from allocatable: the catalog knows
	// neither model, so it has no idle figure.
	unknown := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "g", Labels: map[string]string{joulie.LabelManaged: "true"}}}
	unknown.Status.Allocatable = corev1.ResourceList{joulie.ResourceNVIDIAGPU: resource.MustParse("4")}
	// A known CPU, but a GPU known only as a generic NVIDIA part.
	genericGPU := plantest.CPUNode("g", map[string]string{joulie.LabelHWGPUCount: "4"})
	genericGPU.Status.Allocatable = corev1.ResourceList{joulie.ResourceNVIDIAGPU: resource.MustParse("4")}

	tests := []struct {
		name     string
		node     *corev1.Node
		profiles map[string]*joulie.NodePowerProfile
		kepler   map[string]NodeReading
		loads    map[string]NodeLoad
		source   joulie.MeasurementSource
		watts    float64 // 0: the node's capped budget
		eco      bool    // capped at the eco defaults (60%) instead of uncapped
	}{
		{"fresh agent reading wins over everything", known, agent, kepler, busy, joulie.SourceAgent, 1234.5, false},
		{"fresh Kepler reading when the agent's is stale", known, staleAgent, kepler, busy, joulie.SourceKepler, 999, false},
		{"utilization: idle plus the running pods' marginal power", known, staleAgent, staleKepler, busy, joulie.SourceUtilization, round1(busyW), false},
		{"utilization: an empty node draws its idle power", known, nil, nil, map[string]NodeLoad{}, joulie.SourceUtilization, idleW, false},
		// A full node models to 409.6 + 0.8 × 800 + 0.9 × 2800 = 3569.6 W,
		// over an eco budget of 0.6 × 3600 = 2160 W.
		{"utilization never exceeds the capped budget", known, nil, nil, full, joulie.SourceUtilization, 0.6 * cappedW, true},
		{"static: pods not known", known, nil, nil, nil, joulie.SourceStatic, 0, false},
		{"static: hardware not identified, no idle figure", unknown, nil, nil, busy, joulie.SourceStatic, 0, false},
		{"static: GPU model not identified, no GPU idle figure", genericGPU, nil, nil, busy, joulie.SourceStatic, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := params(PolicyStaticPartition)
			s.StaticHPFrac = 1 // performance: uncapped
			if tt.eco {
				s.StaticHPFrac = 0
			}
			in := Inputs{Now: t0, Nodes: []*corev1.Node{tt.node}, Profiles: tt.profiles, KeplerPower: tt.kepler, Loads: tt.loads}
			pm := byName(Compute(in, s))["g"].Twin.PowerMeasurement
			want := tt.watts
			if want == 0 {
				want = pm.NodeCappedPowerW
			}
			if pm.Source != tt.source || pm.MeasuredNodePowerW != want {
				t.Errorf("source %s, measured %v W; want %s, %v W (%+v)", pm.Source, pm.MeasuredNodePowerW, tt.source, want, pm)
			}
			if tt.node == known && !tt.eco && pm.NodeCappedPowerW != cappedW {
				t.Errorf("capped %v W, want %v", pm.NodeCappedPowerW, float64(cappedW))
			}
		})
	}
}

// The utilization model feeds PSU stress like a measurement does: a
// cluster of idle nodes is far from its rack budget, where their caps
// alone would put it.
func TestUtilizationModelFeedsPSUStress(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 10 {
		nodes = append(nodes, plantest.GPUNode(fmt.Sprintf("g%d", i), 8, nil))
	}
	s := params(PolicyStaticPartition)
	s.StaticHPFrac = 1
	static := Compute(Inputs{Now: t0, Nodes: nodes}, s).Nodes[0].Twin
	modelled := Compute(Inputs{Now: t0, Nodes: nodes, Loads: map[string]NodeLoad{}}, s).Nodes[0].Twin
	// Caps: 10 × (800 + 5600) W = 64 kW, over the 50 kW rack. Idle:
	// 10 × (129.6 + 560) W = 6.896 kW, 13.8%.
	if static.PredictedPsuStressScore != 100 || modelled.PredictedPsuStressScore != 13.8 {
		t.Errorf("PSU stress %v from caps, %v from the model; want 100 and 13.8", static.PredictedPsuStressScore, modelled.PredictedPsuStressScore)
	}
}

// With performanceSpread demand the planner reads what each node runs:
// of four equal CPU nodes, the performance count of two goes to the node
// running a performance pod and to the empty one, not to the nodes running
// standard work, whose eco caps pay (and, by name, would come first).
func TestDemandSpreadPutsPerformanceOnBusyPerformanceAndEmptyNodes(t *testing.T) {
	nodes := []*corev1.Node{plantest.CPUNode("n0", nil), plantest.CPUNode("n1", nil), plantest.CPUNode("n2", nil), plantest.CPUNode("n3", nil)}
	pods := []*corev1.Pod{
		plantest.Requesting("std-0", "n0", "8", "", "", corev1.PodRunning),
		plantest.Requesting("std-1", "n1", "8", "", "", corev1.PodRunning),
		plantest.Requesting("perf", "n3", "8", "", joulie.WorkloadClassPerformance, corev1.PodRunning),
	}
	s := params(PolicyStaticPartition) // half: two of four
	s.Spread = policy.SpreadDemand
	got := byName(Compute(Inputs{Now: t0, Nodes: nodes, PerfPods: CountPerformancePods(pods), Loads: PodLoads(pods)}, s))
	for name, want := range map[string]joulie.Profile{"n0": "eco", "n1": "eco", "n2": "performance", "n3": "performance"} {
		if got[name].Planned != want {
			t.Errorf("%s planned %s, want %s", name, got[name].Planned, want)
		}
	}
}

// A node parking holds as the warm reserve for performance pods is
// planned performance on top of the policy's count, even when the count
// is used up by busier nodes: planned eco, the filter would turn the very
// pods it is held for away from it.
func TestDemandSpreadMakesTheWarmReservePerformance(t *testing.T) {
	nodes := []*corev1.Node{plantest.CPUNode("n0", nil), plantest.CPUNode("n1", nil), plantest.CPUNode("n2", nil), plantest.CPUNode("n3", nil)}
	nodes[2].Labels[joulie.LabelWarmReserve] = "true"
	pods := []*corev1.Pod{
		plantest.Requesting("std-0", "n0", "8", "", "", corev1.PodRunning),
		plantest.Requesting("perf-1", "n1", "8", "", joulie.WorkloadClassPerformance, corev1.PodRunning),
		plantest.Requesting("perf-3", "n3", "8", "", joulie.WorkloadClassPerformance, corev1.PodRunning),
	}
	s := params(PolicyStaticPartition) // half: two of four, both running performance pods
	s.Spread = policy.SpreadDemand
	got := byName(Compute(Inputs{Now: t0, Nodes: nodes, PerfPods: CountPerformancePods(pods), Loads: PodLoads(pods)}, s))
	for name, want := range map[string]joulie.Profile{"n0": "eco", "n1": "performance", "n2": "performance", "n3": "performance"} {
		if got[name].Planned != want {
			t.Errorf("%s planned %s, want %s", name, got[name].Planned, want)
		}
	}
}

// With per-GPU caps a performance GPU node publishes the GPU eco cap for
// the GPUs only standard pods hold; eco nodes, CPU nodes and the node
// scope publish none.
func TestGPUScopePodCapsStandardGPUsOnPerformanceNodes(t *testing.T) {
	nodes := []*corev1.Node{plantest.GPUNode("gpu-a", 8, nil), plantest.GPUNode("gpu-b", 8, nil), plantest.CPUNode("cpu-a", nil)}
	for _, scope := range []string{GPUScopeNode, GPUScopePod} {
		s := params(PolicyStaticPartition)
		s.GPUCapScope = scope
		got := byName(Compute(Inputs{Now: t0, Nodes: nodes}, s))
		perf, eco := got["gpu-a"], got["gpu-b"]
		if perf.Decision.Applied != joulie.ProfilePerformance || eco.Decision.Applied != joulie.ProfileEco {
			t.Fatalf("%s: gpu-a %s, gpu-b %s; want performance and eco", scope, perf.Decision.Applied, eco.Decision.Applied)
		}
		std := perf.Spec.GPU.StandardPowerCap
		switch {
		case scope == GPUScopeNode && std != nil:
			t.Errorf("node scope: the performance node publishes a standard GPU cap %+v", std)
		case scope == GPUScopePod && (std == nil || *std.CapPctOfMax != 60 || *perf.Spec.GPU.PowerCap.CapPctOfMax != 100):
			t.Errorf("pod scope: the performance node publishes %+v, want its GPUs at 100%% and standard pods' at 60%%", perf.Spec.GPU)
		}
		if eco.Spec.GPU.StandardPowerCap != nil || got["cpu-a"].Spec.GPU != nil {
			t.Errorf("%s: an eco or CPU node publishes a standard GPU cap", scope)
		}
	}
}
