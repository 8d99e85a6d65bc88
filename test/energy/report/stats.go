// Package report turns the simulator's results, one per load level, arm
// and seed, into the benchmark's statistics, report.md and plots (issues
// 14 and 22).
//
// The primary accounting is the steady-state window each result carries
// (sim.Result.Window): the energy inside it, split into its parts, divided
// by the work done inside it. The drain-to-empty accounting (a common
// window from 0 to the last completion of any arm) and the seed
// document's method are kept beside it for continuity.
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

// DefaultHeadline is the load level the summary leads with.
const DefaultHeadline = 0.4

// Quantiles are the p50, p95 and p99 of a sample (nearest rank, see
// Percentile). N is the sample size; with N = 0 the quantiles are NaN.
type Quantiles struct {
	N             int
	P50, P95, P99 float64
}

// Run is the statistics of one arm on one seed at one load level.
type Run struct {
	Arm      sim.Arm
	Seed     int64
	Level    float64
	JobsHash string
	Jobs     int
	// Truncated counts jobs whose recorded work was cut (a trace pod still
	// running at the trace's end, or a generated job cut at 7 days).
	Truncated int
	// Unplaceable are the jobs of the list that fit no node and stayed
	// pending (sim.Result.Unplaceable); Jobs does not count them.
	Unplaceable []sim.Unplaceable

	// Window is the steady-state accounting window of the result.
	Window sim.Window
	// EnergyKWh is the IT energy inside Window; Parts splits it (kWh, not
	// watts): Parts.Dynamic is the energy above the awake nodes' idle.
	EnergyKWh float64
	Parts     sim.Parts
	// CoreHours and GPUHours are the full-speed-equivalent work done
	// inside Window.
	CoreHours, GPUHours float64
	// KWhPerCoreHour and KWhPerGPUHour divide the window's whole energy by
	// each measure of the window's work (NaN when that work is 0).
	KWhPerCoreHour, KWhPerGPUHour float64
	// AllocCPU and AllocGPU are the measured allocated shares inside
	// Window.
	AllocCPU, AllocGPU float64

	// Stretch is, per class, the completion time of each job divided by the
	// same job's completion time in arm a-default.
	Stretch map[string]Quantiles
	// JCT and Wait are, per class, completion time (End − Arrival) and
	// pod wait (Start − Arrival), in seconds, over every job of the run.
	JCT, Wait map[string]Quantiles
	// BootWaits is, per class, the pods that waited for a boot by
	// sim.BootWaitRule and their waits for capacity.
	BootWaits map[string]BootWaits

	PerfOnEcoOrDraining int
	// PerfBootWaits counts performance pods that waited for a boot;
	// PerfBootWaitsInWindow those that arrived inside Window.
	PerfBootWaits, PerfBootWaitsInWindow int
	Boots, Shutdowns                     int
	// Makespan is the latest completion less the first arrival.
	Makespan time.Duration

	// Drain is the drain-to-empty accounting of the same run.
	Drain Drain

	// SeedMethod is the seed experiment's accounting of the same arm, when
	// the simulator ran it.
	SeedMethod *sim.SeedMethod

	stretch map[string][]float64 // raw, for the CDF plot (headline level)
	// bootWaits holds, per class, the waits of the pods that waited for a
	// boot (seconds, in job order) and whether each arrived in Window, so
	// a level can pool them over seeds.
	bootWaits map[string][]bootWait
	power     []sim.Sample // first week, lowest seed, headline level
}

// BootWaits are the pods of one class that waited for a boot
// (sim.BootWaitRule), InWindow of them arriving inside the steady-state
// window, and the nearest-rank p50, p95 and the maximum of their waits
// for capacity in seconds (NaN when N is 0). Only the pods that waited
// count: over every pod the percentiles would be 0 wherever fewer than 5%
// waited.
type BootWaits struct {
	N, InWindow   int
	P50, P95, Max float64
}

type bootWait struct {
	secs     float64
	inWindow bool
}

func bootWaitsOf(ws []bootWait) BootWaits {
	secs := make([]float64, 0, len(ws))
	b := BootWaits{N: len(ws)}
	for _, w := range ws {
		secs = append(secs, w.secs)
		if w.inWindow {
			b.InWindow++
		}
	}
	slices.Sort(secs)
	b.P50, b.P95, b.Max = Percentile(secs, 0.50), Percentile(secs, 0.95), Percentile(secs, 1)
	return b
}

// PooledBootWaits is arm's BootWaits for class over every seed of the
// level, the waits pooled.
func (l *Level) PooledBootWaits(arm sim.Arm, class string) BootWaits {
	var ws []bootWait
	for _, seed := range l.Seeds {
		if r := l.Run(arm, seed); r != nil {
			ws = append(ws, r.bootWaits[class]...)
		}
	}
	return bootWaitsOf(ws)
}

// Drain is the accounting of the reports before issue 22: one window per
// seed and level from 0 to the latest completion of any arm, the energy
// of the whole power series over it (the last sample, an idle cluster,
// held to the window's end), and the work of every completed job.
type Drain struct {
	Window                        time.Duration
	EnergyKWh                     float64
	CoreHours, GPUHours           float64
	KWhPerCoreHour, KWhPerGPUHour float64
}

// Unit says how a Comparison's differences are taken.
type Unit string

const (
	// Percent: 100 × (arm / baseline − 1) on each seed.
	Percent Unit = "%"
	// Seconds: arm − baseline on each seed, in seconds.
	Seconds Unit = "s"
	// Count: arm − baseline on each seed.
	Count Unit = "pods"
)

// Comparison is the mean over seeds of a paired difference between an arm
// and a baseline arm on the same seed, with its 95% confidence interval.
type Comparison struct {
	Arm, Baseline sim.Arm
	Metric        string
	Unit          Unit
	N             int
	Mean, Lo, Hi  float64 // Lo, Hi NaN when N < 2
}

// Metrics compared between arms.
const (
	MetricPerCoreHour     = "energy per core-hour"
	MetricPerGPUHour      = "energy per GPU-hour"
	MetricEnergy          = "IT energy"
	MetricDynamic         = "energy above idle"
	MetricPerfP95         = "performance p95 completion time"
	MetricStandardP95     = "standard p95 completion time"
	MetricPerfWaitP95     = "performance p95 pod wait"
	MetricStandardWaitP95 = "standard p95 pod wait"
	MetricPerfBootWaits   = "performance pods that waited for a boot"
	MetricDrainEnergy     = "drain: IT energy"
	MetricDrainPerCore    = "drain: energy per completed core-hour"
	MetricSeedEnergy      = "seed method: IT energy"
	MetricSeedCoreHours   = "seed method: accepted core-hours"
	MetricSeedPerCoreHour = "seed method: energy per accepted core-hour"
)

type metric struct {
	name string
	unit Unit
	get  func(*Run) float64
}

// windowMetrics are compared against every baseline.
var windowMetrics = []metric{
	{MetricPerCoreHour, Percent, func(r *Run) float64 { return r.KWhPerCoreHour }},
	{MetricPerGPUHour, Percent, func(r *Run) float64 { return r.KWhPerGPUHour }},
	{MetricEnergy, Percent, func(r *Run) float64 { return r.EnergyKWh }},
	{MetricDynamic, Percent, func(r *Run) float64 { return r.Parts.Dynamic }},
	{MetricPerfP95, Percent, func(r *Run) float64 { return r.JCT[Performance].P95 }},
	{MetricStandardP95, Percent, func(r *Run) float64 { return r.JCT[Standard].P95 }},
	{MetricPerfWaitP95, Seconds, func(r *Run) float64 { return r.Wait[Performance].P95 }},
	{MetricStandardWaitP95, Seconds, func(r *Run) float64 { return r.Wait[Standard].P95 }},
	{MetricPerfBootWaits, Count, func(r *Run) float64 { return float64(r.PerfBootWaits) }},
}

// secondaryMetrics are compared against b-binpack only.
var secondaryMetrics = []metric{
	{MetricDrainEnergy, Percent, func(r *Run) float64 { return r.Drain.EnergyKWh }},
	{MetricDrainPerCore, Percent, func(r *Run) float64 { return r.Drain.KWhPerCoreHour }},
	{MetricSeedEnergy, Percent, seedGet(func(m *sim.SeedMethod) float64 { return m.EnergyJ })},
	{MetricSeedCoreHours, Percent, seedGet(func(m *sim.SeedMethod) float64 { return m.AcceptedCoreHours })},
	{MetricSeedPerCoreHour, Percent, seedGet(func(m *sim.SeedMethod) float64 { return ratio(m.EnergyJ, m.AcceptedCoreHours) })},
}

// Baselines are the arms every other arm is compared against: what a
// Kubernetes user runs today, the same with the operator's placement
// settings, and that with idle power-off (the competent baseline).
var Baselines = []sim.Arm{sim.ArmBinPack, sim.ArmBinPackTuned, sim.ArmPowerOff}

// Step is one step of the saving taken apart: Arm against Base, an arm
// that differs from it in one thing, both of which run.
type Step struct {
	What      string
	Arm, Base sim.Arm
}

// Steps take the saving from b-binpack to Joulie apart, each one change
// on top of the last: the operator's placement, idle power-off, Joulie's
// parking and placement in place of g's power-off, its caps, and per-GPU
// caps. On each seed the steps' ratios multiply to j-joulie's (or
// j-joulie-pergpu's) against b-binpack; their means need not.
var Steps = []Step{
	{"placement: the chart's scheduler profile and the GPU taint", sim.ArmBinPackTuned, sim.ArmBinPack},
	{"idle power-off, as cluster-autoscaler and Slurm do it", sim.ArmPowerOff, sim.ArmBinPackTuned},
	{"Joulie's parking and placement in place of g's power-off, no caps", sim.ArmJoulieNoCaps, sim.ArmPowerOff},
	{"Joulie's caps", sim.ArmJoulie, sim.ArmJoulieNoCaps},
	{"per-GPU caps", sim.ArmJouliePerGPU, sim.ArmJoulie},
}

// stepMetrics are what each step is measured on.
var stepMetrics = windowMetricsNamed(MetricPerCoreHour, MetricEnergy, MetricPerfP95, MetricStandardP95)

func windowMetricsNamed(names ...string) []metric {
	var out []metric
	for _, n := range names {
		i := slices.IndexFunc(windowMetrics, func(m metric) bool { return m.name == n })
		if i < 0 {
			panic("report: no window metric " + n)
		}
		out = append(out, windowMetrics[i])
	}
	return out
}

// Oracles are the arms whose saving against b-binpack the others are
// measured as a share of.
var Oracles = []sim.Arm{sim.ArmOraclePhysical, sim.ArmOracle}

// OracleShare is the mean over seeds of an arm's share of an oracle's
// saving against b-binpack on energy per core-hour, on each seed
// 100 × (E_b − E_arm) / (E_b − E_oracle), in percent, with its 95%
// confidence interval. A seed where the oracle saves nothing is left out.
type OracleShare struct {
	Arm, Oracle  sim.Arm
	N            int
	Mean, Lo, Hi float64
}

// Level is the statistics of one load level.
type Level struct {
	// Level is the load level the job lists were generated for (0 for a
	// replayed trace).
	Level       float64
	Arms        []sim.Arm // in sim.Arms' order
	Seeds       []int64   // ascending
	Runs        []*Run    // by arm, then seed
	Comparisons []Comparison
	// StepComparisons are Steps' comparisons, of the steps whose two arms
	// ran.
	StepComparisons []Comparison
	OracleShares    []OracleShare
	// Limit measures the arms against the lower bound, nil without one.
	Limit *Limit
}

// Stats is everything the report shows.
type Stats struct {
	Levels   []*Level // ascending
	Headline *Level   // one of Levels
}

// Level returns the statistics of load level x, or nil.
func (s *Stats) Level(x float64) *Level {
	for _, l := range s.Levels {
		if l.Level == x {
			return l
		}
	}
	return nil
}

// Run returns the statistics of arm on seed, or nil.
func (l *Level) Run(arm sim.Arm, seed int64) *Run {
	for _, r := range l.Runs {
		if r.Arm == arm && r.Seed == seed {
			return r
		}
	}
	return nil
}

// Comparison returns the comparison of arm against base on metric.
func (l *Level) Comparison(arm, base sim.Arm, metric string) (Comparison, bool) {
	for _, c := range l.Comparisons {
		if c.Arm == arm && c.Baseline == base && c.Metric == metric {
			return c, true
		}
	}
	return Comparison{}, false
}

// StepComparison returns step s's comparison on metric.
func (l *Level) StepComparison(s Step, metric string) (Comparison, bool) {
	for _, c := range l.StepComparisons {
		if c.Arm == s.Arm && c.Baseline == s.Base && c.Metric == metric {
			return c, true
		}
	}
	return Comparison{}, false
}

// OracleShare returns arm's share of oracle's saving.
func (l *Level) OracleShare(arm, oracle sim.Arm) (OracleShare, bool) {
	for _, o := range l.OracleShares {
		if o.Arm == arm && o.Oracle == oracle {
			return o, true
		}
	}
	return OracleShare{}, false
}

// Has says whether the level ran arm.
func (l *Level) Has(arm sim.Arm) bool { return slices.Contains(l.Arms, arm) }

// Allocation is the measured allocation of the level: the mean over seeds
// of b-binpack's AllocCPU and AllocGPU (of the first arm run when b was
// not).
func (l *Level) Allocation() (cpu, gpu float64) {
	arm := sim.ArmBinPack
	if !l.Has(arm) {
		arm = l.Arms[0]
	}
	for _, seed := range l.Seeds {
		r := l.Run(arm, seed)
		cpu += r.AllocCPU
		gpu += r.AllocGPU
	}
	n := float64(len(l.Seeds))
	return cpu / n, gpu / n
}

// Compute derives the statistics from one result per level, arm and seed;
// headline is the level the summary leads with, which must be among them.
// Every seed of a level must hold arm a-default (the reference of the
// stretch) and the same arms as the others, and every arm of a seed must
// have run the same job list.
func Compute(headline float64, results []sim.Result) (*Stats, error) {
	type key struct {
		level float64
		seed  int64
	}
	groups := map[key][]sim.Result{}
	for _, r := range results {
		k := key{r.Level, r.Seed}
		groups[k] = append(groups[k], r)
	}
	acc := NewAccumulator(headline)
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.level, b.level), cmp.Compare(a.seed, b.seed))
	})
	for _, k := range keys {
		if err := acc.AddSeed(groups[k]); err != nil {
			return nil, err
		}
	}
	return acc.Stats()
}

// Accumulator computes the statistics seed by seed, so that a caller can
// let go of a seed's results once added: at 2,500 nodes one arm's result
// holds hundreds of thousands of jobs. At the headline level it keeps per
// job its stretch (for the CDF plot), and the first week of the lowest
// seed's power series of the arms PowerArms names (for the power plot).
type Accumulator struct {
	headline float64
	levels   map[float64]*levelAcc
	// bounds are the lower bounds added, by level and seed (AddBound).
	bounds map[float64]map[int64]Bound
}

type levelAcc struct {
	arms  []sim.Arm // of the first seed added
	seeds []int64
	runs  []*Run
}

// NewAccumulator accumulates results whose headline level is headline.
func NewAccumulator(headline float64) *Accumulator {
	return &Accumulator{headline: headline, levels: map[float64]*levelAcc{}}
}

// PowerArms are the arms of the power plot.
var PowerArms = []sim.Arm{sim.ArmBinPack, sim.ArmPowerOff, sim.ArmQueueAware, sim.ArmJoulie}

// PowerSpan is how much of the run the power plot shows.
const PowerSpan = 7 * 24 * time.Hour

// AddSeed adds the results of every arm on one seed at one load level.
func (acc *Accumulator) AddSeed(results []sim.Result) error {
	if len(results) == 0 {
		return fmt.Errorf("no results to add")
	}
	seed, level := results[0].Seed, results[0].Level
	arms := map[sim.Arm]*sim.Result{}
	for i := range results {
		r := &results[i]
		if r.Seed != seed || r.Level != level {
			return fmt.Errorf("results of seed %d at level %v and seed %d at level %v added as one seed", seed, level, r.Seed, r.Level)
		}
		if arms[r.Arm] != nil {
			return fmt.Errorf("two results for arm %s, seed %d, level %v", r.Arm, seed, level)
		}
		arms[r.Arm] = r
	}
	la := acc.levels[level]
	if la == nil {
		la = &levelAcc{}
		acc.levels[level] = la
	}
	if slices.Contains(la.seeds, seed) {
		return fmt.Errorf("seed %d added twice at level %v", seed, level)
	}
	ref := arms[sim.ArmDefault]
	if ref == nil {
		return fmt.Errorf("seed %d at level %v has no result for arm %s, the reference of the completion-time stretch: run it with --arms including %s", seed, level, sim.ArmDefault, sim.ArmDefault)
	}
	names := sortArms(slices.Collect(maps.Keys(arms)))
	if la.arms == nil {
		la.arms = names
	} else if !slices.Equal(la.arms, names) {
		return fmt.Errorf("seed %d at level %v ran arms %s but seed %d ran %s: every seed must run the same arms", seed, level, joinArms(names), la.seeds[0], joinArms(la.arms))
	}
	drain := CommonWindow(arms)
	refJCT := make(map[string]time.Duration, len(ref.Jobs))
	for _, j := range ref.Jobs {
		refJCT[j.ID] = j.End - j.Arrival
	}
	headline := level == acc.headline
	var runs []*Run
	for _, a := range names {
		r := arms[a]
		if r.JobsHash != ref.JobsHash {
			return fmt.Errorf("seed %d at level %v: arm %s ran job list %s but arm %s ran %s: the arms must share one job list", seed, level, a, r.JobsHash, sim.ArmDefault, ref.JobsHash)
		}
		run, err := computeRun(r, drain, refJCT)
		if err != nil {
			return err
		}
		if !headline {
			run.stretch = nil
		}
		if headline && slices.Contains(PowerArms, a) {
			run.power = firstSpan(r.Power, PowerSpan)
		}
		runs = append(runs, run)
	}
	// Only the lowest seed's power is plotted.
	lowest := len(la.seeds) == 0 || seed < slices.Min(la.seeds)
	for _, run := range la.runs {
		if lowest {
			run.power = nil
		}
	}
	if !lowest {
		for _, run := range runs {
			run.power = nil
		}
	}
	la.seeds = append(la.seeds, seed)
	la.runs = append(la.runs, runs...)
	return nil
}

// firstSpan is the samples of power before span, copied so that the rest
// can be let go.
func firstSpan(power []sim.Sample, span time.Duration) []sim.Sample {
	n, _ := slices.BinarySearchFunc(power, span, func(s sim.Sample, t time.Duration) int { return cmp.Compare(s.T, t) })
	return slices.Clone(power[:max(n, min(1, len(power)))])
}

// Stats is the statistics of the seeds added so far.
func (acc *Accumulator) Stats() (*Stats, error) {
	if len(acc.levels) == 0 {
		return nil, fmt.Errorf("no results to report on")
	}
	st := &Stats{}
	for _, x := range slices.Sorted(maps.Keys(acc.levels)) {
		la := acc.levels[x]
		l := &Level{Level: x, Arms: la.arms, Seeds: slices.Sorted(slices.Values(la.seeds)), Runs: slices.Clone(la.runs)}
		slices.SortStableFunc(l.Runs, func(a, b *Run) int {
			return cmp.Or(cmp.Compare(slices.Index(l.Arms, a.Arm), slices.Index(l.Arms, b.Arm)), cmp.Compare(a.Seed, b.Seed))
		})
		for _, base := range Baselines {
			if !l.Has(base) {
				continue
			}
			for _, a := range l.Arms {
				if a == base {
					continue
				}
				l.Comparisons = append(l.Comparisons, l.compare(a, base, windowMetrics)...)
				if base == sim.ArmBinPack {
					l.Comparisons = append(l.Comparisons, l.compare(a, base, secondaryMetrics)...)
				}
			}
		}
		for _, s := range Steps {
			if l.Has(s.Arm) && l.Has(s.Base) {
				l.StepComparisons = append(l.StepComparisons, l.compare(s.Arm, s.Base, stepMetrics)...)
			}
		}
		for _, o := range Oracles {
			if !l.Has(o) || !l.Has(sim.ArmBinPack) {
				continue
			}
			for _, a := range l.Arms {
				if a != sim.ArmBinPack && a != o {
					l.OracleShares = append(l.OracleShares, l.oracleShare(a, o))
				}
			}
		}
		var err error
		if l.Limit, err = acc.limit(l); err != nil {
			return nil, err
		}
		st.Levels = append(st.Levels, l)
		if x == acc.headline {
			st.Headline = l
		}
	}
	if st.Headline == nil {
		var have []string
		for _, l := range st.Levels {
			have = append(have, fmt.Sprint(l.Level))
		}
		return nil, fmt.Errorf("no results at the headline level %v (levels run: %v)", acc.headline, have)
	}
	return st, nil
}

// sortArms orders arms as sim.Arms, unknown ones last by name.
func sortArms(arms []sim.Arm) []sim.Arm {
	order := sim.Arms()
	rank := func(a sim.Arm) int {
		if i := slices.Index(order, a); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortFunc(arms, func(a, b sim.Arm) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b)) })
	return arms
}

// CommonWindow is the end of the drain-to-empty window every arm of a
// seed is measured over: the latest completion of any arm. The window
// starts at 0, the simulation's start, where the job list's time also
// starts.
func CommonWindow(arms map[sim.Arm]*sim.Result) time.Duration {
	var w time.Duration
	for _, r := range arms {
		for _, j := range r.Jobs {
			w = max(w, j.End)
		}
	}
	return w
}

const joulesPerKWh = 3.6e6

func computeRun(r *sim.Result, drain time.Duration, refJCT map[string]time.Duration) (*Run, error) {
	run := &Run{
		Arm: r.Arm, Seed: r.Seed, Level: r.Level, JobsHash: r.JobsHash, Jobs: len(r.Jobs), Unplaceable: r.Unplaceable,
		Window: r.Window, EnergyKWh: r.EnergyJ / joulesPerKWh,
		Parts: sim.Parts{
			IdleAwake: r.EnergyParts.IdleAwake / joulesPerKWh, Dynamic: r.EnergyParts.Dynamic / joulesPerKWh,
			Booting: r.EnergyParts.Booting / joulesPerKWh, Off: r.EnergyParts.Off / joulesPerKWh,
		},
		CoreHours: r.CoreHours, GPUHours: r.GPUHours, AllocCPU: r.AllocCPU, AllocGPU: r.AllocGPU,
		PerfOnEcoOrDraining: r.PerfOnEcoOrDraining, PerfBootWaits: r.PerfBootWaits, PerfBootWaitsInWindow: r.PerfBootWaitsInWindow, Boots: r.Boots, Shutdowns: r.Shutdowns,
		SeedMethod: r.SeedMethod,
		Stretch:    map[string]Quantiles{}, JCT: map[string]Quantiles{}, Wait: map[string]Quantiles{}, BootWaits: map[string]BootWaits{},
		stretch: map[string][]float64{}, bootWaits: map[string][]bootWait{},
	}
	where := fmt.Sprintf("arm %s, seed %d, level %v", r.Arm, r.Seed, r.Level)
	if parts := r.EnergyParts.Total(); math.Abs(parts-r.EnergyJ) > 1e-6*max(1, math.Abs(r.EnergyJ)) {
		return nil, fmt.Errorf("%s: the window's energy parts add up to %v J but its energy is %v J", where, parts, r.EnergyJ)
	}
	run.KWhPerCoreHour = ratio(run.EnergyKWh, run.CoreHours)
	run.KWhPerGPUHour = ratio(run.EnergyKWh, run.GPUHours)

	e, err := EnergyJ(r.Power, drain)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	run.Drain = Drain{Window: drain, EnergyKWh: e / joulesPerKWh}
	jct := map[string][]float64{}
	wait := map[string][]float64{}
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
		run.Drain.CoreHours += h * float64(j.CPUMilli) / 1000
		run.Drain.GPUHours += h * float64(j.GPUs)
		t := j.End - j.Arrival
		jct[j.Class] = append(jct[j.Class], t.Seconds())
		wait[j.Class] = append(wait[j.Class], (j.Start - j.Arrival).Seconds())
		if j.BootWait > 0 {
			in := j.Arrival >= r.Window.Start && j.Arrival < r.Window.End
			run.bootWaits[j.Class] = append(run.bootWaits[j.Class], bootWait{j.BootWait.Seconds(), in})
		}
		ref, ok := refJCT[j.ID]
		if !ok {
			return nil, fmt.Errorf("%s: job %s is not in arm %s's result", where, j.ID, sim.ArmDefault)
		}
		if ref > 0 {
			run.stretch[j.Class] = append(run.stretch[j.Class], float64(t)/float64(ref))
		}
	}
	if len(r.Jobs) > 0 {
		run.Makespan = last - first
	}
	run.Drain.KWhPerCoreHour = ratio(run.Drain.EnergyKWh, run.Drain.CoreHours)
	run.Drain.KWhPerGPUHour = ratio(run.Drain.EnergyKWh, run.Drain.GPUHours)
	for _, c := range Classes {
		run.Stretch[c] = quantiles(run.stretch[c])
		run.JCT[c] = quantiles(jct[c])
		run.Wait[c] = quantiles(wait[c])
		run.BootWaits[c] = bootWaitsOf(run.bootWaits[c])
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

func diff(u Unit, a, b float64) float64 {
	if u == Percent {
		return pct(a, b)
	}
	return a - b
}

func (l *Level) compare(arm, base sim.Arm, metrics []metric) []Comparison {
	var out []Comparison
	for _, m := range metrics {
		var d []float64
		for _, seed := range l.Seeds {
			d = append(d, diff(m.unit, m.get(l.Run(arm, seed)), m.get(l.Run(base, seed))))
		}
		n, mean, lo, hi := MeanCI(d)
		if n == 0 {
			continue
		}
		out = append(out, Comparison{Arm: arm, Baseline: base, Metric: m.name, Unit: m.unit, N: n, Mean: mean, Lo: lo, Hi: hi})
	}
	return out
}

func (l *Level) oracleShare(arm, oracle sim.Arm) OracleShare {
	var shares []float64
	for _, seed := range l.Seeds {
		b := l.Run(sim.ArmBinPack, seed).KWhPerCoreHour
		saved := b - l.Run(oracle, seed).KWhPerCoreHour
		s := math.NaN()
		if saved != 0 {
			s = 100 * (b - l.Run(arm, seed).KWhPerCoreHour) / saved
		}
		shares = append(shares, s)
	}
	n, mean, lo, hi := MeanCI(shares)
	return OracleShare{Arm: arm, Oracle: oracle, N: n, Mean: mean, Lo: lo, Hi: hi}
}

func seedGet(f func(*sim.SeedMethod) float64) func(*Run) float64 {
	return func(r *Run) float64 {
		if r.SeedMethod == nil {
			return math.NaN()
		}
		return f(r.SeedMethod)
	}
}
