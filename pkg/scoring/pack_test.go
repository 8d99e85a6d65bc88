package scoring

import (
	"math"
	"testing"
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/powerest"
)

// packParams are the defaults: pack mode.
func packParams() *Params {
	p := DefaultParams()
	return &p
}

// cpuFill and gpuFill are the allocatable of a 64-core CPU node and of a
// 128-core node with 8 GPUs, with requested already reserved.
func cpuFill(requested float64) Fill { return Fill{AllocatableCPU: 64, RequestedCPU: requested} }

func gpuFill(requestedCPU, requestedGPUs float64) Fill {
	return Fill{AllocatableCPU: 128, RequestedCPU: requestedCPU, AllocatableGPUs: 8, RequestedGPUs: requestedGPUs}
}

// The fill term, case by case. The fill is what the node would have
// reserved with the pod on it; GPUs weigh GPUFillWeight (5) against
// CPU's 1, and a pod that asks for none fills none of them.
func TestPackFill(t *testing.T) {
	cpu8 := powerest.Demand{CPUCores: 8}
	gpuPod := powerest.Demand{CPUCores: 16, GPUs: 2}
	tests := []struct {
		name       string
		demand     powerest.Demand
		fill       Fill
		cpu, gpu   float64
		gpuCounted bool
		known      bool
		want       float64
	}{
		{"empty node: only the pod", cpu8, cpuFill(0), 12.5, 0, false, true, 12.5},
		{"half-full node", cpu8, cpuFill(24), 50, 0, false, true, 50},
		{"full node after the pod", cpu8, cpuFill(56), 100, 0, false, true, 100},
		{"over-committed node counts as full", cpu8, cpuFill(80), 100, 0, false, true, 100},
		{"pod with no requests: the node's own fill", powerest.Demand{}, cpuFill(16), 25, 0, false, true, 25},
		{"pod with no requests on an empty node", powerest.Demand{}, cpuFill(0), 0, 0, false, true, 0},
		// (32/128 × 1 + 4/8 × 5) / 6 = (25 + 250) / 6.
		{"GPU pod on a GPU node", gpuPod, gpuFill(16, 2), 25, 50, true, true, (25.0 + 50*5) / 6},
		// CPU 24/64 = 37.5, GPUs none: (37.5 + 0) / 6.
		{"GPU pod on a CPU node", gpuPod, cpuFill(8), 37.5, 0, true, true, 37.5 / 6},
		// A CPU pod fills none of a GPU node's GPUs: (25 + 0) / 6.
		{"CPU pod on a GPU node", cpu8, gpuFill(24, 6), 25, 0, true, true, 25.0 / 6},
		{"node without allocatable", cpu8, Fill{}, 0, 0, false, false, NeutralScore},
		{"GPU pod, node without allocatable", gpuPod, Fill{RequestedCPU: 4}, 0, 0, false, false, NeutralScore},
		{"GPUs but no CPU allocatable, CPU pod", cpu8, Fill{AllocatableGPUs: 8}, 0, 0, false, false, NeutralScore},
		{"GPUs but no CPU allocatable, GPU pod", gpuPod, Fill{AllocatableGPUs: 8, RequestedGPUs: 2}, 0, 50, true, true, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := packParams()
			b := p.Explain(Pod{Demand: tt.demand}, Cluster{}, measured(joulie.ClassEco, 1000, 500, 20, 0), cpuNode, tt.fill, now)
			if b.Formula != ModePack || b.FillKnown != tt.known || b.GPUCounted != tt.gpuCounted {
				t.Errorf("formula %s, fill known %v, GPUs counted %v; want pack, %v, %v", b.Formula, b.FillKnown, b.GPUCounted, tt.known, tt.gpuCounted)
			}
			if math.Abs(b.CPUFill-tt.cpu) > 1e-9 || math.Abs(b.GPUFill-tt.gpu) > 1e-9 || math.Abs(b.Fill-tt.want) > 1e-9 {
				t.Errorf("CPU fill %v, GPU fill %v, fill %v; want %v, %v, %v", b.CPUFill, b.GPUFill, b.Fill, tt.cpu, tt.gpu, tt.want)
			}
			if want := tt.want*0.7 + 80*0.15 + 10; math.Abs(b.Total-want) > 1e-9 || b.FillTerm != b.Fill*0.7 {
				t.Errorf("total %v, want fill × 0.7 + cooling 12 + eco bonus 10 = %v (%+v)", b.Total, want, b)
			}
		})
	}
}

// A standard pod prefers the fuller node of two it fits on, and a GPU pod
// the GPU node whose GPUs it fills best.
func TestPackPrefersTheFullerNode(t *testing.T) {
	p := packParams()
	eco := measured(joulie.ClassEco, 1000, 500, 20, 0)
	std := Pod{Demand: powerest.Demand{CPUCores: 8}}
	empty := p.Score(std, Cluster{}, eco, cpuNode, cpuFill(0), now)
	half := p.Score(std, Cluster{}, eco, cpuNode, cpuFill(24), now)
	if !(half > empty) {
		t.Errorf("half-full node %v, empty node %v: want the half-full one higher", half, empty)
	}

	gpuPod := Pod{Demand: powerest.Demand{CPUCores: 8, GPUs: 1}}
	// Node a's GPUs are fuller, node b's CPUs: the GPUs decide.
	a := p.Score(gpuPod, Cluster{}, eco, cpuNode, gpuFill(8, 6), now)
	b := p.Score(gpuPod, Cluster{}, eco, cpuNode, gpuFill(96, 1), now)
	cpuOnly := p.Score(gpuPod, Cluster{}, eco, cpuNode, cpuFill(56), now)
	if !(a > b && b > cpuOnly) {
		t.Errorf("GPU pod: fuller GPUs %v, fuller CPUs %v, CPU node %v: want them in that order", a, b, cpuOnly)
	}

	// Between an eco and a performance node of the same fill the eco bonus
	// decides, and performance pressure pushes further off the latter.
	perf := measured(joulie.ClassPerformance, 1000, 500, 20, 0)
	onEco := p.Explain(std, Cluster{PerfPressure: 50}, eco, cpuNode, cpuFill(24), now)
	onPerf := p.Explain(std, Cluster{PerfPressure: 50}, perf, cpuNode, cpuFill(24), now)
	if onEco.ProfileBonus != 10 || onPerf.PressureRelief != -15 || onEco.Total-onPerf.Total != 25 {
		t.Errorf("eco %+v\nperformance %+v\nwant +10 and −15", onEco, onPerf)
	}
}

// In pack-standard mode a performance pod is scored by the design's
// headroom formula, term for term: it goes where the power headroom is,
// however full the node.
func TestPackStandardKeepsHeadroomForPerformancePods(t *testing.T) {
	pack, headroom := packParams(), designParams()
	pack.Mode = ModePackStandard
	pod := Pod{Performance: true, Demand: powerest.Demand{CPUCores: 8}}
	busy := measured(joulie.ClassPerformance, 1000, 800, 20, 30)
	idle := measured(joulie.ClassPerformance, 1000, 100, 20, -30)
	for _, tw := range []*Twin{busy, idle, nil} {
		for _, f := range []Fill{cpuFill(56), cpuFill(0), {}} {
			got := pack.Explain(pod, Cluster{PerfPressure: 40, TrendWPerMin: 100}, tw, cpuNode, f, now)
			want := headroom.Explain(pod, Cluster{PerfPressure: 40, TrendWPerMin: 100}, tw, cpuNode, f, now)
			if got != want || got.Formula != ModeHeadroom {
				t.Errorf("twin %+v, fill %+v:\npack-standard %+v\nheadroom mode %+v", tw, f, got, want)
			}
		}
	}
	full := pack.Score(pod, Cluster{}, busy, cpuNode, cpuFill(48), now)
	empty := pack.Score(pod, Cluster{}, idle, cpuNode, cpuFill(4), now)
	if !(empty > full) {
		t.Errorf("performance pod: busy, fuller node %v, idle emptier node %v; want the idle one higher", full, empty)
	}
}

// In pack mode a performance pod packs too, onto the fullest performance
// node that fits it: spread by headroom, performance pods kept every GPU
// node of the benchmark busy, so none could be parked. It gets neither the
// eco bonus nor the pressure relief, which steer standard pods.
func TestPackPacksPerformancePods(t *testing.T) {
	p := packParams()
	pod := Pod{Performance: true, Demand: powerest.Demand{CPUCores: 8}}
	busy := measured(joulie.ClassPerformance, 1000, 800, 20, 30)
	idle := measured(joulie.ClassPerformance, 1000, 100, 20, -30)
	full := p.Explain(pod, Cluster{PerfPressure: 40}, busy, cpuNode, cpuFill(48), now)
	empty := p.Explain(pod, Cluster{PerfPressure: 40}, idle, cpuNode, cpuFill(4), now)
	if !(full.Total > empty.Total) || full.Formula != ModePack {
		t.Errorf("performance pod: fuller node %+v\nemptier node %+v\nwant the fuller one higher, by the pack formula", full, empty)
	}
	if full.PressureRelief != 0 || full.ProfileBonus != 0 {
		t.Errorf("performance pod got the standard pods' terms: %+v", full)
	}
}

// In pack mode a pod that asks for no GPUs counts a GPU node's GPUs as a
// resource it fills nothing of: it takes the spare cores of a GPU node only
// when no CPU node is nearly as full, so GPU nodes empty and can be
// parked. pack-standard leaves the GPUs out, as kube-scheduler does.
func TestPackKeepsCPUPodsOffGPUNodes(t *testing.T) {
	p := packParams()
	eco := measured(joulie.ClassEco, 1000, 500, 20, 0)
	std := Pod{Demand: powerest.Demand{CPUCores: 8}}
	onGPU := p.Explain(std, Cluster{}, eco, cpuNode, Fill{AllocatableCPU: 64, RequestedCPU: 48, AllocatableGPUs: 8, RequestedGPUs: 2}, now)
	onCPU := p.Explain(std, Cluster{}, eco, cpuNode, cpuFill(8), now)
	if !(onCPU.Total > onGPU.Total) || !onGPU.GPUCounted || onGPU.GPUFill != 0 || onGPU.Fill != 87.5/6 {
		t.Errorf("CPU pod: on a GPU node with 87.5%% of its cores taken %+v\non a CPU node with 25%% %+v\nwant the CPU node higher, the GPUs counted as filled 0", onGPU, onCPU)
	}
	p.Mode = ModePackStandard
	onGPU = p.Explain(std, Cluster{}, eco, cpuNode, Fill{AllocatableCPU: 64, RequestedCPU: 48, AllocatableGPUs: 8, RequestedGPUs: 2}, now)
	onCPU = p.Explain(std, Cluster{}, eco, cpuNode, cpuFill(8), now)
	if !(onGPU.Total > onCPU.Total) || onGPU.GPUCounted {
		t.Errorf("pack-standard, CPU pod: on the GPU node %+v\non the CPU node %+v\nwant the fuller GPU node higher, GPUs left out", onGPU, onCPU)
	}
}

// The pack formula, term by term: no trend bonus, no marginal power.
func TestPackTerms(t *testing.T) {
	p := packParams()
	tw := measured(joulie.ClassPerformance, 1000, 600, 40, -120) // trend would be +20
	b := p.Explain(Pod{Demand: powerest.Demand{CPUCores: 8}}, Cluster{PerfPressure: 20}, tw, cpuNode, cpuFill(24), now)
	want := Breakdown{Formula: ModePack, CPUFill: 50, FillKnown: true, Fill: 50, FillTerm: 35, CoolingTerm: 9, PressureRelief: -6, Total: 38}
	if b != want {
		t.Errorf("breakdown %+v\nwant      %+v", b, want)
	}
}

func TestPackNeutralWithoutAFreshTwin(t *testing.T) {
	p := packParams()
	stale := measured(joulie.ClassEco, 1000, 0, 0, 0)
	stale.LastUpdated = now.Add(-time.Hour)
	for _, tw := range []*Twin{nil, stale} {
		b := p.Explain(Pod{Demand: powerest.Demand{CPUCores: 8}}, Cluster{}, tw, cpuNode, cpuFill(32), now)
		if b.Total != NeutralScore || !b.Neutral || b.Stale != (tw != nil) || b.Formula != ModePack {
			t.Errorf("twin %+v: %+v, want neutral 50", tw, b)
		}
	}
}

func TestMode(t *testing.T) {
	for _, s := range []string{"pack", "pack-standard", "headroom"} {
		var m Mode
		if err := m.UnmarshalText([]byte(s)); err != nil || string(m) != s {
			t.Errorf("UnmarshalText(%q) = %q, %v", s, m, err)
		}
	}
	for _, s := range []string{"", "Pack", "most-allocated", "headroom "} {
		var m Mode
		if err := m.UnmarshalText([]byte(s)); err == nil {
			t.Errorf("UnmarshalText(%q) accepted %q", s, m)
		}
	}
	var m Mode
	err := m.UnmarshalText([]byte("binpack"))
	if err == nil || err.Error() != `unknown scoring mode "binpack": use pack (every pod fills the fullest node that fits it), `+
		`pack-standard (standard pods pack, performance pods by power headroom) or headroom (the design's power-headroom formula for every pod)` {
		t.Errorf("error %v", err)
	}
	if text, _ := Mode("").MarshalText(); string(text) != "pack" {
		t.Errorf("the zero Mode is written %q, want pack", text)
	}
	// The zero Mode scores as pack.
	zero := designParams()
	zero.Mode = ""
	std := Pod{Demand: powerest.Demand{CPUCores: 8}}
	tw := measured(joulie.ClassEco, 1000, 500, 20, 0)
	if a, b := zero.Explain(std, Cluster{}, tw, cpuNode, cpuFill(8), now), packParams().Explain(std, Cluster{}, tw, cpuNode, cpuFill(8), now); a != b {
		t.Errorf("zero Mode %+v\npack      %+v", a, b)
	}
}
