package backend

import (
	"fmt"
	"math"
)

// MicrowattsPerWatt converts the units GPU drivers and RAPL use.
const MicrowattsPerWatt = 1_000_000

// Microwatts is an integer microwatt figure as drivers report it.
type Microwatts interface{ ~int64 | ~uint64 }

// ClampWholeWatts rounds watts to a whole watt and clamps it to [lo, hi]
// microwatts. The comparison is in floating point so that no request,
// however large, can overflow the integer type.
func ClampWholeWatts[T Microwatts](watts float64, lo, hi T) T {
	uw := math.Round(watts) * MicrowattsPerWatt
	switch {
	case uw <= float64(lo):
		return lo
	case uw >= float64(hi):
		return hi
	}
	return T(uw)
}

// WholeWattRange narrows [lo, hi] microwatts to the whole watts inside it,
// the only caps AMD GPUs hold, and never below 1 W: a device that reports
// no minimum must not be sent a zero cap. A range narrower than a watt is
// kept as is.
func WholeWattRange[T Microwatts](lo, hi T) (T, T) {
	wlo := max((lo+MicrowattsPerWatt-1)/MicrowattsPerWatt*MicrowattsPerWatt, MicrowattsPerWatt)
	whi := hi / MicrowattsPerWatt * MicrowattsPerWatt
	if wlo > whi {
		return lo, hi
	}
	return wlo, whi
}

// CheckTarget refuses a cap request no device could hold (NaN, infinite,
// zero or negative watts), naming what was to be capped.
func CheckTarget(what string, watts float64) error {
	if math.IsNaN(watts) || math.IsInf(watts, 0) || watts <= 0 {
		return fmt.Errorf("set power cap of %s: %v W is not a usable limit", what, watts)
	}
	return nil
}
