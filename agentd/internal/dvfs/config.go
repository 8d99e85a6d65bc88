package dvfs

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The environment variables of the tunables (agent seed, "DVFS fallback
// control loop").
const (
	EnvEMAAlpha    = "DVFS_EMA_ALPHA"
	EnvHighMarginW = "DVFS_HIGH_MARGIN_W"
	EnvLowMarginW  = "DVFS_LOW_MARGIN_W"
	EnvTripCount   = "DVFS_TRIP_COUNT"
	EnvCooldown    = "DVFS_COOLDOWN"
	EnvStepPct     = "DVFS_STEP_PCT"
	EnvMinFreqKHz  = "DVFS_MIN_FREQ_KHZ"
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
	// EMAAlpha (DVFS_EMA_ALPHA, default 0.3) is the weight of the newest
	// reading in the power average, in (0, 1]; 1 disables smoothing.
	EMAAlpha float64
	// HighMarginW (DVFS_HIGH_MARGIN_W, default 5) is how far above the cap
	// the average may sit before it counts as above.
	HighMarginW float64
	// LowMarginW (DVFS_LOW_MARGIN_W, default 20) is how far below the cap
	// the average may sit before it counts as below.
	LowMarginW float64
	// TripCount (DVFS_TRIP_COUNT, default 2) is the number of consecutive
	// readings above (below) the band that triggers an action.
	TripCount int
	// Cooldown (DVFS_COOLDOWN, default 10s) is the least time between two
	// actions. The variable takes a Go duration ("10s") or seconds ("10").
	Cooldown time.Duration
	// StepPct (DVFS_STEP_PCT, default 5) is the change of throttle per
	// action, in percentage points of CPUs, in (0, 100].
	StepPct float64
	// MinFreqKHz (DVFS_MIN_FREQ_KHZ, default 0) is the ceiling a throttled
	// CPU gets; 0, or anything below the CPU's cpuinfo_min_freq, means
	// that minimum. Raise it to keep throttled CPUs usable.
	MinFreqKHz int64
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

// Validate reports every bad field, naming its environment variable.
func (c Config) Validate() error {
	var errs []error
	if !(c.EMAAlpha > 0 && c.EMAAlpha <= 1) {
		errs = append(errs, fmt.Errorf("%s must be in (0, 1], got %v", EnvEMAAlpha, c.EMAAlpha))
	}
	if !(c.HighMarginW >= 0) || math.IsInf(c.HighMarginW, 0) {
		errs = append(errs, fmt.Errorf("%s must be a finite number of watts >= 0, got %v", EnvHighMarginW, c.HighMarginW))
	}
	if !(c.LowMarginW >= 0) || math.IsInf(c.LowMarginW, 0) {
		errs = append(errs, fmt.Errorf("%s must be a finite number of watts >= 0, got %v", EnvLowMarginW, c.LowMarginW))
	}
	if c.TripCount < 1 {
		errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", EnvTripCount, c.TripCount))
	}
	if c.Cooldown < 0 {
		errs = append(errs, fmt.Errorf("%s must not be negative, got %v", EnvCooldown, c.Cooldown))
	}
	if !(c.StepPct > 0 && c.StepPct <= 100) {
		errs = append(errs, fmt.Errorf("%s must be in (0, 100], got %v", EnvStepPct, c.StepPct))
	}
	if c.MinFreqKHz < 0 {
		errs = append(errs, fmt.Errorf("%s must not be negative, got %d", EnvMinFreqKHz, c.MinFreqKHz))
	}
	return errors.Join(errs...)
}

// LoadEnv overrides the fields whose variables lookup finds (os.LookupEnv
// in the agent), then validates the result. Unset or empty variables keep
// the field's value.
func (c *Config) LoadEnv(lookup func(string) (string, bool)) error {
	var errs []error
	get := func(name string) (string, bool) {
		v, ok := lookup(name)
		v = strings.TrimSpace(v)
		return v, ok && v != ""
	}
	float := func(name string, dst *float64) {
		if v, ok := get(name); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q is not a number", name, v))
				return
			}
			*dst = f
		}
	}
	float(EnvEMAAlpha, &c.EMAAlpha)
	float(EnvHighMarginW, &c.HighMarginW)
	float(EnvLowMarginW, &c.LowMarginW)
	float(EnvStepPct, &c.StepPct)
	if v, ok := get(EnvTripCount); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not a whole number", EnvTripCount, v))
		} else {
			c.TripCount = n
		}
	}
	if v, ok := get(EnvMinFreqKHz); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not a whole number of kHz", EnvMinFreqKHz, v))
		} else {
			c.MinFreqKHz = n
		}
	}
	if v, ok := get(EnvCooldown); ok {
		d, err := parseCooldown(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %v", EnvCooldown, v, err))
		} else {
			c.Cooldown = d
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return c.Validate()
}

// parseCooldown takes a Go duration or a plain number of seconds, since
// the seed gives the tunable without a unit.
func parseCooldown(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(secs) || math.Abs(secs) > float64(math.MaxInt64/int64(time.Second)) {
		return 0, errors.New("want a duration such as 10s, or seconds")
	}
	return time.Duration(secs * float64(time.Second)), nil
}
