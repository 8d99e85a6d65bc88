package dvfs

import (
	"math"
	"testing"
	"time"
)

// reading is one tick of a table case: at seconds after the start, power
// w against cap 100 W (band [90, 105] with the table's margins), and what
// the step must return.
type reading struct {
	at          int
	w           float64
	pct         float64
	action      Action
	above       int
	below       int
	cooling     bool
	saturated   bool
	checkCounts bool
}

// tableConfig: no smoothing unless a case asks for it, so each reading is
// the average; margins 5/10 W, trip 2, cooldown 10 s, step 10 %.
func tableConfig() Config {
	return Config{EMAAlpha: 1, HighMarginW: 5, LowMarginW: 10, TripCount: 2, Cooldown: 10 * time.Second, StepPct: 10}
}

func TestControllerStep(t *testing.T) {
	const none, up, down = ActionNone, ActionThrottleUp, ActionThrottleDown
	cases := []struct {
		name  string
		cfg   func(*Config)
		start float64 // throttle set before the readings
		steps []reading
	}{
		{name: "in band nothing moves", steps: []reading{
			{at: 0, w: 100, action: none, checkCounts: true},
			{at: 5, w: 105, action: none, checkCounts: true}, // the edges are in the band
			{at: 10, w: 90, action: none, checkCounts: true},
		}},
		{name: "one reading above is not a trip", steps: []reading{
			{at: 0, w: 130, action: none, above: 1, checkCounts: true},
			{at: 5, w: 100, action: none, checkCounts: true},
			{at: 10, w: 130, action: none, above: 1, checkCounts: true},
		}},
		{name: "trip above throttles up one step and restarts the count", steps: []reading{
			{at: 0, w: 130, action: none, above: 1, checkCounts: true},
			{at: 5, w: 130, pct: 10, action: up, checkCounts: true},
		}},
		{name: "a reading on the other side resets the counter", steps: []reading{
			{at: 0, w: 130, above: 1, action: none, checkCounts: true},
			{at: 5, w: 50, below: 1, action: none, checkCounts: true},
			{at: 10, w: 130, above: 1, action: none, checkCounts: true},
		}},
		{name: "a reading in band resets the counter", start: 50, steps: []reading{
			{at: 0, w: 50, pct: 50, below: 1, action: none, checkCounts: true},
			{at: 5, w: 95, pct: 50, action: none, checkCounts: true},
			{at: 10, w: 50, pct: 50, below: 1, action: none, checkCounts: true},
		}},
		{name: "trip below throttles down", start: 50, steps: []reading{
			{at: 0, w: 50, pct: 50, action: none},
			{at: 5, w: 50, pct: 40, action: down, checkCounts: true},
		}},
		{name: "cooldown holds the next action until it has passed", steps: []reading{
			{at: 0, w: 130, action: none},
			{at: 1, w: 130, pct: 10, action: up},
			{at: 2, w: 130, pct: 10, action: none, above: 1, checkCounts: true},
			{at: 3, w: 130, pct: 10, action: none, above: 2, cooling: true, checkCounts: true},
			{at: 10, w: 130, pct: 10, action: none, above: 3, cooling: true, checkCounts: true},
			{at: 11, w: 130, pct: 20, action: up, checkCounts: true}, // exactly the cooldown later
		}},
		{name: "cooldown does not hold the first action", cfg: func(c *Config) { c.Cooldown = time.Hour }, steps: []reading{
			{at: 0, w: 130, action: none},
			{at: 1, w: 130, pct: 10, action: up},
		}},
		{name: "trip count 1 acts on the first reading out of band", cfg: func(c *Config) { c.TripCount = 1 }, steps: []reading{
			{at: 0, w: 130, pct: 10, action: up},
		}},
		{name: "clamped at 0: a below trip without throttle is no action and keeps counting", steps: []reading{
			{at: 0, w: 10, action: none, below: 1, checkCounts: true},
			{at: 5, w: 10, action: none, below: 2, checkCounts: true},
			{at: 10, w: 10, action: none, below: 3, checkCounts: true},
		}},
		{name: "clamped at 100: the last step is partial, then saturated", start: 95, steps: []reading{
			{at: 0, w: 300, pct: 95, action: none},
			{at: 5, w: 300, pct: 100, action: up, saturated: true},
			{at: 20, w: 300, pct: 100, action: none, above: 1, saturated: true, checkCounts: true},
			{at: 40, w: 300, pct: 100, action: none, above: 2, saturated: true, checkCounts: true},
			{at: 60, w: 300, pct: 100, action: none, above: 3, saturated: true, checkCounts: true},
		}},
		{name: "saturation clears once power is back in band", start: 100, steps: []reading{
			{at: 0, w: 300, pct: 100, action: none, above: 1, saturated: true, checkCounts: true},
			{at: 5, w: 100, pct: 100, action: none, checkCounts: true},
		}},
		{name: "the EMA is seeded by the first reading, not pulled up from zero", cfg: func(c *Config) { c.EMAAlpha = 0.3 }, steps: []reading{
			{at: 0, w: 100, action: none, checkCounts: true},
			{at: 5, w: 100, action: none, checkCounts: true},
		}},
		{name: "a large spike lingers in the EMA: 100, 140, 100 average 100, 112, 108.4 and trip", cfg: func(c *Config) { c.EMAAlpha = 0.3 }, steps: []reading{
			{at: 0, w: 100, action: none},
			{at: 5, w: 140, action: none, above: 1, checkCounts: true},
			{at: 10, w: 100, action: up, pct: 10, checkCounts: true},
		}},
		{name: "steady power in band never acts", cfg: func(c *Config) { c.EMAAlpha = 0.3 }, start: 30, steps: func() []reading {
			var r []reading
			for i := 0; i < 200; i++ {
				w := 97 + 6*math.Sin(float64(i)) // +-6 W of ripple around 97 W
				r = append(r, reading{at: 5 * i, w: w, pct: 30, action: none, checkCounts: true})
			}
			return r
		}()},
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tableConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			c, err := NewController(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tc.start != 0 {
				c.SetThrottlePct(tc.start)
			}
			for i, r := range tc.steps {
				d := c.Step(start.Add(time.Duration(r.at)*time.Second), r.w, 100)
				if d.ThrottlePct != r.pct || d.Action != r.action || d.Saturated != r.saturated || d.CoolingDown != r.cooling {
					t.Fatalf("reading %d (%v W at %ds): got pct %v action %s saturated %v cooling %v; want %v %s %v %v (%+v)",
						i, r.w, r.at, d.ThrottlePct, d.Action, d.Saturated, d.CoolingDown, r.pct, r.action, r.saturated, r.cooling, d)
				}
				if r.checkCounts && (d.AboveCount != r.above || d.BelowCount != r.below) {
					t.Fatalf("reading %d: counters above %d below %d, want %d %d", i, d.AboveCount, d.BelowCount, r.above, r.below)
				}
				if d.UpperW != 100+cfg.HighMarginW || d.LowerW != 100-cfg.LowMarginW {
					t.Fatalf("band [%v, %v]", d.LowerW, d.UpperW)
				}
			}
		})
	}
}

func TestControllerEMA(t *testing.T) {
	c, _ := NewController(Config{EMAAlpha: 0.3, HighMarginW: 5, LowMarginW: 10, TripCount: 2, StepPct: 10})
	now := time.Now()
	want := []float64{200, 170, 149, 134.3}
	for i, w := range []float64{200, 100, 100, 100} {
		if d := c.Step(now, w, 500); math.Abs(d.EMAW-want[i]) > 1e-9 {
			t.Errorf("reading %d: EMA %v, want %v", i, d.EMAW, want[i])
		}
	}
}

func TestControllerCountsActionsAcrossReset(t *testing.T) {
	c, _ := NewController(tableConfig())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 20; i++ {
		c.Step(now.Add(time.Duration(i)*10*time.Second), 200, 100)
	}
	d := c.Last()
	if d.ThrottlePct != 100 || d.ThrottleUps != 10 {
		t.Fatalf("%+v", d)
	}
	d = c.Reset()
	if d.ThrottlePct != 0 || d.ThrottleUps != 10 || d.EMAW != 0 || d.AboveCount != 0 {
		t.Errorf("after reset: %+v", d)
	}
	// A fresh start: no cooldown from before the reset, and the EMA is
	// seeded again.
	d = c.Step(now.Add(200*time.Second), 50, 100)
	if d.EMAW != 50 || d.BelowCount != 1 {
		t.Errorf("first step after reset: %+v", d)
	}
}

func TestControllerIgnoresUnusableReadings(t *testing.T) {
	c, _ := NewController(tableConfig())
	now := time.Now()
	c.Step(now, 130, 100)
	for _, in := range [][2]float64{{math.NaN(), 100}, {-5, 100}, {math.Inf(1), 100}, {130, math.NaN()}, {130, -1}} {
		d := c.Step(now, in[0], in[1])
		if !d.Ignored || d.Action != ActionNone || d.AboveCount != 1 || d.EMAW != 130 {
			t.Errorf("Step(%v, %v) = %+v; want ignored with state untouched", in[0], in[1], d)
		}
	}
	if d := c.Step(now.Add(time.Second), 130, 100); d.Action != ActionThrottleUp || d.Ignored {
		t.Errorf("after ignored readings the trip still counts: %+v", d)
	}
}

func TestControllerPercentPath(t *testing.T) {
	c, _ := NewController(tableConfig())
	now := time.Now()
	c.Step(now, 130, 100)
	for _, tc := range []struct {
		in, want float64
		action   Action
	}{
		{40, 40, ActionThrottleUp}, {40, 40, ActionNone}, {25, 25, ActionThrottleDown},
		{150, 100, ActionThrottleUp}, {-3, 0, ActionThrottleDown}, {math.NaN(), 0, ActionNone},
	} {
		d := c.SetThrottlePct(tc.in)
		if d.ThrottlePct != tc.want || d.Action != tc.action || d.AboveCount != 0 {
			t.Errorf("SetThrottlePct(%v) = %+v; want %v %s with counters cleared", tc.in, d, tc.want, tc.action)
		}
	}
	if d := c.Last(); d.ThrottleUps != 2 || d.ThrottleDowns != 2 {
		t.Errorf("actions: %+v", d)
	}
	// The closed loop resumes from the held throttle with a fresh EMA.
	c.SetThrottlePct(60)
	if d := c.Step(now, 20, 100); d.EMAW != 20 || d.ThrottlePct != 60 {
		t.Errorf("resume: %+v", d)
	}
}
