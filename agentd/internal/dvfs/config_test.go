package dvfs

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigIsValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		field string
		bad   func(*Config)
	}{
		{"emaAlpha", func(c *Config) { c.EMAAlpha = 0 }},
		{"emaAlpha", func(c *Config) { c.EMAAlpha = 1.5 }},
		{"emaAlpha", func(c *Config) { c.EMAAlpha = math.NaN() }},
		{"highMarginW", func(c *Config) { c.HighMarginW = -1 }},
		{"highMarginW", func(c *Config) { c.HighMarginW = math.Inf(1) }},
		{"lowMarginW", func(c *Config) { c.LowMarginW = math.NaN() }},
		{"tripCount", func(c *Config) { c.TripCount = 0 }},
		{"cooldown", func(c *Config) { c.Cooldown = -time.Second }},
		{"stepPct", func(c *Config) { c.StepPct = 0 }},
		{"stepPct", func(c *Config) { c.StepPct = 101 }},
		{"minFreqKHz", func(c *Config) { c.MinFreqKHz = -1 }},
	} {
		c := DefaultConfig()
		tc.bad(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: error %v should name %s", c, err, tc.field)
		}
		if _, err := NewController(c); err == nil {
			t.Errorf("NewController accepted %+v", c)
		}
	}
	// Edges that are fine: no smoothing, zero margins, no cooldown, a step
	// of everything.
	c := Config{EMAAlpha: 1, TripCount: 1, StepPct: 100}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}
