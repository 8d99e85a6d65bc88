package physics

import (
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary files to the loader: it must never panic, every
// error must name the file, and every model it accepts must keep the
// promises the simulator relies on. Seeds are in testdata/fuzz/FuzzParse;
// run it with go test -fuzz FuzzParse ./energy/physics/.
func FuzzParse(f *testing.F) {
	f.Add(embedded)
	f.Add([]byte(minimal))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data, "fuzz.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, name := range file.Names() {
			m, err := file.Variant(name)
			if err != nil {
				t.Fatal(err)
			}
			checkModel(t, m)
		}
	})
}

// checkModel checks what every accepted model guarantees: power rises with
// load, a cap never raises power or speeds work, and energy is finite.
func checkModel(t *testing.T, m *Model) {
	t.Helper()
	loads := []float64{0, 0.05, 0.1, 0.25, 0.5, 0.75, 0.99, 1}
	caps := []float64{0.01, m.MinCapFraction, m.TableCapFraction, 0.8, 1}
	prev := math.Inf(-1)
	for _, l := range loads {
		w := m.CPUNode.At(l)
		if !(w >= prev) || math.IsInf(w, 0) {
			t.Fatalf("%s: CPU node power %v W at load %v after %v W", m.Name, w, l, prev)
		}
		prev = w
		for _, c := range caps {
			// The floor keeps a cap at or above idle, so a cap can cut the
			// draw to idle but not below it.
			if capped := m.CPUNodeWatts(l, c); capped > w || capped < min(w, m.CPUNode.Idle())*(1-1e-12) {
				t.Fatalf("%s: capped CPU node %v W at load %v cap %v, natural %v W, idle %v W", m.Name, capped, l, c, w, m.CPUNode.Idle())
			}
		}
	}
	for _, gpu := range []bool{false, true} {
		p := m.Power
		if e := p.BootJoules(gpu); !(e > 0) || math.IsInf(e, 0) || !(p.OffWatts < m.CPUNode.Idle()) {
			t.Fatalf("%s: boot %v J, off %v W, idle %v W", m.Name, e, p.OffWatts, m.CPUNode.Idle())
		}
	}
	if f := m.ClockFit; !(f.K > 0 && f.A > 0 && f.MinClock > 0 && f.MinClock < 1) {
		t.Fatalf("%s: clock fit %+v", m.Name, f)
	}
	for _, b := range Boundnesses() {
		if beta := m.Class(b).ClockSensitivity; !(beta >= 0 && beta <= 1) {
			t.Fatalf("%s: %s clock sensitivity %v", m.Name, b, beta)
		}
		prev := 1.0
		for i := len(caps) - 1; i >= 0; i-- {
			d := m.ClassDevice(b)
			s := m.Stretch(b, d, caps[i])
			if !(s >= prev) || math.IsInf(s, 0) {
				t.Fatalf("%s: %s stretch %v at cap %v after %v", m.Name, b, s, caps[i], prev)
			}
			prev = s
			_, e := m.Run(b, time.Hour, d, caps[i])
			if !(e >= 0) || math.IsInf(e, 0) {
				t.Fatalf("%s: %s energy %v J at cap %v", m.Name, b, e, caps[i])
			}
		}
	}
}
