package rapl

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	"joulie.io/joulie/agentd/internal/sysfs"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// step advances the clock, sets the zones' counters and reads.
type step struct {
	after  time.Duration
	energy []uint64 // one per zone
	ok     bool
	watts  float64
}

func TestEnergyMeter(t *testing.T) {
	const R = rapltest.EnergyRangeIntelUJ
	const J = 1_000_000 // µJ
	sec := time.Second
	xeon := rapltest.XeonPackage(rapltest.MSR, 0, 0, 270)
	noRange := xeon
	noRange.MaxEnergyRangeUJ = 0
	dies := []rapltest.Zone{rapltest.XeonPackage(rapltest.MSR, 0, 0, 175), rapltest.XeonPackage(rapltest.MSR, 1, 0, 175)}
	dies[0].Name, dies[1].Name = "package-0-die-0", "package-0-die-1"

	for _, tc := range []struct {
		name  string
		zones []rapltest.Zone
		opts  MeterOptions
		steps []step
	}{
		{"first reading gives no power, then watts over the interval", []rapltest.Zone{xeon}, MeterOptions{}, []step{
			{0, []uint64{1000 * J}, false, 0},
			{sec, []uint64{1200 * J}, true, 200},
			{2 * sec, []uint64{1500 * J}, true, 150},
		}},
		{"counter wraps at max_energy_range_uj", []rapltest.Zone{xeon}, MeterOptions{}, []step{
			{0, []uint64{R - 50*J}, false, 0},
			{sec, []uint64{150 * J}, true, 200},
			{sec, []uint64{350 * J}, true, 200},
		}},
		{"counter going back with no known range is a reset", []rapltest.Zone{noRange}, MeterOptions{}, []step{
			{0, []uint64{5000 * J}, false, 0},
			{sec, []uint64{10 * J}, false, 0},
			{sec, []uint64{210 * J}, true, 200},
		}},
		{"counter beyond its range is a reset", []rapltest.Zone{xeon}, MeterOptions{}, []step{
			{0, []uint64{100 * J}, false, 0},
			{sec, []uint64{R + 5}, false, 0},
		}},
		{"implausible delta is no reading, the next one counts", []rapltest.Zone{xeon}, MeterOptions{}, []step{
			{0, []uint64{100 * J}, false, 0},
			{sec, []uint64{5100 * J}, false, 0}, // 5 kW from a 270 W package
			{sec, []uint64{5300 * J}, true, 200},
		}},
		{"no time passed keeps the baseline", []rapltest.Zone{xeon}, MeterOptions{}, []step{
			{0, []uint64{100 * J}, false, 0},
			{0, []uint64{150 * J}, false, 0},
			{2 * sec, []uint64{500 * J}, true, 200},
		}},
		{"an interval long enough for two wraps is ambiguous", []rapltest.Zone{xeon}, MeterOptions{}, []step{
			{0, []uint64{100 * J}, false, 0},
			{700 * sec, []uint64{140100 * J}, false, 0}, // 262 kJ at 1.5 × 270 W takes 647 s
			{sec, []uint64{140300 * J}, true, 200},
		}},
		{"AMD range with the catalog's maximum", []rapltest.Zone{rapltest.EPYCPackage(0, 0)}, MeterOptions{MaxWatts: 400}, []step{
			{0, []uint64{rapltest.EnergyRangeAMDUJ - 1000*J}, false, 0},
			{10 * sec, []uint64{2000 * J}, true, 300},
			{100 * sec, []uint64{32000 * J}, true, 300},
			{120 * sec, []uint64{64000 * J}, false, 0}, // 65.5 kJ at 1.5 × 400 W takes 109 s
		}},
		{"dies of a package add up", dies, MeterOptions{}, []step{
			{0, []uint64{100 * J, 200 * J}, false, 0},
			{sec, []uint64{200 * J, R - 0}, false, 0}, // die 1 jumps by 262 kJ: implausible
			{sec, []uint64{300 * J, 50 * J}, true, 150},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			rapltest.Write(t, root, tc.zones...)
			pkgs, _ := Discover(sysfs.New(root))
			if len(pkgs) != 1 {
				t.Fatalf("%d packages", len(pkgs))
			}
			clock := &fakeClock{time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
			tc.opts.Now = clock.now
			m := NewEnergyMeter(sysfs.New(root), pkgs[0], tc.opts)
			for i, s := range tc.steps {
				clock.t = clock.t.Add(s.after)
				for k, e := range s.energy {
					rapltest.SetAttr(t, root, pkgs[0].Zones[k].Name, "energy_uj", strconv.FormatUint(e, 10))
				}
				w, ok, err := m.Read()
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if ok != s.ok || math.Abs(w-s.watts) > 1e-6 {
					t.Errorf("step %d: %g W, ok=%v; want %g W, ok=%v", i, w, ok, s.watts, s.ok)
				}
			}
		})
	}
}

func TestEnergyMeterUnreadableCounterRestartsTheSeries(t *testing.T) {
	root := t.TempDir()
	rapltest.TwoSocketXeon(t, root, 270)
	pkgs, _ := Discover(sysfs.New(root))
	clock := &fakeClock{time.Unix(1_800_000_000, 0)}
	m := NewEnergyMeter(sysfs.New(root), pkgs[1], MeterOptions{Now: clock.now})
	if m.Package() != 1 {
		t.Fatalf("Package() = %d", m.Package())
	}
	if _, ok, err := m.Read(); ok || err != nil {
		t.Fatalf("first read: %v %v", ok, err)
	}
	counter := filepath.Join(root, rapltest.ClassDir("intel-rapl:1"), "energy_uj")
	if err := os.Rename(counter, counter+".gone"); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(time.Second)
	if _, ok, err := m.Read(); ok || err == nil {
		t.Fatalf("read of a missing counter: ok=%v err=%v", ok, err)
	}
	if err := os.Rename(counter+".gone", counter); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(time.Second)
	if _, ok, err := m.Read(); ok || err != nil {
		t.Fatalf("after the error the next reading is a first one: ok=%v err=%v", ok, err)
	}
	rapltest.SetAttr(t, root, "intel-rapl:1", "energy_uj", strconv.FormatUint(2_000_000_000+100_000_000, 10))
	clock.t = clock.t.Add(time.Second)
	if w, ok, err := m.Read(); !ok || err != nil || w != 100 {
		t.Fatalf("got %g W, ok=%v, %v; want 100 W", w, ok, err)
	}
}

func TestCounterDelta(t *testing.T) {
	for _, tc := range []struct {
		prev, cur, rng uint64
		want           uint64
		ok             bool
	}{
		{10, 30, 100, 20, true},
		{90, 10, 100, 20, true},
		{100, 0, 100, 0, true},
		{90, 10, 0, 0, false},
		{150, 10, 100, 0, false},
		{10, 150, 100, 0, false},
		{10, 150, 0, 140, true},
	} {
		got, ok := counterDelta(tc.prev, tc.cur, tc.rng)
		if got != tc.want || ok != tc.ok {
			t.Errorf("counterDelta(%d, %d, %d) = %d, %v; want %d, %v", tc.prev, tc.cur, tc.rng, got, ok, tc.want, tc.ok)
		}
	}
}

// BenchmarkTick is what the enforcement loop does on a two-socket host
// every tick once caps are in place: one SetPackageCap that finds its
// limit already set, and one energy reading, per package.
func BenchmarkTick(b *testing.B) {
	root := b.TempDir()
	rapltest.TwoSocketXeon(b, root, 270)
	fs := sysfs.New(root)
	pkgs, _ := Discover(fs)
	j, err := stateOpen(b)
	if err != nil {
		b.Fatal(err)
	}
	c, err := NewCapper(fs, j, pkgs, Options{})
	if err != nil {
		b.Fatal(err)
	}
	meters := []*EnergyMeter{NewEnergyMeter(fs, pkgs[0], MeterOptions{}), NewEnergyMeter(fs, pkgs[1], MeterOptions{})}
	for _, p := range pkgs {
		if _, err := c.SetPackageCap(p.ID, 200); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for i, p := range pkgs {
			if _, err := c.SetPackageCap(p.ID, 200); err != nil {
				b.Fatal(err)
			}
			if _, _, err := meters[i].Read(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkEnergyMeterRead(b *testing.B) {
	root := b.TempDir()
	rapltest.TwoSocketXeon(b, root, 270)
	fs := sysfs.New(root)
	pkgs, _ := Discover(fs)
	m := NewEnergyMeter(fs, pkgs[0], MeterOptions{})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := m.Read(); err != nil {
			b.Fatal(err)
		}
	}
}
