package state

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFirstRecordWins(t *testing.T) {
	j, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Record(Entry{Backend: "rapl", ID: "intel-rapl:0/constraint_0_power_limit_uw", Original: "250000000"}); err != nil {
		t.Fatal(err)
	}
	// A later "original" is the agent's own cap: it must not replace the
	// host's value.
	if err := j.Record(Entry{Backend: "rapl", ID: "intel-rapl:0/constraint_0_power_limit_uw", Original: "150000000"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := j.Original("rapl", "intel-rapl:0/constraint_0_power_limit_uw"); got != "250000000" {
		t.Fatalf("original = %s, want the first recorded 250000000", got)
	}
}

func TestRestoreAfterCrashUsesOriginalsFromDisk(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Record(
		Entry{Backend: "rapl", ID: "intel-rapl:0/constraint_0_power_limit_uw", Original: "250000000"},
		Entry{Backend: "cpufreq", ID: "cpu1/scaling_max_freq", Original: "3700000"},
	); err != nil {
		t.Fatal(err)
	}
	// The process dies here: no Close, no restore. A new process opens the
	// same directory.
	j2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rapl := &fakeRestorer{}
	cpufreq := &fakeRestorer{}
	if err := j2.Restore(map[string]Restorer{"rapl": rapl, "cpufreq": cpufreq}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rapl.got, []string{"intel-rapl:0/constraint_0_power_limit_uw=250000000"}) ||
		!reflect.DeepEqual(cpufreq.got, []string{"cpu1/scaling_max_freq=3700000"}) {
		t.Fatalf("restored rapl %v, cpufreq %v", rapl.got, cpufreq.got)
	}
	if j2.Len() != 0 {
		t.Fatalf("%d entries left after a full restore", j2.Len())
	}
	j3, err := Open(dir)
	if err != nil || j3.Len() != 0 {
		t.Fatalf("journal on disk after restore: %d entries, %v", j3.Len(), err)
	}
}

func TestFailedRestoreKeepsTheEntry(t *testing.T) {
	j, _ := Open(t.TempDir())
	_ = j.Record(
		Entry{Backend: "nvml", ID: "GPU-1", Original: "700000"},
		Entry{Backend: "nvml", ID: "GPU-2", Original: "700000"},
		Entry{Backend: "hwmon", ID: "0000:17:00.0/power1_cap", Original: "750000000"},
	)
	nv := &fakeRestorer{fail: map[string]error{"GPU-1": errors.New("GPU is lost")}}
	err := j.Restore(map[string]Restorer{"nvml": nv})
	if err == nil || !strings.Contains(err.Error(), "GPU is lost") || !strings.Contains(err.Error(), "no hwmon backend") {
		t.Fatalf("error %v should name the lost GPU and the missing backend", err)
	}
	var left []string
	for _, e := range j.Entries() {
		left = append(left, e.Backend+"/"+e.ID)
	}
	if !reflect.DeepEqual(left, []string{"hwmon/0000:17:00.0/power1_cap", "nvml/GPU-1"}) {
		t.Fatalf("entries left = %v", left)
	}
}

func TestCorruptJournalIsRefusedAndLeftUntouched(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{"torn", `{"version":1,"entries":[{"backend":"rapl"`, "is corrupt"},
		{"future format", `{"version":9,"entries":[]}`, "format version 9"},
		{"entry naming no control", `{"version":1,"entries":[{"backend":"rapl","id":"","original":"1"}]}`, "without backend or id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir)
			if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v; want ErrUnreadable saying %q", err, tc.want)
			}
			// The operator is told which file and what to run.
			if want := "mv " + path + " " + path + ".bad"; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
			if data, _ := os.ReadFile(path); string(data) != tc.content {
				t.Fatal("the refused journal was modified")
			}
		})
	}
}

func TestRecordFailsWhenTheJournalCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	j, _ := Open(dir)
	// Permissions do not stop root, so take the directory away instead.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	err := j.Record(Entry{Backend: "rapl", ID: "intel-rapl:0/x", Original: "1"})
	if err == nil {
		t.Fatal("Record succeeded with no state directory")
	}
	if j.Has("rapl", "intel-rapl:0/x") {
		t.Fatal("an original that is not on disk counts as recorded; the caller would write the control unprotected")
	}
}

func TestJournalFileIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "joulie")
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_ = j.Record(Entry{Backend: "rapl", ID: "a", Original: "1"})
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("state dir mode %v, %v", st.Mode().Perm(), err)
	}
	fst, err := os.Stat(j.Path())
	if err != nil || fst.Mode().Perm()&0o077 != 0 {
		t.Fatalf("journal mode %v, %v", fst.Mode().Perm(), err)
	}
}

type fakeRestorer struct {
	got  []string
	fail map[string]error
}

func (f *fakeRestorer) Restore(id, original string) error {
	if err := f.fail[id]; err != nil {
		return err
	}
	f.got = append(f.got, id+"="+original)
	return nil
}

func TestRestoreBackendLeavesOthersRecorded(t *testing.T) {
	j, _ := Open(t.TempDir())
	_ = j.Record(
		Entry{Backend: "nvml", ID: "GPU-1", Original: "700000"},
		Entry{Backend: "rapl", ID: "intel-rapl:0/constraint_0_power_limit_uw", Original: "250000000"},
	)
	nv := &fakeRestorer{}
	if err := j.RestoreBackend("nvml", nv); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(nv.got, []string{"GPU-1=700000"}) || j.Has("nvml", "GPU-1") || !j.Has("rapl", "intel-rapl:0/constraint_0_power_limit_uw") {
		t.Fatalf("restored %v; nvml left=%v rapl left=%v", nv.got, j.Has("nvml", "GPU-1"), j.Has("rapl", "intel-rapl:0/constraint_0_power_limit_uw"))
	}
}

// A journal written by an agent from before entries carried their kind
// (packages upgrade in place, so a crash just before an upgrade leaves
// one) must still restore class by class.
func TestJournalWithoutKindsStillRestoresByKind(t *testing.T) {
	dir := t.TempDir()
	legacy := `{
  "version": 1,
  "entries": [
    {"backend": "amdsmi", "id": "cpu-socket/0", "original": "400000", "recordedAt": "2026-11-20T08:00:00Z"},
    {"backend": "amdsmi", "id": "gpu/0000:41:00.0", "original": "750000000", "recordedAt": "2026-11-20T08:00:00Z"},
    {"backend": "cpufreq", "id": "cpu1/scaling_max_freq", "original": "3700000", "recordedAt": "2026-11-20T08:00:00Z"},
    {"backend": "hwmon", "id": "0000:c1:00.0/power1_cap", "original": "300000000", "recordedAt": "2026-11-20T08:00:00Z"},
    {"backend": "nvml", "id": "GPU-1", "original": "700000", "recordedAt": "2026-11-20T08:00:00Z"},
    {"backend": "rapl", "id": "intel-rapl:0/constraint_0_power_limit_uw", "original": "250000000", "recordedAt": "2026-11-20T08:00:00Z"}
  ]
}
`
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]Kind{}
	for _, e := range j.Entries() {
		kinds[e.Backend+" "+e.ID] = e.Kind
	}
	want := map[string]Kind{
		"amdsmi cpu-socket/0": KindCPU, "amdsmi gpu/0000:41:00.0": KindGPU, "cpufreq cpu1/scaling_max_freq": KindCPU,
		"hwmon 0000:c1:00.0/power1_cap": KindGPU, "nvml GPU-1": KindGPU, "rapl intel-rapl:0/constraint_0_power_limit_uw": KindCPU,
	}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	amdsmi := &fakeRestorer{}
	if err := j.RestoreWhere(func(e Entry) bool { return e.Kind == KindCPU && e.Backend == "amdsmi" }, map[string]Restorer{"amdsmi": amdsmi}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(amdsmi.got, []string{"cpu-socket/0=400000"}) || !j.Has("amdsmi", "gpu/0000:41:00.0") {
		t.Fatalf("restoring amd-smi's CPU sockets restored %v; the GPU must stay recorded", amdsmi.got)
	}
}

func TestKindIsWrittenAndReadBack(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A backend this version does not know: the kind comes only from the
	// entry, not from legacyKind.
	if err := j.Record(Entry{Backend: "future", Kind: KindGPU, ID: "gpu-0", Original: "1"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(j.Path())
	if err != nil || !strings.Contains(string(data), `"kind": "gpu"`) {
		t.Fatalf("journal on disk (%v):\n%s", err, data)
	}
	j2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e := j2.Entries(); len(e) != 1 || e[0].Kind != KindGPU {
		t.Fatalf("entries read back: %+v", e)
	}
}
