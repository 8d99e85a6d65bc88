package dvfs

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Config holds the DVFS fallback's tunables. Watts are those of the power
// the controller is given (the agent passes the sum over packages against
// the sum of the per-package caps).
//
// The defaults are chosen so that the loop settles without a limit cycle
// on a two-socket server (the simulation in sim_test.go):
//
//   - A step must move power by clearly less than the band is wide
//     (HighMarginW + LowMarginW), or no throttle level sits safely inside
//     the band and the loop hunts between two levels, driven by noise. On
//     a 2 x 48-core host one CPU at the minimum frequency saves about 4 W,
//     so a 5 % step moves about 19 W; the band is 25 W wide. Simulated
//     over caps of 30..90 % of maximum, a 15 W band hunted at 16 of 39
//     caps with 5 % steps and at 31 of 39 with 10 % steps; 5 % with this
//     band hunted at none. Smaller steps (2.5 %) hold too but take over
//     twice as long to settle. Hosts with few cores move less per step and
//     are only steadier.
//   - The band sits mostly below the cap (5 W above, 20 W below): the cap
//     is a limit, so the loop tolerates little excess and accepts leaving
//     some headroom unused.
//   - Alpha 0.3 weighs the newest reading at 30 %: the EMA follows a
//     sustained change within three to four ticks (0.7^4 = 24 % left) and
//     damps the noise of a bursty load to about 40 % of its spread.
//   - Two consecutive readings out of band before acting, so one noisy
//     sample never moves the throttle, and 10 s between actions, so each
//     change shows in the readings before the next one.
type Config struct {
	// EMAAlpha (default 0.3) is the weight of the newest
	// reading in the power average, in (0, 1]; 1 disables smoothing.
	EMAAlpha float64 `json:"emaAlpha"`
	// HighMarginW (default 5) is how far above the cap
	// the average may sit before it counts as above.
	HighMarginW float64 `json:"highMarginW"`
	// LowMarginW (default 20) is how far below the cap
	// the average may sit before it counts as below.
	LowMarginW float64 `json:"lowMarginW"`
	// TripCount (default 2) is the number of consecutive
	// readings above (below) the band that triggers an action.
	TripCount int `json:"tripCount"`
	// Cooldown (default 10s) is the least time between two actions.
	Cooldown time.Duration `json:"cooldown"`
	// StepPct (default 5) is the change of throttle per
	// action, in percentage points of CPUs, in (0, 100].
	StepPct float64 `json:"stepPct"`
	// MinFreqKHz (default 0) is the ceiling a throttled
	// CPU gets; 0, or anything below the CPU's cpuinfo_min_freq, means
	// that minimum. Raise it to keep throttled CPUs usable.
	MinFreqKHz int64 `json:"minFreqKHz"`
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		EMAAlpha:    0.3,
		HighMarginW: 5,
		LowMarginW:  20,
		TripCount:   2,
		Cooldown:    10 * time.Second,
		StepPct:     5,
		MinFreqKHz:  0,
	}
}

// Invalid is one bad field of a Config: Field is its key under the
// agent's dvfs block (the json tag), Msg what is wrong with its value.
type Invalid struct {
	Field, Msg string
}

func (e Invalid) Error() string { return e.Field + " " + e.Msg }

// Problems lists every bad field, in the order of Config.
func (c Config) Problems() []Invalid {
	var ps []Invalid
	add := func(field, format string, a ...any) {
		ps = append(ps, Invalid{field, fmt.Sprintf(format, a...)})
	}
	if !(c.EMAAlpha > 0 && c.EMAAlpha <= 1) {
		add("emaAlpha", "must be in (0, 1], got %v", c.EMAAlpha)
	}
	if !(c.HighMarginW >= 0) || math.IsInf(c.HighMarginW, 0) {
		add("highMarginW", "must be a finite number of watts >= 0, got %v", c.HighMarginW)
	}
	if !(c.LowMarginW >= 0) || math.IsInf(c.LowMarginW, 0) {
		add("lowMarginW", "must be a finite number of watts >= 0, got %v", c.LowMarginW)
	}
	if c.TripCount < 1 {
		add("tripCount", "must be at least 1, got %d", c.TripCount)
	}
	if c.Cooldown < 0 {
		add("cooldown", "must not be negative, got %v", c.Cooldown)
	}
	if !(c.StepPct > 0 && c.StepPct <= 100) {
		add("stepPct", "must be in (0, 100], got %v", c.StepPct)
	}
	if c.MinFreqKHz < 0 {
		add("minFreqKHz", "must not be negative, got %d", c.MinFreqKHz)
	}
	return ps
}

// Validate reports every bad field, naming it.
func (c Config) Validate() error {
	var errs []error
	for _, p := range c.Problems() {
		errs = append(errs, p)
	}
	return errors.Join(errs...)
}
