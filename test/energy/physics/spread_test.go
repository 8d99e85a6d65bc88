package physics

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// The default physics states its spread, an assumption of ±0.2 on both
// figures; the nominal variant has none.
func TestTheDefaultPhysicsSpreadsTheJobs(t *testing.T) {
	if got, want := Default().Spread, (Spread{ClockSensitivity: 0.2, Utilization: 0.2}); got != want {
		t.Errorf("default spread %+v, want %+v", got, want)
	}
	m, err := Embedded().Variant("nominal")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Spread.Zero() {
		t.Errorf("nominal variant's spread %+v, want none", m.Spread)
	}
}

// A job's true figures depend on the seed and its ID only, lie on the grid
// within the spread of its class's (clamped to [0, 1]), and the zero
// spread is the class itself.
func TestTrueFiguresAreSeededAndWithinTheSpread(t *testing.T) {
	m := Default()
	sp := m.Spread
	a, b := Truth{Spread: sp, Seed: 1}, Truth{Spread: sp, Seed: 2}
	moved, reseeded := 0, 0
	for i := range 500 {
		id := fmt.Sprintf("job-%d", i)
		for _, cls := range Boundnesses() {
			nom, got := m.Class(cls), a.Class(m, cls, id)
			if again := a.Class(m, cls, id); again != got {
				t.Fatalf("%s %s: two draws differ, %+v and %+v", cls, id, got, again)
			}
			if b.Class(m, cls, id) != got {
				reseeded++
			}
			if got != nom {
				moved++
			}
			if (Truth{Seed: 1}).Class(m, cls, id) != nom {
				t.Fatalf("%s %s: no spread moved the figures", cls, id)
			}
			for _, f := range []struct {
				name      string
				nom, got  float64
				halfWidth float64
			}{{"clock sensitivity", nom.ClockSensitivity, got.ClockSensitivity, sp.ClockSensitivity}, {"utilization", nom.Utilization, got.Utilization, sp.Utilization}} {
				if f.got < 0 || f.got > 1 || math.Abs(f.got-f.nom) > f.halfWidth+1e-9 {
					t.Fatalf("%s %s: %s %v is outside [0,1] or further than %v from %v", cls, id, f.name, f.got, f.halfWidth, f.nom)
				}
				if steps := (f.got - f.nom) / spreadStep; f.got > 0 && f.got < 1 && math.Abs(steps-math.Round(steps)) > 1e-6 {
					t.Fatalf("%s %s: %s %v is off the grid about %v", cls, id, f.name, f.got, f.nom)
				}
			}
		}
	}
	if total := 500 * len(Boundnesses()); moved < total*3/4 || reseeded < total*3/4 {
		t.Errorf("of %d draws %d moved off the class and %d changed with the seed; want most of both", total, moved, reseeded)
	}
}

// The true figures' model runs the job as the physics says for them: a
// cpu-compute job of β below 1 stretches less under the same clock.
func TestTrueFiguresSetTheJobsPace(t *testing.T) {
	m := Default()
	c := m.Class(CPUCompute)
	c.ClockSensitivity = 0.5
	tm := m.WithClass(CPUCompute, c)
	if got, nominal := tm.StretchAtClock(CPUCompute, 0.7), m.StretchAtClock(CPUCompute, 0.7); !(got < nominal) || got != 1+0.5*(nominal-1) {
		t.Errorf("stretch %v at clock 0.7 with β 0.5, nominal %v", got, nominal)
	}
	if m.Class(CPUCompute).ClockSensitivity != 1 {
		t.Error("WithClass changed the model it was called on")
	}
	ts := Truth{Spread: m.Spread, Seed: 1}.Models(m)
	if ts.Of(CPULow, "x") != ts.Of(CPULow, "x") {
		t.Error("the same job got two models")
	}
	if (Truth{}).Models(m).Of(CPULow, "x") != m {
		t.Error("without a spread a job does not run on the base model")
	}
}

// The HGX bracket's GPU nodes boot for 7 minutes at their idle draw and
// draw 45 W off; its CPU nodes keep the taurus figures.
func TestHGXPowerStates(t *testing.T) {
	m, err := Embedded().Variant("hgx-power-states")
	if err != nil {
		t.Fatal(err)
	}
	p := m.Power
	idle := m.GPUNode.Host.Idle() + 8*m.GPUNode.GPUIdleWatts
	if p.BootTime(true).Seconds() != 420 || p.Booting(true) != idle || p.Off(true) != 45 || p.BootJoules(true) != idle*420 {
		t.Errorf("GPU node: boot %v at %v W, off %v W; want 420 s at the idle %v W, 45 W off", p.BootTime(true), p.Booting(true), p.Off(true), idle)
	}
	d := Default().Power
	if p.BootTime(false) != d.BootTime(false) || p.Booting(false) != d.BootWatts || p.Off(false) != d.OffWatts {
		t.Error("the HGX bracket changed the CPU nodes' power states")
	}
	if d.Off(true) != d.OffWatts || d.Booting(true) != d.BootWatts {
		t.Error("by default a GPU node draws other than a CPU node off or booting")
	}
}

// Every CPU class is clock-bound in the cpu-clock-bound bracket, and
// nothing else moves.
func TestCPUClockBoundBracket(t *testing.T) {
	m, err := Embedded().Variant("cpu-clock-bound")
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	for _, b := range Boundnesses() {
		got, want := m.Class(b), d.Class(b)
		if !b.GPU() {
			want.ClockSensitivity = 1
		}
		if got.ClockSensitivity != want.ClockSensitivity || got.Utilization != want.Utilization {
			t.Errorf("%s: %+v, want β %v and utilization %v", b, got, want.ClockSensitivity, want.Utilization)
		}
	}
}

// A spread out of range, or a GPU node's off draw at or above its idle, is
// refused with its key.
func TestSpreadAndGPUPowerStatesAreChecked(t *testing.T) {
	base := string(embedded)
	for _, c := range []struct{ name, from, to, want string }{
		{"spread above 1", "  clockSensitivity: 0.2\n  utilization: 0.2\n", "  clockSensitivity: 1.5\n  utilization: 0.2\n", "jobSpread.clockSensitivity"},
		{"negative spread", "  clockSensitivity: 0.2\n  utilization: 0.2\n", "  clockSensitivity: 0.2\n  utilization: -0.1\n", "jobSpread.utilization"},
		{"GPU node off above idle", "      gpuNodeOffWatts: 45\n", "      gpuNodeOffWatts: 5000\n", "gpuNodeOffWatts"},
	} {
		src := strings.Replace(base, c.from, c.to, 1)
		if src == base {
			t.Fatalf("%s: the embedded file has no %q", c.name, c.from)
		}
		_, err := Parse([]byte(src), "physics.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.name, err, c.want)
		}
	}
}
