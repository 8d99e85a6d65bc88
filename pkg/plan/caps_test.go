package plan

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/ecocap"
	"joulie.io/joulie/pkg/plan/plantest"
)

// measured is a NodePowerProfile whose agent read watts a minute ago, and
// whose spec caps the CPUs at cpuPct (0: none in force).
func measured(name string, watts, cpuPct float64) *joulie.NodePowerProfile {
	p := &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: joulie.NodePowerProfileStatus{MeasuredPower: &joulie.MeasuredPower{NodePowerWatts: watts, Time: metav1.NewTime(t0.Add(-time.Minute))}}}
	if cpuPct > 0 {
		p.Spec = joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco, CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: &cpuPct}}
	}
	return p
}

// Every node is eco (static_partition at 0) and gets the cap that pays
// from its draw: the benchmark's CPU node, 2 × EPYC 9654 (eco cap 60% =
// 480 W, optimum 530.7 W, 67%), and an 8 × H100 node.
func TestCapThatPaysPerEcoNode(t *testing.T) {
	eco := map[string]string{joulie.LabelPowerProfile: "eco"}
	nodes := []*corev1.Node{
		plantest.CPUNode("light", eco), plantest.CPUNode("full", eco), plantest.CPUNode("held", eco),
		plantest.CPUNode("draining", map[string]string{joulie.LabelPowerProfile: "eco", joulie.LabelDraining: "true"}),
		plantest.CPUNode("modelled", eco),
		// No hardware labels: the catalog knows no idle figure, so nothing
		// models the draw.
		{ObjectMeta: metav1.ObjectMeta{Name: "unknown", Labels: map[string]string{joulie.LabelManaged: "true", joulie.LabelPowerProfile: "eco"}}},
		plantest.CPUNode("kepler", eco),
		plantest.GPUNode("gpu", 8, eco), plantest.GPUNode("gpu-idle", 8, eco),
	}
	pods := []*corev1.Pod{
		plantest.PerfPod("serve", "draining", corev1.PodRunning),
		// 180 of 192 cores: 129.6 + 0.8 × 180/192 × 800 = 729.6 W.
		plantest.Requesting("batch", "modelled", "180", "", "", corev1.PodRunning),
		// Eight standard GPUs: 70 + 0.6 × 700 = 490 W each, over 420 W;
		// the host at 729.6 W, over its eco cap.
		plantest.Requesting("train", "gpu", "180", "8", "", corev1.PodRunning),
	}
	in := Inputs{Now: t0, Nodes: nodes, PerfPods: CountPerformancePods(pods), Loads: PodLoads(pods),
		Profiles: map[string]*joulie.NodePowerProfile{
			"light": measured("light", 310, 0), "full": measured("full", 790, 0),
			// At its 67% cap (536 W) the agent reads 531 W: held down by
			// the cap, so the draw it hides is at least 536 W.
			"held":     measured("held", 531, 67),
			"draining": measured("draining", 790, 0),
		},
		KeplerPower: map[string]NodeReading{"kepler": {Watts: 300, Time: t0.Add(-time.Minute)}},
	}
	s := params(PolicyStaticPartition)
	s.StaticHPFrac, s.CapMode = 0, CapModePays
	got := byName(Compute(in, s))
	for _, tc := range []struct {
		node    string
		cpuPct  float64
		kind    ecocap.Kind
		reason  string
		gpuPct  float64 // GPU nodes only
		gpuKind ecocap.Kind
	}{
		{node: "light", cpuPct: 100, kind: ecocap.KindNotBinding, reason: "uncapped: draw under the 480 W eco cap"},
		{node: "full", cpuPct: 67, kind: ecocap.KindOptimum, reason: "capped at 67%: energy optimum for standard work"},
		{node: "held", cpuPct: 67, kind: ecocap.KindOptimum},
		{node: "draining", cpuPct: 100, kind: ecocap.KindPerformance, reason: "uncapped: performance pods on the node"},
		{node: "modelled", cpuPct: 67, kind: ecocap.KindOptimum},
		{node: "unknown", cpuPct: 60, kind: ecocap.KindUnknown},
		{node: "kepler", cpuPct: 100, kind: ecocap.KindNotBinding},
		// The host of eight busy GPUs is left alone: they wait for it.
		{node: "gpu", cpuPct: 100, kind: ecocap.KindNotPaying, gpuPct: 60, gpuKind: ecocap.KindFloor},
		{node: "gpu-idle", cpuPct: 100, kind: ecocap.KindNotBinding, gpuPct: 100, gpuKind: ecocap.KindNoWork},
	} {
		p := got[tc.node]
		if p.Decision.Profile != joulie.ProfileEco || p.Caps == nil || p.Caps.CPU == nil {
			t.Errorf("%s: profile %s, caps %+v; want eco with a choice", tc.node, p.Decision.Profile, p.Caps)
			continue
		}
		cpu := p.Spec.CPU
		if *cpu.PackagePowerCapPctOfMax != tc.cpuPct || p.Caps.CPU.Kind != tc.kind || cpu.Reason != p.Caps.CPU.Reason ||
			(tc.reason != "" && cpu.Reason != tc.reason) {
			t.Errorf("%s: CPU %v%% %q (%s), want %v%% %s %q", tc.node, *cpu.PackagePowerCapPctOfMax, cpu.Reason, p.Caps.CPU.Kind, tc.cpuPct, tc.kind, tc.reason)
		}
		if tc.gpuPct == 0 {
			if p.Caps.GPU != nil {
				t.Errorf("%s: a GPU choice on a CPU node", tc.node)
			}
			continue
		}
		if g := p.Spec.GPU; *g.PowerCap.CapPctOfMax != tc.gpuPct || p.Caps.GPU.Kind != tc.gpuKind || g.Reason != p.Caps.GPU.Reason {
			t.Errorf("%s: GPU %v%% %q, want %v%% %s", tc.node, *g.PowerCap.CapPctOfMax, g.Reason, tc.gpuPct, tc.gpuKind)
		}
	}
	if d := got["held"].Caps.CPUDraw; !d.AtLeast || d.Watts != 0.67*800 {
		t.Errorf("held: draw %+v, want at least the 536 W cap", d)
	}
	// The twin sees the cap that pays: the light node's budget is its
	// whole 800 W.
	if pm := got["light"].Twin.PowerMeasurement; pm.CPUCappedPowerW != 800 {
		t.Errorf("light: twin CPU budget %v W, want 800", pm.CPUCappedPowerW)
	}
}

// capMode fixed is the seeds': every eco node at the eco caps, and no
// reason written.
func TestFixedCapModeKeepsTheEcoCaps(t *testing.T) {
	nodes := []*corev1.Node{plantest.CPUNode("light", nil), plantest.GPUNode("gpu", 8, nil)}
	in := Inputs{Now: t0, Nodes: nodes, Loads: map[string]NodeLoad{},
		Profiles: map[string]*joulie.NodePowerProfile{"light": measured("light", 310, 0)}}
	s := params(PolicyStaticPartition)
	s.StaticHPFrac, s.CapMode = 0, CapModeFixed
	for _, p := range Compute(in, s).Nodes {
		if p.Caps != nil || *p.Spec.CPU.PackagePowerCapPctOfMax != 60 || p.Spec.CPU.Reason != "" {
			t.Errorf("%s: %+v, caps %+v; want 60%% and no reason", p.Name, p.Spec.CPU, p.Caps)
		}
	}
}

// With the demand spread, GPU nodes go eco when the performance demand is
// on CPU nodes; with the seeds' density order every GPU node stays
// performance.
func TestDemandSpreadLetsEcoReachGPUNodes(t *testing.T) {
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for _, n := range []string{"c1", "c2", "c3", "c4", "c5", "c6"} {
		nodes = append(nodes, plantest.CPUNode(n, nil))
	}
	for _, n := range []string{"g1", "g2", "g3", "g4"} {
		nodes = append(nodes, plantest.GPUNode(n, 8, nil))
	}
	// Performance work on three CPU nodes, whole nodes of it.
	for _, n := range []string{"c1", "c2", "c3"} {
		pods = append(pods, plantest.Requesting("perf-"+n, n, "192", "", joulie.WorkloadClassPerformance, corev1.PodRunning))
	}
	in := Inputs{Now: t0, Nodes: nodes, PerfPods: CountPerformancePods(pods), Loads: PodLoads(pods)}
	perfGPU := func(spread string) int {
		s := params(PolicyQueueAware) // 0.6 × 10 = 6 performance nodes
		s.Spread = spread
		n := 0
		for _, p := range Compute(in, s).Nodes {
			if p.Planned == joulie.ProfilePerformance && p.View.GPUCount > 0 {
				n++
			}
		}
		return n
	}
	if n := perfGPU(""); n != 4 {
		t.Errorf("density order: %d GPU nodes planned performance, want all 4", n)
	}
	// The floor gives each family one; the other four go to the family
	// with the demand.
	if n := perfGPU("demand"); n != 1 {
		t.Errorf("demand spread: %d GPU nodes planned performance, want the floor's 1", n)
	}
}

// What the cap that pays chooses for the energy benchmark's nodes at its
// load levels, from the utilization model of standard pods (no agent
// reading): a CPU node, 2 × EPYC 9654, whose pods request that share of
// its 192 cores, and a GPU node, 8 × H100 with the same host, whose pods
// request that share of its GPUs with 12 cores each. The CPU node stays
// uncapped until its draw passes the 530.7 W optimum: at 60% it models to
// 513.6 W, over the 480 W eco cap but under the optimum. The GPU node's
// host is never capped (its GPUs wait for it); its busy GPUs model to
// 490 W each, over the 420 W eco cap, and the optimum lies deeper.
func TestCapsOfTheBenchmarkNodes(t *testing.T) {
	for _, tc := range []struct {
		load            float64
		cpuNode         string // CPU node's CPU choice
		gpuHost, gpuGPU string // GPU node's choices
	}{
		{0.2, "not-binding 100", "not-binding 100", "floor 60"},
		{0.4, "not-binding 100", "not-binding 100", "floor 60"},
		{0.6, "not-paying 100", "not-binding 100", "floor 60"},
		{1.0, "optimum 67", "not-binding 100", "floor 60"},
	} {
		cores := fmt.Sprint(int(tc.load * 192))
		gpus := int(tc.load * 8)
		pods := []*corev1.Pod{plantest.Requesting("cpu-job", "cpu", cores, "", "", corev1.PodRunning)}
		for i := range gpus {
			pods = append(pods, plantest.Requesting(fmt.Sprint("gpu-job-", i), "gpu", "12", "1", "", corev1.PodRunning))
		}
		in := Inputs{Now: t0, Nodes: []*corev1.Node{plantest.CPUNode("cpu", nil), plantest.GPUNode("gpu", 8, nil)}, Loads: PodLoads(pods)}
		s := params(PolicyStaticPartition)
		s.StaticHPFrac, s.CapMode = 0, CapModePays
		got := byName(Compute(in, s))
		choice := func(c *ecocap.Choice) string {
			pct := c.PctOfMax
			if !c.Capped() {
				pct = 100
			}
			return fmt.Sprintf("%s %g", c.Kind, pct)
		}
		cpu, gpu := got["cpu"].Caps, got["gpu"].Caps
		if g := choice(cpu.CPU); g != tc.cpuNode {
			t.Errorf("load %v: CPU node %s (draw %.1f W), want %s", tc.load, g, cpu.CPUDraw.Watts, tc.cpuNode)
		}
		if g := choice(gpu.CPU); g != tc.gpuHost {
			t.Errorf("load %v: GPU node's host %s (draw %.1f W), want %s", tc.load, g, gpu.CPUDraw.Watts, tc.gpuHost)
		}
		if g := choice(gpu.GPU); g != tc.gpuGPU {
			t.Errorf("load %v: GPU node's GPUs %s (draw %.1f W), want %s", tc.load, g, gpu.GPUDraw.Watts, tc.gpuGPU)
		}
		t.Logf("load %.0f%%: CPU node %.1f W → %s; GPU node host %.1f W → %s, GPUs %.1f W → %s",
			tc.load*100, cpu.CPUDraw.Watts, cpu.CPU.Reason, gpu.CPUDraw.Watts, gpu.CPU.Reason, gpu.GPUDraw.Watts, gpu.GPU.Reason)
	}
}

// The agent's CPU and GPU parts on a GPU node: busy GPUs held at their
// 60% cap stay capped; busy GPUs drawing under it are left uncapped.
func TestCapThatPaysFromTheAgentsParts(t *testing.T) {
	eco := map[string]string{joulie.LabelPowerProfile: "eco"}
	nodes := []*corev1.Node{plantest.GPUNode("held", 8, eco), plantest.GPUNode("light", 8, eco)}
	var pods []*corev1.Pod
	for i := range 8 {
		pods = append(pods, plantest.Requesting(fmt.Sprint("h", i), "held", "12", "1", "", corev1.PodRunning),
			plantest.Requesting(fmt.Sprint("l", i), "light", "12", "1", "", corev1.PodRunning))
	}
	parts := func(name string, cpuW, gpuW, gpuPct float64) *joulie.NodePowerProfile {
		p := measured(name, cpuW+gpuW, 0)
		p.Status.MeasuredPower.CPUPowerWatts, p.Status.MeasuredPower.GPUPowerWatts = &cpuW, &gpuW
		p.Spec = joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco, GPU: &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: &gpuPct}}}
		return p
	}
	in := Inputs{Now: t0, Nodes: nodes, Loads: PodLoads(pods), Profiles: map[string]*joulie.NodePowerProfile{
		"held":  parts("held", 300, 8*415, 60), // 415 W a GPU under a 420 W cap
		"light": parts("light", 300, 8*259, 100),
	}}
	s := params(PolicyStaticPartition)
	s.StaticHPFrac, s.CapMode = 0, CapModePays
	got := byName(Compute(in, s))
	if g := got["held"].Caps; g.GPU.Kind != ecocap.KindFloor || !g.GPUDraw.AtLeast || g.CPUDraw.Watts != 300 {
		t.Errorf("held: %+v, draws %+v %+v; want the floor from a held reading and the agent's CPU part", g.GPU, g.GPUDraw, g.CPUDraw)
	}
	if g := got["light"].Caps; g.GPU.Kind != ecocap.KindNotBinding || g.GPUDraw.Watts != 8*259 {
		t.Errorf("light: %+v, draw %+v; want uncapped under the eco cap", g.GPU, g.GPUDraw)
	}
}
