package dvfs

import (
	"errors"
	"sync"
	"time"
)

// Actuation carries a throttle percentage to the hardware: Actuator on a
// host, or an HTTP control backend sending dvfs.set_throttle_pct to a
// simulator.
type Actuation interface {
	Apply(throttlePct float64) error
	Reset() error
}

// Regulator runs the controller and applies its throttle every tick. It is
// what the CPU enforcer drives (Regulate, SetThrottlePct, Reset); Last
// may be read concurrently, by the metrics collector.
type Regulator struct {
	mu  sync.Mutex
	ctl *Controller
	act Actuation
}

// NewRegulator validates cfg and returns a regulator with no throttle.
func NewRegulator(cfg Config, act Actuation) (*Regulator, error) {
	if act == nil {
		return nil, errors.New("DVFS regulator needs an actuation")
	}
	ctl, err := NewController(cfg)
	if err != nil {
		return nil, err
	}
	return &Regulator{ctl: ctl, act: act}, nil
}

// Regulate runs one control step from the observed power and the cap and
// applies the resulting throttle, which it returns. The throttle is
// applied on every tick, not only on actions: the actuator writes nothing
// when nothing changed, and retries CPUs whose last write failed.
func (r *Regulator) Regulate(now time.Time, observedW, capW float64) (float64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.ctl.Step(now, observedW, capW)
	return d.ThrottlePct, r.act.Apply(d.ThrottlePct)
}

// SetThrottlePct holds a fixed throttle (the percent fallback path).
func (r *Regulator) SetThrottlePct(pct float64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.ctl.SetThrottlePct(pct)
	return r.act.Apply(d.ThrottlePct)
}

// Reset lifts the throttle on the hardware and clears the controller, for
// the return to RAPL. The controller is cleared even when the hardware
// reset fails, since DVFS is being left either way.
func (r *Regulator) Reset() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctl.Reset()
	return r.act.Reset()
}

// Last is the latest decision, for metrics and status.
func (r *Regulator) Last() Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctl.Last()
}

// The CPU enforcer's Throttler, spelled out here so a change on either side
// fails to compile.
var _ interface {
	Regulate(now time.Time, observedW, capW float64) (float64, error)
	SetThrottlePct(pct float64) error
	Reset() error
} = (*Regulator)(nil)

var _ Actuation = (*Actuator)(nil)
