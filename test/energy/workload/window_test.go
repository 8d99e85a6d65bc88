package workload

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// realisedAllocation is the mean share of the cluster's CPUs and GPUs
// that jobs hold inside w if each starts when it arrives and runs its
// work: requested core-hours (GPU-hours) inside w over capacity × w.
func realisedAllocation(nodes []Node, jobs []Job, w Window) (cpu, gpu float64) {
	var cpus, gpus float64
	for _, n := range nodes {
		cpus += float64(n.CPUMilli) / 1000
		gpus += float64(n.GPUs)
	}
	for _, j := range jobs {
		held := (min(j.Arrival+j.Work, w.End) - max(j.Arrival, w.Start)).Seconds()
		if held <= 0 {
			continue
		}
		cpu += float64(j.CPUMilli) / 1000 * held
		gpu += float64(j.GPUs) * held
	}
	span := (w.End - w.Start).Seconds()
	return cpu / (cpus * span), gpu / (gpus * span)
}

func TestLoadLevelIsTheMeanAllocationInsideTheWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("generates two million jobs")
	}
	// The benchmark's GPU nodes and a fifth of its CPU nodes: the GPU
	// stream at full size, so that its long jobs are many, and enough
	// CPU jobs for the CPU share. Heavy tails make a window's allocation
	// vary by about 2% from seed to seed.
	base := DefaultConfig()
	base.Nodes = StandardCluster(100, 500)
	for _, level := range []float64{0.2, 0.4, 0.6} {
		c := LoadLevel(base, level)
		if err := c.Validate(); err != nil {
			t.Fatalf("level %v: %v", level, err)
		}
		if cpu, gpu := ExpectedAllocation(c); math.Abs(cpu-level) > 1e-9 || math.Abs(gpu-level) > 1e-9 {
			t.Errorf("level %v: expected allocation %v of the CPUs, %v of the GPUs", level, cpu, gpu)
		}
		for _, seed := range []int64{1, 2} {
			t.Run(fmt.Sprintf("level %v seed %d", level, seed), func(t *testing.T) {
				t.Parallel()
				jobs := Generate(seed, c)
				cpu, gpu := realisedAllocation(c.Nodes, jobs, c.Window)
				if math.Abs(cpu-level)/level > 0.05 || math.Abs(gpu-level)/level > 0.05 {
					t.Errorf("%d jobs hold %.4f of the CPUs and %.4f of the GPUs inside the window, want %v within 5%%", len(jobs), cpu, gpu, level)
				}
			})
		}
	}
}

func TestWindowFactorIsOneInTheSteadyState(t *testing.T) {
	// Without a daily cycle, lifetimes of at most a day and the window a
	// week after the start, every job that can still be running arrived
	// after the start: the cluster is full to its target.
	c := DefaultConfig()
	c.Diurnal, c.DayNightRatio = DiurnalSinusoid, 1
	c.Lifetime.Max = 24 * time.Hour
	c.Lifetime.P99 = 20 * time.Hour
	c.Horizon, c.Window = 0, Window{7 * 24 * time.Hour, 9 * 24 * time.Hour}
	if f := c.windowFactor(); math.Abs(f-1) > 1e-3 {
		t.Errorf("steady-state window factor %.5f, want 1", f)
	}
	// Arrivals stopping at the window's start leave only the jobs still
	// running: over two days, a small share of the steady state.
	c.Horizon = c.Window.Start
	if f := c.windowFactor(); f <= 0 || f > 0.2 {
		t.Errorf("window factor %.5f with arrivals stopped at its start, want a little above 0", f)
	}
}

func TestWarmUpIsTheP95OfWorkOrADay(t *testing.T) {
	c := DefaultConfig()
	if w := WarmUp(c); w != 24*time.Hour {
		t.Errorf("WarmUp of the defaults %v, want 24h (p95 is 4.7 h)", w)
	}
	// p95 sits between p90 and p99 on the upper slope: with p90 50 h
	// and p99 100 h it is 50 h × 2^((z95 − z90)/(z99 − z90)).
	c.Lifetime = Lifetime{P50: time.Hour, P90: 50 * time.Hour, P99: 100 * time.Hour, Max: 200 * time.Hour}
	want := 50 * math.Pow(2, (z95-z90)/(z99-z90))
	if w := WarmUp(c).Hours(); math.Abs(w-want) > 1e-6 {
		t.Errorf("WarmUp %.4f h, want %.4f h", w, want)
	}
}
