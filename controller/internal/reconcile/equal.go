package reconcile

import (
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Field-by-field comparisons of what the controller writes. A reconcile
// compares every node's spec and twin; reflection-based deep equality cost
// more than the planning itself at 5,000 nodes.

func specEqual(a, b joulie.NodePowerProfileSpec) bool {
	if a.Profile != b.Profile || (a.CPU == nil) != (b.CPU == nil) || (a.GPU == nil) != (b.GPU == nil) {
		return false
	}
	if a.CPU != nil && !(ptrEqual(a.CPU.PackagePowerCapWatts, b.CPU.PackagePowerCapWatts) &&
		ptrEqual(a.CPU.PackagePowerCapPctOfMax, b.CPU.PackagePowerCapPctOfMax) && a.CPU.Reason == b.CPU.Reason) {
		return false
	}
	if a.GPU != nil {
		if a.GPU.Reason != b.GPU.Reason {
			return false
		}
		x, y := a.GPU.PowerCap, b.GPU.PowerCap
		if (x == nil) != (y == nil) {
			return false
		}
		if x != nil && !(ptrEqual(x.CapWattsPerGpu, y.CapWattsPerGpu) && ptrEqual(x.CapPctOfMax, y.CapPctOfMax)) {
			return false
		}
	}
	return true
}

// twinEqual compares twin statuses, ignoring lastUpdated.
func twinEqual(a, b joulie.NodeTwinStatus) bool {
	if a.SchedulableClass != b.SchedulableClass || a.PredictedPowerHeadroomScore != b.PredictedPowerHeadroomScore ||
		a.PredictedCoolingStressScore != b.PredictedCoolingStressScore || a.PredictedPsuStressScore != b.PredictedPsuStressScore ||
		a.HardwareDensityScore != b.HardwareDensityScore || !ptrEqual(a.EstimatedPUE, b.EstimatedPUE) {
		return false
	}
	if (a.PowerMeasurement == nil) != (b.PowerMeasurement == nil) {
		return false
	}
	return a.PowerMeasurement == nil || *a.PowerMeasurement == *b.PowerMeasurement
}

func ptrEqual(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
