package intent

import (
	"strings"
	"testing"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/ecocap"
)

func TestDefaultsArePercentages(t *testing.T) {
	c := Default()
	eco := c.Spec(joulie.ProfileEco, Node{GPUCount: 8})
	if *eco.CPU.PackagePowerCapPctOfMax != 60 || eco.CPU.PackagePowerCapWatts != nil {
		t.Errorf("eco CPU %+v, want 60%% of max", eco.CPU)
	}
	if *eco.GPU.PowerCap.CapPctOfMax != 60 || eco.GPU.PowerCap.CapWattsPerGpu != nil {
		t.Errorf("eco GPU %+v, want 60%% and no watts", eco.GPU.PowerCap)
	}
	perf := c.Spec(joulie.ProfilePerformance, Node{})
	if *perf.CPU.PackagePowerCapPctOfMax != 100 || perf.GPU != nil {
		t.Errorf("performance on a CPU-only node = %+v, want CPU 100%% and no GPU target", perf)
	}
}

func TestAbsoluteCaps(t *testing.T) {
	models, err := ParseModelCaps([]byte(`{"NVIDIA-H100-80GB-HBM3": {"minCapWatts": 200, "maxCapWatts": 700}, "NVIDIA L4": {"minCapWatts": 40, "maxCapWatts": 72}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.CPUWriteAbsoluteCaps, c.PerformanceCapWatts, c.EcoCapWatts = true, 350, 210
	c.GPUWriteAbsoluteCaps, c.GPUEcoCapPctOfMax = true, 50
	c.GPUModelCaps, c.GPUProductLabelKeys = models, []string{"nvidia.com/gpu.product"}
	// The product label names the model.
	n := Node{Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, GPUCount: 8, CPUMaxWattsPerSocket: 350}
	eco := c.Spec(joulie.ProfileEco, n)
	if *eco.CPU.PackagePowerCapWatts != 210 || eco.CPU.PackagePowerCapPctOfMax != nil {
		t.Errorf("eco CPU %+v, want 210 W", eco.CPU)
	}
	if *eco.GPU.PowerCap.CapWattsPerGpu != 350 || *eco.GPU.PowerCap.CapPctOfMax != 50 {
		t.Errorf("eco GPU %+v, want 350 W next to 50%%", eco.GPU.PowerCap)
	}
	if cpu, gpu := CapPcts(eco, n); cpu != 60 || gpu != 50 {
		t.Errorf("CapPcts = %v, %v; want 60, 50", cpu, gpu)
	}
	// Without a label the hardware view's product name is tried; the
	// minimum bounds a low percentage.
	low := c
	low.GPUEcoCapPctOfMax = 10
	l4 := low.Spec(joulie.ProfileEco, Node{GPUCount: 1, GPUProduct: "NVIDIA L4"})
	if *l4.GPU.PowerCap.CapWattsPerGpu != 40 {
		t.Errorf("10%% of an L4 = %v W, want the 40 W minimum", *l4.GPU.PowerCap.CapWattsPerGpu)
	}
	// An unknown model gets the percentage only.
	unknown := c.Spec(joulie.ProfileEco, Node{GPUCount: 4, GPUProduct: "AMD Instinct MI300X"})
	if unknown.GPU.PowerCap.CapWattsPerGpu != nil {
		t.Errorf("unknown model got watts %v", *unknown.GPU.PowerCap.CapWattsPerGpu)
	}
}

func TestParseModelCapsRefusesBadRanges(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"H100": {"minCapWatts": 800, "maxCapWatts": 700}}`, "H100"},
		{`{"H100": {"max": 700}}`, "want {"},
		{`[1,2]`, "want {"},
	} {
		if _, err := ParseModelCaps([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %s", tc.json, err, tc.want)
		}
	}
}

// The cap that pays replaces the eco caps on an eco node: its percentage
// when it caps, the performance cap when it does not, with its reason;
// a performance node ignores it.
func TestCapThatPaysReplacesEcoCaps(t *testing.T) {
	capped := &ecocap.Choice{PctOfMax: 67, Kind: ecocap.KindOptimum, Reason: "capped at 67%: energy optimum for standard work"}
	free := &ecocap.Choice{Kind: ecocap.KindNotBinding, Reason: "uncapped: draw under the 480 W eco cap"}
	n := Node{GPUCount: 8, CPUMaxWattsPerSocket: 400, CPUCap: capped, GPUCap: free}
	c := Default()
	eco := c.Spec(joulie.ProfileEco, n)
	if *eco.CPU.PackagePowerCapPctOfMax != 67 || eco.CPU.Reason != capped.Reason {
		t.Errorf("eco CPU %+v, want 67%% with its reason", eco.CPU)
	}
	if *eco.GPU.PowerCap.CapPctOfMax != 100 || eco.GPU.Reason != free.Reason {
		t.Errorf("eco GPU %+v (%+v), want the performance cap with its reason", eco.GPU, eco.GPU.PowerCap)
	}
	perf := c.Spec(joulie.ProfilePerformance, n)
	if *perf.CPU.PackagePowerCapPctOfMax != 100 || perf.CPU.Reason != "" || perf.GPU.Reason != "" {
		t.Errorf("performance %+v, want 100%% and no reason", perf.CPU)
	}

	c.CPUWriteAbsoluteCaps, c.PerformanceCapWatts, c.EcoCapWatts = true, 400, 240
	if w := *c.Spec(joulie.ProfileEco, n).CPU.PackagePowerCapWatts; w != 268 {
		t.Errorf("absolute: 67%% of 400 W = %v W, want 268", w)
	}
	n.CPUCap = free
	if w := *c.Spec(joulie.ProfileEco, n).CPU.PackagePowerCapWatts; w != 400 {
		t.Errorf("absolute, uncapped: %v W, want the 400 W performance cap", w)
	}
	n.CPUCap, n.CPUMaxWattsPerSocket = capped, 0
	if w := *c.Spec(joulie.ProfileEco, n).CPU.PackagePowerCapWatts; w != 240 {
		t.Errorf("absolute, no package maximum: %v W, want the 240 W eco cap", w)
	}
}
