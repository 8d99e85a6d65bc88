// Package twin is the pure, O(1) parametric digital-twin model for one node.
//
// It turns hardware limits, cap percentages and a few facility signals into
// the scores the scheduler extender ranks nodes with (cooling stress, PSU
// stress, headroom) plus the cap-based power budget. There is no I/O here:
// every function takes values and returns values.
//
// Input hygiene: any watt, temperature or capacity value that is NaN or
// infinite, and any negative watt value or count, is treated as "absent"
// (0 W, or the documented default), so no output is ever NaN and every score
// stays within 0..100.
package twin

import "math"

// Defaults of the twin model (see the digital-twin seed).
const (
	DefaultReferenceNodePowerW    = 4000.0  // reference node draw that scores Scale at baseline temperature
	DefaultCoolingScale           = 80.0    // score given to a node drawing the reference power
	DefaultTempBaselineC          = 20.0    // ambient temperature with no thermal penalty
	DefaultPerDegree              = 0.5     // penalty points per °C above the baseline
	DefaultReferenceRackCapacityW = 50000.0 // PDU/rack capacity PSU stress is measured against
	DefaultCapPct                 = 100.0   // cap used when a cap percentage is unset
)

// CoolingModel predicts how much of a node's cooling capacity is in use,
// as a score in 0..100, from its estimated power draw and ambient temperature.
type CoolingModel interface {
	CoolingStress(nodePowerW, ambientTempC float64) float64
}

// LinearCoolingModel is the default algebraic cooling proxy:
//
//	stress = nodePowerW/ReferenceNodePowerW*Scale + max(0, ambient-TempBaselineC)*PerDegree
//
// clamped to 0..100. The zero value behaves like DefaultLinearCoolingModel.
// A non-positive or non-finite ReferenceNodePowerW falls back to the default,
// as do non-finite values of the other fields.
type LinearCoolingModel struct {
	ReferenceNodePowerW float64
	Scale               float64
	TempBaselineC       float64
	PerDegree           float64
}

// DefaultLinearCoolingModel returns the model with the seed's parameters.
func DefaultLinearCoolingModel() LinearCoolingModel {
	return LinearCoolingModel{
		ReferenceNodePowerW: DefaultReferenceNodePowerW,
		Scale:               DefaultCoolingScale,
		TempBaselineC:       DefaultTempBaselineC,
		PerDegree:           DefaultPerDegree,
	}
}

// CoolingStress implements CoolingModel. A non-finite or negative power is
// treated as 0 W; a NaN or -Inf temperature adds no thermal penalty, +Inf
// saturates the score at 100.
func (m LinearCoolingModel) CoolingStress(nodePowerW, ambientTempC float64) float64 {
	if m == (LinearCoolingModel{}) {
		m = DefaultLinearCoolingModel()
	}
	ref := m.ReferenceNodePowerW
	if !finite(ref) || ref <= 0 {
		ref = DefaultReferenceNodePowerW
	}
	scale := orDefault(m.Scale, DefaultCoolingScale)
	base := orDefault(m.TempBaselineC, DefaultTempBaselineC)
	perDeg := orDefault(m.PerDegree, DefaultPerDegree)

	stress := nonNegWatts(nodePowerW) / ref * scale
	if !math.IsNaN(ambientTempC) {
		if over := ambientTempC - base; over > 0 {
			stress += over * perDeg
		}
	}
	return clampScore(stress)
}

// Input holds everything the twin needs to evaluate one node.
type Input struct {
	CPUMaxWattsPerSocket float64 // max package power per CPU socket (W)
	Sockets              int     // number of CPU sockets
	GPUMaxWatts          float64 // max power of a single GPU (W)
	GPUCount             int     // number of GPUs
	// CPUCapPct and GPUCapPct are the resolved cap percentages of max.
	// 0 (unset), negative or non-finite means 100 (uncapped); values above
	// 100 are clamped to 100.
	CPUCapPct float64
	GPUCapPct float64
	// AmbientTempC is the ambient (inlet) temperature in °C.
	AmbientTempC float64
	// ClusterTotalPowerW is the aggregated power draw of the rack/cluster.
	ClusterTotalPowerW float64
	// ReferenceRackCapacityW is the PDU/rack capacity; 0, negative or
	// non-finite means DefaultReferenceRackCapacityW (50 kW).
	ReferenceRackCapacityW float64
}

// Output is the twin's prediction for one node. Scores are in 0..100;
// powers are in watts. NodePowerW equals NodeCappedPowerW: the twin plans
// with what the node may draw at its caps, not with live telemetry.
type Output struct {
	NodePowerW       float64
	CoolingStress    float64
	PSUStress        float64
	Headroom         float64
	CPUCappedPowerW  float64
	GPUCappedPowerW  float64
	NodeCappedPowerW float64
	CPUTdpW          float64
	GPUTdpW          float64
	NodeTdpW         float64
}

// Compute evaluates the twin for one node. A nil model means
// DefaultLinearCoolingModel. A model returning NaN is read as 100 (the
// conservative choice: an unknown thermal state leaves no headroom).
//
// Cap factor: the seed averages the CPU and GPU caps. That average is only
// meaningful when the node has both kinds of device. A node without GPUs
// (GPUCount or GPUMaxWatts zero) uses the CPU cap alone, and a node without
// CPU power data uses the GPU cap alone; otherwise a GPU cap that limits
// nothing (default 100) would make an eco CPU-only node at 60% look like
// 80% uncapped and rank it above an equally capped GPU node. A node with
// neither uses the average, which is 1 with default caps.
func Compute(in Input, m CoolingModel) Output {
	if m == nil {
		m = DefaultLinearCoolingModel()
	}
	cpuCap := capPct(in.CPUCapPct)
	gpuCap := capPct(in.GPUCapPct)

	var out Output
	out.CPUTdpW = nonNegWatts(in.CPUMaxWattsPerSocket) * float64(nonNegCount(in.Sockets))
	out.GPUTdpW = nonNegWatts(in.GPUMaxWatts) * float64(nonNegCount(in.GPUCount))
	out.NodeTdpW = out.CPUTdpW + out.GPUTdpW
	out.CPUCappedPowerW = out.CPUTdpW * cpuCap / 100
	out.GPUCappedPowerW = out.GPUTdpW * gpuCap / 100
	out.NodeCappedPowerW = out.CPUCappedPowerW + out.GPUCappedPowerW
	out.NodePowerW = out.NodeCappedPowerW

	cs := m.CoolingStress(out.NodePowerW, in.AmbientTempC)
	if math.IsNaN(cs) {
		cs = 100
	}
	out.CoolingStress = clampScore(cs)

	out.PSUStress = PSUStress(in.ClusterTotalPowerW, in.ReferenceRackCapacityW)

	hasCPU, hasGPU := out.CPUTdpW > 0, out.GPUTdpW > 0
	var capFactor float64
	switch {
	case hasCPU && !hasGPU:
		capFactor = cpuCap / 100
	case hasGPU && !hasCPU:
		capFactor = gpuCap / 100
	default:
		capFactor = (cpuCap + gpuCap) / 200
	}
	coolingFactor := 1 - out.CoolingStress/100
	out.Headroom = clampScore(capFactor * coolingFactor * 100)
	return out
}

// PSUStress is the cluster's power draw against the rack capacity, in
// 0..100; a rack capacity that is 0, negative or not finite means
// DefaultReferenceRackCapacityW. Callers that learn the cluster total only
// after computing every node can set Output.PSUStress with it.
func PSUStress(clusterTotalPowerW, rackCapacityW float64) float64 {
	if !finite(rackCapacityW) || rackCapacityW <= 0 {
		rackCapacityW = DefaultReferenceRackCapacityW
	}
	return clampScore(nonNegWatts(clusterTotalPowerW) / rackCapacityW * 100)
}

// PUE returns the power usage effectiveness (IT+cooling)/IT. ok is false
// when IT power is not positive, when either input is not finite, or when
// cooling power is negative.
func PUE(itPowerW, coolingPowerW float64) (float64, bool) {
	if !finite(itPowerW) || !finite(coolingPowerW) || itPowerW <= 0 || coolingPowerW < 0 {
		return 0, false
	}
	return (itPowerW + coolingPowerW) / itPowerW, true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func orDefault(v, def float64) float64 {
	if !finite(v) {
		return def
	}
	return v
}

// nonNegWatts maps NaN, ±Inf and negative values to 0.
func nonNegWatts(v float64) float64 {
	if !finite(v) || v < 0 {
		return 0
	}
	return v
}

func nonNegCount(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

// capPct resolves a cap percentage: unset/invalid → 100, above 100 → 100.
func capPct(v float64) float64 {
	if !finite(v) || v <= 0 || v > 100 {
		return DefaultCapPct
	}
	return v
}

// clampScore clamps to 0..100; NaN becomes 0.
func clampScore(v float64) float64 {
	switch {
	case math.IsNaN(v), v < 0:
		return 0
	case v > 100:
		return 100
	}
	return v
}
