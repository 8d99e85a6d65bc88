// Package report turns the simulator's results, one per arm and seed, into
// the benchmark's statistics, report.md and plots (issue 14, section 3).
//
// Everything is computed from sim.Result values alone: no number in the
// report is typed in by hand. The statistics are pure functions; only
// Write touches the filesystem.
package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"joulie.io/joulie/test/energy/sim"
)

// Job classes, as the workload and the simulator spell them.
const (
	Performance = "performance"
	Standard    = "standard"
)

// Classes in the order the report shows them.
var Classes = []string{Performance, Standard}

// Quantiles are the p50, p95 and p99 of a sample (nearest rank, see
// Percentile). N is the sample size; with N = 0 the quantiles are NaN.
type Quantiles struct {
	N             int
	P50, P95, P99 float64
}

// Run is the statistics of one arm on one seed.
type Run struct {
	Arm      sim.Arm
	Seed     int64
	JobsHash string
	Jobs     int
	// Truncated counts jobs whose recorded work was cut (a trace pod still
	// running at the trace's end, or a generated job cut at 7 days).
	Truncated int

	// Window is the common energy window of the seed, [0, Window].
	Window time.Duration
	// EnergyKWh is the cluster's IT energy over the common window.
	EnergyKWh float64
	// CoreHours and GPUHours are the completed work at full speed:
	// Σ Work × CPUMilli/1000 and Σ Work × GPUs.
	CoreHours, GPUHours float64
	// KWhPerCoreHour and KWhPerGPUHour divide the whole cluster's energy
	// by each measure of work (NaN when that work is 0).
	KWhPerCoreHour, KWhPerGPUHour float64

	// Stretch is, per class, the completion time of each job divided by the
	// same job's completion time in arm a-default.
	Stretch map[string]Quantiles
	// JCT and Queue are, per class, completion time (End − Arrival) and
	// queueing delay (Start − Arrival), in seconds.
	JCT, Queue map[string]Quantiles

	PerfOnEcoOrDraining int
	// Makespan is the latest completion less the first arrival.
	Makespan time.Duration

	// SeedMethod is the seed experiment's accounting of the same arm, when
	// the simulator ran it.
	SeedMethod *sim.SeedMethod

	stretch map[string][]float64 // raw, for the CDF plot
	power   []sim.Sample
}

// Comparison is the mean over seeds of a paired difference between an arm
// and a baseline arm on the same seed, with its 95% confidence interval.
type Comparison struct {
	Arm, Baseline sim.Arm
	Metric        string
	N             int
	Mean, Lo, Hi  float64 // Lo, Hi NaN when N < 2
}

// Metrics compared between arms, each as the per-seed difference in percent
// of the baseline's value: 100 × (arm / baseline − 1).
const (
	MetricEnergy          = "IT energy"
	MetricPerCoreHour     = "energy per completed core-hour"
	MetricPerGPUHour      = "energy per completed GPU-hour"
	MetricPerfP95         = "performance p95 completion time"
	MetricStandardP95     = "standard p95 completion time"
	MetricSeedEnergy      = "seed method: IT energy"
	MetricSeedCoreHours   = "seed method: accepted core-hours"
	MetricSeedPerCoreHour = "seed method: energy per accepted core-hour"
)

// Stats is everything the report shows.
type Stats struct {
	Arms  []sim.Arm // a-default first, then in the order of sim's constants
	Seeds []int64   // ascending
	Runs  []*Run    // by arm, then seed
	// Comparisons against a-default and b-binpack, for every other arm.
	Comparisons []Comparison
}

// Run returns the statistics of arm on seed, or nil.
func (s *Stats) Run(arm sim.Arm, seed int64) *Run {
	for _, r := range s.Runs {
		if r.Arm == arm && r.Seed == seed {
			return r
		}
	}
	return nil
}

// Comparison returns the comparison of arm against base on metric.
func (s *Stats) Comparison(arm, base sim.Arm, metric string) (Comparison, bool) {
	for _, c := range s.Comparisons {
		if c.Arm == arm && c.Baseline == base && c.Metric == metric {
			return c, true
		}
	}
	return Comparison{}, false
}

var armOrder = []sim.Arm{sim.ArmDefault, sim.ArmBinPack, sim.ArmStatic, sim.ArmQueueAware, sim.ArmNoCaps, sim.ArmOracle}

// Compute derives the statistics from one result per arm and seed. Every
// seed must hold arm a-default (the reference of the stretch) and the same
// arms as the others, and every arm of a seed must have run the same job
// list.
func Compute(results []sim.Result) (*Stats, error) {
	bySeed := map[int64][]sim.Result{}
	for _, r := range results {
		bySeed[r.Seed] = append(bySeed[r.Seed], r)
	}
	var acc Accumulator
	for _, seed := range slices.Sorted(maps.Keys(bySeed)) {
		if err := acc.AddSeed(bySeed[seed]); err != nil {
			return nil, err
		}
	}
	return acc.Stats()
}

// Accumulator computes the statistics seed by seed, so that a caller can
// let go of a seed's results once added: at 2,500 nodes one arm's result
// holds hundreds of thousands of jobs. It keeps per job only its stretch
// (for the CDF plot), and the power series of the lowest seed (for the
// power plot).
type Accumulator struct {
	arms  []sim.Arm // of the first seed added, sorted
	seeds []int64
	runs  []*Run
}

// AddSeed adds the results of every arm on one seed.
func (acc *Accumulator) AddSeed(results []sim.Result) error {
	if len(results) == 0 {
		return fmt.Errorf("no results to add")
	}
	seed := results[0].Seed
	arms := map[sim.Arm]*sim.Result{}
	for i := range results {
		r := &results[i]
		if r.Seed != seed {
			return fmt.Errorf("results of seeds %d and %d added as one seed", seed, r.Seed)
		}
		if arms[r.Arm] != nil {
			return fmt.Errorf("two results for arm %s, seed %d", r.Arm, seed)
		}
		arms[r.Arm] = r
	}
	if slices.Contains(acc.seeds, seed) {
		return fmt.Errorf("seed %d added twice", seed)
	}
	ref := arms[sim.ArmDefault]
	if ref == nil {
		return fmt.Errorf("seed %d has no result for arm %s, the reference of the completion-time stretch: run it with --arms including %s", seed, sim.ArmDefault, sim.ArmDefault)
	}
	names := sortArms(slices.Collect(maps.Keys(arms)))
	if acc.arms == nil {
		acc.arms = names
	} else if !slices.Equal(acc.arms, names) {
		return fmt.Errorf("seed %d ran arms %s but seed %d ran %s: every seed must run the same arms", seed, joinArms(names), acc.seeds[0], joinArms(acc.arms))
	}
	window := CommonWindow(arms)
	refJCT := make(map[string]time.Duration, len(ref.Jobs))
	for _, j := range ref.Jobs {
		refJCT[j.ID] = j.End - j.Arrival
	}
	var runs []*Run
	for _, a := range names {
		r := arms[a]
		if r.JobsHash != ref.JobsHash {
			return fmt.Errorf("seed %d: arm %s ran job list %s but arm %s ran %s: the arms must share one job list", seed, a, r.JobsHash, sim.ArmDefault, ref.JobsHash)
		}
		run, err := computeRun(r, window, refJCT)
		if err != nil {
			return err
		}
		runs = append(runs, run)
	}
	// Only the lowest seed's power is plotted.
	lowest := len(acc.seeds) == 0 || seed < slices.Min(acc.seeds)
	for _, run := range acc.runs {
		if lowest {
			run.power = nil
		}
	}
	if !lowest {
		for _, run := range runs {
			run.power = nil
		}
	}
	acc.seeds = append(acc.seeds, seed)
	acc.runs = append(acc.runs, runs...)
	return nil
}

// Stats is the statistics of the seeds added so far.
func (acc *Accumulator) Stats() (*Stats, error) {
	if len(acc.seeds) == 0 {
		return nil, fmt.Errorf("no results to report on")
	}
	st := &Stats{Arms: acc.arms, Seeds: slices.Sorted(slices.Values(acc.seeds)), Runs: slices.Clone(acc.runs)}
	slices.SortStableFunc(st.Runs, func(a, b *Run) int {
		return cmp.Or(cmp.Compare(slices.Index(st.Arms, a.Arm), slices.Index(st.Arms, b.Arm)), cmp.Compare(a.Seed, b.Seed))
	})
	for _, base := range []sim.Arm{sim.ArmDefault, sim.ArmBinPack} {
		if !slices.Contains(st.Arms, base) {
			continue
		}
		for _, a := range st.Arms {
			if a != base {
				st.Comparisons = append(st.Comparisons, st.compare(a, base)...)
			}
		}
	}
	return st, nil
}

// sortArms orders arms as sim's constants, unknown ones last by name.
func sortArms(arms []sim.Arm) []sim.Arm {
	rank := func(a sim.Arm) int {
		if i := slices.Index(armOrder, a); i >= 0 {
			return i
		}
		return len(armOrder)
	}
	slices.SortFunc(arms, func(a, b sim.Arm) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b)) })
	return arms
}

// CommonWindow is the end of the window every arm of a seed is measured
// over: the latest completion of any arm. The window starts at 0, the
// simulation's start, where the job list's time also starts.
func CommonWindow(arms map[sim.Arm]*sim.Result) time.Duration {
	var w time.Duration
	for _, r := range arms {
		for _, j := range r.Jobs {
			w = max(w, j.End)
		}
	}
	return w
}

func computeRun(r *sim.Result, window time.Duration, refJCT map[string]time.Duration) (*Run, error) {
	run := &Run{
		Arm: r.Arm, Seed: r.Seed, JobsHash: r.JobsHash, Jobs: len(r.Jobs),
		Window: window, PerfOnEcoOrDraining: r.PerfOnEcoOrDraining,
		SeedMethod: r.SeedMethod, power: r.Power,
		Stretch: map[string]Quantiles{}, JCT: map[string]Quantiles{}, Queue: map[string]Quantiles{},
		stretch: map[string][]float64{},
	}
	e, err := EnergyJ(r.Power, window)
	if err != nil {
		return nil, fmt.Errorf("arm %s, seed %d: %w", r.Arm, r.Seed, err)
	}
	run.EnergyKWh = e / 3.6e6
	jct := map[string][]float64{}
	queue := map[string][]float64{}
	var first, last time.Duration
	for i, j := range r.Jobs {
		if i == 0 || j.Arrival < first {
			first = j.Arrival
		}
		last = max(last, j.End)
		if j.Truncated {
			run.Truncated++
		}
		h := j.Work.Hours()
		run.CoreHours += h * float64(j.CPUMilli) / 1000
		run.GPUHours += h * float64(j.GPUs)
		t := j.End - j.Arrival
		jct[j.Class] = append(jct[j.Class], t.Seconds())
		queue[j.Class] = append(queue[j.Class], (j.Start - j.Arrival).Seconds())
		ref, ok := refJCT[j.ID]
		if !ok {
			return nil, fmt.Errorf("arm %s, seed %d: job %s is not in arm %s's result", r.Arm, r.Seed, j.ID, sim.ArmDefault)
		}
		if ref > 0 {
			run.stretch[j.Class] = append(run.stretch[j.Class], float64(t)/float64(ref))
		}
	}
	if len(r.Jobs) > 0 {
		run.Makespan = last - first
	}
	run.KWhPerCoreHour = ratio(run.EnergyKWh, run.CoreHours)
	run.KWhPerGPUHour = ratio(run.EnergyKWh, run.GPUHours)
	for _, c := range Classes {
		run.Stretch[c] = quantiles(run.stretch[c])
		run.JCT[c] = quantiles(jct[c])
		run.Queue[c] = quantiles(queue[c])
	}
	return run, nil
}

// EnergyJ integrates a step-function power series over [0, window]: each
// sample's watts hold until the next sample's time, the last sample's until
// the window's end (after its last job a simulated cluster only idles, and
// its last sample is its idle power). Before the first sample the cluster
// is taken to draw the first sample's watts.
func EnergyJ(power []sim.Sample, window time.Duration) (float64, error) {
	if len(power) == 0 {
		return 0, fmt.Errorf("no power samples: the simulator recorded no cluster power")
	}
	var e float64
	prevT, prevW := time.Duration(0), power[0].Watts
	for _, s := range power {
		if s.T < prevT {
			return 0, fmt.Errorf("power sample at %v comes after one at %v: samples must be in time order", s.T, prevT)
		}
		if s.T >= window {
			break
		}
		e += prevW * (s.T - prevT).Seconds()
		prevT, prevW = s.T, s.Watts
	}
	e += prevW * (window - prevT).Seconds()
	return e, nil
}

// Percentile is the nearest-rank p-quantile (0 < p ≤ 1) of sorted: the
// smallest value with at least a fraction p of the sample at or below it,
// always one of the sample's values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

func quantiles(xs []float64) Quantiles {
	s := slices.Clone(xs)
	slices.Sort(s)
	return Quantiles{N: len(s), P50: Percentile(s, 0.50), P95: Percentile(s, 0.95), P99: Percentile(s, 0.99)}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// MeanCI is the mean of xs and its two-sided 95% confidence interval from
// Student's t with n − 1 degrees of freedom: mean ± t(0.975, n−1) × s/√n,
// s the sample standard deviation. With fewer than two values the interval
// is NaN. NaN values (a metric undefined on a seed) are left out.
func MeanCI(xs []float64) (n int, mean, lo, hi float64) {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	n = len(v)
	if n == 0 {
		return 0, math.NaN(), math.NaN(), math.NaN()
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(n)
	if n < 2 {
		return n, mean, math.NaN(), math.NaN()
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
	half := t * sd / math.Sqrt(float64(n))
	return n, mean, mean - half, mean + half
}

func pct(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return 100 * (a/b - 1)
}

func (s *Stats) compare(arm, base sim.Arm) []Comparison {
	metrics := []struct {
		name string
		get  func(*Run) float64
	}{
		{MetricEnergy, func(r *Run) float64 { return r.EnergyKWh }},
		{MetricPerCoreHour, func(r *Run) float64 { return r.KWhPerCoreHour }},
		{MetricPerGPUHour, func(r *Run) float64 { return r.KWhPerGPUHour }},
		{MetricPerfP95, func(r *Run) float64 { return r.JCT[Performance].P95 }},
		{MetricStandardP95, func(r *Run) float64 { return r.JCT[Standard].P95 }},
		{MetricSeedEnergy, seedGet(func(m *sim.SeedMethod) float64 { return m.EnergyJ })},
		{MetricSeedCoreHours, seedGet(func(m *sim.SeedMethod) float64 { return m.AcceptedCoreHours })},
		{MetricSeedPerCoreHour, seedGet(func(m *sim.SeedMethod) float64 { return ratio(m.EnergyJ, m.AcceptedCoreHours) })},
	}
	var out []Comparison
	for _, m := range metrics {
		var d []float64
		for _, seed := range s.Seeds {
			d = append(d, pct(m.get(s.Run(arm, seed)), m.get(s.Run(base, seed))))
		}
		n, mean, lo, hi := MeanCI(d)
		if n == 0 {
			continue
		}
		out = append(out, Comparison{Arm: arm, Baseline: base, Metric: m.name, N: n, Mean: mean, Lo: lo, Hi: hi})
	}
	return out
}

func seedGet(f func(*sim.SeedMethod) float64) func(*Run) float64 {
	return func(r *Run) float64 {
		if r.SeedMethod == nil {
			return math.NaN()
		}
		return f(r.SeedMethod)
	}
}
