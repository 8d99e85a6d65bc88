package host

import (
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/cpufreq/cpufreqtest"
	"joulie.io/joulie/agentd/internal/cpuinfo/cpuinfotest"
	"joulie.io/joulie/agentd/internal/enforce"
	"joulie.io/joulie/agentd/internal/nvml/nvmltest"
	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// xeon192 is a 2-socket, 192-CPU Intel host (48 cores, 2 threads each)
// with writable RAPL and eight GPUs: the RAPL path of a tick.
func xeon192(b *testing.B) (string, *nvmltest.DGX) {
	root := b.TempDir()
	hw := cpuinfotest.Xeon2S()
	hw.CoresPerSocket = 48
	cpuinfotest.Write(b, root, hw)
	rapltest.TwoSocketXeon(b, root, 350)
	cpufreqtest.Build(b, root, cpufreqtest.Spec{Packages: 2, CoresPerPackage: 48, ThreadsPerCore: 2, MinKHz: 800000, MaxKHz: 3800000})
	return root, nvmltest.NewDGX(b)
}

// benchmarkTick measures one reconcile tick in steady state: the eco
// target is already in force, so a tick reads the hardware, finds every
// control at its value and writes nothing.
func benchmarkTick(b *testing.B, root string, dgx *nvmltest.DGX, wantMode joulie.ControlBackend) {
	c := newClock()
	h := open(b, root, b.TempDir(), dgx, c)
	defer h.Close()
	spec := eco(60)
	var r enforce.Result
	for range 3 { // reach steady state
		r = h.Enforce(c.now(), &spec)
		c.step(5 * time.Second)
	}
	if r.CPUMode != wantMode {
		b.Fatalf("mode %s, want %s", r.CPUMode, wantMode)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		cpu, gpu := apply(h, c.now(), spec)
		if cpu.Result != joulie.ResultApplied || gpu.Result != joulie.ResultApplied {
			b.Fatalf("cpu %s %s, gpu %s %s", cpu.Result, cpu.Message, gpu.Result, gpu.Message)
		}
		c.step(5 * time.Second)
	}
}

// BenchmarkTickRAPL: 2 sockets x 96 CPUs, RAPL in force, 8 GPUs capped.
func BenchmarkTickRAPL(b *testing.B) {
	root, dgx := xeon192(b)
	benchmarkTick(b, root, dgx, joulie.BackendRAPL)
}

// BenchmarkTickDVFS: 2-socket 192-CPU EPYC whose RAPL limits are
// read-only, so DVFS regulates on RAPL energy; 8 GPUs capped.
func BenchmarkTickDVFS(b *testing.B) {
	root, dgx := epycDGX(b)
	benchmarkTick(b, root, dgx, joulie.BackendDVFS)
}
