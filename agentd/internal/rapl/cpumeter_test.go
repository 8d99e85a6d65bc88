package rapl

import (
	"math"
	"strconv"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	"joulie.io/joulie/agentd/internal/sysfs"
)

func TestCPUMeterSumsThePackagesOncePerTick(t *testing.T) {
	root := t.TempDir()
	rapltest.TwoSocketXeon(t, root, 350)
	fs := sysfs.New(root)
	pkgs, _ := Discover(fs)
	c := &fakeClock{t: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
	m, warn := NewCPUMeter(fs, pkgs, MeterOptions{Now: c.now})
	if m == nil || warn != "" {
		t.Fatalf("meter %v, warning %q", m, warn)
	}
	energy := [2]uint64{}
	tick := func(wattsEach [2]uint64) (float64, bool) {
		c.t = c.t.Add(5 * time.Second)
		for p := range energy {
			energy[p] += wattsEach[p] * 5 * 1_000_000
			rapltest.SetAttr(t, root, "intel-rapl:"+strconv.Itoa(p), "energy_uj", strconv.FormatUint(energy[p], 10))
		}
		return m.CPUPowerWatts(c.t)
	}
	if _, ok := tick([2]uint64{100, 100}); ok {
		t.Fatal("the first tick has nothing to measure against")
	}
	if w, ok := tick([2]uint64{120, 180}); !ok || math.Abs(w-300) > 0.01 {
		t.Fatalf("second tick: %v W, ok %v; want 300 W", w, ok)
	}
	// A second read in the same tick gives the same figure, not the
	// energy of no time at all.
	if w, ok := m.CPUPowerWatts(c.t); !ok || math.Abs(w-300) > 0.01 {
		t.Fatalf("second read of the tick: %v W, ok %v", w, ok)
	}

	partial := append([]Package(nil), pkgs...)
	partial[1].HasEnergy = false
	if m, warn := NewCPUMeter(fs, partial, MeterOptions{}); m != nil || warn == "" {
		t.Fatalf("only package 0 metered: meter %v, warning %q; want none and a warning", m, warn)
	}
	partial[0].HasEnergy = false
	if m, warn := NewCPUMeter(fs, partial, MeterOptions{}); m != nil || warn != "" {
		t.Fatalf("no package metered: meter %v, warning %q; want neither", m, warn)
	}
}
