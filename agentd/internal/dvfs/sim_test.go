package dvfs

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/cpufreq"
	"joulie.io/joulie/agentd/internal/cpufreq/cpufreqtest"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
)

// simHost is a CPU host whose power follows the ceilings the actuator
// writes into its fixture tree. Each package draws IdleW plus, per core,
// CoreW x utilization x (f/fmax)^Exp, where f is the highest ceiling among
// the core's threads (a core runs as fast as its fastest thread asks) and
// utilization is drawn around Load every tick from a seeded source. Exp 3
// stands for P ~ V^2 f with voltage scaling along with frequency.
type simHost struct {
	tree  *cpufreqtest.Tree
	ceil  *ceilings
	rng   *rand.Rand
	IdleW float64 // per package
	CoreW float64 // one core at fmax, fully loaded
	Exp   float64
	Load  float64 // mean utilization, 0..1
	Noise float64 // utilization is uniform in Load +- Noise
}

// ceilings writes through to the fixture files and keeps what was written
// per CPU, so the simulated power follows exactly the values the actuator
// wrote without re-reading every file on every tick. checkFiles confirms
// the files say the same.
type ceilings struct {
	mu     sync.Mutex
	byPath map[string]int
	khz    []int64
	writes int
}

func newCeilings(tb testing.TB, tree *cpufreqtest.Tree) *ceilings {
	c := &ceilings{byPath: make(map[string]int)}
	for cpu := 0; cpu < tree.Spec.NCPUs(); cpu++ {
		c.byPath[tree.ScalingMaxPath(cpu)] = cpu
		c.khz = append(c.khz, tree.ScalingMax(tb, cpu))
	}
	return c
}

func (c *ceilings) WriteFile(path string, data []byte) error {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := fh.Write(data); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	v, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	if cpu, ok := c.byPath[path]; ok {
		c.khz[cpu] = v
	}
	return nil
}

func (c *ceilings) get(cpu int) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.khz[cpu]
}

func (h *simHost) checkFiles(tb testing.TB) {
	tb.Helper()
	for cpu := range h.ceil.khz {
		if got := h.tree.ScalingMax(tb, cpu); got != h.ceil.get(cpu) {
			tb.Fatalf("cpu%d: file holds %d kHz, the writer saw %d", cpu, got, h.ceil.get(cpu))
		}
	}
}

// power returns the CPU power summed over packages, as the agent's RAPL
// meter reports it, for the ceilings in force.
func (h *simHost) power(tb testing.TB) float64 {
	s := h.tree.Spec
	perThread := s.Packages * s.CoresPerPackage
	total := float64(s.Packages) * h.IdleW
	for core := 0; core < perThread; core++ {
		var f int64
		for t := 0; t < s.ThreadsPerCore; t++ {
			f = max(f, h.ceil.get(core+t*perThread))
		}
		u := h.Load + h.Noise*(2*h.rng.Float64()-1)
		total += h.CoreW * min(1, max(0, u)) * math.Pow(float64(f)/float64(s.MaxKHz), h.Exp)
	}
	return total
}

// meanPower is the host's expected power with every ceiling at f.
func (h *simHost) meanPower(f int64) float64 {
	s := h.tree.Spec
	n := float64(s.Packages * s.CoresPerPackage)
	return float64(s.Packages)*h.IdleW + n*h.CoreW*h.Load*math.Pow(float64(f)/float64(s.MaxKHz), h.Exp)
}

// epyc is a 2-socket, 48-core host without SMT: 40 W idle and up to 4.5 W
// per core per package, about 480 W flat out and 111 W with every core at
// 1.5 GHz.
var epyc = cpufreqtest.Spec{Packages: 2, CoresPerPackage: 48, ThreadsPerCore: 1,
	Driver: "amd-pstate-epp", Governor: "performance", MinKHz: 1500000, MaxKHz: 3500000}

func newSim(t testing.TB, spec cpufreqtest.Spec, seed uint64) (*simHost, *Actuator) {
	t.Helper()
	tree := cpufreqtest.Build(t, t.TempDir(), spec)
	ceil := newCeilings(t, tree)
	fs := sysfs.New(tree.Root).WithWriter(ceil)
	j, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	host := cpufreq.Discover(fs)
	act, err := NewActuator(cpufreq.NewSetter(fs, j, host), host, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &simHost{tree: tree, ceil: ceil, rng: rand.New(rand.NewPCG(seed, 7)), IdleW: 40, CoreW: 4.5, Exp: 3, Load: 0.925, Noise: 0.075}, act
}

// simRun is the trace of one simulated run.
type simRun struct {
	cfg       Config
	capW      float64
	tick      time.Duration
	measured  []float64
	decisions []Decision
}

func runSim(t testing.TB, h *simHost, act *Actuator, cfg Config, capW float64, tick time.Duration, ticks int) *simRun {
	t.Helper()
	reg, err := NewRegulator(cfg, act)
	if err != nil {
		t.Fatal(err)
	}
	run := &simRun{cfg: cfg, capW: capW, tick: tick}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < ticks; i++ {
		w := h.power(t)
		if _, err := reg.Regulate(start.Add(time.Duration(i)*tick), w, capW); err != nil {
			t.Fatal(err)
		}
		run.measured = append(run.measured, w)
		run.decisions = append(run.decisions, reg.Last())
	}
	h.checkFiles(t)
	return run
}

func (r *simRun) inBand(w float64) bool {
	return w >= r.capW-r.cfg.LowMarginW && w <= r.capW+r.cfg.HighMarginW
}

// settled is the first tick from which the controller's average stays in
// the band to the end, or -1.
func (r *simRun) settled() int {
	at := -1
	for i, d := range r.decisions {
		switch {
		case !r.inBand(d.EMAW):
			at = -1
		case at < 0:
			at = i
		}
	}
	return at
}

// reversals counts changes of direction of the throttle from tick from on.
func (r *simRun) reversals(from int) int {
	n := 0
	var prev Action
	for _, d := range r.decisions[from:] {
		if d.Action == ActionNone {
			continue
		}
		if prev != "" && d.Action != prev {
			n++
		}
		prev = d.Action
	}
	return n
}

func (r *simRun) firstInBand() int {
	for i, d := range r.decisions {
		if r.inBand(d.EMAW) {
			return i
		}
	}
	return -1
}

// measuredInBand is the share of raw readings in the band from tick from.
func (r *simRun) measuredInBand(from int) float64 {
	in := 0
	for _, w := range r.measured[from:] {
		if r.inBand(w) {
			in++
		}
	}
	return float64(in) / float64(len(r.measured)-from)
}

func (r *simRun) mean(from int) float64 {
	var s float64
	for _, w := range r.measured[from:] {
		s += w
	}
	return s / float64(len(r.measured)-from)
}

const (
	simTick  = 5 * time.Second
	simTicks = 600 // 50 minutes of 5 s reconcile ticks
)

func TestSimulatedHostConvergesIntoTheBandWithoutOscillating(t *testing.T) {
	cfg := DefaultConfig()
	var report strings.Builder
	fmt.Fprintf(&report, "\n cap%%  cap W  settled@tick (s)  first-in-band  reversals total/after  mean W  raw in band  throttle\n")
	for pct := 30; pct <= 90; pct += 10 {
		t.Run(fmt.Sprintf("cap%d", pct), func(t *testing.T) {
			h, act := newSim(t, epyc, uint64(pct))
			maxW := h.meanPower(epyc.MaxKHz)
			capW := maxW * float64(pct) / 100
			run := runSim(t, h, act, cfg, capW, simTick, simTicks)
			at := run.settled()
			if at < 0 || at > simTicks/2 {
				t.Fatalf("cap %.0f W: the average never settled in [%.0f, %.0f] (settled at %d)", capW, capW-cfg.LowMarginW, capW+cfg.HighMarginW, at)
			}
			first := run.firstInBand()
			after := run.reversals(first)
			// The band is entered, at most one overshoot corrects, then
			// nothing moves.
			if after > 1 || run.reversals(at) != 0 {
				t.Errorf("cap %.0f W: %d reversals after first entering the band, %d after settling", capW, after, run.reversals(at))
			}
			mean := run.mean(at)
			if !run.inBand(mean) {
				t.Errorf("cap %.0f W: measured mean %.1f W after settling is out of band", capW, mean)
			}
			share := run.measuredInBand(at)
			if share < 0.95 {
				t.Errorf("cap %.0f W: only %.0f%% of raw readings in band after settling", capW, 100*share)
			}
			last := run.decisions[len(run.decisions)-1]
			fmt.Fprintf(&report, " %3d  %5.0f  %4d (%4.0f s)       %4d           %d / %d            %5.1f  %5.1f%%      %3.0f%%\n",
				pct, capW, at, (time.Duration(at) * simTick).Seconds(), first, run.reversals(0), after, mean, 100*share, last.ThrottlePct)
		})
	}
	t.Log(report.String())
}

func TestSimulatedHostWithCapAboveMaximumIsNeverThrottled(t *testing.T) {
	h, act := newSim(t, epyc, 1)
	capW := h.meanPower(epyc.MaxKHz) + 50
	run := runSim(t, h, act, DefaultConfig(), capW, simTick, 200)
	for i, d := range run.decisions {
		if d.ThrottlePct != 0 || d.Action != ActionNone {
			t.Fatalf("tick %d: %+v", i, d)
		}
	}
	for c := 0; c < epyc.NCPUs(); c++ {
		if h.tree.ScalingMax(t, c) != epyc.MaxKHz {
			t.Fatalf("cpu%d ceiling changed", c)
		}
	}
	if w := act.Last(); w.ThrottledCPUs != 0 {
		t.Errorf("%+v", w)
	}
}

func TestSimulatedHostWithUnreachableCapSaturatesAndSaysSo(t *testing.T) {
	h, act := newSim(t, epyc, 2)
	floor := h.meanPower(epyc.MinKHz)
	run := runSim(t, h, act, DefaultConfig(), floor-40, simTick, 200)
	last := run.decisions[len(run.decisions)-1]
	if last.ThrottlePct != 100 || !last.Saturated {
		t.Fatalf("cap %.0f W below the %.0f W floor: %+v", floor-40, floor, last)
	}
	for c := 0; c < epyc.NCPUs(); c++ {
		if got := h.tree.ScalingMax(t, c); got != epyc.MinKHz {
			t.Fatalf("cpu%d at %d kHz, want every CPU at the minimum", c, got)
		}
	}
	t.Logf("cap %.0f W, floor %.0f W: saturated at 100%% after %d up actions; measured %.0f W", floor-40, floor, last.ThrottleUps, run.measured[len(run.measured)-1])
}

func TestSimulatedHostFollowsALoadChange(t *testing.T) {
	h, act := newSim(t, epyc, 3)
	cfg := DefaultConfig()
	capW := 0.6 * h.meanPower(epyc.MaxKHz)
	reg, err := NewRegulator(cfg, act)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	tick := func(n int) Decision {
		for i := 0; i < n; i++ {
			if _, err := reg.Regulate(now, h.power(t), capW); err != nil {
				t.Fatal(err)
			}
			now = now.Add(simTick)
		}
		return reg.Last()
	}
	busy := tick(300)
	h.Load = 0.5 // the job ends; half the load is left
	light := tick(300)
	if light.ThrottlePct >= busy.ThrottlePct {
		t.Errorf("throttle %v%% under light load, %v%% under full load: want it lifted", light.ThrottlePct, busy.ThrottlePct)
	}
	if w := h.meanPower(0); light.EMAW > capW+cfg.HighMarginW || (light.ThrottlePct > 0 && light.EMAW < capW-cfg.LowMarginW) {
		t.Errorf("after the load change: %+v (idle %.0f W, cap %.0f W)", light, w, capW)
	}
	t.Logf("cap %.0f W: throttle %.0f%% at full load, %.0f%% at half load (EMA %.0f W)", capW, busy.ThrottlePct, light.ThrottlePct, light.EMAW)
}

func TestSimulatedHostSettlesAtOtherTickIntervalsAndWithSMT(t *testing.T) {
	// 2 x 24 cores x 2 threads: the same 96 CPUs, but a core draws power
	// at its faster thread's ceiling, so only whole cores save anything.
	smt := cpufreqtest.Spec{Packages: 2, CoresPerPackage: 24, ThreadsPerCore: 2,
		Driver: "intel_pstate", MinKHz: 800000, MaxKHz: 3500000, BaseKHz: 2000000}
	cfg := DefaultConfig()
	for _, tc := range []struct {
		name  string
		spec  cpufreqtest.Spec
		coreW float64
		tick  time.Duration
		pct   float64
	}{
		{"1s ticks, cooldown dominates", epyc, 4.5, time.Second, 45},
		{"15s ticks", epyc, 4.5, 15 * time.Second, 75},
		{"30s ticks", epyc, 4.5, 30 * time.Second, 55},
		{"SMT host", smt, 9, 5 * time.Second, 65},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, act := newSim(t, tc.spec, 11)
			h.CoreW = tc.coreW
			capW := h.meanPower(tc.spec.MaxKHz) * tc.pct / 100
			run := runSim(t, h, act, cfg, capW, tc.tick, 400)
			at := run.settled()
			if at < 0 || at > 200 {
				t.Fatalf("cap %.0f W: never settled (at %d)", capW, at)
			}
			if n := run.reversals(run.firstInBand()); n > 1 {
				t.Errorf("%d reversals after first entering the band", n)
			}
			t.Logf("cap %.0f W: settled at tick %d (%v), %d reversals, throttle %.0f%%, mean %.1f W",
				capW, at, time.Duration(at)*tc.tick, run.reversals(0), run.decisions[len(run.decisions)-1].ThrottlePct, run.mean(at))
		})
	}
}
