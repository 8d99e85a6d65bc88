// Package dvfs is the agent's DVFS fallback: when RAPL cannot cap a CPU
// package, it holds measured CPU power near the cap by lowering the
// frequency ceiling (cpufreq scaling_max_freq) of a share of the CPUs.
//
// Three parts, in the order data flows:
//
//   - Controller is the pure control law of the agent seed: an EMA of the
//     observed power, a hysteresis band around the cap, consecutive
//     above/below counters that act at DVFS_TRIP_COUNT, a fixed step and
//     a cooldown between actions. It does no I/O, takes the time as an
//     argument and is tested with tables.
//   - Actuator turns a throttle percentage into scaling_max_freq writes
//     through the cpufreq backend, writing only what changes.
//   - Regulator ties the two together for the enforcer, and is also how an
//     HTTP backend's dvfs.set_throttle_pct plugs into the same loop.
//
// Observed power comes from outside (RAPL energy deltas or telemetry); this
// package never reads RAPL.
package dvfs

import (
	"fmt"
	"math"
	"time"
)

// Action is what a step did, as the label of
// joulie_dvfs_actions_total{action}.
type Action string

const (
	ActionNone         Action = "none"
	ActionThrottleUp   Action = "throttle_up"
	ActionThrottleDown Action = "throttle_down"
)

// Decision is the controller's state after a step: what to apply and what
// the metrics show.
type Decision struct {
	// ThrottlePct is the share of CPUs to throttle, 0..100
	// (joulie_dvfs_throttle_pct).
	ThrottlePct float64
	// Action is what this step did.
	Action Action
	// EMAW is the smoothed power; UpperW and LowerW the band around the
	// cap it was compared with.
	EMAW, UpperW, LowerW float64
	// AboveCount and BelowCount are the consecutive readings above and
	// below the band (joulie_dvfs_above_trip_count,
	// joulie_dvfs_below_trip_count).
	AboveCount, BelowCount int
	// CoolingDown is true when a trip was reached but the cooldown since
	// the last action held the action back.
	CoolingDown bool
	// Saturated is true when every CPU is throttled and power is still
	// above the band: the cap is below what DVFS can reach on this host.
	Saturated bool
	// ThrottleUps and ThrottleDowns count actions since the controller was
	// made (joulie_dvfs_actions_total); Reset does not clear them.
	ThrottleUps, ThrottleDowns uint64
	// Ignored is true when the reading or cap was not a usable number
	// (NaN, infinite, negative) and the step changed nothing.
	Ignored bool
}

// Controller is the DVFS control law. It is not safe for concurrent use.
type Controller struct {
	cfg        Config
	ema        float64
	seeded     bool
	above      int
	below      int
	throttle   float64
	lastAction time.Time
	acted      bool
	ups, downs uint64
	last       Decision
}

// NewController returns a controller with no throttle and no history.
func NewController(cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("DVFS configuration: %w", err)
	}
	c := &Controller{cfg: cfg}
	c.last = c.decision(ActionNone)
	return c, nil
}

// Config is the controller's configuration.
func (c *Controller) Config() Config { return c.cfg }

// Step feeds one power reading (watts over the last tick) and the cap in
// force, and returns the throttle to apply:
//
//	ema   = alpha*observed + (1-alpha)*ema   (the first reading seeds it)
//	upper = cap + high margin, lower = cap - low margin
//	ema > upper: above++, below = 0; ema < lower: below++, above = 0;
//	in the band: both 0
//	above >= trip: throttle += step; below >= trip: throttle -= step,
//	clamped to 0..100, unless the last action is less than the cooldown
//	ago.
//
// An action restarts its counter, so the next one needs a fresh run of
// trip readings that already include the effect of this one; without it
// the lagging EMA would keep tripping after the power has moved and the
// loop would overshoot. A trip that cannot move the throttle (at 0 or 100
// already) is no action and keeps counting.
func (c *Controller) Step(now time.Time, observedW, capW float64) Decision {
	if !usable(observedW) || !usable(capW) {
		d := c.last
		d.Action, d.CoolingDown, d.Ignored = ActionNone, false, true
		return d
	}
	if !c.seeded {
		c.ema, c.seeded = observedW, true
	} else {
		c.ema = c.cfg.EMAAlpha*observedW + (1-c.cfg.EMAAlpha)*c.ema
	}
	upper, lower := capW+c.cfg.HighMarginW, capW-c.cfg.LowMarginW
	switch {
	case c.ema > upper:
		c.above++
		c.below = 0
	case c.ema < lower:
		c.below++
		c.above = 0
	default:
		c.above, c.below = 0, 0
	}
	tripped := (c.above >= c.cfg.TripCount && c.throttle < 100) || (c.below >= c.cfg.TripCount && c.throttle > 0)
	cooling := tripped && c.acted && now.Sub(c.lastAction) < c.cfg.Cooldown
	action := ActionNone
	if tripped && !cooling {
		if c.above >= c.cfg.TripCount {
			c.throttle = math.Min(100, c.throttle+c.cfg.StepPct)
			action = ActionThrottleUp
			c.ups++
		} else {
			c.throttle = math.Max(0, c.throttle-c.cfg.StepPct)
			action = ActionThrottleDown
			c.downs++
		}
		c.above, c.below = 0, 0
		c.lastAction, c.acted = now, true
	}
	d := c.decision(action)
	d.UpperW, d.LowerW, d.CoolingDown = upper, lower, cooling
	d.Saturated = c.throttle >= 100 && c.ema > upper
	c.last = d
	return d
}

// SetThrottlePct holds a fixed throttle, clamped to 0..100: the seed's
// percent fallback path, for a percentage cap that cannot be resolved to
// watts. The closed loop's history (EMA, counters) is dropped, since it
// described another regime; a later Step starts afresh from this throttle.
func (c *Controller) SetThrottlePct(pct float64) Decision {
	if math.IsNaN(pct) {
		pct = c.throttle
	}
	pct = math.Min(100, math.Max(0, pct))
	action := ActionNone
	switch {
	case pct > c.throttle:
		action = ActionThrottleUp
		c.ups++
	case pct < c.throttle:
		action = ActionThrottleDown
		c.downs++
	}
	c.throttle = pct
	c.seeded, c.ema, c.above, c.below = false, 0, 0, 0
	c.last = c.decision(action)
	return c.last
}

// Reset lifts the throttle and forgets the history, for the return to
// RAPL. The action totals are kept: they are counters.
func (c *Controller) Reset() Decision {
	c.throttle, c.ema, c.seeded, c.above, c.below = 0, 0, false, 0, 0
	c.acted, c.lastAction = false, time.Time{}
	c.last = c.decision(ActionNone)
	return c.last
}

// Last is the decision of the latest Step, SetThrottlePct or Reset.
func (c *Controller) Last() Decision { return c.last }

func (c *Controller) decision(a Action) Decision {
	return Decision{ThrottlePct: c.throttle, Action: a, EMAW: c.ema,
		AboveCount: c.above, BelowCount: c.below, ThrottleUps: c.ups, ThrottleDowns: c.downs}
}

func usable(w float64) bool { return w >= 0 && !math.IsInf(w, 0) }
