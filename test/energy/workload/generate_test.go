package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/physics"
)

// smallConfig is the default workload on a cluster a hundredth the size,
// so that a list of many jobs spans many days.
func smallConfig() Config {
	c := DefaultConfig()
	c.Nodes = StandardCluster(20, 5)
	c.Horizon = 0
	c.Jobs = 5000
	// Steady-state targets, as the tests of the offered load read them.
	c.TargetGPUUtilization, c.TargetCPUUtilization = 0.6, 0.5
	return c
}

func TestGenerateIsDeterministic(t *testing.T) {
	c := smallConfig()
	a, b := Generate(7, c), Generate(7, c)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two different lists")
	}
	if Hash(a) != Hash(b) {
		t.Fatal("the same list hashed twice gave two hashes")
	}
	if Hash(Generate(8, c)) == Hash(a) {
		t.Error("seeds 7 and 8 gave the same hash")
	}
}

func TestGenerateStopsAtJobsOrHorizonWithoutLosingBurstJobs(t *testing.T) {
	c := smallConfig()
	// Mostly long bursts, so that most stops fall inside one.
	c.Bursts = Bursts{Share: 0.9, MeanSize: 20, Spread: time.Hour}
	long := Generate(3, c)
	if len(long) != 5000 {
		t.Fatalf("%d jobs, want 5000", len(long))
	}
	// A shorter list is the start of the longer one: stopping early must
	// not drop the late members of a burst that began before the stop.
	for n := 1; n <= 300; n++ {
		c.Jobs = n
		if short := Generate(3, c); !reflect.DeepEqual(short, long[:n]) {
			t.Fatalf("the first %d jobs differ from a %d-job list", n, n)
		}
	}
	c.Jobs, c.Horizon = 0, long[2000].Arrival
	byHorizon := Generate(3, c)
	if n := len(byHorizon); n < 2000 || !reflect.DeepEqual(byHorizon, long[:n]) || long[n].Arrival <= c.Horizon {
		t.Errorf("a horizon at job 2000's arrival gave %d jobs, not the prefix of the longer list up to it", n)
	}
	for i, j := range long {
		if i > 0 && j.Arrival < long[i-1].Arrival {
			t.Fatalf("job %d arrives before job %d", i, i-1)
		}
		if want := fmt.Sprintf("job-%06d", i); j.ID != want {
			t.Fatalf("job %d has ID %q, want %q", i, j.ID, want)
		}
	}
}

// The statistics below run over 200,000 jobs: enough that the sampling
// error is a fraction of each tolerance.
const sample = 200000

func TestGeneratedLifetimesMatchThePublishedQuantiles(t *testing.T) {
	c := smallConfig()
	c.Jobs = sample
	jobs := Generate(11, c)
	work := make([]time.Duration, len(jobs))
	truncated := 0
	for i, j := range jobs {
		work[i] = j.Work
		if j.Truncated {
			truncated++
			if j.Work != c.Lifetime.Max {
				t.Fatalf("%s is truncated at %v, not at Max %v", j.ID, j.Work, c.Lifetime.Max)
			}
		}
		if j.Work < time.Second || j.Work > c.Lifetime.Max {
			t.Fatalf("%s: work %v outside 1 s..%v", j.ID, j.Work, c.Lifetime.Max)
		}
	}
	slices.Sort(work)
	q := func(p float64) time.Duration { return work[int(p*float64(len(work)))] }
	for _, tc := range []struct {
		name      string
		got, want time.Duration
		tol       float64
	}{
		{"p50", q(0.50), 9 * time.Minute, 0.05},
		{"p90", q(0.90), 108 * time.Minute, 0.05},
		// Fewer jobs lie beyond p99, so its sampling error is larger.
		{"p99", q(0.99), 28 * time.Hour, 0.10},
	} {
		if rel := math.Abs(float64(tc.got-tc.want)) / float64(tc.want); rel > tc.tol {
			t.Errorf("%s %v, want %v within %.0f%%", tc.name, tc.got, tc.want, tc.tol*100)
		}
	}
	// 0.13% of the split log-normal lies beyond 7 days.
	if share := float64(truncated) / sample; share < 0.0008 || share > 0.0019 {
		t.Errorf("%.3f%% of jobs cut at 7 days, want about 0.13%%", share*100)
	}
}

func TestLifetimeFitIsWhatTheDocumentationSays(t *testing.T) {
	s := DefaultConfig().Lifetime.fit()
	if math.Abs(s.sigma1-1.939) > 0.001 || math.Abs(s.sigma2-2.627) > 0.001 {
		t.Errorf("σ1 %.4f, σ2 %.4f; the doc says 1.94 and 2.63", s.sigma1, s.sigma2)
	}
	// One log-normal through p50 and p90 would put p99 at 13.6 h.
	if p99 := math.Exp(s.mu+s.sigma1*z99) / 3600; math.Abs(p99-13.6) > 0.05 {
		t.Errorf("a single log-normal's p99 is %.2f h; the doc says 13.6 h", p99)
	}
	if p999 := s.at(math.Sqrt2*math.Erfinv(2*0.999-1)) / 3600; math.Abs(p999-208) > 1 {
		t.Errorf("p99.9 %.1f h; the doc says 208 h", p999)
	}
	// The mean by quadrature agrees with the mean of many draws.
	rng := rand.New(rand.NewPCG(1, 2))
	var sum float64
	const n = 400000
	for range n {
		w, _ := s.draw(rng)
		sum += w.Seconds()
	}
	if got, want := sum/n, s.mean(); math.Abs(got-want)/want > 0.03 {
		t.Errorf("mean of draws %.0f s, quadrature %.0f s", got, want)
	}
	if h := s.mean() / 3600; math.Abs(h-1.57) > 0.01 {
		t.Errorf("mean work %.3f h; Load's doc says 1.6 h", h)
	}
}

func TestGPUSizesMatchThePublishedShares(t *testing.T) {
	c := smallConfig()
	c.Jobs = sample
	c.TargetCPUUtilization = 0 // the GPU stream alone
	jobs := Generate(12, c)
	count := map[string]int{}
	for _, j := range jobs {
		if j.Source != "gpu-stream" {
			t.Fatalf("%s comes from %s with no CPU target", j.ID, j.Source)
		}
		switch {
		case j.GPUs == 0:
			count["0"]++
		case j.GPUs == 1:
			count["1"]++
		case j.GPUs >= 2 && j.GPUs <= 8:
			count["2-8"]++
		default:
			t.Fatalf("%s asks for %d GPUs", j.ID, j.GPUs)
		}
	}
	for size, want := range map[string]float64{"0": 0.13, "1": 0.86, "2-8": 0.01} {
		if got := float64(count[size]) / sample; math.Abs(got-want) > 0.01 {
			t.Errorf("%s GPUs: %.2f%% of jobs, want %.0f%% within 1 point", size, got*100, want*100)
		}
	}
	if got := float64(count["2-8"]) / sample; math.Abs(got-0.01) > 0.003 {
		t.Errorf("2-8 GPUs: %.3f%% of jobs, want 1%%", got*100)
	}
}

func TestClassesAndBoundnessFollowTheConfig(t *testing.T) {
	c := smallConfig()
	c.Jobs = sample
	// A burst's jobs share their class and boundness, which would make
	// the shares vary by lumps of 40; the mixes are per draw.
	c.Bursts.Share = 0
	jobs := Generate(13, c)
	perf := 0
	classes := map[physics.Boundness]int{}
	var gpuJobs, cpuJobs int
	for _, j := range jobs {
		if j.Class == Performance {
			perf++
		} else if j.Class != Standard {
			t.Fatalf("%s has class %q", j.ID, j.Class)
		}
		if j.Boundness.GPU() != (j.GPUs > 0) {
			t.Fatalf("%s: %s with %d GPUs", j.ID, j.Boundness, j.GPUs)
		}
		classes[j.Boundness]++
		if j.GPUs > 0 {
			gpuJobs++
		} else {
			cpuJobs++
		}
	}
	if got := float64(perf) / sample; math.Abs(got-0.25) > 0.01 {
		t.Errorf("%.2f%% performance-class jobs, want 25%%", got*100)
	}
	for b, want := range DefaultGPUMix() {
		if got := float64(classes[b]) / float64(gpuJobs); math.Abs(got-want) > 0.015 {
			t.Errorf("%s: %.3f of GPU jobs, want %.2f", b, got, want)
		}
	}
	for b, want := range DefaultCPUMix() {
		if got := float64(classes[b]) / float64(cpuJobs); math.Abs(got-want) > 0.015 {
			t.Errorf("%s: %.3f of CPU jobs, want %.2f", b, got, want)
		}
	}
}

// hourCounts counts arrivals by hour of the day.
func hourCounts(jobs []Job) [24]float64 {
	var h [24]float64
	for _, j := range jobs {
		h[int(j.Arrival/time.Hour)%24]++
	}
	return h
}

func TestArrivalsFollowTheDayNightRatio(t *testing.T) {
	c := smallConfig()
	c.Jobs = sample
	c.Bursts.Share = 0
	c.Diurnal = DiurnalSinusoid
	// Hours 13-14 and 1-2 straddle the 14:00 peak and 02:00 trough; over
	// an hour either side the sinusoid averages to sin(π/24)/(π/24) of
	// its swing, so the ratio of the two hours is a little under 4.
	swing := 0.6 * math.Sin(math.Pi/24) / (math.Pi / 24)
	want := (1 + swing) / (1 - swing)
	for _, tc := range []struct {
		name  string
		burst float64
		tol   float64
	}{
		{"without bursts", 0, 0.05},
		// Bursts arrive in lumps of 40, so counts vary more.
		{"with bursts", 0.10, 0.15},
	} {
		c.Bursts.Share = tc.burst
		h := hourCounts(Generate(14, c))
		ratio := (h[13] + h[14]) / (h[1] + h[2])
		if math.Abs(ratio-want)/want > tc.tol {
			t.Errorf("%s: peak to trough %.2f, want %.2f within %.0f%%", tc.name, ratio, want, tc.tol*100)
		}
	}
}

func TestBurstsLumpArrivals(t *testing.T) {
	c := smallConfig()
	c.Jobs = sample
	// The index of dispersion of 5-minute counts, from differences of
	// neighbouring windows so that the daily cycle cancels: 1 for a
	// Poisson process, about 1 + Share × (2 × MeanSize − 1) with bursts
	// (8.9 with the defaults), less where a burst straddles two windows.
	dispersion := func(jobs []Job) float64 {
		counts := map[int]float64{}
		for _, j := range jobs {
			counts[int(j.Arrival/(5*time.Minute))]++
		}
		last := int(jobs[len(jobs)-1].Arrival / (5 * time.Minute))
		var num, den float64
		for w := 0; w+1 < last; w += 2 {
			d := counts[w] - counts[w+1]
			num += d * d
			den += counts[w] + counts[w+1]
		}
		return num / den
	}
	c.Bursts.Share = 0
	if d := dispersion(Generate(15, c)); d < 0.9 || d > 1.1 {
		t.Errorf("without bursts the dispersion is %.2f, want 1", d)
	}
	c.Bursts.Share = 0.10
	jobs := Generate(15, c)
	if d := dispersion(jobs); d < 4 {
		t.Errorf("with bursts the dispersion is %.2f, want well above 1", d)
	}
}

func TestOfferedLoadMeetsTheTargets(t *testing.T) {
	c := smallConfig()
	c.Jobs, c.Horizon = 0, 60*24*time.Hour
	jobs := Generate(16, c)
	var gpus, cpus float64
	for _, n := range c.Nodes {
		gpus += float64(n.GPUs)
		cpus += float64(n.CPUMilli) / 1000
	}
	var gpuSec, cpuSec float64
	for _, j := range jobs {
		gpuSec += float64(j.GPUs) * j.Work.Seconds()
		cpuSec += float64(j.CPUMilli) / 1000 * j.Work.Seconds()
	}
	// Work offered per unit of capacity and time. Lifetimes are heavy
	// tailed, so a sum of work converges slowly: 10%.
	span := c.Horizon.Seconds()
	if u := gpuSec / (gpus * span); math.Abs(u-0.6) > 0.06 {
		t.Errorf("offered GPU load %.3f, want 0.6", u)
	}
	if u := cpuSec / (cpus * span); math.Abs(u-0.5) > 0.05 {
		t.Errorf("offered CPU load %.3f, want 0.5", u)
	}
}

func TestLoadSolvesForTheTwoStreams(t *testing.T) {
	c := DefaultConfig()
	c.TargetGPUUtilization, c.TargetCPUUtilization = 0.6, 0.5
	l := c.Load()
	w := l.MeanWork.Seconds()
	// The GPU stream: 0.898 GPUs and 0.13 × 19.02 + 0.898 × 9.6 CPUs per
	// job on average; the CPU stream: 19.02 CPUs per job.
	gpuRate := 0.6 * 4000 / (0.898 * w)
	cpuRate := (0.5*880000 - gpuRate*(0.13*19.02+0.898*9.6)*w) / (19.02 * w)
	if math.Abs(l.GPUStreamPerHour-gpuRate*3600) > 1e-6*gpuRate*3600 || math.Abs(l.CPUStreamPerHour-cpuRate*3600) > 1e-6*cpuRate*3600 {
		t.Errorf("rates %.1f/h and %.1f/h, want %.1f/h and %.1f/h", l.GPUStreamPerHour, l.CPUStreamPerHour, gpuRate*3600, cpuRate*3600)
	}
	if l.GPUUtilization != 0.6 || math.Abs(l.CPUUtilization-0.5) > 1e-9 {
		t.Errorf("utilizations %v, %v", l.GPUUtilization, l.CPUUtilization)
	}
	// On GPU nodes alone, the GPU stream asks for more than 1% of the
	// CPUs: the CPU stream stops and the CPU figure says so.
	c.Nodes = StandardCluster(0, 10)
	c.TargetCPUUtilization = 0.01
	if l := c.Load(); l.CPUStreamPerHour != 0 || l.CPUUtilization <= 0.01 {
		t.Errorf("GPU nodes only: CPU stream %.1f/h, CPU load %.3f; want none and more than the target", l.CPUStreamPerHour, l.CPUUtilization)
	}
}

func TestEveryGeneratedJobFitsANode(t *testing.T) {
	c := DefaultConfig()
	c.Horizon, c.Jobs = 0, 20000
	jobs := Generate(17, c)
	for _, j := range jobs {
		if !slices.ContainsFunc(c.Nodes, func(n Node) bool {
			return n.CPUMilli >= j.CPUMilli && n.MemoryMiB >= j.MemoryMiB && n.GPUs >= j.GPUs
		}) {
			t.Fatalf("%+v fits no node", j)
		}
	}
}

func TestValidateNamesTheFaultyField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no nodes", func(c *Config) { c.Nodes = nil }, "Nodes is empty"},
		{"target above 1", func(c *Config) { c.TargetGPUUtilization = 1.5 }, "TargetGPUUtilization 1.5 is not in [0,1]"},
		{"NaN share", func(c *Config) { c.PerformanceShare = math.NaN() }, "PerformanceShare NaN is not in [0,1]"},
		{"no stop", func(c *Config) { c.Horizon, c.Jobs = 0, 0 }, "give a positive number of jobs, a positive horizon, or both"},
		{"quantiles out of order", func(c *Config) { c.Lifetime.P90 = time.Minute }, "want 0 < P50 < P90 < P99 ≤ Max"},
		{"max below p99", func(c *Config) { c.Lifetime.Max = time.Hour }, "want 0 < P50 < P90 < P99 ≤ Max"},
		{"ratio below 1", func(c *Config) { c.Diurnal, c.DayNightRatio = DiurnalSinusoid, 0.5 }, "DayNightRatio 0.5"},
		{"peak hour 24", func(c *Config) { c.Diurnal, c.PeakHour = DiurnalSinusoid, 24 }, "PeakHour 24 is not in [0,24)"},
		{"unknown daily curve", func(c *Config) { c.Diurnal = "flat" }, `Diurnal "flat": want "openb" or "sinusoid"`},
		{"empty window", func(c *Config) { c.Window = Window{} }, "Window 0s to 0s: want 0 ≤ Start < End"},
		{"window ending before it starts", func(c *Config) { c.Window = Window{48 * time.Hour, 24 * time.Hour} }, "Window 48h0m0s to 24h0m0s"},
		{"burst share 1", func(c *Config) { c.Bursts.Share = 1 }, "want 0 ≤ Share < 1"},
		{"shares not adding up", func(c *Config) { c.GPUSizes[1].Share = 0.5 }, "GPUSizes: the shares add up to 0.64, not 1"},
		{"zero-CPU job", func(c *Config) { c.CPUJobCores[0].Size = 0 }, "CPUJobCores: size 0 with share 0.15"},
		{"CPU class in the GPU mix", func(c *Config) { c.GPUMix = Mix{physics.CPULow: 1} }, `GPUMix: class "cpu-low" does not belong here`},
		{"unknown class", func(c *Config) { c.CPUMix = Mix{"cpu-idle": 1} }, `CPUMix: class "cpu-idle" does not belong here`},
		{"job larger than any node", func(c *Config) { c.CPUJobCores = []SizeShare{{512, 1}} }, "the largest job without GPUs (512 CPUs × 8 GiB per CPU"},
		{"8-GPU job on 4-GPU nodes", func(c *Config) {
			c.Nodes = StandardCluster(2, 1)
			c.Nodes[2].GPUs = 4
		}, "GPUSizes: the largest 8-GPU job (192 CPUs, 1024 GiB"},
		{"nothing asked", func(c *Config) { c.TargetCPUUtilization, c.TargetGPUUtilization = 0, 0 }, "ask for no jobs at all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), tc.want) {
					t.Errorf("Generate did not panic with the error: %v", r)
				}
			}()
			Generate(1, c)
		})
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("the default config is invalid: %v", err)
	}
}
