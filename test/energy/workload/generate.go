package workload

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"joulie.io/joulie/test/energy/physics"
)

// SizeShare is one size of a discrete size distribution and the share of
// draws that take it.
type SizeShare struct {
	Size  int
	Share float64
}

// Mix is the share of each boundness class among a stream's jobs.
type Mix map[physics.Boundness]float64

// Bursts describes jobs submitted together, like a parameter sweep or an
// array job.
type Bursts struct {
	// Share of a stream's jobs that arrive in bursts, 0..1.
	Share float64
	// MeanSize is the mean number of jobs of a burst (geometric, ≥ 1).
	MeanSize float64
	// Spread: a burst's jobs arrive spread evenly at random over this long
	// after its start.
	Spread time.Duration
}

// Config shapes a generated job list. DefaultConfig gives the benchmark's
// settings; the documentation of each field says where its default comes
// from.
type Config struct {
	// Nodes is the cluster the offered load is computed against.
	Nodes []Node
	// TargetGPUUtilization is the share of the cluster's GPUs the
	// generated jobs keep busy on average (offered load), 0..1.
	TargetGPUUtilization float64
	// TargetCPUUtilization is the share of the cluster's CPUs, counting
	// those of GPU nodes, the generated jobs request on average, 0..1.
	TargetCPUUtilization float64

	// Jobs stops the list after this many jobs, Horizon after this long;
	// give one or both (whichever comes first).
	Jobs    int
	Horizon time.Duration

	// PerformanceShare is the share of performance-class jobs, 0..1.
	PerformanceShare float64
	// Lifetime is the distribution of a job's work.
	Lifetime Lifetime

	// Window is the steady-state accounting window: the simulator counts
	// energy and allocation between Window.Start and Window.End, after
	// the cluster has filled up (see WarmUp). LoadLevel and
	// ExpectedAllocation average over it.
	Window Window

	// Diurnal is the daily shape of the arrival rate: DiurnalOpenB (the
	// default) or DiurnalSinusoid.
	Diurnal Diurnal
	// DayNightRatio is the arrival rate at the daily peak over the rate
	// at the trough, ≥ 1, with DiurnalSinusoid; the rate follows a
	// sinusoid over 24 h. Other shapes ignore it.
	DayNightRatio float64
	// PeakHour is the hour of the day (0 ≤ h < 24, from the start of the
	// list) at which arrivals peak, with DiurnalSinusoid.
	PeakHour float64
	// Day is how long the daily cycle lasts: 0 is 24 h, as in a real
	// cluster. A shorter Day compresses the whole daily curve into it, as
	// the demo does to show a busy and a quiet phase within minutes;
	// PeakHour and the openb hours then count in 24ths of Day.
	Day    time.Duration
	Bursts Bursts

	// GPUSizes is the GPU stream's distribution of whole GPUs per job,
	// 0 included.
	GPUSizes []SizeShare
	// CPUJobCores is the distribution of CPUs requested by a job without
	// GPUs; CPUPerGPU that of CPUs per GPU of a GPU job.
	CPUJobCores []SizeShare
	CPUPerGPU   []SizeShare
	// MemoryPerCPUGiB is the distribution of memory per requested CPU of a
	// job without GPUs; MemoryPerGPUGiB that of memory per GPU of a GPU
	// job.
	MemoryPerCPUGiB []SizeShare
	MemoryPerGPUGiB []SizeShare

	// GPUMix and CPUMix are the boundness classes of GPU jobs (gpu-*) and
	// of jobs without GPUs (cpu-*).
	GPUMix Mix
	CPUMix Mix
}

// DefaultGPUMix and DefaultCPUMix are the boundness mixes the generator
// and the trace reader use unless told otherwise. They are assumptions: no
// public trace records what bounds a job's speed. They give every class
// real weight, so that the report's per-class figures rest on many jobs.
func DefaultGPUMix() Mix {
	return Mix{physics.GPUCompute: 0.40, physics.GPUMixed: 0.35, physics.GPULow: 0.25}
}

// DefaultCPUMix: see DefaultGPUMix.
func DefaultCPUMix() Mix {
	return Mix{physics.CPUCompute: 0.40, physics.CPUMemory: 0.35, physics.CPULow: 0.25}
}

// Window is a span of simulated time from the start of a job list.
type Window struct {
	Start, End time.Duration
}

// DefaultLoadLevel is the load level DefaultConfig applies (LoadLevel).
const DefaultLoadLevel = 0.4

// DefaultConfig is the benchmark's workload on the standard 2,000 + 500
// node cluster: 72 h of arrivals on the openb daily curve, measured in the
// window from 24 h to 72 h, at load level 0.4 (LoadLevel: 40% of the CPUs
// and of the GPUs allocated on average inside the window).
//
// The list before the openb curve, window and load levels is this Config
// with Diurnal DiurnalSinusoid, Horizon 24 h, TargetGPUUtilization 0.6
// and TargetCPUUtilization 0.5: the same seed gives the same jobs.
func DefaultConfig() Config {
	return LoadLevel(Config{
		Nodes:                StandardCluster(2000, 500),
		TargetGPUUtilization: 0.6,
		TargetCPUUtilization: 0.5,
		Horizon:              72 * time.Hour,
		Window:               Window{Start: 24 * time.Hour, End: 72 * time.Hour},
		Diurnal:              DiurnalOpenB,
		PerformanceShare:     0.25,
		Lifetime: Lifetime{
			P50: 9 * time.Minute,
			P90: 108 * time.Minute,
			P99: 28 * time.Hour,
			Max: 7 * 24 * time.Hour,
		},
		DayNightRatio: 4,
		PeakHour:      14,
		Bursts:        Bursts{Share: 0.10, MeanSize: 40, Spread: 5 * time.Minute},
		// Published shares of GPU pods per GPU count: 0 GPUs 13%, 1 GPU
		// 86%, 2-8 GPUs 1%; how the 1% splits over 2, 4 and 8 is an
		// assumption (powers of two, as multi-GPU jobs are laid out).
		GPUSizes: []SizeShare{{0, 0.13}, {1, 0.86}, {2, 0.005}, {4, 0.003}, {8, 0.002}},
		// Requests are assumptions (the published statistics give GPU
		// counts and lifetimes only): CPU jobs from 2 to 128 CPUs, mostly
		// small, mean 19 CPUs; GPU jobs 4 to 24 CPUs per GPU, mean 9.6, the
		// HGX host's 28 per GPU being the ceiling; memory 2-8 GiB per CPU
		// and 32-128 GiB per GPU, so that every shape fits its node.
		CPUJobCores:     []SizeShare{{2, 0.15}, {4, 0.20}, {8, 0.20}, {16, 0.20}, {32, 0.15}, {64, 0.07}, {128, 0.03}},
		CPUPerGPU:       []SizeShare{{4, 0.30}, {8, 0.30}, {12, 0.20}, {16, 0.15}, {24, 0.05}},
		MemoryPerCPUGiB: []SizeShare{{2, 0.35}, {4, 0.40}, {8, 0.25}},
		MemoryPerGPUGiB: []SizeShare{{32, 0.30}, {64, 0.40}, {128, 0.30}},
		GPUMix:          DefaultGPUMix(),
		CPUMix:          DefaultCPUMix(),
	}, DefaultLoadLevel)
}

// Load is the offered load a Config asks for, worked out from its
// targets.
type Load struct {
	// MeanWork is a job's expected work, after the cut at Lifetime.Max.
	MeanWork time.Duration
	// GPUStreamPerHour and CPUStreamPerHour are the mean arrival rates of
	// the two streams, bursts included.
	GPUStreamPerHour, CPUStreamPerHour float64
	// GPUUtilization and CPUUtilization are the expected shares of the
	// cluster's GPUs and CPUs requested: the targets, except that the CPU
	// figure is higher when the GPU stream alone asks for more CPU than
	// the target.
	GPUUtilization, CPUUtilization float64
}

// Load works out the arrival rates that meet the targets.
//
// The published size mix describes the pods of a GPU cluster: 13% of them
// ask for no GPU. The benchmark's cluster also has CPU-only nodes, 2,000 of
// them with 384 CPUs each, which those 13% could fill only if each asked
// for over 1,000 CPUs. So the generator draws two streams with the same
// daily shape and bursts:
//   - the GPU stream, with the published size mix, at the rate that keeps
//     TargetGPUUtilization of the GPUs busy: rate × E[GPUs] × E[work] =
//     target × GPUs;
//   - the CPU stream, of jobs without GPUs, at the rate that brings the
//     CPUs requested by both streams to TargetCPUUtilization:
//     rate × E[CPUs] × E[work] = target × CPUs − what the GPU stream
//     requests (0 if that is negative).
//
// These are steady-state figures: with lifetimes this long-tailed (mean
// 1.6 h, p99 28 h) a cluster takes about a day to fill up to them.
func (c Config) Load() Load {
	var gpus, cpuMilli float64
	for _, n := range c.Nodes {
		gpus += float64(n.GPUs)
		cpuMilli += float64(n.CPUMilli)
	}
	work := c.Lifetime.fit().mean()
	cpuJob := mean(c.CPUJobCores)
	perGPU := mean(c.CPUPerGPU)
	var gpuJobGPUs, gpuJobCPUs float64
	for _, s := range c.GPUSizes {
		gpuJobGPUs += s.Share * float64(s.Size)
		if s.Size == 0 {
			gpuJobCPUs += s.Share * cpuJob
		} else {
			gpuJobCPUs += s.Share * float64(s.Size) * perGPU
		}
	}
	var l Load
	l.MeanWork = time.Duration(work * float64(time.Second))
	var gpuRate float64 // per second
	if gpus > 0 && gpuJobGPUs > 0 {
		gpuRate = c.TargetGPUUtilization * gpus / (gpuJobGPUs * work)
		l.GPUUtilization = c.TargetGPUUtilization
	}
	cpus := cpuMilli / 1000
	fromGPU := gpuRate * gpuJobCPUs * work
	cpuRate := max(0, c.TargetCPUUtilization*cpus-fromGPU) / (cpuJob * work)
	l.GPUStreamPerHour, l.CPUStreamPerHour = gpuRate*3600, cpuRate*3600
	if cpus > 0 {
		l.CPUUtilization = (fromGPU + cpuRate*cpuJob*work) / cpus
	}
	return l
}

// Validate checks a Config. Every error names the field and the value.
func (c Config) Validate() error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Nodes) == 0 {
		fail("Nodes is empty: the offered load needs a cluster")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"TargetGPUUtilization", c.TargetGPUUtilization}, {"TargetCPUUtilization", c.TargetCPUUtilization}, {"PerformanceShare", c.PerformanceShare}} {
		if !(f.v >= 0 && f.v <= 1) {
			fail("%s %v is not in [0,1]", f.name, f.v)
		}
	}
	if c.Jobs < 0 || c.Horizon < 0 || c.Jobs == 0 && c.Horizon == 0 {
		fail("Jobs %d and Horizon %v: give a positive number of jobs, a positive horizon, or both", c.Jobs, c.Horizon)
	}
	l := c.Lifetime
	if !(0 < l.P50 && l.P50 < l.P90 && l.P90 < l.P99 && l.P99 <= l.Max) {
		fail("Lifetime %v/%v/%v, max %v: want 0 < P50 < P90 < P99 ≤ Max", l.P50, l.P90, l.P99, l.Max)
	}
	if !(0 <= c.Window.Start && c.Window.Start < c.Window.End) {
		fail("Window %v to %v: want 0 ≤ Start < End", c.Window.Start, c.Window.End)
	}
	if c.Day < 0 {
		fail("Day %v: want 0 (24 h) or a positive length of the daily cycle", c.Day)
	}
	switch c.Diurnal {
	case DiurnalOpenB:
	case DiurnalSinusoid:
		if !(c.DayNightRatio >= 1) || math.IsInf(c.DayNightRatio, 0) {
			fail("DayNightRatio %v: want a finite ratio of 1 or more (1: no daily cycle)", c.DayNightRatio)
		}
		if !(c.PeakHour >= 0 && c.PeakHour < 24) {
			fail("PeakHour %v is not in [0,24)", c.PeakHour)
		}
	default:
		fail("Diurnal %q: want %q or %q", c.Diurnal, DiurnalOpenB, DiurnalSinusoid)
	}
	b := c.Bursts
	if !(b.Share >= 0 && b.Share < 1) || !(b.MeanSize >= 1) || math.IsInf(b.MeanSize, 0) || b.Spread < 0 {
		fail("Bursts %+v: want 0 ≤ Share < 1, a finite MeanSize ≥ 1 and Spread ≥ 0", b)
	}
	checkSizes(fail, "GPUSizes", c.GPUSizes, 0)
	checkSizes(fail, "CPUJobCores", c.CPUJobCores, 1)
	checkSizes(fail, "CPUPerGPU", c.CPUPerGPU, 1)
	checkSizes(fail, "MemoryPerCPUGiB", c.MemoryPerCPUGiB, 1)
	checkSizes(fail, "MemoryPerGPUGiB", c.MemoryPerGPUGiB, 1)
	checkMix(fail, "GPUMix", c.GPUMix, true)
	checkMix(fail, "CPUMix", c.CPUMix, false)
	if len(errs) == 0 {
		c.checkFits(fail)
		if ld := c.Load(); ld.GPUStreamPerHour == 0 && ld.CPUStreamPerHour == 0 {
			fail("the targets (GPU %v, CPU %v) on this cluster ask for no jobs at all", c.TargetGPUUtilization, c.TargetCPUUtilization)
		}
	}
	return errors.Join(errs...)
}

// checkFits makes sure the largest job of every shape fits on some node,
// so that no job waits forever for a node that does not exist.
func (c Config) checkFits(fail func(string, ...any)) {
	fits := func(milli, mib int64, gpus int) bool {
		return slices.ContainsFunc(c.Nodes, func(n Node) bool {
			return n.CPUMilli >= milli && n.MemoryMiB >= mib && n.GPUs >= gpus
		})
	}
	ld := c.Load()
	cpu, memCPU := largest(c.CPUJobCores), largest(c.MemoryPerCPUGiB)
	if ld.CPUStreamPerHour > 0 || slices.ContainsFunc(c.GPUSizes, func(s SizeShare) bool { return s.Size == 0 && s.Share > 0 }) {
		if !fits(int64(cpu)*1000, int64(cpu*memCPU)*1024, 0) {
			fail("the largest job without GPUs (%d CPUs × %d GiB per CPU, from CPUJobCores and MemoryPerCPUGiB) fits on no node", cpu, memCPU)
		}
	}
	perGPU, memGPU := largest(c.CPUPerGPU), largest(c.MemoryPerGPUGiB)
	for _, s := range c.GPUSizes {
		if s.Size > 0 && s.Share > 0 && ld.GPUStreamPerHour > 0 &&
			!fits(int64(s.Size*perGPU)*1000, int64(s.Size*memGPU)*1024, s.Size) {
			fail("GPUSizes: the largest %d-GPU job (%d CPUs, %d GiB, from CPUPerGPU and MemoryPerGPUGiB) fits on no node", s.Size, s.Size*perGPU, s.Size*memGPU)
		}
	}
}

func checkSizes(fail func(string, ...any), name string, sizes []SizeShare, minSize int) {
	if len(sizes) == 0 {
		fail("%s is empty", name)
		return
	}
	var sum float64
	for _, s := range sizes {
		if s.Size < minSize || !(s.Share >= 0) {
			fail("%s: size %d with share %v: want a size of %d or more and a share of 0 or more", name, s.Size, s.Share, minSize)
		}
		sum += s.Share
	}
	if math.Abs(sum-1) > 1e-9 {
		fail("%s: the shares add up to %v, not 1", name, sum)
	}
}

func checkMix(fail func(string, ...any), name string, m Mix, gpu bool) {
	var sum float64
	for _, b := range slices.Sorted(maps.Keys(m)) {
		s := m[b]
		if !b.Valid() || b.GPU() != gpu {
			fail("%s: class %q does not belong here (GPU jobs take gpu-* classes, the others cpu-*)", name, b)
		}
		if !(s >= 0) {
			fail("%s: class %s has share %v", name, b, s)
		}
		sum += s
	}
	if math.Abs(sum-1) > 1e-9 {
		fail("%s: the shares add up to %v, not 1", name, sum)
	}
}

func mean(sizes []SizeShare) float64 {
	var m float64
	for _, s := range sizes {
		m += s.Share * float64(s.Size)
	}
	return m
}

func largest(sizes []SizeShare) int {
	l := 0
	for _, s := range sizes {
		if s.Share > 0 {
			l = max(l, s.Size)
		}
	}
	return l
}

// Generate draws a job list from cfg, deterministically: the same seed and
// Config give the same list on the same platform. It panics if cfg does
// not pass Validate; a program that takes a Config from its user calls
// Validate first and reports the error.
//
// Arrivals are a Poisson process whose rate follows the daily curve
// Diurnal names (the openb trace's hourly counts, or a sinusoid with the
// given day/night ratio), scaled to the streams' mean rates. A share of
// the jobs (Bursts.Share) arrives in bursts instead: the bursts' starts
// follow the same daily shape, each holds a geometric number of jobs with
// mean Bursts.MeanSize spread over Bursts.Spread, and the jobs of a burst
// share their requests, class and boundness (one sweep, many runs), with
// lifetimes drawn each on its own. Each job is performance class with probability
// PerformanceShare, and takes its boundness from GPUMix or CPUMix. Jobs
// are numbered in arrival order.
func Generate(seed int64, cfg Config) []Job {
	if err := cfg.Validate(); err != nil {
		panic("workload: invalid Config: " + err.Error())
	}
	g := generator{
		cfg:  &cfg,
		rng:  rand.New(rand.NewPCG(uint64(seed), 0x6a6f756c6965)), // "joulie"
		life: cfg.Lifetime.fit(),
	}
	return g.run()
}

type generator struct {
	cfg  *Config
	rng  *rand.Rand
	life split
	jobs []Job
}

// stream kinds, and whether an event is one job or the start of a burst.
const (
	gpuSingle = iota
	gpuBurst
	cpuSingle
	cpuBurst
)

func (g *generator) run() []Job {
	c := g.cfg
	ld := c.Load()
	b := c.Bursts.Share
	// Events per second of each kind, averaged over a day.
	gpuRate, cpuRate := ld.GPUStreamPerHour/3600, ld.CPUStreamPerHour/3600
	rates := [4]float64{
		gpuSingle: gpuRate * (1 - b),
		gpuBurst:  gpuRate * b / c.Bursts.MeanSize,
		cpuSingle: cpuRate * (1 - b),
		cpuBurst:  cpuRate * b / c.Bursts.MeanSize,
	}
	var total float64
	for _, r := range rates {
		total += r
	}
	// All four kinds share the daily shape, so they are one Poisson
	// process of rate total × shape(t), each event of a kind drawn with
	// probability proportional to its rate. The shape is drawn by
	// thinning: candidates at the peak rate, each kept with probability
	// shape(t) / peak.
	shape, peak := c.dayShape()
	horizon := c.Horizon.Seconds()
	spread := c.Bursts.Spread.Seconds()
	stopAt := math.Inf(1)
	for t := 0.0; ; {
		t += g.rng.ExpFloat64() / (total * peak)
		if c.Horizon > 0 && t > horizon || t > stopAt {
			break
		}
		if g.rng.Float64()*peak > shape(t) {
			continue
		}
		kind, u := 0, g.rng.Float64()*total
		for kind < len(rates)-1 && u >= rates[kind] {
			u -= rates[kind]
			kind++
		}
		gpuStream := kind == gpuSingle || kind == gpuBurst
		job := g.shape(gpuStream)
		if kind == gpuSingle || kind == cpuSingle {
			g.add(job, t)
		} else {
			for n := g.burstSize(); n > 0; n-- {
				g.add(job, t+g.rng.Float64()*spread)
			}
		}
		// Once there are enough jobs, later events can only add jobs
		// arriving after t, so the first Jobs are known once no burst
		// started before t can still add one: after t + spread.
		if c.Jobs > 0 && len(g.jobs) >= c.Jobs && math.IsInf(stopAt, 1) {
			stopAt = t + spread
		}
	}
	// Order by arrival; ties keep the order of generation.
	slices.SortStableFunc(g.jobs, func(a, b Job) int { return cmp.Compare(a.Arrival, b.Arrival) })
	if c.Horizon > 0 {
		n, _ := slices.BinarySearchFunc(g.jobs, c.Horizon+1, func(j Job, d time.Duration) int { return cmp.Compare(j.Arrival, d) })
		g.jobs = g.jobs[:n]
	}
	if c.Jobs > 0 && len(g.jobs) > c.Jobs {
		g.jobs = g.jobs[:c.Jobs]
	}
	g.jobs = slices.Clip(g.jobs)
	width := len(fmt.Sprint(len(g.jobs)))
	for i := range g.jobs {
		g.jobs[i].ID = fmt.Sprintf("job-%0*d", max(6, width), i)
	}
	return g.jobs
}

// shape draws what a job (or every job of a burst) asks for.
func (g *generator) shape(gpuStream bool) Job {
	c := g.cfg
	j := Job{Source: "cpu-stream", Class: Standard}
	if gpuStream {
		j.Source = "gpu-stream"
		j.GPUs = g.pick(c.GPUSizes)
	}
	if j.GPUs > 0 {
		j.CPUMilli = int64(j.GPUs*g.pick(c.CPUPerGPU)) * 1000
		j.MemoryMiB = int64(j.GPUs*g.pick(c.MemoryPerGPUGiB)) * 1024
		j.Boundness = g.class(c.GPUMix, true)
	} else {
		cpus := g.pick(c.CPUJobCores)
		j.CPUMilli = int64(cpus) * 1000
		j.MemoryMiB = int64(cpus*g.pick(c.MemoryPerCPUGiB)) * 1024
		j.Boundness = g.class(c.CPUMix, false)
	}
	if g.rng.Float64() < c.PerformanceShare {
		j.Class = Performance
	}
	return j
}

func (g *generator) add(shape Job, at float64) {
	shape.Arrival = time.Duration(math.Round(at*1000)) * time.Millisecond
	shape.Work, shape.Truncated = g.life.draw(g.rng)
	g.jobs = append(g.jobs, shape)
}

// burstSize is geometric on 1, 2, ... with mean Bursts.MeanSize.
func (g *generator) burstSize() int {
	m := g.cfg.Bursts.MeanSize
	if m <= 1 {
		return 1
	}
	return 1 + int(math.Floor(math.Log(1-g.rng.Float64())/math.Log(1-1/m)))
}

func (g *generator) pick(sizes []SizeShare) int {
	return pickShare(g.rng.Float64(), sizes)
}

func (g *generator) class(m Mix, gpu bool) physics.Boundness {
	return pickClass(g.rng.Float64(), m, gpu)
}

// pickShare returns the size whose cumulative share first exceeds u in
// [0,1); the last size with a share takes what rounding leaves.
func pickShare(u float64, sizes []SizeShare) int {
	last := 0
	for _, s := range sizes {
		if s.Share <= 0 {
			continue
		}
		if u < s.Share {
			return s.Size
		}
		u -= s.Share
		last = s.Size
	}
	return last
}

// pickClass is pickShare over a mix, in the order of
// physics.Boundnesses so that a map's order does not matter.
func pickClass(u float64, m Mix, gpu bool) physics.Boundness {
	var last physics.Boundness
	for _, b := range physics.Boundnesses() {
		s := m[b]
		if b.GPU() != gpu || s <= 0 {
			continue
		}
		if u < s {
			return b
		}
		u -= s
		last = b
	}
	return last
}
