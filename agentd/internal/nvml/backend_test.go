package nvml

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/nvml/nvmltest"
	"joulie.io/joulie/agentd/internal/state"
)

func openJournal(t testing.TB, dir string) *state.Journal {
	t.Helper()
	j, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func newBackendOn(t testing.TB, h *nvmltest.DGX) (*Backend, *state.Journal) {
	t.Helper()
	j := openJournal(t, t.TempDir())
	b := New(Wrap(h.Server), j)
	if err := b.Unavailable(); err != nil {
		t.Fatalf("backend over the mock is unavailable: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, j
}

func TestEnumeratesAllEightH100s(t *testing.T) {
	h := nvmltest.NewDGX(t)
	b, _ := newBackendOn(t, h)

	gpus, err := b.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 8 {
		t.Fatalf("got %d GPUs, want 8", len(gpus))
	}
	for i, g := range gpus {
		want := backend.GPU{
			Index:        i,
			UUID:         h.Devices[i].UUID,
			Name:         "NVIDIA H100 80GB HBM3",
			PCIBusID:     h.Devices[i].PciBusID,
			MinWatts:     200,
			MaxWatts:     700,
			DefaultWatts: 700,
			CapWatts:     700,
			PowerWatts:   300 + 10*float64(i),
			HasPower:     true,
			EnergyJoules: 1_000_000 * float64(i+1),
			HasEnergy:    true,
		}
		if i == 7 {
			want.EnergyJoules, want.HasEnergy = 0, false
		}
		if !reflect.DeepEqual(g, want) {
			t.Errorf("GPU %d:\n got %+v\nwant %+v", i, g, want)
		}
	}
	if gpus[0].PCIBusID != "0000:18:00.0" {
		t.Errorf("first bus id %q, want the kernel's form 0000:18:00.0", gpus[0].PCIBusID)
	}
}

func TestSixtyPercentCapOnEveryGPU(t *testing.T) {
	h := nvmltest.NewDGX(t)
	b, j := newBackendOn(t, h)
	gpus, err := b.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gpus {
		applied, err := b.SetCap(g.Index, 0.6*g.MaxWatts)
		if err != nil {
			t.Fatalf("GPU %d: %v", g.Index, err)
		}
		if applied != 420 {
			t.Errorf("GPU %d: applied %v W, want 420", g.Index, applied)
		}
	}
	for i, g := range h.GPUs {
		if g.Limit() != 420_000 || g.SetCount() != 1 {
			t.Errorf("GPU %d: limit %d mW after %d writes, want 420000 mW after 1", i, g.Limit(), g.SetCount())
		}
		if orig, ok := j.Original(BackendName, h.Devices[i].UUID); !ok || orig != "700000" {
			t.Errorf("GPU %d: journal original %q (%v), want 700000", i, orig, ok)
		}
	}
	gpus, _ = b.GPUs()
	if gpus[5].CapWatts != 420 {
		t.Errorf("enumeration after capping shows %v W, want 420", gpus[5].CapWatts)
	}
}

func TestCapIsClampedToTheDeviceRange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		watts  float64
		wantW  float64
		wantMW uint32
	}{
		{"below minimum", 100, 200, 200_000},
		{"zero", 0, 200, 200_000},
		{"negative", -50, 200, 200_000},
		{"negative infinity", math.Inf(-1), 200, 200_000},
		{"above maximum", 1000, 700, 700_000},
		{"infinity", math.Inf(1), 700, 700_000},
		{"at minimum", 200, 200, 200_000},
		{"fraction of a watt", 333.3334, 333.333, 333_333},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := nvmltest.NewDGX(t)
			// Start below the maximum so that a cap at the maximum is a
			// write too.
			h.GPUs[2].Update(func(g *nvmltest.GPUState) { g.LimitMW = 500_000 })
			b, _ := newBackendOn(t, h)
			applied, err := b.SetCap(2, tc.watts)
			if err != nil {
				t.Fatal(err)
			}
			if applied != tc.wantW || h.GPUs[2].Limit() != tc.wantMW {
				t.Fatalf("applied %v W, limit %d mW; want %v W, %d mW", applied, h.GPUs[2].Limit(), tc.wantW, tc.wantMW)
			}
		})
	}
}

func TestNaNCapIsRefusedWithoutWriting(t *testing.T) {
	h := nvmltest.NewDGX(t)
	b, j := newBackendOn(t, h)
	if _, err := b.SetCap(0, math.NaN()); err == nil || backend.IsBlocked(err) {
		t.Fatalf("NaN cap: %v, want a plain error", err)
	}
	if h.GPUs[0].SetCount() != 0 || j.Len() != 0 {
		t.Fatalf("%d writes, %d journal entries after a refused cap", h.GPUs[0].SetCount(), j.Len())
	}
}

func TestNoWriteWhenTheLimitIsAlreadyInPlace(t *testing.T) {
	h := nvmltest.NewDGX(t)
	b, j := newBackendOn(t, h)

	// The host's own limit: nothing to change, nothing to record.
	if applied, err := b.SetCap(0, 700); err != nil || applied != 700 {
		t.Fatalf("SetCap(0, 700) = %v, %v", applied, err)
	}
	if n := h.GPUs[0].SetCount(); n != 0 {
		t.Fatalf("%d writes for a limit already in place", n)
	}
	if j.Len() != 0 {
		t.Fatalf("journal holds %v without any write", j.Entries())
	}

	for range 3 {
		if _, err := b.SetCap(0, 420); err != nil {
			t.Fatal(err)
		}
	}
	// A request that clamps to the limit in force is no change either.
	if _, err := b.SetCap(1, 150); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SetCap(1, 10); err != nil {
		t.Fatal(err)
	}
	if n0, n1 := h.GPUs[0].SetCount(), h.GPUs[1].SetCount(); n0 != 1 || n1 != 1 {
		t.Fatalf("writes: GPU 0 %d, GPU 1 %d; want 1 each", n0, n1)
	}
}

func TestJournalKeepsTheFirstOriginalAndRestorePutsItBack(t *testing.T) {
	h := nvmltest.NewDGX(t)
	b, j := newBackendOn(t, h)
	uuid := h.Devices[4].UUID

	for _, w := range []float64{420, 300, 550} {
		if _, err := b.SetCap(4, w); err != nil {
			t.Fatal(err)
		}
	}
	if orig, _ := j.Original(BackendName, uuid); orig != "700000" || j.Len() != 1 {
		t.Fatalf("journal %v, want only %s=700000", j.Entries(), uuid)
	}
	if err := j.RestoreBackend(BackendName, b); err != nil {
		t.Fatal(err)
	}
	if got := h.GPUs[4].Limit(); got != 700_000 {
		t.Fatalf("limit after restore %d mW, want 700000", got)
	}
	if j.Len() != 0 {
		t.Fatalf("journal after restore: %v", j.Entries())
	}
	// Restoring a limit that is already in place writes nothing.
	before := h.GPUs[4].SetCount()
	if err := b.Restore(uuid, "700000"); err != nil || h.GPUs[4].SetCount() != before {
		t.Fatalf("restore of the limit in force: %v, %d extra writes", err, h.GPUs[4].SetCount()-before)
	}
}

func TestRestoreAfterRestartFindsGPUsByUUID(t *testing.T) {
	h := nvmltest.NewDGX(t)
	// An administrator set GPU 6 to 650 W before Joulie ever ran: that is
	// its original, not the default.
	h.GPUs[6].Update(func(g *nvmltest.GPUState) { g.LimitMW = 650_000 })
	dir := t.TempDir()
	b := New(Wrap(h.Server), openJournal(t, dir))
	for i := range 8 {
		if _, err := b.SetCap(i, 350); err != nil {
			t.Fatal(err)
		}
	}

	// The agent dies without closing anything. The host reboots and
	// enumerates its GPUs in another order; a new agent opens the same
	// state directory.
	h.Reorder(7, 6, 5, 4, 3, 2, 1, 0)
	j := openJournal(t, dir)
	if j.Len() != 8 {
		t.Fatalf("journal after restart holds %d originals, want 8", j.Len())
	}
	b2 := New(Wrap(h.Server), j)
	defer b2.Close()
	if err := j.Restore(map[string]state.Restorer{BackendName: b2}); err != nil {
		t.Fatal(err)
	}
	for i, g := range h.GPUs {
		want := uint32(700_000)
		if i == 6 {
			want = 650_000
		}
		if g.Limit() != want {
			t.Errorf("GPU %s (index %d before the reboot): limit %d mW, want %d", h.Devices[i].UUID, i, g.Limit(), want)
		}
	}
	if left := openJournal(t, dir).Len(); left != 0 {
		t.Fatalf("%d originals left on disk after a full restore", left)
	}
}

func TestRefusedWritesAreBlocked(t *testing.T) {
	for _, tc := range []struct {
		name     string
		breakGPU func(*nvmltest.GPUState)
		code     gonvml.Return
		message  string
	}{
		{"write not supported", func(g *nvmltest.GPUState) { g.SetFails = gonvml.ERROR_NOT_SUPPORTED }, gonvml.ERROR_NOT_SUPPORTED, "does not support power limit control"},
		{"no permission", func(g *nvmltest.GPUState) { g.SetFails = gonvml.ERROR_NO_PERMISSION }, gonvml.ERROR_NO_PERMISSION, "it takes root"},
		{"range not reported", func(g *nvmltest.GPUState) { g.RangeFails = gonvml.ERROR_NOT_SUPPORTED }, gonvml.ERROR_NOT_SUPPORTED, "read power limit range"},
		{"empty range", func(g *nvmltest.GPUState) { g.MinMW, g.MaxMW = 0, 0 }, gonvml.SUCCESS, "no usable power limit range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := nvmltest.NewDGX(t)
			h.GPUs[2].Update(tc.breakGPU)
			b, j := newBackendOn(t, h)
			_, err := b.SetCap(2, 420)
			if !backend.IsBlocked(err) {
				t.Fatalf("SetCap: %v, want blocked", err)
			}
			if tc.code != gonvml.SUCCESS && !errors.Is(err, tc.code) {
				t.Errorf("error %v does not wrap %v", err, tc.code)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.message) || !strings.Contains(msg, "GPU 2 ("+h.Devices[2].UUID+")") {
				t.Errorf("message %q should name the device and say %q", msg, tc.message)
			}
			if got := h.GPUs[2].Limit(); got == 420_000 {
				t.Error("limit changed although the write was refused")
			}
			for _, i := range []int{1, 3} {
				if applied, err := b.SetCap(i, 420); err != nil || applied != 420 {
					t.Errorf("GPU %d next to the refusing one: %v, %v", i, applied, err)
				}
			}
			// A refused write that was journaled restores cleanly: the
			// limit never moved, so there is nothing to write back.
			if err := j.RestoreBackend(BackendName, b); err != nil {
				t.Fatalf("restore after a refused write: %v", err)
			}
		})
	}
}

func TestLostGPUFailsOnlyThatDevice(t *testing.T) {
	h := nvmltest.NewDGX(t)
	b, _ := newBackendOn(t, h)
	if _, err := b.GPUs(); err != nil {
		t.Fatal(err)
	}
	h.GPUs[3].Update(func(g *nvmltest.GPUState) { g.Lost = true })

	gpus, err := b.GPUs()
	if err != nil {
		t.Fatalf("enumeration with a lost GPU: %v", err)
	}
	if len(gpus) != 8 {
		t.Fatalf("%d GPUs listed, want all 8", len(gpus))
	}
	lost := gpus[3]
	if lost.UUID != h.Devices[3].UUID || lost.MaxWatts != 700 || lost.HasPower || lost.HasEnergy || lost.CapWatts != 0 {
		t.Errorf("lost GPU listed as %+v, want its known identity and range, no readings", lost)
	}
	for _, g := range gpus {
		applied, err := b.SetCap(g.Index, 0.6*g.MaxWatts)
		if g.Index == 3 {
			if err == nil || backend.IsBlocked(err) || !errors.Is(err, gonvml.ERROR_GPU_IS_LOST) {
				t.Errorf("lost GPU: %v, want an error wrapping ERROR_GPU_IS_LOST", err)
			}
			if err != nil && !strings.Contains(err.Error(), h.Devices[3].UUID) {
				t.Errorf("error %q does not name the lost GPU", err)
			}
			continue
		}
		if err != nil || applied != 420 {
			t.Errorf("GPU %d: %v, %v; want 420 W applied", g.Index, applied, err)
		}
	}
}

func TestGPULostBeforeFirstReadIsListedByIndex(t *testing.T) {
	h := nvmltest.NewDGX(t)
	h.GPUs[0].Update(func(g *nvmltest.GPUState) { g.Lost = true })
	b, _ := newBackendOn(t, h)
	gpus, err := b.GPUs()
	if err != nil || len(gpus) != 8 {
		t.Fatalf("GPUs = %d, %v", len(gpus), err)
	}
	if !reflect.DeepEqual(gpus[0], backend.GPU{Index: 0}) {
		t.Errorf("GPU lost before any read: %+v, want only its index", gpus[0])
	}
	if gpus[1].UUID != h.Devices[1].UUID {
		t.Errorf("GPU 1 after a lost GPU 0: %+v", gpus[1])
	}
}

func TestVanishedIndexIsAnErrorForThatIndexOnly(t *testing.T) {
	h := nvmltest.NewDGX(t)
	b, _ := newBackendOn(t, h)
	h.Server.Devices = h.Server.Devices[:7]

	if _, err := b.SetCap(7, 420); err == nil || backend.IsBlocked(err) || !strings.Contains(err.Error(), "no such GPU") {
		t.Fatalf("SetCap on a vanished index: %v", err)
	}
	gpus, err := b.GPUs()
	if err != nil || len(gpus) != 7 {
		t.Fatalf("GPUs after one vanished: %d, %v", len(gpus), err)
	}
	if _, err := b.SetCap(6, 420); err != nil {
		t.Fatal(err)
	}
	if err := b.Restore("GPU-00000000-0000-0000-0000-000000000000", "700000"); err == nil {
		t.Fatal("restore of an unknown UUID succeeded")
	}
}

func TestRestoreRefusesAMalformedOriginal(t *testing.T) {
	h := nvmltest.NewDGX(t)
	b, _ := newBackendOn(t, h)
	for _, orig := range []string{"", "700 W", "-1", "99999999999"} {
		if err := b.Restore(h.Devices[0].UUID, orig); err == nil {
			t.Errorf("original %q accepted", orig)
		}
	}
	if n := h.GPUs[0].SetCount(); n != 0 {
		t.Fatalf("%d writes for malformed originals", n)
	}
}

func TestNoWriteWhenTheOriginalCannotBeRecorded(t *testing.T) {
	h := nvmltest.NewDGX(t)
	dir := filepath.Join(t.TempDir(), "state")
	b := New(Wrap(h.Server), openJournal(t, dir))
	defer b.Close()
	// The state directory disappears (a full or broken disk would do the
	// same): the original cannot be made durable.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SetCap(0, 420); err == nil || !strings.Contains(err.Error(), "not written") {
		t.Fatalf("SetCap without a durable journal: %v", err)
	}
	if n := h.GPUs[0].SetCount(); n != 0 {
		t.Fatalf("%d writes although the original was not recorded", n)
	}

	noJournal := New(Wrap(h.Server), nil)
	if _, err := noJournal.SetCap(0, 420); err == nil || h.GPUs[0].SetCount() != 0 {
		t.Fatalf("SetCap without a journal: %v, %d writes", err, h.GPUs[0].SetCount())
	}
}

func TestMissingLibraryIsBlocked(t *testing.T) {
	// This runs go-nvml's real dlopen path: no NVML is installed here,
	// and the path names nothing.
	path := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	j := openJournal(t, t.TempDir())
	b := Open(path, j)

	err := b.Unavailable()
	if !backend.IsBlocked(err) {
		t.Fatalf("Unavailable() = %v, want blocked", err)
	}
	if want := "NVML unavailable: " + path + " not found"; !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("reason %q, want it to end in %q", err, want)
	}
	if _, err := b.GPUs(); !backend.IsBlocked(err) {
		t.Errorf("GPUs: %v", err)
	}
	if _, err := b.SetCap(0, 420); !backend.IsBlocked(err) {
		t.Errorf("SetCap: %v", err)
	}
	if err := b.Restore("GPU-1", "700000"); !backend.IsBlocked(err) {
		t.Errorf("Restore: %v", err)
	}
	if b.Name() != "nvml" {
		t.Errorf("Name() = %q", b.Name())
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := b.GPUs(); err == nil {
		t.Error("GPUs after Close succeeded")
	}
}

func TestUnloadableLibraryIsBlockedWithTheLoadersReason(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	if err := os.WriteFile(path, []byte("not an ELF object\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Open(path, nil).Unavailable()
	if !backend.IsBlocked(err) || !strings.Contains(err.Error(), "NVML unavailable: cannot load "+path) {
		t.Fatalf("Unavailable() = %v, want blocked, naming the loader's complaint", err)
	}
}

// TestDefaultLibrary loads libnvidia-ml.so.1 for real: on a host with
// NVML the backend must enumerate, on one without it must say blocked and
// why. Either way something is checked.
func TestDefaultLibrary(t *testing.T) {
	b := Open("", nil)
	defer b.Close()
	err := b.Unavailable()
	if err == nil {
		if _, err := b.GPUs(); err != nil {
			t.Fatalf("NVML loaded but enumeration failed: %v", err)
		}
		return
	}
	if !backend.IsBlocked(err) || !strings.Contains(err.Error(), "libnvidia-ml.so.1 not found") {
		t.Fatalf("Unavailable() = %v", err)
	}
}

func TestFailingInitIsBlockedAndNotShutDown(t *testing.T) {
	h := nvmltest.NewDGX(t)
	h.Server.InitFunc = func() gonvml.Return { return gonvml.ERROR_DRIVER_NOT_LOADED }
	b := New(Wrap(h.Server), nil)
	err := b.Unavailable()
	if !backend.IsBlocked(err) || !errors.Is(err, gonvml.ERROR_DRIVER_NOT_LOADED) || !strings.Contains(err.Error(), "NVML unavailable") {
		t.Fatalf("Unavailable() = %v", err)
	}
	if _, err := b.GPUs(); !backend.IsBlocked(err) {
		t.Errorf("GPUs: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(h.Server.ShutdownCalls()); n != 0 {
		t.Fatalf("Shutdown called %d times on an NVML that never initialised", n)
	}
}

func TestCloseShutsNVMLDownOnce(t *testing.T) {
	h := nvmltest.NewDGX(t)
	b := New(Wrap(h.Server), nil)
	for range 2 {
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.Server.ShutdownCalls()); n != 1 {
		t.Fatalf("Shutdown called %d times, want 1", n)
	}
	if _, err := b.SetCap(0, 420); err == nil {
		t.Fatal("SetCap after Close succeeded")
	}
}

func TestConcurrentCapsAndEnumeration(t *testing.T) {
	h := nvmltest.NewDGX(t)
	b, j := newBackendOn(t, h)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for _, w := range []float64{420, 500, 420} {
				if _, err := b.SetCap(i, w); err != nil {
					t.Error(err)
				}
			}
		})
		wg.Go(func() {
			if _, err := b.GPUs(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if j.Len() != 8 {
		t.Fatalf("journal holds %d originals, want 8", j.Len())
	}
	for _, e := range j.Entries() {
		if e.Original != "700000" {
			t.Errorf("%s: original %s, want 700000", e.ID, e.Original)
		}
	}
}

func TestBusIDInTheKernelsForm(t *testing.T) {
	cstr := func(s string) (b [32]int8) {
		for i, c := range []byte(s) {
			b[i] = int8(c)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		pci  gonvml.PciInfo
		want string
	}{
		{"NVML spelling", gonvml.PciInfo{BusId: cstr("00000000:18:00.0")}, "0000:18:00.0"},
		{"upper-case hex", gonvml.PciInfo{BusId: cstr("00000000:DB:00.0")}, "0000:db:00.0"},
		{"non-zero domain", gonvml.PciInfo{BusId: cstr("00000001:AB:00.0")}, "0001:ab:00.0"},
		{"wide domain kept whole", gonvml.PciInfo{BusId: cstr("00010000:18:00.0")}, "00010000:18:00.0"},
		{"already short", gonvml.PciInfo{BusId: cstr("0000:3a:00.0")}, "0000:3a:00.0"},
		{"string missing, numbers present", gonvml.PciInfo{Domain: 0, Bus: 0x9a, Device: 0}, "0000:9a:00.0"},
		{"nothing", gonvml.PciInfo{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := busID(tc.pci); got != tc.want {
				t.Fatalf("busID = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTicksReadOnlyWhatChanges checks that repeated enumeration asks each
// GPU for its static facts once and for its power, limit and energy every
// time: the daemon enumerates on every tick.
func TestTicksReadOnlyWhatChanges(t *testing.T) {
	h := nvmltest.NewDGX(t)
	b, _ := newBackendOn(t, h)
	for range 3 {
		gpus, err := b.GPUs()
		if err != nil {
			t.Fatal(err)
		}
		if gpus[0].Name == "" || gpus[0].MaxWatts == 0 || gpus[0].PCIBusID == "" {
			t.Fatalf("static facts lost on a repeated read: %+v", gpus[0])
		}
	}
	d := h.Devices[0]
	if n := len(d.GetNameCalls()); n != 1 {
		t.Errorf("GetName called %d times in 3 enumerations, want 1", n)
	}
	if n := len(d.GetPowerManagementLimitConstraintsCalls()); n != 1 {
		t.Errorf("GetPowerManagementLimitConstraints called %d times, want 1", n)
	}
	if n := len(d.GetPowerUsageCalls()); n != 3 {
		t.Errorf("GetPowerUsage called %d times, want 3", n)
	}
}

func TestPresentAsksNVMLByUUID(t *testing.T) {
	h := nvmltest.NewDGX(t)
	b, _ := newBackendOn(t, h)
	if ok, err := b.Present(h.Devices[2].UUID); !ok || err != nil {
		t.Errorf("Present(GPU 2) = %v, %v", ok, err)
	}
	if ok, err := b.Present("GPU-00000000-0000-0000-0000-000000000000"); ok || err != nil {
		t.Errorf("Present(unknown UUID) = %v, %v; want false", ok, err)
	}
	// Without NVML nothing can be told either way.
	_ = b.Close()
	if _, err := b.Present(h.Devices[2].UUID); err == nil {
		t.Error("Present on a closed backend claims to know")
	}
}

// A GPU in MIG mode lists its MIG devices' UUIDs, in slot order; the
// others list none.
func TestMIGDevicesAreListedWithTheirGPU(t *testing.T) {
	h := nvmltest.NewDGX(t)
	h.GPUs[2].Update(func(g *nvmltest.GPUState) { g.MIGs = []string{"MIG-aaaa", "", "MIG-cccc"} })
	b, _ := newBackendOn(t, h)
	gpus, err := b.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	if got := gpus[2].MIGs; !slices.Equal(got, []string{"MIG-aaaa", "MIG-cccc"}) {
		t.Errorf("GPU 2's MIG devices %q, want the two slots in use", got)
	}
	if gpus[0].MIGs != nil || !gpus[0].HasEnergy {
		t.Errorf("GPU 0 without MIG: %+v", gpus[0])
	}
}
