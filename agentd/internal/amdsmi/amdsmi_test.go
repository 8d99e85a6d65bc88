package amdsmi

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/state"
)

var _ backend.GPUCapper = (*GPUCapper)(nil)
var _ state.Restorer = (*Library)(nil)
var _ state.Restorer = (*SocketCapper)(nil)

// fakes are the fake libraries TestMain builds from testdata/fake_amdsmi.c,
// by variant.
var fakes = map[string]string{}

var variants = map[string][]string{
	"full":              nil,
	"no-set-power-cap":  {"-DFAKE_OMIT_SET_POWER_CAP"},
	"no-socket-handles": {"-DFAKE_OMIT_SOCKET_HANDLES"},
	"no-power-info":     {"-DFAKE_OMIT_POWER_INFO"},
	"no-energy-count":   {"-DFAKE_OMIT_ENERGY_COUNT"},
	"no-lib-version":    {"-DFAKE_OMIT_LIB_VERSION"},
}

// TestMain compiles the fake libamd_smi.so variants with gcc. Without gcc
// the tests cannot exercise the dlopen path at all, so they fail rather
// than skip.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		fmt.Fprintln(os.Stderr, "amdsmi tests need gcc to build the fake libamd_smi.so:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "fake-amdsmi-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	for name, flags := range variants {
		out := filepath.Join(dir, name, "libamd_smi.so")
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		args := append([]string{"-shared", "-fPIC", "-Wall", "-Werror", "-o", out}, flags...)
		args = append(args, filepath.Join("testdata", "fake_amdsmi.c"))
		if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building fake libamd_smi.so (%s): %v\n%s", name, err, b)
			return 1
		}
		fakes[name] = out
	}
	return m.Run()
}

// openFake loads a private copy of a fake library, so each test starts
// from the fake's initial state (dlopen shares one copy per path).
func openFake(t *testing.T, variant string) *Library {
	t.Helper()
	path := copyFake(t, variant)
	l, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func copyFake(t *testing.T, variant string) string {
	t.Helper()
	b, err := os.ReadFile(fakes[variant])
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "libamd_smi.so")
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeVar is one of the fake's exported fake_* variables.
func fakeVar[T any](t *testing.T, l *Library, name string) *T {
	t.Helper()
	p, err := l.lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return (*T)(p)
}

func openJournal(t *testing.T) (*state.Journal, string) {
	t.Helper()
	dir := t.TempDir()
	j, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return j, dir
}

func entries(j *state.Journal) map[string]string {
	out := map[string]string{}
	for _, e := range j.Entries() {
		out[e.Backend+" "+e.ID] = e.Original
	}
	return out
}

// resolution is the fake's energy counter resolution as the library hands
// it over: a C float, in microjoules per count.
var resolution = float64(float32(15.259))

// joules is what a count of the fake's energy counter stands for.
func joules(counts uint64) float64 { return float64(counts) * resolution / 1e6 }

func TestGPUsAreEnumeratedThroughTheLoadedLibrary(t *testing.T) {
	l := openFake(t, "full")
	j, _ := openJournal(t)
	c := NewGPUCapper(l, j)
	got, err := c.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	want := []backend.GPU{
		{
			Index: 0, UUID: "6aff740f-0000-1000-8000-000000000001", Name: "AMD GPU", PCIBusID: "0000:c1:00.0",
			MinWatts: 100, MaxWatts: 300, DefaultWatts: 300, CapWatts: 300,
			PowerWatts: 212, HasPower: true, EnergyJoules: joules(1_000_000_000), HasEnergy: true,
		},
		{
			// Its current_socket_power is unsupported (0xFFFF), as on
			// MI200 and older: the average stands in.
			Index: 1, UUID: "85ff74a1-0000-1000-8000-000000000002", Name: "AMD GPU", PCIBusID: "0001:41:00.0",
			MinWatts: 200, MaxWatts: 750, DefaultWatts: 750, CapWatts: 750,
			PowerWatts: 431, HasPower: true, EnergyJoules: joules(3_000_000_000), HasEnergy: true,
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GPUs:\n got  %+v\n want %+v", got, want)
	}
	if c.Name() != "amdsmi" {
		t.Errorf("Name = %q", c.Name())
	}
}

// amd-smi's GPUs are named from the host's PCI bus where it knows them,
// and stay generic where it does not.
func TestGPUsAreNamedFromThePCIBus(t *testing.T) {
	l := openFake(t, "full")
	j, _ := openJournal(t)
	c := NewGPUCapper(l, j).WithModels(map[string]string{"0000:c1:00.0": "AMD Instinct MI210", "0000:99:00.0": "AMD Instinct MI300X"})
	got, err := c.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Name != "AMD Instinct MI210" || got[1].Name != "AMD GPU" {
		t.Fatalf("names %q and %q, want the bus's MI210 and the generic name for the GPU the bus does not show", got[0].Name, got[1].Name)
	}
}

func TestGPUEnergyCounterAdvancesWithTheDraw(t *testing.T) {
	l := openFake(t, "full")
	j, _ := openJournal(t)
	c := NewGPUCapper(l, j)
	before, err := c.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	// The fake's counter runs one second of the draw between two reads.
	*fakeVar[uint32](t, l, "fake_current_socket_power") = 150
	after, err := c.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	for i, watts := range []float64{212, 431} {
		if d := after[i].EnergyJoules - before[i].EnergyJoules; math.Abs(d-watts) > 1e-3 {
			t.Errorf("GPU %d: the counter moved by %v J in one second at %v W", i, d, watts)
		}
	}
	if after[0].PowerWatts != 150 {
		t.Errorf("GPU 0 draws %v W after the change, want 150", after[0].PowerWatts)
	}
}

func TestGPUDrawIsTheCurrentSocketPowerElseTheAverage(t *testing.T) {
	for _, tc := range []struct {
		name             string
		current, average uint32
		watts            float64
		ok               bool
	}{
		{"current reported (MI300 and later)", 212, 205, 212, true},
		{"current unsupported (MI200 and older)", 0xFFFF, 205, 205, true},
		{"current unsupported, UINT32_MAX", math.MaxUint32, 205, 205, true},
		{"current zero, the average better", 0, 205, 205, true},
		{"both zero", 0, 0, 0, true},
		{"neither reported", 0xFFFF, math.MaxUint32, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openFake(t, "full")
			j, _ := openJournal(t)
			*fakeVar[uint32](t, l, "fake_current_socket_power") = tc.current
			*fakeVar[uint32](t, l, "fake_average_socket_power") = tc.average
			gpus, err := NewGPUCapper(l, j).GPUs()
			if err != nil {
				t.Fatal(err)
			}
			if g := gpus[0]; g.PowerWatts != tc.watts || g.HasPower != tc.ok {
				t.Errorf("%v W (HasPower %v), want %v W (HasPower %v)", g.PowerWatts, g.HasPower, tc.watts, tc.ok)
			}
		})
	}
}

func TestPowerInfoIsReadInTheLayoutOfTheLoadedRelease(t *testing.T) {
	// The fake writes amdsmi_power_info_t as the release it reports lays
	// it out. From 6.4 on a socket_power field comes first, and the fake
	// fills it with the average, so a read at the wrong offset shows.
	for _, tc := range []struct {
		name, version string
		power         bool
	}{
		{"ROCm 6.0", "23", true},
		{"ROCm 6.1 to 6.3", "24", true},
		{"ROCm 6.4", "25", true},
		{"ROCm 7.0", "26", true},
		{"a later release", "27", true},
		{"a release from before current_socket_power", "1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FAKE_AMDSMI_VERSION", tc.version)
			l := openFake(t, "full")
			j, _ := openJournal(t)
			gpus, err := NewGPUCapper(l, j).GPUs()
			if err != nil || len(gpus) != 2 {
				t.Fatalf("GPUs = %+v, %v", gpus, err)
			}
			for i, watts := range []float64{212, 431} {
				g := gpus[i]
				if tc.power && (!g.HasPower || g.PowerWatts != watts) || !tc.power && g.HasPower {
					t.Errorf("GPU %d: %v W (HasPower %v), want %v W (HasPower %v)", i, g.PowerWatts, g.HasPower, watts, tc.power)
				}
				if !g.HasEnergy || g.MaxWatts == 0 {
					t.Errorf("GPU %d: energy and caps should not depend on the power layout: %+v", i, g)
				}
			}
		})
	}
}

func TestFailedReadingsLeaveTheListingWhole(t *testing.T) {
	l := openFake(t, "full")
	j, _ := openJournal(t)
	c := NewGPUCapper(l, j)
	failGPU := fakeVar[int32](t, l, "fake_fail_gpu")
	*failGPU = 0
	*fakeVar[uint32](t, l, "fake_fail_get_power_info") = 12  // AMDSMI_STATUS_IO
	*fakeVar[uint32](t, l, "fake_fail_get_energy_count") = 2 // AMDSMI_STATUS_NOT_SUPPORTED

	gpus, err := c.GPUs()
	if err != nil || len(gpus) != 2 {
		t.Fatalf("GPUs = %+v, %v; want both GPUs and no error", gpus, err)
	}
	if g := gpus[0]; g.HasPower || g.HasEnergy || g.CapWatts != 300 || g.MaxWatts != 300 {
		t.Errorf("GPU 0, whose readings fail: %+v; want its caps and no readings", g)
	}
	if g := gpus[1]; !g.HasPower || !g.HasEnergy {
		t.Errorf("GPU 1: %+v; want its readings", g)
	}
	if applied, err := c.SetCap(0, 200); err != nil || applied != 200 {
		t.Fatalf("SetCap on the GPU without readings: %v, %v", applied, err)
	}

	*failGPU = -1
	gpus, err = c.GPUs()
	if err != nil || len(gpus) != 2 {
		t.Fatalf("GPUs with every reading failing = %+v, %v", gpus, err)
	}
	for _, g := range gpus {
		if g.HasPower || g.HasEnergy || g.MaxWatts == 0 {
			t.Errorf("GPU %d: %+v; want its caps and no readings", g.Index, g)
		}
	}
}

func TestLibraryWithoutTheReadingsStillListsAndCaps(t *testing.T) {
	for _, tc := range []struct {
		variant       string
		power, energy bool
	}{
		{"no-power-info", false, true},
		{"no-energy-count", true, false},
		// Without the version the layout of amdsmi_power_info_t is
		// unknown, so the draw is not read.
		{"no-lib-version", false, true},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			l := openFake(t, tc.variant)
			j, _ := openJournal(t)
			c := NewGPUCapper(l, j)
			gpus, err := c.GPUs()
			if err != nil || len(gpus) != 2 {
				t.Fatalf("GPUs = %+v, %v", gpus, err)
			}
			for _, g := range gpus {
				if g.HasPower != tc.power || g.HasEnergy != tc.energy || g.MaxWatts == 0 {
					t.Errorf("GPU %d: %+v; want HasPower %v, HasEnergy %v and its caps", g.Index, g, tc.power, tc.energy)
				}
			}
			if applied, err := c.SetCap(1, 400); err != nil || applied != 400 {
				t.Fatalf("SetCap: %v, %v", applied, err)
			}
		})
	}
}

func TestGPUSetCapClampsRoundsAndReadsBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		index int
		watts float64
		want  float64
	}{
		{"within range, rounded to whole watts", 0, 150.4, 150},
		{"above the maximum", 0, 1000, 300},
		{"below the minimum", 1, 10, 200},
		{"second GPU on its own PCI domain", 1, 500.5, 501},
		{"absurdly large request", 1, 1e300, 750},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openFake(t, "full")
			j, _ := openJournal(t)
			c := NewGPUCapper(l, j)
			applied, err := c.SetCap(tc.index, tc.watts)
			if err != nil {
				t.Fatal(err)
			}
			if applied != tc.want {
				t.Errorf("applied %v W, want %v", applied, tc.want)
			}
			gpus, err := c.GPUs()
			if err != nil {
				t.Fatal(err)
			}
			if gpus[tc.index].CapWatts != tc.want {
				t.Errorf("cap read through amd-smi = %v W, want %v", gpus[tc.index].CapWatts, tc.want)
			}
		})
	}
}

func TestGPUSetCapJournalsOnceAndSkipsTheCapInForce(t *testing.T) {
	l := openFake(t, "full")
	j, _ := openJournal(t)
	c := NewGPUCapper(l, j)
	calls := fakeVar[uint32](t, l, "fake_set_power_cap_calls")

	if applied, err := c.SetCap(0, 300); err != nil || applied != 300 {
		t.Fatalf("SetCap(300) = %v, %v", applied, err)
	}
	if *calls != 0 || j.Len() != 0 {
		t.Fatalf("cap already in force: %d set calls, %d journal entries", *calls, j.Len())
	}
	for _, w := range []float64{200, 199.8, 200.3} {
		if applied, err := c.SetCap(0, w); err != nil || applied != 200 {
			t.Fatalf("SetCap(%v) = %v, %v", w, applied, err)
		}
	}
	if *calls != 1 {
		t.Fatalf("%d amdsmi_set_power_cap calls for one target, want 1", *calls)
	}
	if _, err := c.SetCap(0, 250); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"amdsmi gpu/0000:c1:00.0": "300000000"}
	if got := entries(j); !reflect.DeepEqual(got, want) {
		t.Fatalf("journal = %v, want the first original only: %v", got, want)
	}
}

func TestGPUFailureIsAnErrorAndTheOtherGPUGoesOn(t *testing.T) {
	l := openFake(t, "full")
	j, _ := openJournal(t)
	c := NewGPUCapper(l, j)
	*fakeVar[int32](t, l, "fake_fail_gpu") = 0
	fail := fakeVar[uint32](t, l, "fake_fail_set_power_cap")

	*fail = 12 // AMDSMI_STATUS_IO
	_, err := c.SetCap(0, 200)
	var st Status
	if err == nil || backend.IsBlocked(err) || !errors.As(err, &st) || st != 12 {
		t.Fatalf("I/O failure: %v, want an error carrying status 12 that is not blocked", err)
	}
	if !strings.Contains(err.Error(), "0000:c1:00.0") || !strings.Contains(err.Error(), "AMDSMI_STATUS_IO") {
		t.Errorf("error %q should name the GPU and the status", err)
	}
	if applied, err := c.SetCap(1, 400); err != nil || applied != 400 {
		t.Fatalf("other GPU: %v, %v", applied, err)
	}

	*fail = 2 // AMDSMI_STATUS_NOT_SUPPORTED: the host cannot do it
	if _, err := c.SetCap(0, 200); !backend.IsBlocked(err) {
		t.Fatalf("not supported: %v, want blocked", err)
	}
	*fail = 0
	*fakeVar[uint32](t, l, "fake_fail_get_power_cap_info") = 12
	gpus, err := c.GPUs()
	if err == nil || len(gpus) != 2 || gpus[0].MaxWatts != 0 || gpus[1].MaxWatts != 750 {
		t.Fatalf("GPUs with one unreadable: %+v, %v", gpus, err)
	}
}

func TestGPUSetCapRejectsMeaninglessRequests(t *testing.T) {
	l := openFake(t, "full")
	j, _ := openJournal(t)
	c := NewGPUCapper(l, j)
	for _, w := range []float64{0, -1} {
		if _, err := c.SetCap(0, w); err == nil {
			t.Errorf("SetCap(0, %v) succeeded", w)
		}
	}
	if _, err := c.SetCap(2, 200); err == nil || backend.IsBlocked(err) {
		t.Errorf("missing index: %v", err)
	}
}

func TestSocketsAndSetPackageCap(t *testing.T) {
	l := openFake(t, "full")
	j, _ := openJournal(t)
	c := NewSocketCapper(l, j)
	calls := fakeVar[uint32](t, l, "fake_set_cpu_socket_power_cap_calls")

	got, err := c.Sockets()
	if err != nil {
		t.Fatal(err)
	}
	if want := []Socket{{0, 280, 360}, {1, 280, 360}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Sockets = %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		id          int
		watts, want float64
		calls       uint32
	}{
		{0, 280, 280, 0},     // in force: no call
		{0, 200.5, 200.5, 1}, // milliwatt resolution
		{0, 200.5, 200.5, 1}, // unchanged target: no second call
		{1, 1000, 360, 2},    // clamped to the maximum
		{1, 10, 50, 3},       // the SMU raises it to its floor
	} {
		applied, err := c.SetPackageCap(tc.id, tc.watts)
		if err != nil {
			t.Fatalf("SetPackageCap(%d, %v): %v", tc.id, tc.watts, err)
		}
		if applied != tc.want || *calls != tc.calls {
			t.Errorf("SetPackageCap(%d, %v) = %v W after %d calls, want %v W after %d", tc.id, tc.watts, applied, *calls, tc.want, tc.calls)
		}
	}
	want := map[string]string{"amdsmi cpu-socket/0": "280000", "amdsmi cpu-socket/1": "280000"}
	if got := entries(j); !reflect.DeepEqual(got, want) {
		t.Fatalf("journal = %v, want %v", got, want)
	}
	if _, err := c.SetPackageCap(2, 100); err == nil {
		t.Error("SetPackageCap on a missing socket succeeded")
	}
	*fakeVar[uint32](t, l, "fake_fail_set_cpu_socket_power_cap") = 50 // AMDSMI_STATUS_HSMP_TIMEOUT
	if _, err := c.SetPackageCap(0, 150); err == nil || backend.IsBlocked(err) || !strings.Contains(err.Error(), "HSMP_TIMEOUT") {
		t.Fatalf("HSMP timeout: %v, want an error", err)
	}
}

func TestRestoreAfterCrashFromANewJournal(t *testing.T) {
	path := copyFake(t, "full")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	j, dir := openJournal(t)
	if _, err := NewGPUCapper(l, j).SetCap(1, 400); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSocketCapper(l, j).SetPackageCap(0, 150); err != nil {
		t.Fatal(err)
	}

	// The agent dies without restoring; the hardware keeps the caps (the
	// first handle stays loaded, so the fake's state survives). A new
	// agent opens the library and the journal again.
	l2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l2.Close() })
	j2, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if j2.Len() != 2 {
		t.Fatalf("journal on disk has %d entries, want 2", j2.Len())
	}
	if err := j2.Restore(map[string]state.Restorer{"amdsmi": NewSocketCapper(l2, j2)}); err != nil {
		t.Fatal(err)
	}
	gpus, err := NewGPUCapper(l2, j2).GPUs()
	if err != nil {
		t.Fatal(err)
	}
	sockets, err := NewSocketCapper(l2, j2).Sockets()
	if err != nil {
		t.Fatal(err)
	}
	if gpus[1].CapWatts != 750 || sockets[0].CapWatts != 280 {
		t.Fatalf("after restore: GPU 1 at %v W, socket 0 at %v W", gpus[1].CapWatts, sockets[0].CapWatts)
	}
	if j2.Len() != 0 {
		t.Errorf("%d entries left after a full restore", j2.Len())
	}
	for _, id := range []string{"gpu/0000:00:00.0", "cpu-socket/9", "cpu-socket/x", "hwmon3/power1_cap"} {
		if err := l2.Restore(id, "1000"); err == nil {
			t.Errorf("Restore(%q) succeeded", id)
		}
	}
}

func TestMissingLibraryIsBlocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libamd_smi.so")
	l, err := Open(path)
	if l != nil || !backend.IsBlocked(err) {
		t.Fatalf("Open of a missing library = %v, %v; want blocked", l, err)
	}
	for _, part := range []string{"amd-smi unavailable", "libamd_smi.so: cannot open shared object file"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q lacks %q", err, part)
		}
	}
}

func TestMissingSymbolIsBlocked(t *testing.T) {
	// Without amdsmi_set_power_cap: GPUs are listed, caps are blocked, and
	// CPU sockets are unaffected.
	l := openFake(t, "no-set-power-cap")
	j, _ := openJournal(t)
	c := NewGPUCapper(l, j)
	if gpus, err := c.GPUs(); err != nil || len(gpus) != 2 {
		t.Fatalf("GPUs = %+v, %v", gpus, err)
	}
	_, err := c.SetCap(0, 200)
	if !backend.IsBlocked(err) || !strings.Contains(err.Error(), "amdsmi_set_power_cap") {
		t.Fatalf("SetCap without amdsmi_set_power_cap: %v, want blocked naming it", err)
	}
	if j.Len() != 0 {
		t.Error("an original was journaled for a write that cannot happen")
	}
	if applied, err := NewSocketCapper(l, j).SetPackageCap(0, 200); err != nil || applied != 200 {
		t.Fatalf("CPU socket: %v, %v", applied, err)
	}

	// Without a function every use needs, Open itself is blocked.
	l2, err := Open(copyFake(t, "no-socket-handles"))
	if l2 != nil || !backend.IsBlocked(err) || !strings.Contains(err.Error(), "amdsmi_get_socket_handles") {
		t.Fatalf("Open without amdsmi_get_socket_handles = %v, %v", l2, err)
	}
}

func TestHostWithoutCPUSupportStillCapsGPUs(t *testing.T) {
	t.Setenv("FAKE_AMDSMI_NO_CPUS", "1")
	l := openFake(t, "full")
	j, _ := openJournal(t)
	_, err := NewSocketCapper(l, j).Sockets()
	if !backend.IsBlocked(err) || !strings.Contains(err.Error(), "AMDSMI_STATUS_NO_HSMP_DRV") {
		t.Fatalf("Sockets without CPU support: %v, want blocked with the reason", err)
	}
	if _, err := NewSocketCapper(l, j).SetPackageCap(0, 200); !backend.IsBlocked(err) {
		t.Fatalf("SetPackageCap without CPU support: %v", err)
	}
	if applied, err := NewGPUCapper(l, j).SetCap(0, 200); err != nil || applied != 200 {
		t.Fatalf("GPU: %v, %v", applied, err)
	}
}

func TestHostWithoutGPUSupportStillCapsSockets(t *testing.T) {
	t.Setenv("FAKE_AMDSMI_NO_GPUS", "1")
	l := openFake(t, "full")
	j, _ := openJournal(t)
	if _, err := NewGPUCapper(l, j).GPUs(); !backend.IsBlocked(err) {
		t.Fatalf("GPUs without GPU support: %v, want blocked", err)
	}
	if applied, err := NewSocketCapper(l, j).SetPackageCap(1, 300); err != nil || applied != 300 {
		t.Fatalf("socket: %v, %v", applied, err)
	}
}

func TestInitFailingForEverythingIsBlocked(t *testing.T) {
	t.Setenv("FAKE_AMDSMI_NO_GPUS", "1")
	t.Setenv("FAKE_AMDSMI_NO_CPUS", "1")
	l, err := Open(copyFake(t, "full"))
	if l != nil || !backend.IsBlocked(err) || !strings.Contains(err.Error(), "amdsmi_init") {
		t.Fatalf("Open = %v, %v; want blocked naming amdsmi_init", l, err)
	}
}

func TestClosedLibraryIsBlocked(t *testing.T) {
	l, err := Open(copyFake(t, "full"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	j, _ := openJournal(t)
	if _, err := NewGPUCapper(l, j).GPUs(); !errors.Is(err, ErrClosed) || !backend.IsBlocked(err) {
		t.Fatalf("GPUs after Close: %v", err)
	}
	if _, err := NewSocketCapper(l, j).SetPackageCap(0, 100); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetPackageCap after Close: %v", err)
	}
}

func TestStatusErrors(t *testing.T) {
	for _, tc := range []struct {
		st      Status
		text    string
		blocked bool
	}{
		{2, "AMDSMI_STATUS_NOT_SUPPORTED (2)", true},
		{10, "AMDSMI_STATUS_NO_PERM (10)", true},
		{47, "AMDSMI_STATUS_NO_HSMP_DRV (47)", true},
		{12, "AMDSMI_STATUS_IO (12)", false},
		{17, "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS (17)", false},
		{0xFFFFFFFF, "AMDSMI_STATUS_UNKNOWN_ERROR (4294967295)", false},
		{999, "amd-smi status 999", false},
	} {
		err := fmt.Errorf("call: %w", tc.st)
		if tc.st.Error() != tc.text || backend.IsBlocked(err) != tc.blocked {
			t.Errorf("status %d: %q blocked=%v, want %q blocked=%v", uint32(tc.st), tc.st.Error(), backend.IsBlocked(err), tc.text, tc.blocked)
		}
	}
}

func TestConcurrentUseIsSerialised(t *testing.T) {
	l := openFake(t, "full")
	j, _ := openJournal(t)
	gpus := NewGPUCapper(l, j)
	sockets := NewSocketCapper(l, j)
	done := make(chan error)
	for i := range 4 {
		go func() {
			var err error
			for k := range 20 {
				if i%2 == 0 {
					_, err = gpus.SetCap(i/2, float64(200+k%3))
				} else {
					_, err = sockets.SetPackageCap(i/2, float64(200+k%3))
				}
				if err != nil {
					break
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestPresentNamesWhatAmdSmiLists(t *testing.T) {
	l := openFake(t, "full")
	for id, want := range map[string]bool{
		"gpu/0000:c1:00.0": true,
		"gpu/0000:99:00.0": false,
		"cpu-socket/1":     true,
		"cpu-socket/2":     false,
		"cpu-socket/-1":    false,
		"power1_cap":       false,
	} {
		if got, err := l.Present(id); got != want || err != nil {
			t.Errorf("Present(%q) = %v, %v; want %v", id, got, err, want)
		}
	}
	if n := *fakeVar[uint32](t, l, "fake_set_power_cap_calls") + *fakeVar[uint32](t, l, "fake_set_cpu_socket_power_cap_calls"); n != 0 {
		t.Errorf("Present made %d set calls", n)
	}
}
