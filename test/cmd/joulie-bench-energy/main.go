// Command joulie-bench-energy runs the energy benchmark (issues 14 and
// 22): every arm on every seed's job list at every load level through the
// simulator (package energy/sim), then the statistics, report.md and plots
// (package energy/report) into --out.
//
//	cd test && go run ./cmd/joulie-bench-energy --nodes-cpu 200 --nodes-gpu 50 --levels 0.2:3,0.4:10,0.6:3
//
// See test/energy/README.md, "Report", for the flags and what each number
// of the report means.
package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"joulie.io/joulie/pkg/catalog"
	"joulie.io/joulie/pkg/park"
	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/report"
	"joulie.io/joulie/test/energy/sim"
	"joulie.io/joulie/test/energy/workload"
)

func main() {
	// A run allocates heavily (kube-scheduler's cycle state, one per pod)
	// and keeps little: with the default GOGC a third of the CPU went to
	// the collector. Memory is not what bounds the benchmark.
	debug.SetGCPercent(400)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr, simulate)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "joulie-bench-energy: %v\n", err)
		os.Exit(1)
	}
}

// defaultLevels is --levels' default: the headline level 0.4 on ten
// seeds, and a lighter and a heavier load on three each.
const defaultLevels = "0.2:3,0.4:10,0.6:3"

// levelRun is a load level and how many seeds run at it.
type levelRun struct {
	level float64
	seeds int
}

// options is the command line, parsed and checked.
type options struct {
	cpuNodes, gpuNodes int
	// sixFamilies, when above 0, replaces the standard cluster with
	// workload.SixFamilies(sixFamilies).
	sixFamilies int
	// levels are the load levels run, each on seeds firstSeed …
	// firstSeed + seeds − 1; a replayed trace runs one, level 0.
	levels         []levelRun
	headline       float64 // the level the summary leads with; 0 for a trace
	firstSeed      int64
	horizon        time.Duration
	jobs           int
	physicsFile    string
	physicsVariant string
	tracePods      string
	traceNodes     string
	traceStart     time.Duration
	traceEnd       time.Duration
	out            string
	arms           []sim.Arm
	parallel       int
	seedMethod     bool
	// parking replaces the parking settings of the arms that park
	// (j-joulie); nil keeps the controller's defaults.
	parking *park.Params
}

func parse(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("joulie-bench-energy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	fs.IntVar(&o.cpuNodes, "nodes-cpu", 2000, "CPU-only nodes of the standard cluster (2 × EPYC 9654)")
	fs.IntVar(&o.gpuNodes, "nodes-gpu", 500, "GPU nodes of the standard cluster (8 × H100)")
	fs.IntVar(&o.sixFamilies, "six-families", 0, "instead of the standard cluster, a sparse one of six hardware families (2 CPU-only, H100, A100, L40S, T4) with this many nodes each (0: the standard cluster)")
	levels := fs.String("levels", defaultLevels, "load levels and their seeds, level:seeds,…; a level is the allocated share of the cluster the job list is generated for, in (0, 1)")
	seeds := fs.Int("seeds", 0, "run one level, --headline-level, on this many seeds (instead of --levels)")
	fs.Float64Var(&o.headline, "headline-level", report.DefaultHeadline, "the load level the summary leads with; one of --levels")
	fs.Int64Var(&o.firstSeed, "first-seed", 1, "the first seed of every level; the others follow it")
	fs.DurationVar(&o.horizon, "horizon", workload.DefaultConfig().Horizon, "arrivals of the generated workload span this long")
	fs.IntVar(&o.jobs, "jobs", 0, "stop each generated job list after this many jobs (0: no limit, --horizon alone)")
	fs.StringVar(&o.physicsFile, "physics", "", "physics YAML file (default: the embedded test/energy/physics/physics.yaml)")
	fs.StringVar(&o.physicsVariant, "physics-variant", "default", "model of the physics file: default, or a variant such as sensitivity")
	fs.StringVar(&o.tracePods, "trace-pods", "", "replay this pod list (openb schema) instead of generating jobs; needs --trace-nodes")
	fs.StringVar(&o.traceNodes, "trace-nodes", "", "node list (openb schema) of the replayed cluster; needs --trace-pods")
	fs.DurationVar(&o.traceStart, "trace-start", 0, "replay only the pods created from this long after the trace's start (with --trace-pods)")
	fs.DurationVar(&o.traceEnd, "trace-end", 0, "replay only the pods created before this long after the trace's start, and cut running pods there (0: the trace's own end)")
	fs.StringVar(&o.out, "out", "bench/energy", "directory for report.md and the plots (relative to the working directory)")
	arms := fs.String("arms", joinArms(sim.Arms()), "comma-separated arms to run; a-default is required (it is the reference of the stretch)")
	fs.IntVar(&o.parallel, "parallel", runtime.GOMAXPROCS(0), "simulations run at once (each uses one core)")
	fs.BoolVar(&o.seedMethod, "seed-method", true, "also run every arm at the headline level the seed document's way (fixed window, drops, jobs counted); false saves that second pass and leaves the section out")
	reserveFor := fs.String("parking-reserve-for", string(park.DefaultParams().ReserveFor), "parking.reserveFor of the arms that park (j-joulie): any, or performance to keep the warm reserve for performance pods")
	maxGap := fs.Duration("parking-reserve-max-gap", park.DefaultParams().ReserveMaxGap, "parking.reserveMaxGap of the arms that park (j-joulie): a family keeps a warm reserve only while its performance pods arrive at least once per this gap; 0 keeps it whatever the gap")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: this command takes only flags", fs.Arg(0))
	}
	var err error
	if o.arms, err = parseArms(*arms); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["parking-reserve-for"] || set["parking-reserve-max-gap"] {
		s := park.DefaultParams()
		s.ReserveFor, s.ReserveMaxGap = park.ReserveFor(*reserveFor), *maxGap
		if s.ReserveFor != park.ReserveForAny && s.ReserveFor != park.ReserveForPerformance {
			return nil, fmt.Errorf("--parking-reserve-for %q is not one of %s, %s", *reserveFor, park.ReserveForAny, park.ReserveForPerformance)
		}
		if s.ReserveMaxGap < 0 {
			return nil, fmt.Errorf("--parking-reserve-max-gap %v is negative (0 keeps the reserve whatever the gap)", s.ReserveMaxGap)
		}
		o.parking = &s
	}
	if o.sixFamilies != 0 && (set["nodes-cpu"] || set["nodes-gpu"] || o.tracePods != "" || o.traceNodes != "") {
		return nil, fmt.Errorf("--six-families %d is a cluster of its own: leave out --nodes-cpu, --nodes-gpu and the trace", o.sixFamilies)
	}
	if err := o.setLevels(*levels, *seeds, set); err != nil {
		return nil, err
	}
	switch {
	case o.parallel < 1:
		return nil, fmt.Errorf("--parallel %d: at least 1", o.parallel)
	case (o.tracePods == "") != (o.traceNodes == ""):
		return nil, fmt.Errorf("--trace-pods %q and --trace-nodes %q: give both to replay a trace, or neither to generate jobs", o.tracePods, o.traceNodes)
	case o.traceStart < 0:
		return nil, fmt.Errorf("--trace-start %v is negative", o.traceStart)
	case o.traceEnd < 0:
		return nil, fmt.Errorf("--trace-end %v is negative; 0 means the trace's own end", o.traceEnd)
	case o.traceEnd > 0 && o.traceEnd <= o.traceStart:
		return nil, fmt.Errorf("--trace-end %v is not after --trace-start %v", o.traceEnd, o.traceStart)
	case o.tracePods == "" && (o.traceStart != 0 || o.traceEnd != 0):
		return nil, fmt.Errorf("--trace-start %v and --trace-end %v choose a part of a replayed trace: give --trace-pods and --trace-nodes", o.traceStart, o.traceEnd)
	case o.sixFamilies < 0:
		return nil, fmt.Errorf("--six-families %d: nodes per family cannot be negative", o.sixFamilies)
	case o.tracePods == "" && o.sixFamilies == 0 && o.cpuNodes+o.gpuNodes < 1:
		return nil, fmt.Errorf("--nodes-cpu %d and --nodes-gpu %d: the cluster needs at least one node", o.cpuNodes, o.gpuNodes)
	case o.tracePods == "" && (o.cpuNodes < 0 || o.gpuNodes < 0):
		return nil, fmt.Errorf("--nodes-cpu %d and --nodes-gpu %d: node counts cannot be negative", o.cpuNodes, o.gpuNodes)
	case o.tracePods == "" && o.horizon <= 0 && o.jobs <= 0:
		return nil, fmt.Errorf("--horizon %v and --jobs %d: give a positive horizon or number of jobs", o.horizon, o.jobs)
	}
	return o, nil
}

func parseArms(s string) ([]sim.Arm, error) {
	var arms []sim.Arm
	for _, f := range strings.Split(s, ",") {
		a := sim.Arm(strings.TrimSpace(f))
		if a == "" {
			continue
		}
		if _, err := sim.Spec(a); err != nil {
			return nil, fmt.Errorf("--arms: %w", err)
		}
		if !slices.Contains(arms, a) {
			arms = append(arms, a)
		}
	}
	if !slices.Contains(arms, sim.ArmDefault) {
		return nil, fmt.Errorf("--arms %q: include %s, the reference every job's completion-time stretch is measured against", s, sim.ArmDefault)
	}
	return arms, nil
}

// setLevels fills o.levels and checks o.headline from --levels, --seeds
// and --headline-level; set names the flags given on the command line.
func (o *options) setLevels(levels string, seeds int, set map[string]bool) error {
	if set["seeds"] && seeds < 1 {
		return fmt.Errorf("--seeds %d: at least 1 is needed, 2 for a confidence interval", seeds)
	}
	if set["seeds"] && set["levels"] {
		return fmt.Errorf("--seeds %d and --levels %q: give one; --seeds N is --levels <headline level>:N", seeds, levels)
	}
	if !(o.headline > 0 && o.headline < 1) {
		return fmt.Errorf("--headline-level %v: a load level is a share of the cluster, in (0, 1)", o.headline)
	}
	if o.tracePods != "" {
		// A trace's load is its own: one level, 0, on the seeds that draw
		// its pods' boundness classes.
		if set["levels"] || set["headline-level"] {
			return fmt.Errorf("--levels and --headline-level do not apply to a replayed trace (--trace-pods), whose load is its own; give --seeds")
		}
		n := seeds
		if !set["seeds"] {
			ls, err := parseLevels(levels)
			if err != nil {
				return err
			}
			n = ls[slices.IndexFunc(ls, func(l levelRun) bool { return l.level == o.headline })].seeds
		}
		o.levels, o.headline = []levelRun{{0, n}}, 0
		return nil
	}
	if set["seeds"] {
		o.levels = []levelRun{{o.headline, seeds}}
		return nil
	}
	var err error
	if o.levels, err = parseLevels(levels); err != nil {
		return err
	}
	if !slices.ContainsFunc(o.levels, func(l levelRun) bool { return l.level == o.headline }) {
		return fmt.Errorf("--headline-level %v is not among --levels %q", o.headline, levels)
	}
	return nil
}

// parseLevels reads --levels: level:seeds pairs separated by commas, in
// any order, each level once.
func parseLevels(s string) ([]levelRun, error) {
	var out []levelRun
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		ls, ns, ok := strings.Cut(f, ":")
		if !ok {
			return nil, fmt.Errorf("--levels %q: %q is not level:seeds (e.g. 0.4:10)", s, f)
		}
		level, err := strconv.ParseFloat(strings.TrimSpace(ls), 64)
		if err != nil || !(level > 0 && level < 1) {
			return nil, fmt.Errorf("--levels %q: level %q is not a share of the cluster in (0, 1)", s, ls)
		}
		n, err := strconv.Atoi(strings.TrimSpace(ns))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--levels %q: level %v needs at least 1 seed, not %q", s, level, ns)
		}
		if slices.ContainsFunc(out, func(l levelRun) bool { return l.level == level }) {
			return nil, fmt.Errorf("--levels %q: level %v given twice", s, level)
		}
		out = append(out, levelRun{level, n})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--levels %q: no level", s)
	}
	slices.SortFunc(out, func(a, b levelRun) int { return cmp.Compare(a.level, b.level) })
	return out, nil
}

func joinArms(arms []sim.Arm) string {
	var s []string
	for _, a := range arms {
		s = append(s, string(a))
	}
	return strings.Join(s, ",")
}

// simulator runs one arm on one job list, generated for load level level
// (0 for a trace), and returns a result whose Level is level; progress is
// called with the simulated time reached and the fraction of the run done.
// seedMethod asks for the seed document's second pass as well; parking,
// when not nil, replaces the parking settings of the arms that park.
type simulator func(ctx context.Context, arm sim.Arm, level float64, seed int64, nodes []workload.Node, jobs []workload.Job, window sim.Window, model *physics.Model, seedMethod bool, parking *park.Params, progress func(simulated time.Duration, done float64)) (sim.Result, error)

func run(ctx context.Context, args []string, stderr io.Writer, simulate simulator) error {
	o, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	model, physicsName, err := loadPhysics(o.physicsFile, o.physicsVariant)
	if err != nil {
		return err
	}
	nodes, nodeWarnings, err := cluster(o, stderr)
	if err != nil {
		return err
	}
	cfg := report.Config{Horizon: o.horizon, Physics: physicsName, PhysicsVariant: model.Name, PhysicsSHA256: physicsHash(model),
		TrueSpread: report.Spread(model.Spread), Trace: o.tracePods,
		Command: "joulie-bench-energy " + strings.Join(args, " ")}
	for _, n := range nodes {
		if n.GPUs > 0 {
			cfg.GPUNodes++
		} else {
			cfg.CPUNodes++
		}
	}

	started := time.Now()
	acc, warnings, err := runSeeds(ctx, o, nodes, model, simulate, stderr)
	if err != nil {
		return err
	}
	// The node list's warnings (GPU models that fell back, CPU models
	// the schema lacks) were printed as it was read; the report keeps
	// them beside the pod list's.
	cfg.Warnings = append(nodeWarnings, warnings...)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	st, err := acc.Stats()
	if err != nil {
		return err
	}
	if err := report.Write(o.out, cfg, st); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s/report.md\n", strings.TrimSuffix(o.out, "/"))
	for _, s := range report.Summary(st) {
		fmt.Fprintln(stderr, s)
	}
	// The cost goes to stderr, not the report, which stays the same for
	// the same inputs; CPU time is what a shared machine cannot inflate
	// much, so it is the figure the README's budget is checked against.
	fmt.Fprintf(stderr, "ran in %s wall, %s\n", time.Since(started).Round(time.Second), cpuUsed())
	return nil
}

// cpuUsed is the process's CPU time so far, user and system, for the
// closing line of a run.
func cpuUsed() string {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return "CPU time unknown: " + err.Error()
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return fmt.Sprintf("%s of CPU (%.0f minutes of two cores)", cpu.Round(time.Second), cpu.Minutes()/2)
}

// runSeeds runs every arm on every seed of every level, o.parallel at a
// time, and adds each seed's results to the statistics once all its arms
// are done. It returns the statistics and the trace reader's warnings on
// the headline level's first job list.
//
// Levels and seeds are run in order, all arms of one seed before the
// next, so that a seed's job list and results can be let go once its arms
// are done: at 2,500 nodes each holds hundreds of thousands of jobs.
func runSeeds(ctx context.Context, o *options, nodes []workload.Node, model *physics.Model, simulate simulator, stderr io.Writer) (*report.Accumulator, []string, error) {
	type seedRun struct {
		level   float64
		seed    int64
		jobs    func() (jobList, error)
		mu      sync.Mutex
		results []sim.Result
	}
	type task struct {
		arm sim.Arm
		s   *seedRun
	}
	tasks := make(chan task)
	total := 0
	for _, l := range o.levels {
		total += l.seeds * len(o.arms)
	}
	acc := report.NewAccumulator(o.headline)
	var accMu sync.Mutex
	var warnings []string
	prog := newProgress(stderr, isTerminal(stderr), total, time.Now)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		errMu    sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
		cancel() // one failed run spoils the comparison: stop the others
	}
	var wg sync.WaitGroup
	for range o.parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tasks {
				list, err := t.s.jobs()
				if err != nil {
					fail(err)
					continue
				}
				if ctx.Err() != nil {
					continue
				}
				id := prog.start(t.arm, t.s.level, t.s.seed, list.span)
				seedMethod := o.seedMethod && t.s.level == o.headline
				r, err := simulate(ctx, t.arm, t.s.level, t.s.seed, nodes, list.jobs, list.window, model, seedMethod, o.parking, func(at time.Duration, done float64) { prog.update(id, at, done) })
				prog.finish(id)
				if err != nil {
					if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
						fail(fmt.Errorf("arm %s, seed %d, level %v: %w", t.arm, t.s.seed, t.s.level, err))
					}
					continue
				}
				t.s.mu.Lock()
				t.s.results = append(t.s.results, r)
				complete := len(t.s.results) == len(o.arms)
				t.s.mu.Unlock()
				if !complete {
					continue
				}
				b, err := seedBound(nodes, list.jobs, model, t.s.seed, t.s.results)
				accMu.Lock()
				if err == nil {
					err = acc.AddSeed(t.s.results)
				}
				if err == nil {
					err = acc.AddBound(t.s.level, t.s.seed, b)
				}
				if t.s.seed == o.firstSeed && t.s.level == o.headline {
					warnings = list.warnings
				}
				accMu.Unlock()
				t.s.results, t.s.jobs = nil, nil
				if err != nil {
					fail(err)
				}
			}
		}()
	}
feed:
	for _, l := range o.levels {
		for i := range l.seeds {
			s := &seedRun{level: l.level, seed: o.firstSeed + int64(i)}
			// Generated once, by the first worker to reach the seed.
			list := sync.OnceValues(func() (jobList, error) { return makeJobList(o, s.level, s.seed, nodes) })
			s.jobs = list
			for _, a := range o.arms {
				select {
				case tasks <- task{a, s}:
				case <-ctx.Done():
					break feed
				}
			}
		}
	}
	close(tasks)
	wg.Wait()
	prog.done()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return acc, warnings, firstErr
}

func loadPhysics(file, variant string) (*physics.Model, string, error) {
	f, name := physics.Embedded(), "built-in "+physics.EmbeddedName
	if file != "" {
		var err error
		if f, err = physics.Load(file); err != nil {
			return nil, "", fmt.Errorf("--physics %s: %w", file, err)
		}
		name = file
	}
	if variant == "" || variant == "default" {
		return f.Base(), name, nil
	}
	m, err := f.Variant(variant)
	if err != nil {
		return nil, "", fmt.Errorf("--physics-variant %s: %w", variant, err)
	}
	return m, name, nil
}

// physicsHash identifies the model's numbers, not its file's text: the
// same numbers give the same hash whatever the comments and sources say.
func physicsHash(m *physics.Model) string {
	classes := map[physics.Boundness]physics.Class{}
	for _, b := range physics.Boundnesses() {
		classes[b] = m.Class(b)
	}
	data, err := json.Marshal(struct {
		CPUNode                          physics.Curve
		GPUNode                          physics.GPUNode
		TableCapFraction, MinCapFraction float64
		Classes                          map[physics.Boundness]physics.Class
		Power                            physics.PowerStates
		Spread                           physics.Spread
	}{m.CPUNode, m.GPUNode, m.TableCapFraction, m.MinCapFraction, classes, m.Power, m.Spread})
	if err != nil {
		panic(err) // plain numbers always marshal
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// cluster is the simulated nodes, and what the node list's reader had to
// say of them (printed at once, since a long run follows).
func cluster(o *options, stderr io.Writer) ([]workload.Node, []string, error) {
	if o.sixFamilies > 0 {
		return workload.SixFamilies(o.sixFamilies), nil, nil
	}
	if o.traceNodes == "" {
		return workload.StandardCluster(o.cpuNodes, o.gpuNodes), nil, nil
	}
	nodes, warnings, err := workload.ReadNodes(o.traceNodes, catalog.Default())
	if err != nil {
		return nil, nil, fmt.Errorf("--trace-nodes: %w", err)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	return nodes, warnings, nil
}

// jobList is a seed's jobs, what the trace reader had to say of them,
// and the simulated span a run of them is expected to take (runSpan).
type jobList struct {
	jobs     []workload.Job
	warnings []string
	span     time.Duration
	// window is the steady-state accounting window (the zero Window: the
	// whole run).
	window sim.Window
}

// makeJobList is seed's job list at a load level: generated on the
// cluster, or the trace with boundness classes drawn from the seed.
func makeJobList(o *options, level float64, seed int64, nodes []workload.Node) (jobList, error) {
	if o.tracePods != "" {
		jobs, stats, err := workload.ReadPods(o.tracePods, workload.TraceOptions{Seed: seed, Start: o.traceStart, End: o.traceEnd})
		if err != nil {
			return jobList{}, fmt.Errorf("--trace-pods: %w", err)
		}
		return jobList{jobs: jobs, warnings: stats.Warnings(), span: runSpan(jobs)}, nil
	}
	cfg := workload.DefaultConfig()
	cfg.Nodes = nodes
	cfg.Horizon = o.horizon
	cfg.Jobs = o.jobs
	w := sim.Window{Start: cfg.Window.Start, End: cfg.Window.End}
	if cfg.Horizon >= cfg.Window.End && o.jobs == 0 {
		cfg = workload.LoadLevel(cfg, level)
	} else {
		// Arrivals stop before the steady-state window would (a short
		// test run): the level sets the steady-state targets, and the
		// whole run is accounted, as the report says.
		cfg.TargetCPUUtilization, cfg.TargetGPUUtilization = level, level
		cfg.Window = workload.Window{Start: 0, End: max(cfg.Horizon, time.Nanosecond)}
		w = sim.Window{}
	}
	if err := cfg.Validate(); err != nil {
		return jobList{}, fmt.Errorf("workload for --nodes-cpu %d --nodes-gpu %d --horizon %v --jobs %d at level %v: %w", o.cpuNodes, o.gpuNodes, o.horizon, o.jobs, level, err)
	}
	jobs := workload.Generate(seed, cfg)
	return jobList{jobs: jobs, span: runSpan(jobs), window: w}, nil
}
