package host

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"joulie.io/joulie/agentd/internal/cpufreq/cpufreqtest"
	"joulie.io/joulie/agentd/internal/cpuinfo/cpuinfotest"
	"joulie.io/joulie/agentd/internal/enforce"
	"joulie.io/joulie/agentd/internal/nvml"
	"joulie.io/joulie/agentd/internal/nvml/nvmltest"
	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	"joulie.io/joulie/agentd/internal/state"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// clock is a settable time source shared by the host and the test.
type clock struct{ t time.Time }

func (c *clock) now() time.Time       { return c.t }
func (c *clock) step(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                { return &clock{t: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)} }
func eco(pct float64) joulie.NodePowerProfileSpec {
	return joulie.NodePowerProfileSpec{
		Profile: joulie.ProfileEco,
		CPU:     &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(pct)},
		GPU:     &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(pct)}},
	}
}

// apply enforces spec and returns the CPU and GPU outcomes.
func apply(h *Host, now time.Time, spec joulie.NodePowerProfileSpec) (cpu, gpu joulie.ControlStatus) {
	r := h.Enforce(now, &spec)
	return r.CPU, r.GPU
}

// xeonDGX is a 2-socket Intel host with writable RAPL, cpufreq and a
// mocked DGX H100's eight GPUs.
func xeonDGX(t testing.TB) (root string, dgx *nvmltest.DGX) {
	root = t.TempDir()
	cpuinfotest.Write(t, root, cpuinfotest.Xeon2S())
	rapltest.TwoSocketXeon(t, root, 350)
	cpufreqtest.Build(t, root, cpufreqtest.Spec{Packages: 2, CoresPerPackage: 32, ThreadsPerCore: 2, MinKHz: 800000, MaxKHz: 3800000, BaseKHz: 2000000})
	return root, nvmltest.NewDGX(t)
}

// epycDGX is a 2-socket, 192-CPU EPYC host whose RAPL limits are
// read-only, with cpufreq and eight GPUs.
func epycDGX(t testing.TB) (root string, dgx *nvmltest.DGX) {
	root = t.TempDir()
	cpuinfotest.Write(t, root, cpuinfotest.EPYC2S())
	rapltest.TwoSocketEPYC(t, root)
	cpufreqtest.Build(t, root, cpufreqtest.Spec{Packages: 2, CoresPerPackage: 48, ThreadsPerCore: 2, Driver: "amd-pstate-epp", Governor: "performance", MinKHz: 400000, MaxKHz: 3700000})
	return root, nvmltest.NewDGX(t)
}

func open(t testing.TB, root, stateDir string, dgx *nvmltest.DGX, c *clock) *Host {
	t.Helper()
	h, err := Open(Config{Root: root, StateDir: stateDir, AMDSMILibraryPath: Skip, Now: c.now,
		OpenNVML: func(j *state.Journal) *nvml.Backend { return nvml.New(nvml.Wrap(dgx.Server), j) }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func readInt(t testing.TB, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestXeonEcoCapsRAPLAndGPUsThenRestores(t *testing.T) {
	root, dgx := xeonDGX(t)
	c := newClock()
	h := open(t, root, t.TempDir(), dgx, c)
	defer h.Close()

	hw := h.Hardware(c.now())
	if hw.CPU.Control.Backend != joulie.BackendRAPL || hw.GPU == nil || hw.GPU.Count != 8 || hw.CPU.Sockets != 2 {
		t.Fatalf("hardware: cpu control %+v, gpu %+v, sockets %d", hw.CPU.Control, hw.GPU, hw.CPU.Sockets)
	}

	cpu, gpu := apply(h, c.now(), eco(60))
	if cpu.Result != joulie.ResultApplied || cpu.Backend != joulie.BackendRAPL || *cpu.AppliedCapWatts != 210 {
		t.Fatalf("cpu %+v", cpu)
	}
	if gpu.Result != joulie.ResultApplied || gpu.Backend != joulie.BackendNVML || *gpu.AppliedCapWatts != 420 {
		t.Fatalf("gpu %+v", gpu)
	}
	limit := filepath.Join(root, rapltest.ClassDir("intel-rapl:0"), "constraint_0_power_limit_uw")
	if got := readInt(t, limit); got != 210_000_000 {
		t.Fatalf("package-0 long-term limit %d uW, want 210 W", got)
	}
	if got := dgx.GPUs[5].Limit(); got != 420_000 {
		t.Fatalf("GPU 5 limit %d mW", got)
	}

	if err := h.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := readInt(t, limit); got != 350_000_000 {
		t.Fatalf("after restore: %d uW, want the original 350 W", got)
	}
	if got := dgx.GPUs[5].Limit(); got != nvmltest.H100MaxMW {
		t.Fatalf("after restore GPU 5 at %d mW", got)
	}
	if h.PendingOriginals() != 0 {
		t.Fatalf("%d originals left after a full restore", h.PendingOriginals())
	}
}

func TestRestoreAfterCrashPutsBackTheOriginalsNotTheCaps(t *testing.T) {
	root, dgx := xeonDGX(t)
	c := newClock()
	stateDir := t.TempDir()
	h := open(t, root, stateDir, dgx, c)
	apply(h, c.now(), eco(60))
	c.step(time.Minute)
	apply(h, c.now(), eco(40)) // a second cap must not replace the originals
	// The agent dies without restoring; a new one starts on the same host.
	h2 := open(t, root, stateDir, dgx, c)
	defer h2.Close()
	if h2.PendingOriginals() == 0 {
		t.Fatal("the new agent sees no originals to restore")
	}
	if err := h2.Restore(); err != nil {
		t.Fatal(err)
	}
	limit := filepath.Join(root, rapltest.ClassDir("intel-rapl:1"), "constraint_0_power_limit_uw")
	if got := readInt(t, limit); got != 350_000_000 {
		t.Fatalf("package-1 after crash restore: %d uW", got)
	}
	for i, g := range dgx.GPUs {
		if g.Limit() != nvmltest.H100MaxMW {
			t.Fatalf("GPU %d at %d mW after crash restore", i, g.Limit())
		}
	}
}

func TestEPYCReadOnlyRAPLFallsBackToDVFSOnMeasuredPower(t *testing.T) {
	root, dgx := epycDGX(t)
	c := newClock()
	h := open(t, root, t.TempDir(), dgx, c)
	defer h.Close()
	if hw := h.Hardware(c.now()); hw.CPU.Control.Backend != joulie.BackendDVFS || hw.CPU.Telemetry.Source != joulie.TelemetryRAPL {
		t.Fatalf("EPYC with read-only RAPL: control %+v telemetry %+v", hw.CPU.Control, hw.CPU.Telemetry)
	}
	// The packages draw 300 W each (energy grows 300 J/s); the cap is 50%
	// of the catalog's 360 W TDP per package, so DVFS must throttle.
	var energy [2]uint64
	var r enforce.Result
	for tick := 0; tick < 12; tick++ {
		for p := range energy {
			energy[p] += 300 * 5 * 1_000_000
			rapltest.SetAttr(t, root, "intel-rapl:"+strconv.Itoa(p), "energy_uj", strconv.FormatUint(energy[p], 10))
		}
		r = h.Enforce(c.now(), ptr.To(eco(50)))
		c.step(5 * time.Second)
	}
	cpu := r.CPU
	if cpu.Backend != joulie.BackendDVFS || cpu.Result != joulie.ResultApplied || cpu.ThrottlePct == nil || *cpu.ThrottlePct == 0 {
		t.Fatalf("cpu %+v", cpu)
	}
	if !strings.Contains(cpu.Message, "read-only") {
		t.Errorf("the status should say why DVFS is in force: %q", cpu.Message)
	}
	if r.CPUMode != joulie.BackendDVFS {
		t.Fatalf("mode %s", r.CPUMode)
	}
	if p := r.Power; !p.HasCPU && p.CPUWatts != 0 {
		t.Fatalf("power %+v", p)
	}
	// Lifting the cap puts every frequency ceiling back.
	if cpu, _ := apply(h, c.now(), joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance}); cpu.Result != joulie.ResultNone {
		t.Fatalf("lift: %+v", cpu)
	}
	tree := filepath.Join(root, "sys/devices/system/cpu/cpufreq")
	entries, _ := os.ReadDir(tree)
	for _, e := range entries {
		if got := readInt(t, filepath.Join(tree, e.Name(), "scaling_max_freq")); got != 3700000 {
			t.Fatalf("%s scaling_max_freq %d after the cap was lifted", e.Name(), got)
		}
	}
}

// TestThisMachine opens the real host this test runs on, read-only:
// whatever it lacks (CI VMs have no powercap, cpufreq or GPU) must come out
// as warnings and blocked or none results, never an error or a panic.
func TestThisMachine(t *testing.T) {
	h, err := Open(Config{Root: "/", StateDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Open on the real host: %v", err)
	}
	defer h.Close()
	hw := h.Hardware(time.Now())
	if hw.CPU.Model == "" && len(hw.Warnings) == 0 {
		t.Fatalf("no CPU model and no warning: %+v", hw)
	}
	if hw.CPU.CatalogModel == "" || hw.CPU.CapRange == nil {
		t.Fatalf("every host gets catalog figures: %+v", hw.CPU)
	}
	t.Logf("this machine: %s (%s, %s), control %s, quality %s, warnings %q",
		hw.CPU.Model, hw.CPU.CatalogModel, hw.CPU.Exactness, hw.CPU.Control.Backend, hw.Quality, hw.Warnings)
}

// eioWriter fails writes to paths containing fail with EIO, as a RAPL
// driver does when the MSR write is refused; other writes go through.
type eioWriter struct{ fail string }

func (w eioWriter) WriteFile(path string, data []byte) error {
	if strings.Contains(path, w.fail) {
		return &os.PathError{Op: "write", Path: path, Err: syscall.EIO}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func TestRAPLWriteEIOFallsBackToDVFS(t *testing.T) {
	root, dgx := xeonDGX(t)
	c := newClock()
	h, err := Open(Config{Root: root, StateDir: t.TempDir(), AMDSMILibraryPath: Skip, Now: c.now,
		Writer:   eioWriter{fail: "intel-rapl:1/constraint_0_power_limit_uw"},
		OpenNVML: func(j *state.Journal) *nvml.Backend { return nvml.New(nvml.Wrap(dgx.Server), j) }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r := h.Enforce(c.now(), ptr.To(eco(60)))
	cpu, gpu := r.CPU, r.GPU
	if cpu.Backend != joulie.BackendDVFS || r.CPUMode != joulie.BackendDVFS {
		t.Fatalf("EIO on package 1 should put DVFS in force: %+v", cpu)
	}
	if !strings.Contains(cpu.Message, "input/output error") {
		t.Errorf("the status should carry the driver error: %q", cpu.Message)
	}
	if gpu.Result != joulie.ResultApplied {
		t.Errorf("a CPU failure must not stop the GPUs: %+v", gpu)
	}
}

// Present is what joulie-agentctl restore --forget asks before it drops a
// journal entry: only controls gone from the host may be forgotten.
func TestPresentAsksTheBackendThatOwnsTheControl(t *testing.T) {
	root, dgx := xeonDGX(t)
	rapltest.Remove(t, root, "intel-rapl:1")
	h := open(t, root, t.TempDir(), dgx, newClock())
	defer h.Close()
	for _, tc := range []struct {
		backend, id string
		want        bool
	}{
		{"rapl", "intel-rapl:0/constraint_0_power_limit_uw", true},
		{"rapl", "intel-rapl:1/constraint_0_power_limit_uw", false},
		{"cpufreq", "cpu127/scaling_max_freq", true},
		{"nvml", dgx.Devices[4].UUID, true},
		{"nvml", "GPU-00000000-0000-0000-0000-000000000000", false},
		// No backend of that name on this host: nothing here can reach it.
		{"amdsmi", "gpu/0000:c1:00.0", false},
	} {
		if got, err := h.Present(tc.backend, tc.id); got != tc.want || err != nil {
			t.Errorf("Present(%s, %s) = %v, %v; want %v", tc.backend, tc.id, got, err, tc.want)
		}
	}

	// A backend that cannot look cannot say the control is gone.
	noLib, err := Open(Config{Root: root, StateDir: t.TempDir(), AMDSMILibraryPath: Skip,
		NVMLLibraryPath: filepath.Join(t.TempDir(), "libnvidia-ml.so.1")})
	if err != nil {
		t.Fatal(err)
	}
	defer noLib.Close()
	if got, err := noLib.Present("nvml", dgx.Devices[4].UUID); got || err == nil {
		t.Errorf("Present without NVML = %v, %v; want an error", got, err)
	}
}
