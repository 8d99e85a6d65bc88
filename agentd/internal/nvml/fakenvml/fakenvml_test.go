package fakenvml_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/dl"
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/nvml"
	"joulie.io/joulie/agentd/internal/nvml/fakenvml"
	"joulie.io/joulie/agentd/internal/state"
)

// lib is the fake library, built once: the process keeps calling the
// first one it loads (see the package doc), so a library per test would
// only look independent.
var lib string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakenvml-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lib, err = fakenvml.Compile(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// host lays gpus out in a new state directory, points the library at it
// and opens the backend with a new journal.
func host(t *testing.T, gpus []fakenvml.GPU) (string, *nvml.Backend, *state.Journal) {
	t.Helper()
	dir := t.TempDir()
	fakenvml.WriteState(t, dir, gpus)
	t.Setenv(fakenvml.EnvDir, dir)
	j, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir, open(t, j), j
}

func open(t *testing.T, j *state.Journal) *nvml.Backend {
	t.Helper()
	b := nvml.Open(lib, j)
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

func mustGPUs(t *testing.T, b *nvml.Backend) []backend.GPU {
	t.Helper()
	gpus, err := b.GPUs()
	if err != nil {
		t.Fatalf("GPUs: %v", err)
	}
	return gpus
}

func limits(t *testing.T, dir string) []uint32 {
	t.Helper()
	var mw []uint32
	for _, g := range fakenvml.ReadState(t, dir) {
		mw = append(mw, g.LimitMW)
	}
	return mw
}

// allAt is n limits of mw, with the exceptions in at (index → mW).
func allAt(n int, mw uint32, at map[int]uint32) []uint32 {
	l := make([]uint32, n)
	for i := range l {
		l[i] = mw
		if v, ok := at[i]; ok {
			l[i] = v
		}
	}
	return l
}

func TestExportsWhatGoNVMLCalls(t *testing.T) {
	// The versions are the ones go-nvml's updateVersionedSymbols prefers;
	// a symbol missing here makes the process die with "symbol lookup
	// error" on the first call, not return an NVML error.
	symbols := []string{
		"nvmlInit_v2", "nvmlInitWithFlags", "nvmlShutdown", "nvmlErrorString",
		"nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByUUID",
		"nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo_v3",
		"nvmlDeviceGetPowerManagementLimitConstraints", "nvmlDeviceGetPowerManagementDefaultLimit",
		"nvmlDeviceGetPowerManagementLimit", "nvmlDeviceGetEnforcedPowerLimit",
		"nvmlDeviceGetPowerUsage", "nvmlDeviceGetTotalEnergyConsumption",
		"nvmlDeviceSetPowerManagementLimit",
		"nvmlDeviceGetMigMode", "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMigDeviceHandleByIndex",
	}
	l := dl.New(lib, dl.RTLD_LAZY|dl.RTLD_LOCAL)
	if err := l.Open(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	for _, s := range symbols {
		if err := l.Lookup(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

func TestOpenListsTheGPUs(t *testing.T) {
	fake := fakenvml.DGXH100()
	fake[7].NoEnergy = true
	_, b, _ := host(t, fake)
	if err := b.Unavailable(); err != nil {
		t.Fatalf("Unavailable: %v", err)
	}
	var want []backend.GPU
	for i, g := range fake {
		want = append(want, backend.GPU{
			Index: i, UUID: g.UUID, Name: "NVIDIA H100 80GB HBM3", PCIBusID: g.PCIBusID,
			MinWatts: 200, MaxWatts: 700, DefaultWatts: 700, CapWatts: 700,
			PowerWatts: float64(300 + 10*i), HasPower: true,
			EnergyJoules: float64(1_000_000 * (i + 1)), HasEnergy: i != 7,
		})
	}
	want[7].EnergyJoules = 0
	if got := mustGPUs(t, b); !reflect.DeepEqual(got, want) {
		t.Errorf("GPUs:\n got %+v\nwant %+v", got, want)
	}
}

func TestSetCapWritesTheLimitFile(t *testing.T) {
	dir, b, j := host(t, fakenvml.DGXH100())
	got, err := b.SetCap(3, 420)
	if err != nil || got != 420 {
		t.Fatalf("SetCap(3, 420) = %v, %v; want 420", got, err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "gpu3", "limit_mw"))
	if err != nil || string(raw) != "420000\n" {
		t.Errorf("gpu3/limit_mw = %q, %v; want 420000", raw, err)
	}
	if got, want := limits(t, dir), allAt(8, 700_000, map[int]uint32{3: 420_000}); !reflect.DeepEqual(got, want) {
		t.Errorf("limits = %v, want %v", got, want)
	}
	uuid := fakenvml.DGXH100()[3].UUID
	if orig, ok := j.Original(nvml.BackendName, uuid); !ok || orig != "700000" {
		t.Errorf("journal original of %s = %q, %v; want 700000", uuid, orig, ok)
	}
	if g := mustGPUs(t, b)[3]; g.CapWatts != 420 {
		t.Errorf("GPU 3 reads back %v W, want 420", g.CapWatts)
	}
}

func TestSetCapClampsToTheRange(t *testing.T) {
	for _, tc := range []struct {
		name  string
		watts float64
		want  uint32
	}{
		{"below the minimum", 50, 200_000},
		{"above the maximum", 1000, 700_000},
		{"negative infinity", math.Inf(-1), 200_000},
		{"inside, rounded to a milliwatt", 512.3456, 512_346},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakenvml.DGXH100()
			fake[2].LimitMW = 450_000 // so that clamping to the maximum still writes
			dir, b, _ := host(t, fake)
			got, err := b.SetCap(2, tc.watts)
			if err != nil {
				t.Fatalf("SetCap: %v", err)
			}
			if got != float64(tc.want)/1000 {
				t.Errorf("SetCap returned %v W, want %v", got, float64(tc.want)/1000)
			}
			if mw := limits(t, dir)[2]; mw != tc.want {
				t.Errorf("gpu2/limit_mw = %d, want %d", mw, tc.want)
			}
		})
	}
}

func TestSetErrorFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		code    gonvml.Return
		blocked bool
	}{
		{"no permission is blocked", gonvml.ERROR_NO_PERMISSION, true},
		{"not supported is blocked", gonvml.ERROR_NOT_SUPPORTED, true},
		{"a driver error is an error", gonvml.ERROR_UNKNOWN, false},
		{"a reset needed is an error", gonvml.ERROR_RESET_REQUIRED, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakenvml.DGXH100()
			fake[1].SetError = tc.code
			dir, b, _ := host(t, fake)
			_, err := b.SetCap(1, 300)
			if !errors.Is(err, tc.code) {
				t.Fatalf("SetCap = %v, want an error wrapping %d", err, int(tc.code))
			}
			if got := backend.IsBlocked(err); got != tc.blocked {
				t.Errorf("IsBlocked(%v) = %v, want %v", err, got, tc.blocked)
			}
			if got, want := limits(t, dir), allAt(8, 700_000, nil); !reflect.DeepEqual(got, want) {
				t.Errorf("limits = %v, want %v untouched", got, want)
			}
			// The other GPUs are not affected.
			if _, err := b.SetCap(0, 300); err != nil {
				t.Errorf("SetCap(0): %v", err)
			}
		})
	}
}

func TestLostGPU(t *testing.T) {
	t.Run("lost from the start", func(t *testing.T) {
		fake := fakenvml.DGXH100()
		fake[5].Lost = true
		dir, b, _ := host(t, fake)
		gpus := mustGPUs(t, b)
		if len(gpus) != 8 || !reflect.DeepEqual(gpus[5], backend.GPU{Index: 5}) || gpus[4].UUID != fake[4].UUID {
			t.Errorf("GPUs = %+v; want 8, GPU 5 without facts", gpus)
		}
		_, err := b.SetCap(5, 400)
		if !errors.Is(err, gonvml.ERROR_GPU_IS_LOST) || backend.IsBlocked(err) {
			t.Errorf("SetCap(5) = %v; want a GPU_IS_LOST error, not blocked", err)
		}
		if _, err := b.SetCap(4, 400); err != nil {
			t.Errorf("SetCap(4): %v", err)
		}
		if got, want := limits(t, dir), allAt(8, 700_000, map[int]uint32{4: 400_000}); !reflect.DeepEqual(got, want) {
			t.Errorf("limits = %v, want %v", got, want)
		}
	})
	t.Run("lost while open", func(t *testing.T) {
		fake := fakenvml.DGXH100()
		dir, b, _ := host(t, fake)
		mustGPUs(t, b)
		fake[6].Lost = true
		fakenvml.WriteGPU(t, dir, 6, fake[6])
		g := mustGPUs(t, b)[6]
		want := backend.GPU{
			Index: 6, UUID: fake[6].UUID, Name: fake[6].Name, PCIBusID: fake[6].PCIBusID,
			MinWatts: 200, MaxWatts: 700, DefaultWatts: 700,
		}
		if !reflect.DeepEqual(g, want) {
			t.Errorf("GPU 6 = %+v, want the last known facts and no readings: %+v", g, want)
		}
		if _, err := b.SetCap(6, 400); !errors.Is(err, gonvml.ERROR_GPU_IS_LOST) {
			t.Errorf("SetCap(6) = %v, want GPU_IS_LOST", err)
		}
	})
}

func TestNVMLDoesNotInitialise(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  gonvml.Return
	}{
		{"init_error", func(t *testing.T, dir string) {
			fakenvml.SetInitError(t, dir, gonvml.ERROR_LIB_RM_VERSION_MISMATCH)
		}, gonvml.ERROR_LIB_RM_VERSION_MISMATCH},
		{"no state directory, as without the kernel module", func(t *testing.T, _ string) {
			t.Setenv(fakenvml.EnvDir, "")
		}, gonvml.ERROR_DRIVER_NOT_LOADED},
		{"no count", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "count")); err != nil {
				t.Fatal(err)
			}
		}, gonvml.ERROR_UNKNOWN},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fakenvml.WriteState(t, dir, fakenvml.DGXH100())
			t.Setenv(fakenvml.EnvDir, dir)
			tc.setup(t, dir)
			b := open(t, nil)
			err := b.Unavailable()
			if !backend.IsBlocked(err) || !errors.Is(err, tc.want) {
				t.Errorf("Unavailable = %v; want blocked by %d", err, int(tc.want))
			}
			if _, err := b.GPUs(); !backend.IsBlocked(err) {
				t.Errorf("GPUs = %v, want blocked", err)
			}
			if _, err := b.SetCap(0, 300); !backend.IsBlocked(err) {
				t.Errorf("SetCap = %v, want blocked", err)
			}
		})
	}
}

func TestRestoreByUUIDAfterReorder(t *testing.T) {
	dir, b, j := host(t, fakenvml.DGXH100())
	if _, err := b.SetCap(3, 420); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// After a reboot the GPU that was at index 3, its limit still capped,
	// enumerates first.
	gpus := fakenvml.ReadState(t, dir)
	gpus[0], gpus[3] = gpus[3], gpus[0]
	fakenvml.WriteState(t, dir, gpus)

	b = open(t, j)
	if err := j.RestoreBackend(nvml.BackendName, b); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got, want := limits(t, dir), allAt(8, 700_000, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("limits = %v, want %v", got, want)
	}
	if j.Len() != 0 {
		t.Errorf("journal keeps %v after a restore", j.Entries())
	}
}

func TestReadsFollowTheFiles(t *testing.T) {
	fake := fakenvml.DGXH100()
	dir, b, _ := host(t, fake)
	mustGPUs(t, b)

	fake[2].PowerMW, fake[2].EnergyMJ, fake[2].LimitMW = 612_000, 5_000_000_000, 650_000
	fakenvml.WriteGPU(t, dir, 2, fake[2])
	g := mustGPUs(t, b)[2]
	if g.PowerWatts != 612 || g.EnergyJoules != 5_000_000 || g.CapWatts != 650 {
		t.Errorf("GPU 2 = %+v; want 612 W, 5 MJ, capped at 650 W", g)
	}

	// A GPU gone from the count is gone from the list.
	if err := os.WriteFile(filepath.Join(dir, "count"), []byte("7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := len(mustGPUs(t, b)); n != 7 {
		t.Errorf("%d GPUs after count went to 7", n)
	}
}

// A counter given a start time runs at the GPU's power: the agent's
// per-pod energy sees a GPU draw without the test writing every joule.
func TestEnergyCounterRunsAtThePower(t *testing.T) {
	fake := fakenvml.DGXH100()
	dir, b, _ := host(t, fake)
	fake[0].PowerMW, fake[0].EnergyMJ, fake[0].EnergySince = 400_000, 1_000_000, time.Now().Add(-10*time.Second)
	fakenvml.WriteGPU(t, dir, 0, fake[0])
	g := mustGPUs(t, b)
	// 1000 J, then 400 W for ten seconds and the little this test took.
	if j := g[0].EnergyJoules; j < 5000 || j > 5400 {
		t.Errorf("GPU 0 counts %v J, want about 1000 J + 400 W × 10 s", j)
	}
	if j := g[1].EnergyJoules; j != float64(fake[1].EnergyMJ)/1000 {
		t.Errorf("GPU 1 counts %v J without a start time, want its file's %v J", j, fake[1].EnergyMJ/1000)
	}
	if back := fakenvml.ReadState(t, dir)[0]; !back.EnergySince.Equal(fake[0].EnergySince.Truncate(time.Millisecond)) {
		t.Errorf("state reads back a start of %v, want %v", back.EnergySince, fake[0].EnergySince)
	}
}

// TestNVMLContract checks the library through go-nvml, below the backend:
// return codes and values the backend does not surface.
func TestNVMLContract(t *testing.T) {
	fake := fakenvml.DGXH100()
	fake[1].EnforcedMW = 300_000
	fake[6].NoPower = true
	fake[7].NoEnergy = true
	dir := t.TempDir()
	fakenvml.WriteState(t, dir, fake)
	t.Setenv(fakenvml.EnvDir, dir)

	// Keep the library mapped whatever go-nvml's last Shutdown does, so
	// that the calls after it still reach the library.
	pin := dl.New(lib, dl.RTLD_LAZY|dl.RTLD_GLOBAL)
	if err := pin.Open(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pin.Close() }()

	nv := gonvml.New(gonvml.WithLibraryPath(lib))
	expect := func(what string, got, want gonvml.Return) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %d (%v), want %d", what, int(got), got, int(want))
		}
	}
	handle := func(i int) gonvml.Device {
		t.Helper()
		d, ret := nv.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			t.Fatalf("handle %d: %v", i, ret)
		}
		return d
	}
	expect("Init", nv.Init(), gonvml.SUCCESS)
	// Init counts, as NVML's does: the second Shutdown balances it.
	expect("second Init", nv.Init(), gonvml.SUCCESS)
	expect("Shutdown", nv.Shutdown(), gonvml.SUCCESS)

	// Once the library is loaded, go-nvml asks it for error strings.
	if got := gonvml.ERROR_NO_PERMISSION.Error(); got != "Insufficient Permissions" {
		t.Errorf("ERROR_NO_PERMISSION reads %q", got)
	}
	n, ret := nv.DeviceGetCount()
	if n != 8 || ret != gonvml.SUCCESS {
		t.Errorf("count = %d, %v", n, ret)
	}
	_, ret = nv.DeviceGetHandleByIndex(8)
	expect("handle 8 of 8", ret, gonvml.ERROR_INVALID_ARGUMENT)
	_, ret = nv.DeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000")
	expect("handle of an unknown UUID", ret, gonvml.ERROR_NOT_FOUND)
	d, ret := nv.DeviceGetHandleByUUID(fake[4].UUID)
	expect("handle by UUID", ret, gonvml.SUCCESS)
	if ret == gonvml.SUCCESS {
		if uuid, _ := d.GetUUID(); uuid != fake[4].UUID {
			t.Errorf("handle by UUID %s is %s", fake[4].UUID, uuid)
		}
	}

	// go-nvml's name buffer is 96 bytes; a longer name must not overrun it.
	fake[2].Name = strings.Repeat("H100 ", 20)
	fakenvml.WriteGPU(t, dir, 2, fake[2])
	_, ret = handle(2).GetName()
	expect("a 100-byte name", ret, gonvml.ERROR_INSUFFICIENT_SIZE)

	pci, ret := handle(1).GetPciInfo()
	expect("PCI info", ret, gonvml.SUCCESS)
	busID := func(b [32]int8) string {
		var s []byte
		for _, c := range b {
			if c == 0 {
				break
			}
			s = append(s, byte(c))
		}
		return string(s)
	}
	var legacy [32]int8
	copy(legacy[:], pci.BusIdLegacy[:])
	if pci.Domain != 0 || pci.Bus != 0x2a || pci.Device != 0 ||
		busID(pci.BusId) != "00000000:2A:00.0" || busID(legacy) != "0000:2A:00.0" {
		t.Errorf("PCI info = %+v", pci)
	}

	enforced, ret := handle(1).GetEnforcedPowerLimit()
	if enforced != 300_000 || ret != gonvml.SUCCESS {
		t.Errorf("enforced limit = %d, %v; want the enforced_mw file's 300000", enforced, ret)
	}
	_, ret = handle(6).GetPowerUsage()
	expect("power without power_mw", ret, gonvml.ERROR_NOT_SUPPORTED)
	_, ret = handle(7).GetTotalEnergyConsumption()
	expect("energy without energy_mj", ret, gonvml.ERROR_NOT_SUPPORTED)

	// The driver refuses a limit outside the range rather than clamping.
	d0 := handle(0)
	expect("set below the minimum", d0.SetPowerManagementLimit(199_999), gonvml.ERROR_INVALID_ARGUMENT)
	expect("set above the maximum", d0.SetPowerManagementLimit(700_001), gonvml.ERROR_INVALID_ARGUMENT)
	if mw := limits(t, dir)[0]; mw != 700_000 {
		t.Errorf("a refused set wrote %d", mw)
	}
	expect("set the minimum", d0.SetPowerManagementLimit(200_000), gonvml.SUCCESS)
	if mw := limits(t, dir)[0]; mw != 200_000 {
		t.Errorf("gpu0/limit_mw = %d after setting 200000", mw)
	}

	// A handle held across a shrinking count reports its GPU lost.
	d7 := handle(7)
	if err := os.WriteFile(filepath.Join(dir, "count"), []byte("7"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ret = d7.GetName()
	expect("name of a GPU gone from count", ret, gonvml.ERROR_GPU_IS_LOST)

	// So does one held while its GPU falls off the bus.
	d5 := handle(5)
	if err := os.WriteFile(filepath.Join(dir, "gpu5", "lost"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, ret = d5.GetName()
	expect("name of a lost GPU", ret, gonvml.ERROR_GPU_IS_LOST)
	expect("set on a lost GPU", d5.SetPowerManagementLimit(400_000), gonvml.ERROR_GPU_IS_LOST)
	_, ret = nv.DeviceGetHandleByIndex(5)
	expect("handle of a lost GPU", ret, gonvml.ERROR_GPU_IS_LOST)
	_, ret = nv.DeviceGetHandleByUUID(fake[5].UUID)
	expect("handle of a lost GPU by UUID", ret, gonvml.ERROR_GPU_IS_LOST)

	expect("last Shutdown", nv.Shutdown(), gonvml.SUCCESS)
	_, ret = d0.GetName()
	expect("name after the last Shutdown", ret, gonvml.ERROR_UNINITIALIZED)
	expect("Shutdown once more", nv.Shutdown(), gonvml.ERROR_UNINITIALIZED)
}

// TestConcurrentCalls runs NVML calls from many goroutines at once, as an
// agent with several backends may; under -race it also checks go-nvml's
// side.
func TestConcurrentCalls(t *testing.T) {
	dir := t.TempDir()
	fakenvml.WriteState(t, dir, fakenvml.DGXH100())
	t.Setenv(fakenvml.EnvDir, dir)
	nv := gonvml.New(gonvml.WithLibraryPath(lib))
	if ret := nv.Init(); ret != gonvml.SUCCESS {
		t.Fatalf("Init: %v", ret)
	}
	defer nv.Shutdown()

	const rounds = 50
	var wg sync.WaitGroup
	errs := make(chan error, 8*rounds)
	for i := range 8 {
		wg.Go(func() {
			for r := range rounds {
				d, ret := nv.DeviceGetHandleByIndex(i)
				if ret == gonvml.SUCCESS {
					ret = d.SetPowerManagementLimit(uint32(200_000 + 1000*r + i))
				}
				if ret == gonvml.SUCCESS {
					_, ret = d.GetPowerUsage()
				}
				if ret != gonvml.SUCCESS {
					errs <- fmt.Errorf("GPU %d round %d: %v", i, r, ret)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, mw := range limits(t, dir) {
		if want := uint32(200_000 + 1000*(rounds-1) + i); mw != want {
			t.Errorf("gpu%d/limit_mw = %d, want the last set, %d", i, mw, want)
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	gpus := fakenvml.DGXH100()
	gpus[1].Lost = true
	gpus[2].SetError = gonvml.ERROR_NO_PERMISSION
	// A reading left out reads back as zero.
	gpus[3].NoPower, gpus[3].NoEnergy = true, true
	gpus[3].PowerMW, gpus[3].EnergyMJ = 0, 0
	gpus[4].EnforcedMW = 350_000
	fakenvml.WriteState(t, dir, gpus)
	fakenvml.SetInitError(t, dir, gonvml.ERROR_UNKNOWN)
	if got := fakenvml.ReadState(t, dir); !reflect.DeepEqual(got, gpus) {
		t.Errorf("ReadState:\n got %+v\nwant %+v", got, gpus)
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "init_error")); err != nil || string(raw) != strconv.Itoa(999)+"\n" {
		t.Errorf("init_error = %q, %v", raw, err)
	}

	// Writing again clears the faults that are no longer set.
	fakenvml.WriteState(t, dir, fakenvml.DGXH100())
	if got := fakenvml.ReadState(t, dir); !reflect.DeepEqual(got, fakenvml.DGXH100()) {
		t.Errorf("after rewrite:\n got %+v\nwant %+v", got, fakenvml.DGXH100())
	}
	for _, f := range []string{"init_error", "gpu1/lost", "gpu2/set_error", "gpu4/enforced_mw"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after rewrite: %v", f, err)
		}
	}
}

// A GPU in MIG mode lists its MIG devices through the real go-nvml
// loader, slots in order and empty slots skipped; the others none.
func TestMIGDevicesThroughTheLibrary(t *testing.T) {
	fake := fakenvml.DGXH100()
	fake[1].MIGs = []string{"MIG-1111", "", "MIG-3333"}
	fake[2].MIGs = []string{}
	_, b, _ := host(t, fake)
	gpus := mustGPUs(t, b)
	if got := gpus[1].MIGs; !reflect.DeepEqual(got, []string{"MIG-1111", "MIG-3333"}) {
		t.Errorf("GPU 1's MIG devices %q", got)
	}
	if got := gpus[2].MIGs; got == nil || len(got) != 0 {
		t.Errorf("GPU 2 in MIG mode without MIG devices: %q, want an empty list", got)
	}
	if gpus[0].MIGs != nil {
		t.Errorf("GPU 0 without MIG lists %q", gpus[0].MIGs)
	}
}
