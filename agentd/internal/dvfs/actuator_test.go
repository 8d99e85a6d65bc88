package dvfs

import (
	"errors"
	"os"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/cpufreq"
	"joulie.io/joulie/agentd/internal/cpufreq/cpufreqtest"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
)

// xeon: 2 packages x 2 cores x 2 threads; cpu0-3 are first threads
// (cpu0, cpu1 on package 0), cpu4-7 their siblings.
var xeon = cpufreqtest.Spec{Packages: 2, CoresPerPackage: 2, ThreadsPerCore: 2,
	MinKHz: 800000, MaxKHz: 3900000, BaseKHz: 2100000}

// writeCounter writes through and counts, failing the paths in fail.
type writeCounter struct {
	mu     sync.Mutex
	writes int
	fail   map[string]error
}

func (w *writeCounter) WriteFile(path string, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.fail[path]; err != nil {
		return err
	}
	w.writes++
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = fh.Write(data)
	return errors.Join(err, fh.Close())
}

func (w *writeCounter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

type actRig struct {
	tree    *cpufreqtest.Tree
	w       *writeCounter
	journal *state.Journal
	act     *Actuator
}

func newActRig(t testing.TB, s cpufreqtest.Spec, minFreq int64) *actRig {
	t.Helper()
	r := &actRig{tree: cpufreqtest.Build(t, t.TempDir(), s), w: &writeCounter{}}
	fs := sysfs.New(r.tree.Root).WithWriter(r.w)
	var err error
	if r.journal, err = state.Open(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	host := cpufreq.Discover(fs)
	if r.act, err = NewActuator(cpufreq.NewSetter(fs, r.journal, host), host, minFreq); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *actRig) ceilings(t *testing.T) []int64 {
	var out []int64
	for c := 0; c < r.tree.Spec.NCPUs(); c++ {
		out = append(out, r.tree.ScalingMax(t, c))
	}
	return out
}

func TestThrottleOrderInterleavesPackagesAndKeepsThreadsTogether(t *testing.T) {
	r := newActRig(t, xeon, 0)
	want := [][]int{{0, 4}, {2, 6}, {1, 5}, {3, 7}}
	if got := r.act.Order(); !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	s := cpufreqtest.Spec{Packages: 3, CoresPerPackage: 2, ThreadsPerCore: 1, MinKHz: 1000000, MaxKHz: 3000000}
	if got := newActRig(t, s, 0).act.Order(); !reflect.DeepEqual(got, [][]int{{0}, {2}, {4}, {1}, {3}, {5}}) {
		t.Errorf("three packages: %v", got)
	}
}

func TestApplyThrottlesTheRoundedShareOfUnits(t *testing.T) {
	const lo, hi = 800000, 3900000
	for _, tc := range []struct {
		pct  float64
		want []int64 // cpu0..7
	}{
		{0, []int64{hi, hi, hi, hi, hi, hi, hi, hi}},
		{12, []int64{hi, hi, hi, hi, hi, hi, hi, hi}},  // 0.48 of 4 units rounds to 0
		{13, []int64{lo, hi, hi, hi, lo, hi, hi, hi}},  // 0.52 rounds to 1: core 0 with both threads
		{50, []int64{lo, hi, lo, hi, lo, hi, lo, hi}},  // one core on each package
		{75, []int64{lo, lo, lo, hi, lo, lo, lo, hi}},  // 3 units
		{100, []int64{lo, lo, lo, lo, lo, lo, lo, lo}}, // all
		{250, []int64{lo, lo, lo, lo, lo, lo, lo, lo}}, // clamped
		{-5, []int64{hi, hi, hi, hi, hi, hi, hi, hi}},
	} {
		r := newActRig(t, xeon, 0)
		if err := r.act.Apply(tc.pct); err != nil {
			t.Fatal(err)
		}
		if got := r.ceilings(t); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Apply(%v): ceilings %v, want %v", tc.pct, got, tc.want)
		}
	}
}

func TestApplyWritesOnlyWhatChanged(t *testing.T) {
	r := newActRig(t, xeon, 0)
	steps := []struct {
		pct    float64
		writes int
	}{
		{0, 0},   // nothing throttled, nothing to lift
		{50, 4},  // two cores, both threads
		{50, 0},  // the same again
		{55, 0},  // still two units
		{75, 2},  // one more core
		{25, 4},  // lift two cores
		{100, 6}, // three more cores
		{0, 8},   // lift everything
	}
	for i, s := range steps {
		before := r.w.count()
		if err := r.act.Apply(s.pct); err != nil {
			t.Fatal(err)
		}
		if got := r.w.count() - before; got != s.writes || r.act.Last().Writes != s.writes {
			t.Errorf("step %d Apply(%v): %d writes (reported %d), want %d", i, s.pct, got, r.act.Last().Writes, s.writes)
		}
	}
}

func TestThrottleFrequencyHonoursFloorsAndNeverRaisesACeiling(t *testing.T) {
	s := xeon
	s.Override = map[int]map[string]string{
		1: {"scaling_min_freq": "2000000"}, // an administrator's floor
		2: {"scaling_max_freq": "1000000"}, // an administrator's low ceiling
	}
	r := newActRig(t, s, 1200000) // DVFS_MIN_FREQ_KHZ
	if err := r.act.Apply(100); err != nil {
		t.Fatal(err)
	}
	want := []int64{1200000, 2000000, 1000000, 1200000, 1200000, 1200000, 1200000, 1200000}
	if got := r.ceilings(t); !reflect.DeepEqual(got, want) {
		t.Errorf("ceilings %v, want %v", got, want)
	}
	if err := r.act.Apply(0); err != nil {
		t.Fatal(err)
	}
	want = []int64{3900000, 3900000, 1000000, 3900000, 3900000, 3900000, 3900000, 3900000}
	if got := r.ceilings(t); !reflect.DeepEqual(got, want) {
		t.Errorf("lifted: %v, want the originals %v", got, want)
	}
}

func TestResetRestoresOriginalsAndForgetsThem(t *testing.T) {
	r := newActRig(t, xeon, 0)
	if err := r.act.Apply(100); err != nil {
		t.Fatal(err)
	}
	if r.journal.Len() != 8 {
		t.Fatalf("%d originals journaled, want 8", r.journal.Len())
	}
	if err := r.act.Reset(); err != nil {
		t.Fatal(err)
	}
	for c, v := range r.ceilings(t) {
		if v != 3900000 {
			t.Errorf("cpu%d = %d after Reset", c, v)
		}
	}
	if r.journal.Len() != 0 {
		t.Errorf("%d entries left", r.journal.Len())
	}
	before := r.w.count()
	if err := r.act.Apply(0); err != nil || r.w.count() != before {
		t.Errorf("Apply(0) after Reset: %v, %d writes", err, r.w.count()-before)
	}
	if err := r.act.Apply(50); err != nil || r.journal.Len() != 4 {
		t.Errorf("throttling again journals afresh: %v, %d entries", err, r.journal.Len())
	}
}

func TestApplyRetriesACPUWhoseWriteFailed(t *testing.T) {
	r := newActRig(t, xeon, 0)
	r.w.fail = map[string]error{r.tree.ScalingMaxPath(4): syscall.EIO}
	err := r.act.Apply(25)
	if !errors.Is(err, syscall.EIO) || backend.IsBlocked(err) {
		t.Fatalf("err = %v, want EIO", err)
	}
	if got := r.ceilings(t); got[0] != 800000 || got[4] != 3900000 || r.act.Last().FailedCPUs != 1 {
		t.Errorf("after EIO: %v %+v", got, r.act.Last())
	}
	r.w.fail = nil
	if err := r.act.Apply(25); err != nil {
		t.Fatal(err)
	}
	if got := r.ceilings(t); got[4] != 800000 || r.act.Last().Writes != 1 {
		t.Errorf("retry: %v, %+v; want only cpu4 written", got, r.act.Last())
	}
}

func TestApplyOnPartlyReadOnlyHostIsBlockedButThrottlesTheRest(t *testing.T) {
	s := xeon
	s.ReadOnly = []int{0}
	r := newActRig(t, s, 0)
	err := r.act.Apply(50)
	if !backend.IsBlocked(err) {
		t.Fatalf("err = %v, want blocked", err)
	}
	if got := r.ceilings(t); got[0] != 3900000 || got[4] != 800000 || got[2] != 800000 {
		t.Errorf("ceilings %v", got)
	}
}

func TestNewActuatorWithoutUsableCpufreqIsBlocked(t *testing.T) {
	fs := sysfs.New(t.TempDir())
	j, _ := state.Open(t.TempDir())
	host := cpufreq.Discover(fs)
	if _, err := NewActuator(cpufreq.NewSetter(fs, j, host), host, 0); !backend.IsBlocked(err) {
		t.Errorf("VM: %v, want blocked", err)
	}
	s := xeon
	s.ReadOnly = []int{0, 1, 2, 3, 4, 5, 6, 7}
	tree := cpufreqtest.Build(t, t.TempDir(), s)
	fs = sysfs.New(tree.Root)
	host = cpufreq.Discover(fs)
	if _, err := NewActuator(cpufreq.NewSetter(fs, j, host), host, 0); !backend.IsBlocked(err) {
		t.Errorf("read-only: %v, want blocked", err)
	}
}

func TestActuatorAfterCrashLiftsTheLeftoverThrottle(t *testing.T) {
	tree := cpufreqtest.Build(t, t.TempDir(), xeon)
	fs := sysfs.New(tree.Root)
	dir := t.TempDir()
	j, _ := state.Open(dir)
	host := cpufreq.Discover(fs)
	first, err := NewActuator(cpufreq.NewSetter(fs, j, host), host, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Apply(100); err != nil {
		t.Fatal(err)
	}
	// Crash; the next run discovers throttled CPUs but knows the originals.
	j2, _ := state.Open(dir)
	host = cpufreq.Discover(fs)
	second, err := NewActuator(cpufreq.NewSetter(fs, j2, host), host, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Apply(0); err != nil {
		t.Fatal(err)
	}
	for c := 0; c < 8; c++ {
		if got := tree.ScalingMax(t, c); got != 3900000 {
			t.Errorf("cpu%d = %d, want the original", c, got)
		}
	}
}

func TestRegulatorDrivesTheActuator(t *testing.T) {
	r := newActRig(t, xeon, 0)
	cfg := DefaultConfig()
	cfg.StepPct = 50
	reg, err := NewRegulator(cfg, r.act)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 2; i++ {
		if _, err := reg.Regulate(now.Add(time.Duration(i)*time.Minute), 300, 100); err != nil {
			t.Fatal(err)
		}
	}
	if pct := reg.Last().ThrottlePct; pct != 50 || r.act.Last().ThrottledCPUs != 4 {
		t.Errorf("throttle %v, actuator %+v", pct, r.act.Last())
	}
	if err := reg.SetThrottlePct(100); err != nil || r.act.Last().ThrottledCPUs != 8 {
		t.Errorf("percent path: %v %+v", err, r.act.Last())
	}
	if err := reg.Reset(); err != nil || reg.Last().ThrottlePct != 0 || r.journal.Len() != 0 {
		t.Errorf("reset: %v %+v", err, reg.Last())
	}
	if _, err := NewRegulator(Config{}, r.act); err == nil {
		t.Error("invalid config accepted")
	}
	if _, err := NewRegulator(cfg, nil); err == nil {
		t.Error("nil actuation accepted")
	}
}

// BenchmarkApplyUnchanged is the actuator's share of a steady-state
// reconcile tick on a 192-CPU host: nothing to change, nothing written.
func BenchmarkApplyUnchanged(b *testing.B) {
	s := cpufreqtest.Spec{Packages: 2, CoresPerPackage: 48, ThreadsPerCore: 2, MinKHz: 1500000, MaxKHz: 3700000}
	r := newActRig(b, s, 0)
	if err := r.act.Apply(40); err != nil {
		b.Fatal(err)
	}
	writes := r.w.count()
	b.ReportAllocs()
	for b.Loop() {
		if err := r.act.Apply(40); err != nil {
			b.Fatal(err)
		}
	}
	if r.w.count() != writes {
		b.Fatalf("%d writes on unchanged ticks", r.w.count()-writes)
	}
}
