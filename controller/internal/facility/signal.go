package facility

import (
	"fmt"
	"math"
)

// absoluteZeroC is the one temperature no sensor can report.
const absoluteZeroC = -273.15

// signal is one facility quantity: how to query it, how to check one
// series' value, and how to fold several series into one number.
type signal struct {
	// name is the query label of joulie_facility_poll_errors_total.
	name    string
	expr    string
	check   func(float64) error
	combine func([]float64) float64
	// field is where the signal's last good value lives in a Reading.
	field func(*Reading) **float64
}

// Indices of the signals in Poller.signals.
const (
	sigAmbient = iota
	sigITPower
	sigCooling
	numSignals
)

func signals(cfg Config) [numSignals]signal {
	return [numSignals]signal{
		sigAmbient: {
			name: "ambient_temperature", expr: cfg.AmbientTempQuery,
			// Negative is a real outdoor or free-cooling intake reading in
			// winter; only non-numbers and the impossible are refused.
			check: func(v float64) error {
				if err := finite(v); err != nil {
					return err
				}
				if v < absoluteZeroC {
					return fmt.Errorf("%g °C is below absolute zero", v)
				}
				return nil
			},
			// Several sensors (rooms, rows, inlets): the hottest one is
			// where cooling runs out first, and the twin's cooling model
			// is meant to err on the side of stress, so max rather than
			// a mean that hides a hot aisle.
			combine: maxOf,
			field:   func(r *Reading) **float64 { return &r.AmbientTempC },
		},
		sigITPower: {
			name: "it_power", expr: cfg.ITPowerQuery,
			// PUE divides by IT power: zero is a dead meter, not a
			// facility that draws nothing while the controller runs on it.
			check: func(v float64) error {
				if err := finite(v); err != nil {
					return err
				}
				if v <= 0 {
					return fmt.Errorf("%g W: IT power must be positive", v)
				}
				return nil
			},
			// Several series are meters of parts (PDUs, rooms) that add
			// up to the facility's draw.
			combine: sum,
			field:   func(r *Reading) **float64 { return &r.ITPowerW },
		},
		sigCooling: {
			name: "cooling_power", expr: cfg.CoolingPowerQuery,
			// Zero is legitimate (free cooling with the fans off).
			check: func(v float64) error {
				if err := finite(v); err != nil {
					return err
				}
				if v < 0 {
					return fmt.Errorf("%g W: power cannot be negative", v)
				}
				return nil
			},
			combine: sum,
			field:   func(r *Reading) **float64 { return &r.CoolingPowerW },
		},
	}
}

// value checks every series and folds them. One bad series refuses the
// whole signal: a sum or a max over the others would be quietly wrong,
// while the last good value is known to be right as of its time.
func (s *signal) value(samples []sample) (float64, error) {
	vals := make([]float64, len(samples))
	for i, smp := range samples {
		if err := s.check(smp.value); err != nil {
			if len(smp.labels) == 0 {
				return 0, err
			}
			return 0, fmt.Errorf("series %s: %w", smp.series(), err)
		}
		vals[i] = smp.value
	}
	v := s.combine(vals)
	if err := finite(v); err != nil {
		return 0, fmt.Errorf("%d series add up to %g", len(vals), v)
	}
	return v, nil
}

func finite(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("value %g is not a usable number", v)
	}
	return nil
}

func sum(vs []float64) float64 {
	var t float64
	for _, v := range vs {
		t += v
	}
	return t
}

func maxOf(vs []float64) float64 {
	m := vs[0]
	for _, v := range vs[1:] {
		m = math.Max(m, v)
	}
	return m
}
