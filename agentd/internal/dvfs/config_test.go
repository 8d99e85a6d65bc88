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

func TestValidateNamesTheVariable(t *testing.T) {
	for _, tc := range []struct {
		env string
		bad func(*Config)
	}{
		{EnvEMAAlpha, func(c *Config) { c.EMAAlpha = 0 }},
		{EnvEMAAlpha, func(c *Config) { c.EMAAlpha = 1.5 }},
		{EnvEMAAlpha, func(c *Config) { c.EMAAlpha = math.NaN() }},
		{EnvHighMarginW, func(c *Config) { c.HighMarginW = -1 }},
		{EnvHighMarginW, func(c *Config) { c.HighMarginW = math.Inf(1) }},
		{EnvLowMarginW, func(c *Config) { c.LowMarginW = math.NaN() }},
		{EnvTripCount, func(c *Config) { c.TripCount = 0 }},
		{EnvCooldown, func(c *Config) { c.Cooldown = -time.Second }},
		{EnvStepPct, func(c *Config) { c.StepPct = 0 }},
		{EnvStepPct, func(c *Config) { c.StepPct = 101 }},
		{EnvMinFreqKHz, func(c *Config) { c.MinFreqKHz = -1 }},
	} {
		c := DefaultConfig()
		tc.bad(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.env) {
			t.Errorf("%+v: error %v should name %s", c, err, tc.env)
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

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadEnv(t *testing.T) {
	c := DefaultConfig()
	err := c.LoadEnv(env(map[string]string{
		EnvEMAAlpha: "0.5", EnvHighMarginW: "8", EnvLowMarginW: " 12.5 ", EnvTripCount: "3",
		EnvCooldown: "30", EnvStepPct: "2.5", EnvMinFreqKHz: "1200000",
	}))
	want := Config{EMAAlpha: 0.5, HighMarginW: 8, LowMarginW: 12.5, TripCount: 3, Cooldown: 30 * time.Second, StepPct: 2.5, MinFreqKHz: 1200000}
	if err != nil || c != want {
		t.Errorf("LoadEnv = %+v, %v; want %+v", c, err, want)
	}
	c = DefaultConfig()
	if err := c.LoadEnv(env(map[string]string{EnvCooldown: "1m30s", EnvStepPct: ""})); err != nil || c.Cooldown != 90*time.Second || c.StepPct != DefaultConfig().StepPct {
		t.Errorf("duration and empty value: %+v, %v", c, err)
	}
	for k, v := range map[string]string{EnvEMAAlpha: "fast", EnvTripCount: "2.5", EnvCooldown: "soon", EnvMinFreqKHz: "1.2GHz", EnvStepPct: "200"} {
		c := DefaultConfig()
		if err := c.LoadEnv(env(map[string]string{k: v})); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%q: error %v should name the variable", k, v, err)
		}
	}
}

// FuzzLoadEnv: never panics, and whatever it accepts validates.
func FuzzLoadEnv(f *testing.F) {
	f.Add("0.3", "5", "10s", "2", "1200000")
	f.Add("1e309", "-0", "9223372036854775807", "+2", "0x10")
	f.Add("NaN", "Inf", "1e30", "99999999999999999999", "")
	f.Fuzz(func(t *testing.T, alpha, margin, cooldown, trip, minFreq string) {
		c := DefaultConfig()
		err := c.LoadEnv(env(map[string]string{EnvEMAAlpha: alpha, EnvHighMarginW: margin, EnvLowMarginW: margin,
			EnvCooldown: cooldown, EnvTripCount: trip, EnvStepPct: margin, EnvMinFreqKHz: minFreq}))
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("LoadEnv accepted %+v, which does not validate: %v", c, verr)
			}
		}
	})
}
