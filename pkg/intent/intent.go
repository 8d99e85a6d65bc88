// Package intent turns a planned profile into the NodePowerProfile spec the
// agent enforces, with the operator seed's knobs: percentage or absolute
// CPU caps, percentage GPU caps and, where a GPU model's range is known,
// absolute watts per GPU next to the percentage. It is a pure function of
// its configuration and the node's hardware view: nothing here reads the
// API, the clock or the network.
package intent

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/ecocap"
)

// ModelCaps is one entry of GPU_MODEL_CAPS_JSON (the controller's
// gpu.modelCapsJSON): the power-limit range of
// a GPU product, in watts per GPU.
type ModelCaps struct {
	MinCapWatts float64 `json:"minCapWatts"`
	MaxCapWatts float64 `json:"maxCapWatts"`
}

// Config holds the power-intent knobs.
type Config struct {
	CPUWriteAbsoluteCaps      bool    // CPU_WRITE_ABSOLUTE_CAPS
	CPUPerformanceCapPctOfMax float64 // CPU_PERFORMANCE_CAP_PCT_OF_MAX
	CPUEcoCapPctOfMax         float64 // CPU_ECO_CAP_PCT_OF_MAX
	PerformanceCapWatts       float64 // PERFORMANCE_CAP_WATTS, per CPU package
	EcoCapWatts               float64 // ECO_CAP_WATTS, per CPU package

	GPUWriteAbsoluteCaps      bool    // GPU_WRITE_ABSOLUTE_CAPS
	GPUPerformanceCapPctOfMax float64 // GPU_PERFORMANCE_CAP_PCT_OF_MAX
	GPUEcoCapPctOfMax         float64 // GPU_ECO_CAP_PCT_OF_MAX
	// GPUModelCaps maps a GPU product name (as its product label or the
	// hardware view shows it) to its cap range (GPU_MODEL_CAPS_JSON).
	GPUModelCaps map[string]ModelCaps
	// GPUProductLabelKeys are the node labels that name the GPU product,
	// tried in order (GPU_PRODUCT_LABEL_KEYS).
	GPUProductLabelKeys []string
}

// Default is SPEC.md's defaults: performance at 100%, eco at 60% for CPU
// and GPU, percentages rather than watts.
func Default() Config {
	return Config{
		CPUPerformanceCapPctOfMax: 100, CPUEcoCapPctOfMax: 60,
		GPUPerformanceCapPctOfMax: 100, GPUEcoCapPctOfMax: 60,
		GPUProductLabelKeys: []string{"nvidia.com/gpu.product", "amd.com/gpu.product"},
	}
}

// ParseModelCaps parses GPU_MODEL_CAPS_JSON: an object from product name to
// {"minCapWatts": W, "maxCapWatts": W}, with 0 <= min <= max and max > 0.
func ParseModelCaps(data []byte) (map[string]ModelCaps, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var m map[string]ModelCaps
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("want {\"<product>\": {\"minCapWatts\": W, \"maxCapWatts\": W}}: %w", err)
	}
	for name, c := range m {
		if strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("an entry has an empty product name")
		}
		if !(c.MaxCapWatts > 0) || c.MinCapWatts < 0 || c.MinCapWatts > c.MaxCapWatts || math.IsInf(c.MaxCapWatts, 0) {
			return nil, fmt.Errorf("%q: want 0 <= minCapWatts <= maxCapWatts and maxCapWatts > 0, got %v..%v", name, c.MinCapWatts, c.MaxCapWatts)
		}
	}
	return m, nil
}

// Node is what intent needs to know of a node.
type Node struct {
	Labels map[string]string
	// CPUMaxWattsPerSocket is the package's maximum (for percentages of
	// absolute caps); 0 when unknown.
	CPUMaxWattsPerSocket float64
	// GPUCount is the number of GPUs; 0 means no GPU target is written.
	GPUCount int
	// GPUProduct is the GPU's product name from the hardware view, used
	// when no product label names it.
	GPUProduct string
	// CPUCap and GPUCap, when set, replace the configured eco caps of an
	// eco node with the cap that pays (pkg/ecocap): its percentage when
	// capped, the performance cap when not, and its reason.
	CPUCap, GPUCap *ecocap.Choice
}

// Spec is the NodePowerProfile spec for profile on node n.
func (c Config) Spec(profile joulie.Profile, n Node) joulie.NodePowerProfileSpec {
	eco := profile == joulie.ProfileEco
	spec := joulie.NodePowerProfileSpec{Profile: profile, CPU: &joulie.CPUPowerTarget{}}
	// The cap that pays applies to eco nodes only; a performance node is
	// never capped below its performance cap.
	cpuChoice, gpuChoice := n.CPUCap, n.GPUCap
	if !eco {
		cpuChoice, gpuChoice = nil, nil
	}
	if c.CPUWriteAbsoluteCaps {
		w := c.PerformanceCapWatts
		if eco {
			w = c.EcoCapWatts
		}
		if ch := cpuChoice; ch != nil {
			switch {
			case !ch.Capped():
				w = c.PerformanceCapWatts
			case n.CPUMaxWattsPerSocket > 0:
				w = round1(ch.PctOfMax / 100 * n.CPUMaxWattsPerSocket)
			}
		}
		spec.CPU.PackagePowerCapWatts = ptr(w)
	} else {
		pct := c.CPUPerformanceCapPctOfMax
		if eco {
			pct = c.CPUEcoCapPctOfMax
		}
		if ch := cpuChoice; ch != nil {
			pct = c.CPUPerformanceCapPctOfMax
			if ch.Capped() {
				pct = ch.PctOfMax
			}
		}
		spec.CPU.PackagePowerCapPctOfMax = ptr(pct)
	}
	if cpuChoice != nil {
		spec.CPU.Reason = cpuChoice.Reason
	}
	if n.GPUCount > 0 {
		pct := c.GPUPerformanceCapPctOfMax
		if eco {
			pct = c.GPUEcoCapPctOfMax
		}
		if ch := gpuChoice; ch != nil {
			pct = c.GPUPerformanceCapPctOfMax
			if ch.Capped() {
				pct = ch.PctOfMax
			}
		}
		gcap := &joulie.GPUPowerCap{CapPctOfMax: ptr(pct)}
		if c.GPUWriteAbsoluteCaps {
			if mc, ok := c.modelCaps(n); ok {
				gcap.CapWattsPerGpu = ptr(round1(math.Min(math.Max(mc.MaxCapWatts*pct/100, mc.MinCapWatts), mc.MaxCapWatts)))
			}
		}
		spec.GPU = &joulie.GPUPowerTarget{PowerCap: gcap}
		if gpuChoice != nil {
			spec.GPU.Reason = gpuChoice.Reason
		}
	}
	return spec
}

// modelCaps finds the node's GPU product in GPUModelCaps: first by the
// product labels, in order, then by the hardware view's product name.
func (c Config) modelCaps(n Node) (ModelCaps, bool) {
	for _, k := range c.GPUProductLabelKeys {
		if v := n.Labels[k]; v != "" {
			if mc, ok := c.GPUModelCaps[v]; ok {
				return mc, true
			}
		}
	}
	mc, ok := c.GPUModelCaps[n.GPUProduct]
	return mc, ok && n.GPUProduct != ""
}

// CapPcts is the cap a spec sets, as percentages of the maximum, for the
// twin: absolute CPU watts are related to the package maximum, and a
// missing target means uncapped (100).
func CapPcts(spec joulie.NodePowerProfileSpec, n Node) (cpuPct, gpuPct float64) {
	cpuPct, gpuPct = 100, 100
	if t := spec.CPU; t != nil {
		switch {
		case t.PackagePowerCapPctOfMax != nil:
			cpuPct = *t.PackagePowerCapPctOfMax
		case t.PackagePowerCapWatts != nil && n.CPUMaxWattsPerSocket > 0:
			cpuPct = math.Min(100, *t.PackagePowerCapWatts/n.CPUMaxWattsPerSocket*100)
		}
	}
	if t := spec.GPU; t != nil && t.PowerCap != nil && t.PowerCap.CapPctOfMax != nil {
		gpuPct = *t.PowerCap.CapPctOfMax
	}
	return cpuPct, gpuPct
}

func ptr(v float64) *float64 { return &v }

func round1(v float64) float64 { return math.Round(v*10) / 10 }
