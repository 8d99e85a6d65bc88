package cpufreq

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/cpufreq/cpufreqtest"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
)

// recordCounter counts Record calls on a real journal.
type recordCounter struct {
	*state.Journal
	records int
	fail    error
}

func (j *recordCounter) Record(entries ...state.Entry) error {
	j.records++
	if j.fail != nil {
		return j.fail
	}
	return j.Journal.Record(entries...)
}

// countingWriter writes through to the file, counts writes per path, fails
// paths listed in fail, and runs before() ahead of every write.
type countingWriter struct {
	mu     sync.Mutex
	writes map[string]int
	fail   map[string]error
	before func(path string)
}

func (w *countingWriter) WriteFile(path string, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.before != nil {
		w.before(path)
	}
	if err, ok := w.fail[path]; ok {
		return err
	}
	if w.writes == nil {
		w.writes = make(map[string]int)
	}
	w.writes[path]++
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = fh.Write(data)
	return errors.Join(err, fh.Close())
}

func (w *countingWriter) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.writes {
		n += c
	}
	return n
}

type rig struct {
	tree    *cpufreqtest.Tree
	fs      *sysfs.FS
	w       *countingWriter
	dir     string
	journal *recordCounter
	host    Host
	setter  *Setter
}

func newRig(t *testing.T, s cpufreqtest.Spec) *rig {
	t.Helper()
	r := &rig{tree: cpufreqtest.Build(t, t.TempDir(), s), w: &countingWriter{}, dir: t.TempDir()}
	r.fs = sysfs.New(r.tree.Root).WithWriter(r.w)
	j, err := state.Open(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	r.journal = &recordCounter{Journal: j}
	r.host = Discover(r.fs)
	r.setter = NewSetter(r.fs, r.journal, r.host)
	return r
}

func targets(khz int64, cpus ...int) []Target {
	out := make([]Target, len(cpus))
	for i, c := range cpus {
		out[i] = Target{CPU: c, KHz: khz}
	}
	return out
}

func TestSetMaxFreqJournalsOriginalsOnceBeforeTheFirstWrite(t *testing.T) {
	r := newRig(t, xeon)
	checked := false
	r.w.before = func(string) {
		if checked {
			return
		}
		checked = true
		// What a crash right now would leave: a journal on disk that
		// already holds every original about to be overwritten.
		j, err := state.Open(r.dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []int{0, 1, 2, 3} {
			if v, ok := j.Original(Backend, ID(c)); !ok || v != "3900000" {
				t.Errorf("before the first write, cpu%d original = %q, %v", c, v, ok)
			}
		}
	}
	res, err := r.setter.SetMaxFreq(targets(1200000, 0, 1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	if !checked || r.journal.records != 1 || r.w.total() != 4 {
		t.Errorf("checked=%v records=%d writes=%d, want one record and 4 writes", checked, r.journal.records, r.w.total())
	}
	for _, x := range res {
		if !x.Written || x.Was != 3900000 || x.KHz != 1200000 {
			t.Errorf("%+v", x)
		}
	}
	// Changing them again journals nothing new: the first record wins.
	if _, err := r.setter.SetMaxFreq(targets(1000000, 0, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if r.journal.records != 1 {
		t.Errorf("second change: %d Record calls, want still 1", r.journal.records)
	}
	if v, _ := r.journal.Original(Backend, ID(2)); v != "3900000" {
		t.Errorf("cpu2 original = %s after two changes, want 3900000", v)
	}
	for c := 0; c < 4; c++ {
		if got := r.tree.ScalingMax(t, c); got != 1000000 {
			t.Errorf("cpu%d scaling_max_freq = %d", c, got)
		}
	}
	if got := r.tree.ScalingMax(t, 4); got != 3900000 {
		t.Errorf("untouched cpu4 = %d", got)
	}
}

func TestSetMaxFreqSkipsCPUsAlreadyAtTheValue(t *testing.T) {
	r := newRig(t, xeon)
	if _, err := r.setter.SetMaxFreq(targets(3900000, 0, 1, 2, 3, 4, 5, 6, 7)); err != nil {
		t.Fatal(err)
	}
	if r.w.total() != 0 || r.journal.records != 0 || r.journal.Len() != 0 {
		t.Errorf("setting the values in force: %d writes, %d records, %d entries; want none", r.w.total(), r.journal.records, r.journal.Len())
	}
	if _, err := r.setter.SetMaxFreq(targets(2000000, 0, 1)); err != nil {
		t.Fatal(err)
	}
	res, err := r.setter.SetMaxFreq([]Target{{0, 2000000}, {1, 2000000}, {2, 2000000}})
	if err != nil {
		t.Fatal(err)
	}
	if r.w.total() != 3 || res[0].Written || res[1].Written || !res[2].Written {
		t.Errorf("writes=%d results=%+v; want only cpu2 written the second time", r.w.total(), res)
	}
}

func TestSetMaxFreqClampsToTheHardwareRange(t *testing.T) {
	r := newRig(t, xeon)
	res, err := r.setter.SetMaxFreq([]Target{{0, 100}, {1, 9999999}, {2, -5}})
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{800000, 3900000, 800000}
	for i, x := range res {
		if x.KHz != want[i] || r.tree.ScalingMax(t, x.CPU) != want[i] {
			t.Errorf("cpu%d: aimed %d, file %d, want %d", x.CPU, x.KHz, r.tree.ScalingMax(t, x.CPU), want[i])
		}
	}
	if res[1].Written {
		t.Error("cpu1 clamped to the value in force was written anyway")
	}
}

func TestSetMaxFreqOnReadOnlyCeilingIsBlockedAndOthersGoOn(t *testing.T) {
	s := xeon
	s.ReadOnly = []int{1}
	r := newRig(t, s)
	res, err := r.setter.SetMaxFreq(targets(1500000, 0, 1, 2))
	if !backend.IsBlocked(err) || !errors.Is(res[1].Err, sysfs.ErrReadOnly) {
		t.Fatalf("err %v, cpu1 %v; want blocked", err, res[1].Err)
	}
	if res[0].Err != nil || res[2].Err != nil || r.tree.ScalingMax(t, 0) != 1500000 || r.tree.ScalingMax(t, 2) != 1500000 {
		t.Errorf("the writable CPUs were not written: %+v", res)
	}
	if r.tree.ScalingMax(t, 1) != 3900000 {
		t.Error("read-only cpu1 changed")
	}
	if r.journal.Has(Backend, ID(1)) {
		t.Error("an original was journaled for a control that was never written")
	}
}

func TestSetMaxFreqEIOFailsOnlyThatCPU(t *testing.T) {
	r := newRig(t, xeon)
	r.w.fail = map[string]error{r.tree.ScalingMaxPath(2): syscall.EIO}
	res, err := r.setter.SetMaxFreq(targets(1500000, 0, 1, 2, 3))
	if err == nil || backend.IsBlocked(err) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("err = %v, want an EIO error that is not 'blocked'", err)
	}
	if !strings.Contains(err.Error(), "cpu2") || !strings.Contains(err.Error(), "1500000 kHz") {
		t.Errorf("error lacks context: %v", err)
	}
	for _, c := range []int{0, 1, 3} {
		if res[c].Err != nil || r.tree.ScalingMax(t, c) != 1500000 {
			t.Errorf("cpu%d: %v, file %d", c, res[c].Err, r.tree.ScalingMax(t, c))
		}
	}
	if res[2].Written || r.tree.ScalingMax(t, 2) != 3900000 {
		t.Errorf("cpu2 after EIO: %+v", res[2])
	}
}

func TestSetMaxFreqWritesNothingWhenTheOriginalCannotBeRecorded(t *testing.T) {
	r := newRig(t, xeon)
	r.journal.fail = errors.New("disk full")
	_, err := r.setter.SetMaxFreq(targets(1500000, 0, 1))
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
	if r.w.total() != 0 {
		t.Errorf("%d writes without a recorded original", r.w.total())
	}
}

func TestSetMaxFreqOnUndiscoveredCPUIsBlocked(t *testing.T) {
	r := newRig(t, xeon)
	if _, err := r.setter.SetMaxFreq(targets(1500000, 42)); !backend.IsBlocked(err) {
		t.Errorf("err = %v, want blocked", err)
	}
}

func TestSharedPolicyIsWrittenOnce(t *testing.T) {
	s := xeon
	s.PolicyPerCore = true
	r := newRig(t, s)
	res, err := r.setter.SetMaxFreq(targets(1500000, 1, 5))
	if err != nil {
		t.Fatal(err)
	}
	if r.w.total() != 1 || !res[0].Written || res[1].Written {
		t.Errorf("writes=%d results=%+v; want policy1 written once for cpu1 and cpu5", r.w.total(), res)
	}
	if r.tree.ScalingMax(t, 5) != 1500000 {
		t.Error("cpu5 does not see its policy's new ceiling")
	}
}

func TestRestoreAfterCrashPutsOriginalsBack(t *testing.T) {
	r := newRig(t, xeon)
	if _, err := r.setter.SetMaxFreq(targets(1000000, 0, 2, 4, 6)); err != nil {
		t.Fatal(err)
	}
	// The agent dies here. The next run discovers the throttled CPUs and
	// opens the journal the crashed run left.
	fs := sysfs.New(r.tree.Root)
	host := Discover(fs)
	if c, _ := host.CPU(2); c.ScalingMaxKHz != 1000000 {
		t.Fatalf("fixture: cpu2 = %d after the crash", c.ScalingMaxKHz)
	}
	j, err := state.Open(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	after := NewSetter(fs, j, host)
	if v, _ := after.Original(2); v != 3900000 {
		t.Errorf("Original(2) after the crash = %d, want the journaled 3900000", v)
	}
	if err := j.Restore(map[string]state.Restorer{Backend: after}); err != nil {
		t.Fatal(err)
	}
	for c := 0; c < 8; c++ {
		if got := r.tree.ScalingMax(t, c); got != 3900000 {
			t.Errorf("cpu%d = %d after restore, want 3900000", c, got)
		}
	}
	if j.Len() != 0 {
		t.Errorf("%d entries left after restore", j.Len())
	}
}

func TestRestoreAllPutsEveryThrottledCPUBack(t *testing.T) {
	s := xeon
	s.ScalingMaxKHz = 3000000 // an administrator's own ceiling is the original
	r := newRig(t, s)
	if _, err := r.setter.SetMaxFreq(targets(800000, 1, 3, 5)); err != nil {
		t.Fatal(err)
	}
	if err := r.journal.Record(state.Entry{Backend: "rapl", ID: "intel-rapl:0/constraint_0_power_limit_uw", Original: "1"}); err != nil {
		t.Fatal(err)
	}
	if err := r.setter.RestoreAll(); err != nil {
		t.Fatal(err)
	}
	for c := 0; c < 8; c++ {
		if got := r.tree.ScalingMax(t, c); got != 3000000 {
			t.Errorf("cpu%d = %d, want the original 3000000", c, got)
		}
	}
	if es := r.journal.Entries(); len(es) != 1 || es[0].Backend != "rapl" {
		t.Errorf("entries left: %+v; want only the rapl one", es)
	}
	if v, _ := r.setter.Original(3); v != 3000000 {
		t.Errorf("Original(3) after RestoreAll = %d", v)
	}
	writes := r.w.total()
	if err := r.setter.RestoreAll(); err != nil || r.w.total() != writes {
		t.Errorf("second RestoreAll: %v, %d extra writes", err, r.w.total()-writes)
	}
}

func TestRestoreClampsAndRefusesForeignEntries(t *testing.T) {
	r := newRig(t, xeon)
	if err := r.setter.Restore(ID(1), "99999999"); err != nil {
		t.Fatal(err)
	}
	if got := r.tree.ScalingMax(t, 1); got != 3900000 {
		t.Errorf("restored to %d, want clamped 3900000", got)
	}
	if err := r.setter.Restore(ID(1), "1000"); err != nil || r.tree.ScalingMax(t, 1) != 800000 {
		t.Errorf("low original: %v, %d", err, r.tree.ScalingMax(t, 1))
	}
	for _, c := range []struct{ id, orig string }{
		{"cpu1/scaling_min_freq", "800000"},
		{"cpu1/../../../../etc/passwd", "1"},
		{"cpu1/scaling_max_freq", "fast"},
		{"cpu1/scaling_max_freq", "0"},
		{"cpu99/scaling_max_freq", "800000"},
	} {
		if err := r.setter.Restore(c.id, c.orig); err == nil {
			t.Errorf("Restore(%q, %q) accepted", c.id, c.orig)
		}
	}
}

func TestRestoreFindsCPUsTheSetterDidNotDiscover(t *testing.T) {
	r := newRig(t, xeon)
	r.tree.SetScalingMax(t, 6, 1200000)
	empty := NewSetter(r.fs, r.journal, Host{})
	if err := empty.Restore(ID(6), "3900000"); err != nil {
		t.Fatal(err)
	}
	if got := r.tree.ScalingMax(t, 6); got != 3900000 {
		t.Errorf("cpu6 = %d", got)
	}
}

func TestIDRoundTrips(t *testing.T) {
	for _, cpu := range []int{0, 7, 191, maxCPUID} {
		if got, err := ParseID(ID(cpu)); err != nil || got != cpu {
			t.Errorf("ParseID(ID(%d)) = %d, %v", cpu, got, err)
		}
	}
	for _, bad := range []string{"", "cpu", "cpu/scaling_max_freq", "cpu+1/scaling_max_freq", "cpu01/scaling_max_freq",
		"cpu-1/scaling_max_freq", "cpu1/scaling_max_freqx", "xcpu1/scaling_max_freq", "cpu65536/scaling_max_freq",
		"cpu" + strconv.Itoa(1<<40) + "/scaling_max_freq", fmt.Sprintf("cpu%c/scaling_max_freq", '٣')} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}

func TestPresentFollowsACPUGoingOffline(t *testing.T) {
	r := newRig(t, xeon)
	if _, err := r.setter.SetMaxFreq(targets(2000000, 5)); err != nil {
		t.Fatal(err)
	}
	// Offline, the kernel takes away the CPU's policy and its link.
	for _, p := range []string{"cpu/cpu5/cpufreq", "cpu/cpufreq/policy5"} {
		if err := os.RemoveAll(r.fs.Path("sys/devices/system", p)); err != nil {
			t.Fatal(err)
		}
	}
	writes := r.w.total()
	for id, want := range map[string]bool{ID(4): true, ID(5): false, ID(99): false, "cpu4/scaling_min_freq": false} {
		if got, err := r.setter.Present(id); got != want || err != nil {
			t.Errorf("Present(%q) = %v, %v; want %v", id, got, err, want)
		}
	}
	if r.w.total() != writes {
		t.Error("Present wrote")
	}
}
