package rapl

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
)

// host is a fixture with a Capper over it.
type host struct {
	root    string
	fs      *sysfs.FS
	writer  *rapltest.Writer
	journal *state.Journal
	capper  *Capper
	pkgs    []Package
}

func newHost(t *testing.T, opts Options, zones ...rapltest.Zone) *host {
	t.Helper()
	h := &host{root: t.TempDir(), writer: &rapltest.Writer{}}
	rapltest.Write(t, h.root, zones...)
	h.fs = sysfs.New(h.root).WithWriter(h.writer)
	h.pkgs, _ = Discover(h.fs)
	var err error
	if h.journal, err = state.Open(filepath.Join(t.TempDir(), "state")); err != nil {
		t.Fatal(err)
	}
	if h.capper, err = NewCapper(h.fs, h.journal, h.pkgs, opts); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *host) limit(t *testing.T, zone string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(rapltest.Attr(t, h.root, zone, "constraint_0_power_limit_uw"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func xeon2S() []rapltest.Zone {
	return []rapltest.Zone{
		rapltest.XeonPackage(rapltest.MSR, 0, 0, 270),
		rapltest.XeonPackage(rapltest.MSR, 1, 1, 270),
		rapltest.XeonPackage(rapltest.MMIO, 0, 0, 270),
	}
}

func TestSetPackageCapClamps(t *testing.T) {
	noMax := rapltest.XeonPackage(rapltest.MSR, 0, 0, 270)
	noMax.Constraints[0].MaxPowerUW = 0
	withMin := rapltest.XeonPackage(rapltest.MSR, 0, 0, 270)
	withMin.Constraints[0].MinPowerUW = 125_000_000

	for _, tc := range []struct {
		name    string
		zone    rapltest.Zone
		opts    Options
		watts   float64
		want    float64
		written bool
	}{
		{"within range", rapltest.XeonPackage(rapltest.MSR, 0, 0, 270), Options{}, 162, 162, true},
		{"above the zone maximum", rapltest.XeonPackage(rapltest.MSR, 0, 0, 270), Options{}, 400, 270, false},
		{"zone maximum beats the caller's", rapltest.XeonPackage(rapltest.MSR, 0, 0, 270), Options{MaxWatts: 350}, 400, 270, false},
		{"below the default floor", rapltest.XeonPackage(rapltest.MSR, 0, 0, 270), Options{}, 10, 67.5, true},
		{"below the caller's floor", rapltest.XeonPackage(rapltest.MSR, 0, 0, 270), Options{MinWatts: 100}, 10, 100, true},
		{"below the zone's minimum", withMin, Options{MinWatts: 100}, 10, 125, true},
		{"no zone maximum: the caller's", noMax, Options{MaxWatts: 205}, 400, 205, true},
		{"no maximum at all: never above the original limit", noMax, Options{}, 400, 270, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, tc.opts, tc.zone)
			got, err := h.capper.SetPackageCap(0, tc.watts)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("applied %g W, want %g W", got, tc.want)
			}
			if lim := h.limit(t, "intel-rapl:0"); lim != int64(tc.want*1e6) {
				t.Errorf("limit file holds %d µW, want %d", lim, int64(tc.want*1e6))
			}
			if (h.writer.Count() > 0) != tc.written {
				t.Errorf("%d writes, want written=%v", h.writer.Count(), tc.written)
			}
		})
	}
}

func TestSetPackageCapWritesOnlyTheChosenPackageZone(t *testing.T) {
	h := newHost(t, Options{}, xeon2S()...)
	if _, err := h.capper.SetPackageCap(0, 200); err != nil {
		t.Fatal(err)
	}
	want := []rapltest.WriteOp{{Path: h.fs.Path("sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw"), Value: "200000000"}}
	if got := h.writer.Writes(); !reflect.DeepEqual(got, want) {
		t.Fatalf("writes %+v, want %+v", got, want)
	}
	for zone, attr := range map[string]string{
		"intel-rapl-mmio:0": "constraint_0_power_limit_uw", // the other interface
		"intel-rapl:1":      "constraint_0_power_limit_uw", // the other package
		"intel-rapl:0":      "constraint_1_power_limit_uw", // short term
	} {
		if got := rapltest.Attr(t, h.root, zone, attr); got == "200000000" {
			t.Errorf("%s/%s was written", zone, attr)
		}
	}
}

func TestSetPackageCapLongTermAtConstraintOne(t *testing.T) {
	z := rapltest.XeonPackage(rapltest.MSR, 0, 0, 270)
	z.Constraints[0], z.Constraints[1] = z.Constraints[1], z.Constraints[0]
	h := newHost(t, Options{}, z)
	if _, err := h.capper.SetPackageCap(0, 150); err != nil {
		t.Fatal(err)
	}
	if got := rapltest.Attr(t, h.root, "intel-rapl:0", "constraint_1_power_limit_uw"); got != "150000000" {
		t.Errorf("long-term limit (constraint 1) = %s", got)
	}
	if got := rapltest.Attr(t, h.root, "intel-rapl:0", "constraint_0_power_limit_uw"); got != "324000000" {
		t.Errorf("short-term limit (constraint 0) changed to %s", got)
	}
	if orig, _ := h.journal.Original(Backend, "intel-rapl:0/constraint_1_power_limit_uw"); orig != "270000000" {
		t.Errorf("journaled original %q", orig)
	}
}

func TestSetPackageCapSkipsWhenInPlace(t *testing.T) {
	h := newHost(t, Options{}, xeon2S()...)
	for _, watts := range []float64{270, 269.5, 270.9} {
		got, err := h.capper.SetPackageCap(0, watts)
		if err != nil {
			t.Fatal(err)
		}
		if got != 270 {
			t.Errorf("SetPackageCap(%g) = %g, want the limit in force, 270", watts, got)
		}
	}
	if n := h.writer.Count(); n != 0 {
		t.Errorf("%d writes for a limit already in place", n)
	}
	if n := h.journal.Len(); n != 0 {
		t.Errorf("journal has %d entries though nothing was written", n)
	}
	// Once set, the same cap again is a no-op too.
	if _, err := h.capper.SetPackageCap(1, 180); err != nil {
		t.Fatal(err)
	}
	if _, err := h.capper.SetPackageCap(1, 180); err != nil {
		t.Fatal(err)
	}
	if n := h.writer.Count(); n != 1 {
		t.Errorf("%d writes for setting 180 W twice, want 1", n)
	}
}

func TestSetPackageCapEnergyOnlyAMDIsBlocked(t *testing.T) {
	for _, vendor := range []string{"AuthenticAMD", ""} {
		h := newHost(t, Options{Vendor: vendor}, rapltest.EPYCPackage(0, 0), rapltest.EPYCPackage(1, 1))
		if len(h.pkgs) != 2 || h.pkgs[0].LimitsWritable {
			t.Fatalf("discovered %+v", summarize(h.pkgs))
		}
		_, err := h.capper.SetPackageCap(1, 200)
		if !backend.IsBlocked(err) || !errors.Is(err, backend.ErrBlocked) {
			t.Fatalf("vendor %q: %v, want blocked", vendor, err)
		}
		want := "RAPL power limits are read-only on this CPU"
		if vendor != "" {
			want = "RAPL power limits are read-only on this CPU (AMD EPYC exposes energy only); falling back to DVFS"
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "intel-rapl:1") {
			t.Errorf("vendor %q: error %q should say %q and name the zone", vendor, err, want)
		}
		if h.writer.Count() != 0 || h.journal.Len() != 0 {
			t.Errorf("blocked package was touched: %d writes, %d journal entries", h.writer.Count(), h.journal.Len())
		}
		if _, _, err := h.capper.Range(0); !backend.IsBlocked(err) {
			t.Errorf("Range of an energy-only package: %v", err)
		}
	}
}

func TestSetPackageCapFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, h *host)
		pkg     int
		watts   float64
		blocked bool
		is      error
		mention []string
	}{
		{
			name:    "EIO on write is an error, not blocked",
			prepare: func(t *testing.T, h *host) { h.writer.Err = syscall.EIO },
			pkg:     0, watts: 200, is: syscall.EIO,
			mention: []string{"intel-rapl:0/constraint_0_power_limit_uw", "200000000"},
		},
		{
			name:    "firmware lock (EACCES) is blocked",
			prepare: func(t *testing.T, h *host) { h.writer.Err = syscall.EACCES },
			pkg:     0, watts: 200, blocked: true, is: sysfs.ErrReadOnly,
		},
		{
			name: "limit turned read-only after discovery is blocked",
			prepare: func(t *testing.T, h *host) {
				if err := os.Chmod(filepath.Join(h.root, rapltest.ClassDir("intel-rapl:0"), "constraint_0_power_limit_uw"), 0o444); err != nil {
					t.Fatal(err)
				}
			},
			pkg: 0, watts: 200, blocked: true, is: sysfs.ErrReadOnly,
		},
		{
			name: "read-back mismatch is an error",
			prepare: func(t *testing.T, h *host) {
				h.writer.Rewrite = func(path, v string) string { return "250000000" }
			},
			pkg: 0, watts: 200,
			mention: []string{"reads 250000000 µW after writing 200000000 µW"},
		},
		{
			name:    "unknown package is blocked",
			prepare: func(t *testing.T, h *host) {},
			pkg:     7, watts: 200, blocked: true, is: backend.ErrBlocked,
			mention: []string{"CPU package 7"},
		},
		{
			name:    "invalid cap",
			prepare: func(t *testing.T, h *host) {},
			pkg:     0, watts: -3,
			mention: []string{"invalid cap"},
		},
		{
			name: "zone gone since discovery",
			prepare: func(t *testing.T, h *host) {
				if err := os.Remove(filepath.Join(h.root, rapltest.ClassDir("intel-rapl:1"))); err != nil {
					t.Fatal(err)
				}
			},
			pkg: 1, watts: 200, is: os.ErrNotExist,
			mention: []string{"intel-rapl:1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, Options{}, xeon2S()...)
			tc.prepare(t, h)
			_, err := h.capper.SetPackageCap(tc.pkg, tc.watts)
			if err == nil {
				t.Fatal("no error")
			}
			if backend.IsBlocked(err) != tc.blocked {
				t.Errorf("IsBlocked = %v, want %v: %v", backend.IsBlocked(err), tc.blocked, err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v does not wrap %v", err, tc.is)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q should mention %q", err, m)
				}
			}
		})
	}
}

func TestSetPackageCapToleratesKernelRounding(t *testing.T) {
	h := newHost(t, Options{}, xeon2S()...)
	// The kernel stores limits in 1/8 W units, truncating.
	h.writer.Rewrite = func(path, v string) string {
		n, _ := strconv.ParseInt(v, 10, 64)
		return strconv.FormatInt(n/125_000*125_000, 10)
	}
	got, err := h.capper.SetPackageCap(0, 151.8)
	if err != nil {
		t.Fatal(err)
	}
	if got != 151.75 {
		t.Errorf("applied %g W, want what the kernel kept, 151.75", got)
	}
	if _, err := h.capper.SetPackageCap(0, 151.8); err != nil || h.writer.Count() != 1 {
		t.Errorf("repeat: %v, %d writes; the rounded limit counts as in place", err, h.writer.Count())
	}
}

func TestSetPackageCapEnablesDisabledZone(t *testing.T) {
	z := rapltest.XeonPackage(rapltest.MSR, 0, 0, 270)
	z.Disabled = true
	h := newHost(t, Options{}, z)
	if _, err := h.capper.SetPackageCap(0, 200); err != nil {
		t.Fatal(err)
	}
	if got := rapltest.Attr(t, h.root, "intel-rapl:0", "enabled"); got != "1" {
		t.Errorf("enabled = %s", got)
	}
	if orig, ok := h.journal.Original(Backend, "intel-rapl:0/enabled"); !ok || orig != "0" {
		t.Errorf("enabled original %q, %v", orig, ok)
	}

	// A disabled zone whose flag cannot be set cannot enforce a limit.
	z.EnabledReadOnly = true
	h = newHost(t, Options{}, z)
	if _, err := h.capper.SetPackageCap(0, 200); !backend.IsBlocked(err) || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("read-only disabled zone: %v", err)
	}
	if h.writer.Count() != 0 {
		t.Errorf("%d writes", h.writer.Count())
	}
}

func TestJournalKeepsTheFirstOriginalAndRestorePutsItBack(t *testing.T) {
	zones := xeon2S()
	zones[1].Disabled = true
	h := newHost(t, Options{}, zones...)
	for _, w := range []float64{200, 150, 180} {
		if _, err := h.capper.SetPackageCap(0, w); err != nil {
			t.Fatal(err)
		}
		if _, err := h.capper.SetPackageCap(1, w); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, e := range h.journal.Entries() {
		got = append(got, e.Backend+" "+e.ID+"="+e.Original)
	}
	want := []string{
		"rapl intel-rapl:0/constraint_0_power_limit_uw=270000000",
		"rapl intel-rapl:1/constraint_0_power_limit_uw=270000000",
		"rapl intel-rapl:1/enabled=0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("journal %q, want %q", got, want)
	}

	// A new process (after a crash) restores from disk.
	j2, err := state.Open(filepath.Dir(h.journal.Path()))
	if err != nil {
		t.Fatal(err)
	}
	c2, err := NewCapper(h.fs, j2, h.pkgs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j2.Restore(map[string]state.Restorer{Backend: c2}); err != nil {
		t.Fatal(err)
	}
	for zone, want := range map[string]string{"intel-rapl:0": "270000000", "intel-rapl:1": "270000000"} {
		if got := rapltest.Attr(t, h.root, zone, "constraint_0_power_limit_uw"); got != want {
			t.Errorf("%s limit after restore = %s, want %s", zone, got, want)
		}
	}
	if got := rapltest.Attr(t, h.root, "intel-rapl:1", "enabled"); got != "0" {
		t.Errorf("intel-rapl:1 enabled after restore = %s, want 0", got)
	}
	if j2.Len() != 0 {
		t.Errorf("%d entries left", j2.Len())
	}
}

func TestRestoreRefusals(t *testing.T) {
	h := newHost(t, Options{}, xeon2S()...)
	if err := os.Remove(filepath.Join(h.root, rapltest.ClassDir("intel-rapl:1"))); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ id, original, mention string }{
		{"intel-rapl:1/constraint_0_power_limit_uw", "270000000", "powercap zone intel-rapl:1 no longer exists"},
		{"intel-rapl:0/../../../../etc/passwd", "1", "refusing"},
		{"intel-rapl:0:0/constraint_0_power_limit_uw", "1", "refusing"},
		{"intel-rapl:0/constraint_0_time_window_us", "1", "refusing"},
		{"intel-rapl:0/constraint_0_power_limit_uw", "-5", "bad original"},
		{"intel-rapl:0/constraint_0_power_limit_uw", "lots", "bad original"},
	} {
		err := h.capper.Restore(tc.id, tc.original)
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("Restore(%q, %q) = %v, want it to mention %q", tc.id, tc.original, err, tc.mention)
		}
	}
	if h.writer.Count() != 0 {
		t.Errorf("%d writes", h.writer.Count())
	}
}

func TestSetPackageCapWritesNothingWhenTheJournalFails(t *testing.T) {
	h := newHost(t, Options{}, xeon2S()...)
	if err := os.RemoveAll(filepath.Dir(h.journal.Path())); err != nil {
		t.Fatal(err)
	}
	_, err := h.capper.SetPackageCap(0, 200)
	if err == nil || !strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("error %v", err)
	}
	if h.writer.Count() != 0 {
		t.Fatalf("%d writes without the original on record", h.writer.Count())
	}
}

func TestSetPackageCapSplitsAcrossDies(t *testing.T) {
	var zones []rapltest.Zone
	for i := 0; i < 2; i++ {
		z := rapltest.XeonPackage(rapltest.MSR, i, 0, 175)
		z.Name = "package-0-die-" + strconv.Itoa(i)
		zones = append(zones, z)
	}
	h := newHost(t, Options{}, zones...)
	got, err := h.capper.SetPackageCap(0, 250)
	if err != nil {
		t.Fatal(err)
	}
	if got != 250 {
		t.Errorf("applied %g W", got)
	}
	for _, zone := range []string{"intel-rapl:0", "intel-rapl:1"} {
		if lim := h.limit(t, zone); lim != 125_000_000 {
			t.Errorf("%s limit %d, want half of 250 W", zone, lim)
		}
	}
	if lo, hi, err := h.capper.Range(0); err != nil || lo != 87.5 || hi != 350 {
		t.Errorf("Range = %g..%g, %v; want 87.5..350", lo, hi, err)
	}
}

func TestNewCapperNeedsAJournal(t *testing.T) {
	if _, err := NewCapper(sysfs.New(t.TempDir()), nil, nil, Options{}); err == nil {
		t.Fatal("a Capper without a journal could write unprotected")
	}
}

func stateOpen(tb testing.TB) (*state.Journal, error) { return state.Open(tb.TempDir()) }

func TestPresentTellsAVanishedZoneWithoutWriting(t *testing.T) {
	h := newHost(t, Options{}, xeon2S()...)
	rapltest.Remove(t, h.root, "intel-rapl:1")
	for id, want := range map[string]bool{
		"intel-rapl:0/constraint_0_power_limit_uw": true,
		"intel-rapl-mmio:0/enabled":                true,
		"intel-rapl:1/constraint_0_power_limit_uw": false,
		"intel-rapl:0/constraint_7_power_limit_uw": false,
		"intel-rapl:0/../../../../etc/passwd":      false,
	} {
		if got, err := h.capper.Present(id); got != want || err != nil {
			t.Errorf("Present(%q) = %v, %v; want %v", id, got, err, want)
		}
	}
	if h.writer.Count() != 0 {
		t.Errorf("%d writes", h.writer.Count())
	}
}
