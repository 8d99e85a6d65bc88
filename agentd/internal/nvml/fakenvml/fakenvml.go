// Package fakenvml is a fake libnvidia-ml.so.1 for machines without an
// NVIDIA GPU: a small C library that exports the NVML functions Joulie's
// nvml backend calls and keeps the GPUs in plain files, so that tests,
// package install tests and simulations run the real agent, through the
// real go-nvml loader, against "GPUs" they can inspect and break.
//
// Build compiles the library with gcc. The library finds its state in the
// directory named by $FAKE_NVML_DIR when nvmlInit is called:
//
//	count            number of GPUs (at most 64)
//	init_error       optional: nvmlInit fails with this return code
//	gpu<N>/name      "NVIDIA H100 80GB HBM3"
//	gpu<N>/uuid      "GPU-…", what nvmlDeviceGetHandleByUUID matches
//	gpu<N>/pci_bus_id  "0000:18:00.0" (four- or eight-digit domain)
//	gpu<N>/min_mw, max_mw   power limit range, milliwatts
//	gpu<N>/default_mw       default power limit
//	gpu<N>/limit_mw         power management limit; nvmlDeviceSetPowerManagementLimit rewrites it
//	gpu<N>/enforced_mw      optional: another limit acting on the GPU
//	gpu<N>/power_mw         power draw
//	gpu<N>/energy_mj        energy counter, millijoules
//	gpu<N>/energy_since_ms  optional: Unix time in ms at which energy_mj held;
//	                        the counter then advances by power_mw from it
//	gpu<N>/lost             optional: every call for the GPU returns ERROR_GPU_IS_LOST
//	gpu<N>/set_error        optional: setting the limit fails with this return code
//	gpu<N>/mig_mode         optional: 1 turns MIG mode on (0 off); without it the
//	                        GPU is not MIG-capable (the MIG calls return NOT_SUPPORTED)
//	gpu<N>/mig<K>_uuid      "MIG-…", the MIG device in slot K (0 to 6)
//
// Values are decimal, return codes as nvml.h numbers them (4 is
// ERROR_NO_PERMISSION), with an optional trailing newline. The library
// reads the files on every call, so a test may change them while the
// agent runs; it writes limit_mw through a temporary file and a rename,
// as WriteState writes every file. A missing reading or limit file makes
// that call return ERROR_NOT_SUPPORTED, as a board lacking the feature
// does (energy_mj before Volta); a missing count or a missing directory
// makes nvmlInit fail, the first like a broken driver (ERROR_UNKNOWN), the
// second like a host without the kernel module (ERROR_DRIVER_NOT_LOADED).
// Setting a limit outside [min_mw, max_mw] fails with
// ERROR_INVALID_ARGUMENT, as the driver does.
//
// go-nvml binds the library's functions into the process the first time
// it calls them and never unbinds them, so a process talks to the first
// fake library it loads for the rest of its life, whatever path it opens
// later. The library takes $FAKE_NVML_DIR afresh at every nvmlInit, so one
// library serves any number of states in turn: build it once per test
// process and point FAKE_NVML_DIR at a new state before each Open.
package fakenvml

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"joulie.io/joulie/agentd/internal/nvml/nvmltest"
)

// EnvDir is the environment variable that names the state directory.
const EnvDir = "FAKE_NVML_DIR"

// LibraryName is the file Build writes, NVML's soname.
const LibraryName = "libnvidia-ml.so.1"

// The C source is embedded so that Build works from any test's working
// directory and from a test binary copied elsewhere.
//
//go:embed testdata/fake_nvml.c
var source []byte

// GPU is one fake GPU's state. Powers and limits are in milliwatts and
// energy in millijoules, as NVML reports them.
type GPU struct {
	Name     string
	UUID     string
	PCIBusID string
	MinMW    uint32
	MaxMW    uint32
	// DefaultMW is the limit the GPU starts with after a driver load.
	DefaultMW uint32
	LimitMW   uint32
	// EnforcedMW, when not zero, is another limit acting on the GPU; the
	// enforced limit NVML reports is the lower of it and LimitMW.
	EnforcedMW uint32
	PowerMW    uint32
	EnergyMJ   uint64
	// EnergySince, when not zero, makes the energy counter run: EnergyMJ
	// is its value at that moment, and it advances by PowerMW from then
	// on, as a GPU drawing that power would count.
	EnergySince time.Time
	// NoPower and NoEnergy leave the reading out, PowerMW or EnergyMJ
	// ignored: NVML answers ERROR_NOT_SUPPORTED for it.
	NoPower  bool
	NoEnergy bool
	// Lost makes every call for the GPU return ERROR_GPU_IS_LOST.
	Lost bool
	// SetError, when not SUCCESS, is what setting the limit returns
	// instead of changing it.
	SetError gonvml.Return
	// MIGs, when set, turns MIG mode on and lists the UUIDs of the GPU's
	// MIG devices by slot ("" leaves a slot empty); without it the GPU is
	// not MIG-capable.
	MIGs []string
}

// Build compiles the fake library into outDir and returns its path. It
// fails the test when gcc is missing: the fake is the point of the test,
// and skipping would hide that it never ran.
func Build(t testing.TB, outDir string) string {
	t.Helper()
	lib, err := Compile(outDir)
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// Compile is Build for callers without a testing.TB: a TestMain that
// builds one library for the whole test process, or a simulation.
func Compile(outDir string) (string, error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("build fake NVML: gcc is needed to compile it: %w", err)
	}
	src := filepath.Join(outDir, "fake_nvml.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", fmt.Errorf("build fake NVML: %w", err)
	}
	lib := filepath.Join(outDir, LibraryName)
	cmd := exec.Command(gcc, "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", lib, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build fake NVML: %s: %w\n%s", cmd, err, out)
	}
	return lib, nil
}

// DGXH100 returns the eight GPUs of a DGX H100 at their default 700 W
// limit, on the buses of nvmltest's mocked DGX, each drawing a little more
// than the last.
func DGXH100() []GPU {
	gpus := make([]GPU, len(nvmltest.DGXH100Buses))
	for i, bus := range nvmltest.DGXH100Buses {
		gpus[i] = GPU{
			Name:      "NVIDIA H100 80GB HBM3",
			UUID:      fmt.Sprintf("GPU-fa4e0000-0000-4000-8000-%012x", i),
			PCIBusID:  fmt.Sprintf("0000:%02x:00.0", bus),
			MinMW:     nvmltest.H100MinMW,
			MaxMW:     nvmltest.H100MaxMW,
			DefaultMW: nvmltest.H100MaxMW,
			LimitMW:   nvmltest.H100MaxMW,
			PowerMW:   uint32(300_000 + 10_000*i),
			EnergyMJ:  uint64(1_000_000_000 * (i + 1)),
		}
	}
	return gpus
}

// WriteState lays out gpus in dir, creating it if need be, and clears
// init_error. Directories of GPUs beyond len(gpus) are left alone: count
// hides them.
func WriteState(t testing.TB, dir string, gpus []GPU) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("write fake NVML state: %v", err)
	}
	for i, g := range gpus {
		WriteGPU(t, dir, i, g)
	}
	SetInitError(t, dir, gonvml.SUCCESS)
	writeFile(t, filepath.Join(dir, "count"), strconv.Itoa(len(gpus)))
}

// WriteGPU writes GPU index's state in dir, leaving count and the other
// GPUs alone, for a test that changes one GPU while the agent runs.
func WriteGPU(t testing.TB, dir string, index int, g GPU) {
	t.Helper()
	gd := gpuDir(dir, index)
	if err := os.MkdirAll(gd, 0o755); err != nil {
		t.Fatalf("write fake NVML state: %v", err)
	}
	set := func(name string, present bool, value any) {
		path := filepath.Join(gd, name)
		if present {
			writeFile(t, path, fmt.Sprint(value))
		} else {
			removeFile(t, path)
		}
	}
	set("name", true, g.Name)
	set("uuid", true, g.UUID)
	set("pci_bus_id", true, g.PCIBusID)
	set("min_mw", true, g.MinMW)
	set("max_mw", true, g.MaxMW)
	set("default_mw", true, g.DefaultMW)
	set("limit_mw", true, g.LimitMW)
	set("enforced_mw", g.EnforcedMW != 0, g.EnforcedMW)
	set("power_mw", !g.NoPower, g.PowerMW)
	set("energy_mj", !g.NoEnergy, g.EnergyMJ)
	set("energy_since_ms", !g.EnergySince.IsZero(), g.EnergySince.UnixMilli())
	set("lost", g.Lost, "")
	set("set_error", g.SetError != gonvml.SUCCESS, int(g.SetError))
	set("mig_mode", g.MIGs != nil, 1)
	for k := range 7 {
		set(fmt.Sprintf("mig%d_uuid", k), k < len(g.MIGs) && g.MIGs[k] != "", func() string {
			if k < len(g.MIGs) {
				return g.MIGs[k]
			}
			return ""
		}())
	}
}

// SetInitError makes nvmlInit fail with ret; SUCCESS lets it succeed.
func SetInitError(t testing.TB, dir string, ret gonvml.Return) {
	t.Helper()
	path := filepath.Join(dir, "init_error")
	if ret == gonvml.SUCCESS {
		removeFile(t, path)
		return
	}
	writeFile(t, path, strconv.Itoa(int(ret)))
}

// ReadState reads back the GPUs in dir, limits as the library last wrote
// them.
func ReadState(t testing.TB, dir string) []GPU {
	t.Helper()
	n, err := strconv.Atoi(readFile(t, filepath.Join(dir, "count")))
	if err != nil {
		t.Fatalf("read fake NVML state: count: %v", err)
	}
	gpus := make([]GPU, n)
	for i := range gpus {
		gd := gpuDir(dir, i)
		num := func(name string, bits int) (uint64, bool) {
			path := filepath.Join(gd, name)
			if !exists(t, path) {
				return 0, false
			}
			v, err := strconv.ParseUint(readFile(t, path), 10, bits)
			if err != nil {
				t.Fatalf("read fake NVML state: %v", err)
			}
			return v, true
		}
		mw := func(name string) uint32 { v, _ := num(name, 32); return uint32(v) }
		g := GPU{
			Name:       readFile(t, filepath.Join(gd, "name")),
			UUID:       readFile(t, filepath.Join(gd, "uuid")),
			PCIBusID:   readFile(t, filepath.Join(gd, "pci_bus_id")),
			MinMW:      mw("min_mw"),
			MaxMW:      mw("max_mw"),
			DefaultMW:  mw("default_mw"),
			LimitMW:    mw("limit_mw"),
			EnforcedMW: mw("enforced_mw"),
			Lost:       exists(t, filepath.Join(gd, "lost")),
		}
		power, ok := num("power_mw", 32)
		g.PowerMW, g.NoPower = uint32(power), !ok
		g.EnergyMJ, ok = num("energy_mj", 64)
		g.NoEnergy = !ok
		if ms, ok := num("energy_since_ms", 63); ok {
			g.EnergySince = time.UnixMilli(int64(ms))
		}
		if code, ok := num("set_error", 31); ok {
			g.SetError = gonvml.Return(code)
		}
		gpus[i] = g
	}
	return gpus
}

func gpuDir(dir string, index int) string {
	return filepath.Join(dir, "gpu"+strconv.Itoa(index))
}

// writeFile replaces path atomically, so that a library reading it from
// another thread or process never sees a partial value.
func writeFile(t testing.TB, path, value string) {
	t.Helper()
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		t.Fatalf("write fake NVML state: %v", err)
	}
	_, err = f.WriteString(value + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		t.Fatalf("write fake NVML state: %v", err)
	}
}

func removeFile(t testing.TB, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("write fake NVML state: %v", err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read fake NVML state: %v", err)
	}
	return strings.TrimRight(string(b), " \t\r\n")
}

func exists(t testing.TB, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true
	case errors.Is(err, fs.ErrNotExist):
		return false
	}
	t.Fatalf("read fake NVML state: %v", err)
	return false
}
