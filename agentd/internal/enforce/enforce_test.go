package enforce

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/sysfs"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Fakes record calls; the rapl and dvfs packages are exercised for real on
// sysfs fixtures in host_test.go.

type fakeRAPL struct {
	fail  map[int]error
	calls []string
}

func (f *fakeRAPL) SetPackageCap(id int, w float64) (float64, error) {
	f.calls = append(f.calls, fmt.Sprintf("%d=%g", id, w))
	if err := f.fail[id]; err != nil {
		return 0, err
	}
	return w, nil
}

type fakeDVFS struct {
	throttle          float64
	regulated, resets int
	lastCap, lastSeen float64
	fixed             []float64
}

func (f *fakeDVFS) Regulate(_ time.Time, observed, capW float64) (float64, error) {
	f.regulated++
	f.lastCap, f.lastSeen = capW, observed
	if observed > capW {
		f.throttle += 10
	}
	return f.throttle, nil
}
func (f *fakeDVFS) SetThrottlePct(p float64) error {
	f.fixed = append(f.fixed, p)
	f.throttle = p
	return nil
}
func (f *fakeDVFS) Reset() error { f.resets++; f.throttle = 0; return nil }

type fakeMeter struct{ w float64 }

func (m fakeMeter) CPUPowerWatts(time.Time) (float64, bool) { return m.w, m.w > 0 }

func watts(w float64) *joulie.CPUPowerTarget { return &joulie.CPUPowerTarget{PackagePowerCapWatts: &w} }
func pct(p float64) *joulie.CPUPowerTarget {
	return &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: &p}
}

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func twoSockets(max float64) []Package {
	return []Package{{ID: 0, MaxWatts: max, Writable: true}, {ID: 1, MaxWatts: max, Writable: true}}
}

func TestResolveCPU(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target *joulie.CPUPowerTarget
		max    float64
		want   CPUIntent
	}{
		{"nil target asks for nothing", nil, 400, CPUIntent{None: true}},
		{"empty target asks for nothing", &joulie.CPUPowerTarget{}, 400, CPUIntent{None: true}},
		{"watts as given", watts(215), 400, CPUIntent{Watts: 215, HasWatts: true}},
		{"watts win over percent", &joulie.CPUPowerTarget{PackagePowerCapWatts: ptr.To(200.0), PackagePowerCapPctOfMax: ptr.To(50.0)}, 400,
			CPUIntent{Watts: 200, HasWatts: true, Pct: 50, HasPct: true}},
		{"percent of zone max", pct(60), 350, CPUIntent{Watts: 210, HasWatts: true, Pct: 60, HasPct: true}},
		{"percent without a max", pct(60), 0, CPUIntent{Pct: 60, HasPct: true}},
		{"percent clamped to 100", pct(150), 300, CPUIntent{Watts: 300, HasWatts: true, Pct: 100, HasPct: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ResolveCPU(tc.target, tc.max); got != tc.want {
				t.Errorf("ResolveCPU = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCPUWattsGoToRAPLPerPackage(t *testing.T) {
	r := &fakeRAPL{}
	e := NewCPUEnforcer(CPUConfig{Packages: twoSockets(400), RAPL: r, DVFS: &fakeDVFS{}, Meter: fakeMeter{300}})
	st := e.Enforce(t0, pct(60))
	if st.Result != joulie.ResultApplied || st.Backend != joulie.BackendRAPL || e.Mode() != joulie.BackendRAPL {
		t.Fatalf("status %+v, mode %s", st, e.Mode())
	}
	if got := strings.Join(r.calls, ","); got != "0=240,1=240" {
		t.Errorf("RAPL writes %s, want 240 W on both packages", got)
	}
	if *st.AppliedCapWatts != 240 || len(st.Devices) != 2 || st.Devices[1].ID != "package-1" {
		t.Errorf("status %+v", st)
	}
}

func TestCPUPercentUsesCatalogTDPWhenZoneGivesNoMax(t *testing.T) {
	r := &fakeRAPL{}
	e := NewCPUEnforcer(CPUConfig{Packages: twoSockets(0), RAPL: r, FallbackMaxWatts: 360})
	e.Enforce(t0, pct(50))
	if got := strings.Join(r.calls, ","); got != "0=180,1=180" {
		t.Errorf("RAPL writes %s, want 50%% of the catalog's 360 W", got)
	}
}

func TestCPUPercentWithoutAnyMaxTakesTheDVFSPercentPath(t *testing.T) {
	d := &fakeDVFS{}
	e := NewCPUEnforcer(CPUConfig{Packages: twoSockets(0), RAPL: &fakeRAPL{}, DVFS: d})
	st := e.Enforce(t0, pct(60))
	if st.Backend != joulie.BackendDVFS || st.Result != joulie.ResultApplied || len(d.fixed) != 1 || d.fixed[0] != 40 {
		t.Fatalf("status %+v, fixed throttles %v", st, d.fixed)
	}
	// The same without cpufreq is blocked, with the reason.
	e = NewCPUEnforcer(CPUConfig{Packages: twoSockets(0), RAPL: &fakeRAPL{}})
	if st := e.Enforce(t0, pct(60)); st.Result != joulie.ResultBlocked || !strings.Contains(st.Message, "package maximum") {
		t.Fatalf("status %+v", st)
	}
}

func TestCPUFallsBackToDVFSOnRAPLWriteErrorAndReturnsLater(t *testing.T) {
	eio := fmt.Errorf("write 150000000 to intel-rapl:1: %w", syscall.EIO)
	r := &fakeRAPL{fail: map[int]error{1: eio}}
	d := &fakeDVFS{}
	e := NewCPUEnforcer(CPUConfig{Packages: twoSockets(300), RAPL: r, DVFS: d, Meter: fakeMeter{420},
		RetryMin: time.Minute, RetryMax: 4 * time.Minute})

	st := e.Enforce(t0, watts(150))
	if st.Backend != joulie.BackendDVFS || e.Mode() != joulie.BackendDVFS || st.Result != joulie.ResultApplied {
		t.Fatalf("after EIO: status %+v, mode %s", st, e.Mode())
	}
	if !strings.Contains(st.Message, "input/output error") || d.lastCap != 300 || d.lastSeen != 420 {
		t.Errorf("DVFS should chase the host cap 2x150 W from 420 W and say why: %+v, cap %g", st, d.lastCap)
	}

	// Before the backoff expires RAPL is not touched again.
	calls := len(r.calls)
	e.Enforce(t0.Add(30*time.Second), watts(150))
	if len(r.calls) != calls {
		t.Fatalf("RAPL retried before its backoff: %v", r.calls)
	}
	// The retry still fails: the delay doubles.
	e.Enforce(t0.Add(61*time.Second), watts(150))
	if len(r.calls) == calls {
		t.Fatal("RAPL not retried after the backoff")
	}
	calls = len(r.calls)
	e.Enforce(t0.Add(61*time.Second+90*time.Second), watts(150))
	if len(r.calls) != calls {
		t.Fatal("second backoff should be two minutes")
	}

	// The fault clears: back to RAPL, DVFS throttle lifted.
	delete(r.fail, 1)
	st = e.Enforce(t0.Add(10*time.Minute), watts(150))
	if st.Backend != joulie.BackendRAPL || e.Mode() != joulie.BackendRAPL || d.resets != 1 || d.throttle != 0 {
		t.Fatalf("after recovery: status %+v, mode %s, resets %d", st, e.Mode(), d.resets)
	}
}

func TestCPUReadOnlyRAPLGoesStraightToDVFS(t *testing.T) {
	pkgs := []Package{{ID: 0, MaxWatts: 360}, {ID: 1, MaxWatts: 360}} // energy only, no reason given
	r := &fakeRAPL{}
	d := &fakeDVFS{}
	e := NewCPUEnforcer(CPUConfig{Packages: pkgs, RAPL: r, DVFS: d, Meter: fakeMeter{500}})
	st := e.Enforce(t0, pct(50))
	if len(r.calls) != 0 || st.Backend != joulie.BackendDVFS || d.lastCap != 360 {
		t.Fatalf("status %+v, rapl calls %v, dvfs cap %g", st, r.calls, d.lastCap)
	}
	if !strings.Contains(st.Message, "no writable rapl package limit") {
		t.Errorf("message should say why DVFS is in force: %q", st.Message)
	}
}

func TestCPUWithNeitherRAPLNorDVFSIsBlocked(t *testing.T) {
	blocked := fmt.Errorf("write: %w", sysfs.ErrReadOnly)
	e := NewCPUEnforcer(CPUConfig{Packages: twoSockets(300), RAPL: &fakeRAPL{fail: map[int]error{0: blocked, 1: blocked}}})
	st := e.Enforce(t0, watts(200))
	if st.Result != joulie.ResultBlocked || e.Mode() != joulie.BackendNone || !strings.Contains(st.Message, "no cpufreq") {
		t.Fatalf("status %+v, mode %s", st, e.Mode())
	}
	// An EIO with no fallback is an error, not blocked.
	e = NewCPUEnforcer(CPUConfig{Packages: twoSockets(300), RAPL: &fakeRAPL{fail: map[int]error{0: syscall.EIO}}})
	if st := e.Enforce(t0, watts(200)); st.Result != joulie.ResultError {
		t.Fatalf("status %+v", st)
	}
}

func TestCPUDVFSWithoutMeasurementIsBlocked(t *testing.T) {
	e := NewCPUEnforcer(CPUConfig{Packages: []Package{{ID: 0, MaxWatts: 300}}, RAPL: &fakeRAPL{}, DVFS: &fakeDVFS{}})
	if st := e.Enforce(t0, watts(200)); st.Result != joulie.ResultBlocked || !strings.Contains(st.Message, "measured CPU power") {
		t.Fatalf("status %+v", st)
	}
}

func TestCPULiftingTheCapRestoresOriginalsOnce(t *testing.T) {
	restores := 0
	d := &fakeDVFS{}
	e := NewCPUEnforcer(CPUConfig{Packages: []Package{{ID: 0, MaxWatts: 300}}, DVFS: d, Meter: fakeMeter{350},
		Restore: func() error { restores++; return nil }})
	if st := e.Enforce(t0, nil); st.Result != joulie.ResultNone || restores != 0 {
		t.Fatalf("nothing was capped yet, nothing to restore: %+v, %d", st, restores)
	}
	e.Enforce(t0, watts(200))
	st := e.Enforce(t0.Add(time.Second), nil)
	if st.Result != joulie.ResultNone || restores != 1 || d.resets != 1 || e.Mode() != joulie.BackendNone {
		t.Fatalf("status %+v restores %d resets %d mode %s", st, restores, d.resets, e.Mode())
	}
	e.Enforce(t0.Add(2*time.Second), nil)
	if restores != 1 {
		t.Fatalf("restored again with nothing capped: %d", restores)
	}
}

func TestCPURestoreFailureIsReportedAndRetried(t *testing.T) {
	fail := errors.New("intel-rapl:0 vanished")
	calls := 0
	e := NewCPUEnforcer(CPUConfig{Packages: twoSockets(300), RAPL: &fakeRAPL{}, Restore: func() error { calls++; return fail }})
	e.Enforce(t0, watts(200))
	if st := e.Enforce(t0, nil); st.Result != joulie.ResultError || !strings.Contains(st.Message, "vanished") {
		t.Fatalf("status %+v", st)
	}
	e.Enforce(t0, nil)
	if calls != 2 {
		t.Fatalf("a failed restore should be retried next tick, calls=%d", calls)
	}
}

// fakeGPUs is a GPU backend of n devices with per-device failures.
type fakeGPUs struct {
	gpus  []backend.GPU
	fail  map[int]error
	sets  []string
	enumE error
}

func newFakeGPUs(n int, max float64) *fakeGPUs {
	f := &fakeGPUs{fail: map[int]error{}}
	for i := 0; i < n; i++ {
		f.gpus = append(f.gpus, backend.GPU{Index: i, UUID: fmt.Sprintf("GPU-%d", i), MinWatts: 200, MaxWatts: max, CapWatts: max})
	}
	return f
}
func (f *fakeGPUs) Name() string                 { return "nvml" }
func (f *fakeGPUs) GPUs() ([]backend.GPU, error) { return f.gpus, f.enumE }
func (f *fakeGPUs) Restore(string, string) error { return nil }
func (f *fakeGPUs) SetCap(i int, w float64) (float64, error) {
	f.sets = append(f.sets, fmt.Sprintf("%d=%g", i, w))
	if err := f.fail[i]; err != nil {
		return 0, err
	}
	return w, nil
}

func TestGPUEachDeviceCappedFromItsOwnMax(t *testing.T) {
	g := newFakeGPUs(2, 700)
	g.gpus[1].MaxWatts = 600
	e := NewGPUEnforcer(g, nil, time.Minute)
	st := enforceGPU(e, t0, &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(60.0)}})
	if st.Result != joulie.ResultApplied || strings.Join(g.sets, ",") != "0=420,1=360" || st.AppliedCapWatts != nil {
		t.Fatalf("status %+v, sets %v", st, g.sets)
	}
	g.sets = nil
	st = enforceGPU(e, t0, &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(60.0), CapWattsPerGpu: ptr.To(400.0)}})
	if strings.Join(g.sets, ",") != "0=400,1=400" || *st.AppliedCapWatts != 400 {
		t.Fatalf("watts should win: status %+v, sets %v", st, g.sets)
	}
}

func TestGPUOneFailingDeviceDoesNotStopTheOthers(t *testing.T) {
	g := newFakeGPUs(8, 700)
	g.fail[3] = errors.New("GPU is lost")
	g.fail[5] = fmt.Errorf("%w: setting power limits is not supported", backend.ErrBlocked)
	e := NewGPUEnforcer(g, nil, time.Minute)
	st := enforceGPU(e, t0, &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapWattsPerGpu: ptr.To(500.0)}})
	if st.Result != joulie.ResultError || len(g.sets) != 8 {
		t.Fatalf("status %+v, sets %v", st, g.sets)
	}
	if st.Devices[3].Result != joulie.ResultError || st.Devices[5].Result != joulie.ResultBlocked || st.Devices[7].Result != joulie.ResultApplied {
		t.Fatalf("devices %+v", st.Devices)
	}
	if !strings.Contains(st.Message, "2 of 8 GPUs not capped") || !strings.Contains(st.Message, "3: GPU is lost") {
		t.Errorf("message %q", st.Message)
	}
	// The lost GPU is not hammered: the next tick within retryMin skips it.
	g.sets = nil
	enforceGPU(e, t0.Add(10*time.Second), &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapWattsPerGpu: ptr.To(500.0)}})
	for _, s := range g.sets {
		if strings.HasPrefix(s, "3=") {
			t.Fatalf("failed GPU written again before the retry interval: %v", g.sets)
		}
	}
}

func TestGPUsTheBackendKnowsAreBlockedAreNotWrittenAndSaidOnce(t *testing.T) {
	const why = "its hwmon power1_cap is read-only; install ROCm's amd-smi"
	g := newFakeGPUs(4, 750)
	for i := range g.gpus {
		g.gpus[i].CapBlocked = why
	}
	e := NewGPUEnforcer(g, nil, time.Minute)
	st := enforceGPU(e, t0, &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(60.0)}})
	if st.Result != joulie.ResultBlocked || len(g.sets) != 0 {
		t.Fatalf("status %+v, sets %v", st, g.sets)
	}
	if st.Message != "4 of 4 GPUs not capped: "+why {
		t.Errorf("message %q: one reason shared by every GPU is said once", st.Message)
	}
	for _, d := range st.Devices {
		if d.Result != joulie.ResultBlocked || d.Message != why {
			t.Errorf("device %+v", d)
		}
	}
	// One GPU that can be capped: it is, and the others are named.
	g.gpus[2].CapBlocked = ""
	st = enforceGPU(e, t0, &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(60.0)}})
	if st.Result != joulie.ResultBlocked || strings.Join(g.sets, ",") != "2=450" || !strings.Contains(st.Message, "3 of 4 GPUs not capped: 0: "+why+"; 1: ") {
		t.Fatalf("status %+v, sets %v", st, g.sets)
	}
}

func TestGPUBackendStates(t *testing.T) {
	target := &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(60.0)}}
	if st := enforceGPU(NewGPUEnforcer(nil, nil, 0), t0, target); st.Result != joulie.ResultNone {
		t.Errorf("no backend: %+v", st)
	}
	g := newFakeGPUs(0, 0)
	g.enumE = fmt.Errorf("%w: NVML unavailable: libnvidia-ml.so.1 not found", backend.ErrBlocked)
	if st := enforceGPU(NewGPUEnforcer(g, nil, 0), t0, target); st.Result != joulie.ResultBlocked || st.Backend != joulie.BackendNVML {
		t.Errorf("library missing: %+v", st)
	}
	g.enumE = errors.New("driver not loaded")
	if st := enforceGPU(NewGPUEnforcer(g, nil, 0), t0, target); st.Result != joulie.ResultError {
		t.Errorf("enumeration error: %+v", st)
	}
	restored := 0
	g = newFakeGPUs(2, 700)
	e := NewGPUEnforcer(g, func() error { restored++; return nil }, 0)
	enforceGPU(e, t0, target)
	if st := enforceGPU(e, t0, nil); st.Result != joulie.ResultNone || restored != 1 {
		t.Errorf("lifting the GPU cap: %+v, restored %d", st, restored)
	}
}

func TestCPUSocketCapThroughAMDSMIReportsItsBackend(t *testing.T) {
	r := &fakeRAPL{}
	e := NewCPUEnforcer(CPUConfig{Packages: twoSockets(400), RAPL: r, RAPLBackend: joulie.BackendAMDSMI})
	st := e.Enforce(t0, pct(75))
	if st.Backend != joulie.BackendAMDSMI || e.Mode() != joulie.BackendAMDSMI || strings.Join(r.calls, ",") != "0=300,1=300" {
		t.Fatalf("status %+v mode %s calls %v", st, e.Mode(), r.calls)
	}
}

func TestCPUDVFSMessageCarriesTheBackendsReason(t *testing.T) {
	pkgs := []Package{{ID: 0, Reason: "RAPL power limits are read-only on this CPU (AMD EPYC exposes energy only)"}}
	e := NewCPUEnforcer(CPUConfig{Packages: pkgs, RAPL: &fakeRAPL{}, DVFS: &fakeDVFS{}, Meter: fakeMeter{200}, FallbackMaxWatts: 300})
	if st := e.Enforce(t0, pct(50)); !strings.Contains(st.Message, "AMD EPYC exposes energy only") {
		t.Fatalf("message %q", st.Message)
	}
}

// enforceGPU runs one tick of e, listing the devices as the host does,
// with no GPU held by standard pods alone.
func enforceGPU(e *GPUEnforcer, now time.Time, t *joulie.GPUPowerTarget) joulie.ControlStatus {
	return enforceGPUHeld(e, now, t, nil)
}

func enforceGPUHeld(e *GPUEnforcer, now time.Time, t *joulie.GPUPowerTarget, standard map[string]bool) joulie.ControlStatus {
	var gpus []backend.GPU
	var err error
	if e.capper != nil {
		gpus, err = e.capper.GPUs()
	}
	return e.Enforce(now, t, gpus, err, standard)
}

// Per-GPU caps: the GPUs only standard pods hold take the standard cap,
// the others (held by performance pods, or idle) the node's cap; without
// a standard cap in the target every GPU takes the node's.
func TestGPUsOfStandardPodsTakeTheStandardCap(t *testing.T) {
	g := newFakeGPUs(4, 700)
	e := NewGPUEnforcer(g, nil, time.Minute)
	target := &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(100.0)},
		StandardPowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(60.0)}}
	standard := map[string]bool{g.gpus[1].UUID: true, g.gpus[3].UUID: true}
	st := enforceGPUHeld(e, t0, target, standard)
	if st.Result != joulie.ResultApplied || strings.Join(g.sets, ",") != "0=700,1=420,2=700,3=420" || st.AppliedCapWatts != nil {
		t.Fatalf("status %+v, sets %v", st, g.sets)
	}
	g.sets = nil
	st = enforceGPUHeld(e, t0, &joulie.GPUPowerTarget{PowerCap: target.PowerCap}, standard)
	if strings.Join(g.sets, ",") != "0=700,1=700,2=700,3=700" || *st.AppliedCapWatts != 700 {
		t.Fatalf("without a standard cap: status %+v, sets %v", st, g.sets)
	}
}
