package enforce

import (
	"math"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// CPUIntent is a resolved CPU target.
type CPUIntent struct {
	// None: the target asks for no CPU cap.
	None bool
	// Watts per package, when the target resolves to watts.
	Watts float64
	// HasWatts reports whether Watts is valid.
	HasWatts bool
	// Pct is the requested percentage of max, when the target gave one.
	Pct float64
	// HasPct reports whether Pct is valid.
	HasPct bool
}

// ResolveCPU resolves a CPU target against the per-package maximum
// (0 when unknown). Absolute watts win over a percentage, as the API says.
func ResolveCPU(t *joulie.CPUPowerTarget, maxWattsPerPackage float64) CPUIntent {
	if t == nil || (t.PackagePowerCapWatts == nil && t.PackagePowerCapPctOfMax == nil) {
		return CPUIntent{None: true}
	}
	var in CPUIntent
	if p := t.PackagePowerCapPctOfMax; p != nil && finite(*p) {
		in.Pct, in.HasPct = clamp(*p, 0, 100), true
	}
	if w := t.PackagePowerCapWatts; w != nil && finite(*w) && *w >= 0 {
		in.Watts, in.HasWatts = *w, true
		return in
	}
	if in.HasPct && maxWattsPerPackage > 0 && finite(maxWattsPerPackage) {
		in.Watts, in.HasWatts = in.Pct/100*maxWattsPerPackage, true
	}
	if !in.HasWatts && !in.HasPct {
		return CPUIntent{None: true}
	}
	return in
}

// ThrottleForPct is the DVFS percent path: a cap of pct percent of max
// throttles the remaining 100-pct percent of the CPUs. Throttled CPUs run
// at their lowest frequency, so this over-delivers savings rather than
// under-delivering them when power cannot be measured.
func ThrottleForPct(pct float64) float64 {
	return clamp(100-pct, 0, 100)
}

// ResolveGPU returns the cap for one device: capWattsPerGpu when set, else
// capPctOfMax of the device's maximum; ok is false when the target asks for
// nothing or the percentage has no maximum to apply to.
func ResolveGPU(t *joulie.GPUPowerTarget, deviceMaxWatts float64) (watts float64, ok bool) {
	if t == nil || t.PowerCap == nil {
		return 0, false
	}
	if w := t.PowerCap.CapWattsPerGpu; w != nil && finite(*w) && *w >= 0 {
		return *w, true
	}
	if p := t.PowerCap.CapPctOfMax; p != nil && finite(*p) && deviceMaxWatts > 0 {
		return clamp(*p, 0, 100) / 100 * deviceMaxWatts, true
	}
	return 0, false
}

// GPUAsksForCap reports whether a GPU target asks for any cap.
func GPUAsksForCap(t *joulie.GPUPowerTarget) bool {
	return t != nil && t.PowerCap != nil && (t.PowerCap.CapWattsPerGpu != nil || t.PowerCap.CapPctOfMax != nil)
}

func clamp(v, lo, hi float64) float64 {
	return math.Min(math.Max(v, lo), hi)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
