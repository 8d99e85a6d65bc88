package report

import (
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"

	"sigs.k8s.io/yaml"

	"joulie.io/joulie/test/energy/sim"
)

func TestPercentileNearestRank(t *testing.T) {
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"median of ten is the fifth", ten, 0.50, 5},
		{"p95 of ten is the tenth", ten, 0.95, 10},
		{"p99 of ten is the tenth", ten, 0.99, 10},
		{"p10 of ten is the first", ten, 0.10, 1},
		{"median of four is the second", []float64{1, 2, 3, 4}, 0.5, 2},
		{"one value is every quantile", []float64{7}, 0.99, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
	if got := Percentile(nil, 0.5); !math.IsNaN(got) {
		t.Errorf("Percentile of nothing = %v, want NaN", got)
	}
}

func TestEnergyOfAStepFunction(t *testing.T) {
	steps := []sim.Sample{{T: 0, Watts: 100}, {T: 10 * time.Second, Watts: 200}, {T: 30 * time.Second, Watts: 50}}
	for _, tc := range []struct {
		name   string
		power  []sim.Sample
		window time.Duration
		want   float64
	}{
		{"last sample holds to the window's end", steps, 40 * time.Second, 100*10 + 200*20 + 50*10},
		{"window ends between samples", steps, 20 * time.Second, 100*10 + 200*10},
		{"window ends on a sample", steps, 10 * time.Second, 100 * 10},
		{"first sample after 0 holds from 0", []sim.Sample{{T: 5 * time.Second, Watts: 100}}, 10 * time.Second, 100 * 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EnergyJ(tc.power, tc.window)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("EnergyJ = %v J, want %v J", got, tc.want)
			}
		})
	}
	if _, err := EnergyJ(nil, time.Second); err == nil {
		t.Error("EnergyJ of no samples: no error")
	}
	if _, err := EnergyJ([]sim.Sample{{T: 2 * time.Second}, {T: time.Second}}, 3*time.Second); err == nil || !strings.Contains(err.Error(), "time order") {
		t.Errorf("EnergyJ of unordered samples: error %v, want one about time order", err)
	}
}

func TestMeanCIStudentT(t *testing.T) {
	for _, tc := range []struct {
		name         string
		xs           []float64
		n            int
		mean, lo, hi float64
	}{
		// s = 1, t(0.975, 2) = 4.302653, half width 4.302653/√3
		{"three seeds", []float64{1, 2, 3}, 3, 2, 2 - 2.484138, 2 + 2.484138},
		// s = √2, t(0.975, 1) = 12.706205, half width 12.706205 × √2/√2
		{"two seeds, an undefined one left out", []float64{math.NaN(), 4, 6}, 2, 5, 5 - 12.706205, 5 + 12.706205},
		{"identical differences have no spread", []float64{-20, -20}, 2, -20, -20, -20},
		{"one seed has no interval", []float64{3}, 1, 3, math.NaN(), math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, mean, lo, hi := MeanCI(tc.xs)
			if n != tc.n || !near(mean, tc.mean) || !near(lo, tc.lo) || !near(hi, tc.hi) {
				t.Errorf("MeanCI(%v) = %d, %v [%v, %v], want %d, %v [%v, %v]", tc.xs, n, mean, lo, hi, tc.n, tc.mean, tc.lo, tc.hi)
			}
		})
	}
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) < 1e-5
}

const (
	h   = time.Hour
	kWh = 3.6e6 // joules
)

// armCase is one arm's hand-built window accounting on one seed.
type armCase struct {
	parts       sim.Parts // kWh
	coreH, gpuH float64
	alloc       float64 // CPU; GPU is alloc − 0.01
	watts       float64 // constant power over the whole run
	bootWaits   int
}

// The jobs of every seed, by arm: j1 performance (4 CPUs, 1 GPU, 1 h of
// work), j2 standard (2 CPUs, 2 h), both arriving at 0.
//
//	a: j1 0-1 h, j2 0-2 h                 (the stretch's reference)
//	b: j1 0-1 h, j2 waits 1 h, 1-3 h
//	g: j1 waits 6 min for a boot, 0.1-1.1 h; j2 1-3 h
//	d: j1 0-1 h, j2 0-2.4 h (capped)
//	f-oracle-physical, f-oracle: j1 0-1 h, j2 0-2.5 h
func handJobs(arm sim.Arm) []sim.JobResult {
	j1 := sim.JobResult{ID: "j1", Class: Performance, GPUs: 1, CPUMilli: 4000, Work: h, End: h}
	j2 := sim.JobResult{ID: "j2", Class: Standard, CPUMilli: 2000, Work: 2 * h}
	switch arm {
	case sim.ArmDefault:
		j2.End = 2 * h
	case sim.ArmBinPack:
		j2.Start, j2.End = h, 3*h
	case sim.ArmPowerOff:
		j1.Start, j1.BootWait, j1.End = 6*time.Minute, 6*time.Minute, h+6*time.Minute
		j2.Start, j2.End = h, 3*h
	case sim.ArmQueueAware:
		j2.End = 2*h + 24*time.Minute
	default:
		j2.End = 2*h + 30*time.Minute
	}
	return []sim.JobResult{j1, j2}
}

// headlineCases are level 0.4's two seeds. Energy per core-hour in the
// window:
//
//	seed 1: a 1.2, b 1.0, g 0.9, d 0.9 (7.2 kWh over 8 core-hours), f-oracle-physical 0.8, f-oracle 0.7
//	seed 2: a 1.2, b 1.0, g 0.95, d 0.85, f-oracle-physical 0.8, f-oracle 0.75
var headlineCases = map[int64]map[sim.Arm]armCase{
	1: {
		sim.ArmDefault:        {sim.Parts{IdleAwake: 8, Dynamic: 4}, 10, 2, 0.42, 1000, 0},
		sim.ArmBinPack:        {sim.Parts{IdleAwake: 6, Dynamic: 4}, 10, 2, 0.41, 1000, 0},
		sim.ArmPowerOff:       {sim.Parts{IdleAwake: 4, Dynamic: 4, Booting: 0.5, Off: 0.5}, 10, 2, 0.41, 800, 1},
		sim.ArmQueueAware:     {sim.Parts{IdleAwake: 4, Dynamic: 3.2}, 8, 2, 0.40, 900, 0},
		sim.ArmOraclePhysical: {sim.Parts{IdleAwake: 4, Dynamic: 3, Booting: 0.5, Off: 0.5}, 10, 2, 0.41, 850, 0},
		sim.ArmOracle:         {sim.Parts{IdleAwake: 4, Dynamic: 2, Booting: 0.5, Off: 0.5}, 10, 2, 0.41, 800, 0},
	},
	2: {
		sim.ArmDefault:        {sim.Parts{IdleAwake: 4, Dynamic: 2}, 5, 1, 0.40, 1000, 0},
		sim.ArmBinPack:        {sim.Parts{IdleAwake: 3, Dynamic: 2}, 5, 1, 0.39, 1000, 0},
		sim.ArmPowerOff:       {sim.Parts{IdleAwake: 2, Dynamic: 2, Booting: 0.5, Off: 0.25}, 5, 1, 0.39, 800, 1},
		sim.ArmQueueAware:     {sim.Parts{IdleAwake: 2, Dynamic: 2.25}, 5, 1, 0.39, 900, 0},
		sim.ArmOraclePhysical: {sim.Parts{IdleAwake: 2, Dynamic: 1.5, Booting: 0.25, Off: 0.25}, 5, 1, 0.39, 850, 0},
		sim.ArmOracle:         {sim.Parts{IdleAwake: 2, Dynamic: 1.25, Booting: 0.25, Off: 0.25}, 5, 1, 0.39, 800, 0},
	},
}

// lowCases is level 0.2's one seed: d 0.95 kWh per core-hour, b 1.0.
var lowCases = map[sim.Arm]armCase{
	sim.ArmDefault:    {sim.Parts{IdleAwake: 3, Dynamic: 1}, 4, 1, 0.22, 700, 0},
	sim.ArmBinPack:    {sim.Parts{IdleAwake: 2, Dynamic: 2}, 4, 1, 0.21, 700, 0},
	sim.ArmQueueAware: {sim.Parts{IdleAwake: 2, Dynamic: 1.8}, 4, 1, 0.20, 650, 0},
}

func handResult(level float64, seed int64, arm sim.Arm, c armCase) sim.Result {
	joules := sim.Parts{IdleAwake: c.parts.IdleAwake * kWh, Dynamic: c.parts.Dynamic * kWh, Booting: c.parts.Booting * kWh, Off: c.parts.Off * kWh}
	r := sim.Result{Arm: arm, Seed: seed, Level: level, JobsHash: fmt.Sprintf("hash-%v-%d", level, seed), Nodes: 2, CPUNodes: 1, GPUNodes: 1,
		Jobs: handJobs(arm), Power: []sim.Sample{{T: 0, Watts: c.watts}}, Window: sim.Window{Start: h, End: 3 * h},
		EnergyJ: joules.Total(), EnergyParts: joules, CoreHours: c.coreH, GPUHours: c.gpuH, AllocCPU: c.alloc, AllocGPU: c.alloc - 0.01,
		PerfBootWaits: c.bootWaits, Boots: c.bootWaits, Shutdowns: c.bootWaits}
	if level == 0.4 && (arm == sim.ArmBinPack || arm == sim.ArmQueueAware) {
		r.SeedMethod = &sim.SeedMethod{Window: 2 * h, EnergyJ: c.watts * 2 * 3600, Accepted: 2, AcceptedCoreHours: 4}
	}
	return r
}

// handResults is level 0.4's two seeds and level 0.2's one, the arms in
// the reverse of the report's order.
func handResults() []sim.Result {
	var out []sim.Result
	arms := slices.Clone(sim.Arms())
	slices.Reverse(arms)
	for _, seed := range []int64{1, 2} {
		for _, arm := range arms {
			if c, ok := headlineCases[seed][arm]; ok {
				out = append(out, handResult(0.4, seed, arm, c))
			}
		}
	}
	for _, arm := range arms {
		if c, ok := lowCases[arm]; ok {
			out = append(out, handResult(0.2, 1, arm, c))
		}
	}
	return out
}

func handStats(t *testing.T) *Stats {
	t.Helper()
	st, err := Compute(0.4, handResults())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestLevelsAndArmOrder(t *testing.T) {
	st := handStats(t)
	if len(st.Levels) != 2 || st.Levels[0].Level != 0.2 || st.Levels[1].Level != 0.4 || st.Headline != st.Levels[1] {
		t.Fatalf("levels %v, headline %v; want 0.2 and 0.4, headline 0.4", st.Levels, st.Headline)
	}
	if got := joinArms(st.Headline.Arms); got != "a-default, b-binpack, g-binpack-poweroff, d-queue-aware, f-oracle-physical, f-oracle" {
		t.Errorf("arms %s, want sim.Arms' order", got)
	}
	if got := st.Level(0.2).Seeds; len(got) != 1 || got[0] != 1 {
		t.Errorf("level 0.2 seeds %v, want [1]", got)
	}
	if _, err := Compute(0.6, handResults()); err == nil || !strings.Contains(err.Error(), "no results at the headline level 0.6") {
		t.Errorf("headline level not run: %v", err)
	}
}

func TestWindowEnergyPartsAndWork(t *testing.T) {
	st := handStats(t)
	for _, tc := range []struct {
		level              float64
		arm                sim.Arm
		seed               int64
		kWh, dynamic       float64
		perCore, perGPU    float64
		drainKWh, drainPer float64
	}{
		// 7.2 kWh over 8 core-hours and 2 GPU-hours; drain 900 W × 3 h over 8 completed core-hours.
		{0.4, sim.ArmQueueAware, 1, 7.2, 3.2, 0.9, 3.6, 2.7, 2.7 / 8},
		{0.4, sim.ArmPowerOff, 2, 4.75, 2, 0.95, 4.75, 2.4, 2.4 / 8},
		{0.4, sim.ArmBinPack, 1, 10, 4, 1, 5, 3, 3.0 / 8},
		{0.2, sim.ArmQueueAware, 1, 3.8, 1.8, 0.95, 3.8, 1.95, 1.95 / 8},
	} {
		r := st.Level(tc.level).Run(tc.arm, tc.seed)
		if r == nil {
			t.Fatalf("no run for %s seed %d level %v", tc.arm, tc.seed, tc.level)
		}
		if !near(r.EnergyKWh, tc.kWh) || !near(r.Parts.Dynamic, tc.dynamic) || !near(r.Parts.IdleAwake+r.Parts.Dynamic+r.Parts.Booting+r.Parts.Off, tc.kWh) {
			t.Errorf("%s/%d/%v: %v kWh, parts %+v; want %v kWh, %v above idle", tc.arm, tc.seed, tc.level, r.EnergyKWh, r.Parts, tc.kWh, tc.dynamic)
		}
		if !near(r.KWhPerCoreHour, tc.perCore) || !near(r.KWhPerGPUHour, tc.perGPU) {
			t.Errorf("%s/%d/%v: %v per core-hour, %v per GPU-hour; want %v, %v", tc.arm, tc.seed, tc.level, r.KWhPerCoreHour, r.KWhPerGPUHour, tc.perCore, tc.perGPU)
		}
		if r.Drain.Window != 3*h || r.Drain.CoreHours != 8 || r.Drain.GPUHours != 1 || !near(r.Drain.EnergyKWh, tc.drainKWh) || !near(r.Drain.KWhPerCoreHour, tc.drainPer) {
			t.Errorf("%s/%d/%v: drain %+v; want 3h, 8 core-hours, 1 GPU-hour, %v kWh, %v per core-hour", tc.arm, tc.seed, tc.level, r.Drain, tc.drainKWh, tc.drainPer)
		}
		if r.Window != (sim.Window{Start: h, End: 3 * h}) {
			t.Errorf("%s/%d/%v: window %v", tc.arm, tc.seed, tc.level, r.Window)
		}
	}
	g := st.Headline.Run(sim.ArmPowerOff, 1)
	if w := g.Wait[Performance]; w.P95 != 360 {
		t.Errorf("g's performance pod wait p95 %v s, want 360", w.P95)
	}
	// j1 waited 6 min for a boot, arriving at 0, before the window.
	if b := g.BootWaits[Performance]; b != (BootWaits{N: 1, InWindow: 0, P50: 360, P95: 360, Max: 360}) {
		t.Errorf("g's performance boot waits %+v, want one of 360 s outside the window", b)
	}
	if b := g.BootWaits[Standard]; b.N != 0 || !math.IsNaN(b.P95) {
		t.Errorf("g's standard boot waits %+v, want none", b)
	}
	if s := st.Headline.Run(sim.ArmQueueAware, 2).Stretch[Standard]; !near(s.P95, 1.2) {
		t.Errorf("d's standard stretch %v, want 1.2", s.P95)
	}
	// Measured allocation: b's AllocCPU 0.41 and 0.39 at level 0.4.
	if cpu, gpu := st.Headline.Allocation(); !near(cpu, 0.40) || !near(gpu, 0.39) {
		t.Errorf("level 0.4 allocation %v CPU, %v GPU; want 0.40, 0.39", cpu, gpu)
	}
	if cpu, _ := st.Level(0.2).Allocation(); !near(cpu, 0.21) {
		t.Errorf("level 0.2 allocation %v CPU, want 0.21", cpu)
	}
}

func TestComparisonsArePairedBySeedWithinALevel(t *testing.T) {
	st := handStats(t)
	hl := st.Headline
	// d against b: −10% and −15%, mean −12.5%, s = 3.5355, half width
	// 12.706205 × 3.5355/√2 = 31.765513.
	const half = 31.765513
	// d against g: 0.9/0.9 and 0.85/0.95: 0 and −10.526316%.
	dg := (0 + 100*(0.85/0.95-1)) / 2
	dgHalf := 12.706205 * math.Abs(100*(0.85/0.95-1)) / math.Sqrt2 / math.Sqrt2
	for _, tc := range []struct {
		arm, base    sim.Arm
		metric       string
		unit         Unit
		mean, lo, hi float64
	}{
		{sim.ArmQueueAware, sim.ArmBinPack, MetricPerCoreHour, Percent, -12.5, -12.5 - half, -12.5 + half},
		// per GPU-hour: 3.6 against 5, 4.25 against 5: −28% and −15%.
		{sim.ArmQueueAware, sim.ArmBinPack, MetricPerGPUHour, Percent, -21.5, -21.5 - 12.706205*6.5, -21.5 + 12.706205*6.5},
		// above idle: 3.2 against 4, 2.25 against 2: −20% and +12.5%.
		{sim.ArmQueueAware, sim.ArmBinPack, MetricDynamic, Percent, -3.75, -3.75 - 12.706205*16.25, -3.75 + 12.706205*16.25},
		{sim.ArmQueueAware, sim.ArmBinPack, MetricPerfP95, Percent, 0, 0, 0},
		{sim.ArmQueueAware, sim.ArmBinPack, MetricStandardP95, Percent, -20, -20, -20},
		{sim.ArmQueueAware, sim.ArmBinPack, MetricStandardWaitP95, Seconds, -3600, -3600, -3600},
		{sim.ArmQueueAware, sim.ArmPowerOff, MetricPerCoreHour, Percent, dg, dg - dgHalf, dg + dgHalf},
		// 1 h against 1 h 6 min.
		{sim.ArmQueueAware, sim.ArmPowerOff, MetricPerfP95, Percent, 100 * (1/1.1 - 1), 100 * (1/1.1 - 1), 100 * (1/1.1 - 1)},
		{sim.ArmQueueAware, sim.ArmPowerOff, MetricPerfWaitP95, Seconds, -360, -360, -360},
		{sim.ArmQueueAware, sim.ArmPowerOff, MetricPerfBootWaits, Count, -1, -1, -1},
		{sim.ArmPowerOff, sim.ArmBinPack, MetricPerfBootWaits, Count, 1, 1, 1},
		// drain: 900 W against 1000 W over the same 3 h.
		{sim.ArmQueueAware, sim.ArmBinPack, MetricDrainEnergy, Percent, -10, -10, -10},
		{sim.ArmQueueAware, sim.ArmBinPack, MetricSeedEnergy, Percent, -10, -10, -10},
	} {
		c, ok := hl.Comparison(tc.arm, tc.base, tc.metric)
		if !ok {
			t.Errorf("no comparison of %s against %s on %s", tc.arm, tc.base, tc.metric)
			continue
		}
		if c.N != 2 || c.Unit != tc.unit || !near(c.Mean, tc.mean) || !near(c.Lo, tc.lo) || !near(c.Hi, tc.hi) {
			t.Errorf("%s against %s, %s: n %d, %v %s [%v, %v]; want 2, %v %s [%v, %v]", tc.arm, tc.base, tc.metric, c.N, c.Mean, c.Unit, c.Lo, c.Hi, tc.mean, tc.unit, tc.lo, tc.hi)
		}
	}
	// Level 0.2 is paired on its own seed only.
	c, ok := st.Level(0.2).Comparison(sim.ArmQueueAware, sim.ArmBinPack, MetricPerCoreHour)
	if !ok || c.N != 1 || !near(c.Mean, -5) || !math.IsNaN(c.Lo) {
		t.Errorf("level 0.2, d against b: %+v, want one seed, −5%%, no interval", c)
	}
	if _, ok := st.Level(0.2).Comparison(sim.ArmQueueAware, sim.ArmPowerOff, MetricPerCoreHour); ok {
		t.Error("level 0.2 compares against g, which it did not run")
	}
	if _, ok := hl.Comparison(sim.ArmDefault, sim.ArmPowerOff, MetricSeedEnergy); ok {
		t.Error("the seed's method compared against g; it is compared against b only")
	}
}

func TestOracleShare(t *testing.T) {
	hl := handStats(t).Headline
	for _, tc := range []struct {
		arm, oracle sim.Arm
		shares      [2]float64
	}{
		// (1 − 0.9) / (1 − 0.8) and (1 − 0.85) / (1 − 0.8)
		{sim.ArmQueueAware, sim.ArmOraclePhysical, [2]float64{50, 75}},
		// (1 − 0.9) / (1 − 0.7) and (1 − 0.85) / (1 − 0.75)
		{sim.ArmQueueAware, sim.ArmOracle, [2]float64{100.0 / 3, 60}},
		{sim.ArmPowerOff, sim.ArmOraclePhysical, [2]float64{50, 25}},
		// more energy than b: a negative share
		{sim.ArmDefault, sim.ArmOraclePhysical, [2]float64{-100, -100}},
		{sim.ArmOraclePhysical, sim.ArmOracle, [2]float64{200.0 / 3, 80}},
	} {
		o, ok := hl.OracleShare(tc.arm, tc.oracle)
		n, mean, lo, hi := MeanCI(tc.shares[:])
		if !ok || o.N != n || !near(o.Mean, mean) || !near(o.Lo, lo) || !near(o.Hi, hi) {
			t.Errorf("%s's share of %s: %+v (found %v), want mean %v [%v, %v]", tc.arm, tc.oracle, o, ok, mean, lo, hi)
		}
	}
	if _, ok := hl.OracleShare(sim.ArmBinPack, sim.ArmOracle); ok {
		t.Error("b's share of the oracle's saving against b")
	}
}

func TestGoal(t *testing.T) {
	st := handStats(t)
	g := GoalOf(st.Headline, sim.ArmQueueAware)
	if g.Met() {
		t.Error("goal met with 62.5% of the physical oracle's saving, want not met")
	}
	s := g.Sentence()
	for _, want := range []string{
		"Issue 23's goal for d-queue-aware at load level 0.4 is not met on the means",
		"energy per core-hour at least 10% below b-binpack: -12.5% (95% CI -44.3% … +19.3%), met by 2.5 points [yes]",
		"performance p95 completion time at most 2% above b-binpack: +0.0% (95% CI +0.0% … +0.0%), met by 2.0 points [yes]",
		"no performance pod waiting for a boot: 0 over 2 seeds, 0 of them arriving in the steady-state window [yes]",
		"energy per core-hour no more than g-binpack-poweroff's: -5.3%",
		"met by 5.3 points [yes]",
		"performance p95 completion time shorter than g-binpack-poweroff's: -9.1% (95% CI -9.1% … -9.1%), met by 9.1 points [yes]",
		"fewer performance pods waiting for a boot than g-binpack-poweroff (or none in either): 0 against 2 [yes]",
		"at least 70% of f-oracle-physical's saving against b-binpack: 62.5% (95% CI -96.3% … 221.3%), missed by 7.5 points [no]",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("goal sentence lacks %q:\n%s", want, s)
		}
	}
	low := GoalOf(st.Level(0.2), sim.ArmQueueAware)
	if low.Met() {
		t.Error("goal met at level 0.2, which ran neither g nor an oracle")
	}
	if s := low.Sentence(); !strings.Contains(s, "missed by 5.0 points [no]") || !strings.Contains(s, "not judged: g-binpack-poweroff not run [?]") || !strings.Contains(s, "not judged: f-oracle-physical not run [?]") {
		t.Errorf("level 0.2's goal sentence: %s", s)
	}
	// All met when the physical oracle saves less: 8.75 kWh on seed 1,
	// 0.875 per core-hour, so d's shares are 0.1 / 0.125 = 80% and 75%.
	rs := handResults()
	for i := range rs {
		if rs[i].Arm == sim.ArmOraclePhysical && rs[i].Level == 0.4 && rs[i].Seed == 1 {
			rs[i].EnergyParts.Dynamic += 0.75 * kWh
			rs[i].EnergyJ = rs[i].EnergyParts.Total()
		}
	}
	st, err := Compute(0.4, rs)
	if err != nil {
		t.Fatal(err)
	}
	g = GoalOf(st.Headline, sim.ArmQueueAware)
	if s := g.Sentence(); !g.Met() || !strings.Contains(s, "is met on the means") || !strings.Contains(s, "77.5% (95% CI 45.7% … 109.3%), met by 7.5 points [yes]") {
		t.Errorf("goal with 77.5%% of the oracle's saving: %s", s)
	}
}

func TestPartsMustAddUpToTheEnergy(t *testing.T) {
	rs := handResults()
	rs[0].EnergyJ += kWh
	_, err := Compute(0.4, rs)
	if err == nil || !strings.Contains(err.Error(), "energy parts add up to") {
		t.Errorf("error %v, want one about the parts", err)
	}
}

func TestComputeRefusesResultsThatCannotBeCompared(t *testing.T) {
	drop := func(arm sim.Arm, seed int64) func([]sim.Result) []sim.Result {
		return func(rs []sim.Result) []sim.Result {
			return slices.DeleteFunc(rs, func(r sim.Result) bool { return r.Arm == arm && r.Seed == seed && r.Level == 0.4 })
		}
	}
	at := func(arm sim.Arm, seed int64, change func(*sim.Result)) func([]sim.Result) []sim.Result {
		return func(rs []sim.Result) []sim.Result {
			for i := range rs {
				if rs[i].Arm == arm && rs[i].Seed == seed && rs[i].Level == 0.4 {
					change(&rs[i])
				}
			}
			return rs
		}
	}
	for _, tc := range []struct {
		name   string
		change func([]sim.Result) []sim.Result
		want   string
	}{
		{"no reference arm", drop(sim.ArmDefault, 2), "seed 2 at level 0.4 has no result for arm a-default"},
		{"different job lists", at(sim.ArmBinPack, 1, func(r *sim.Result) { r.JobsHash = "other" }), "must share one job list"},
		{"a job missing in the reference", at(sim.ArmBinPack, 1, func(r *sim.Result) { r.Jobs[0].ID = "j9" }), "job j9 is not in arm a-default"},
		{"an arm missing on one seed", drop(sim.ArmOracle, 2), "seed 2 at level 0.4 ran arms a-default, b-binpack, g-binpack-poweroff, d-queue-aware, f-oracle-physical but seed 1 ran a-default, b-binpack, g-binpack-poweroff, d-queue-aware, f-oracle-physical, f-oracle"},
		{"twice the same arm and seed", func(rs []sim.Result) []sim.Result { return append(rs, rs[0]) }, "two results for arm f-oracle, seed 1, level 0.4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compute(0.4, tc.change(handResults()))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestMarkdownKeyLines(t *testing.T) {
	st := handStats(t)
	cfg := Config{CPUNodes: 1, GPUNodes: 1, Horizon: 3 * h, Physics: "built-in", PhysicsSHA256: "abc123", Command: "joulie-bench-energy --levels 0.2:1,0.4:2"}
	md := string(Markdown(cfg, st))
	for _, want := range []string{
		"At the headline load level 0.4 (measured allocation 40% of CPUs, 39% of GPUs; 2 seeds), energy per core-hour in the steady-state window against b-binpack: a-default +20.0% (95% CI +20.0% … +20.0%; performance p95 +0.0%); g-binpack-poweroff -7.5%",
		"d-queue-aware -12.5% (95% CI -44.3% … +19.3%; performance p95 +0.0%)",
		"- Issue 23's goal for d-queue-aware at load level 0.4 is not met on the means",
		"- Issue 23's goal for d-queue-aware at load level 0.2 is not met on the means",
		"The Helm chart ships NodeResourcesFit MostAllocated",
		"c-static, d-queue-aware, e-joulie-nocaps on kube-scheduler's default profile (LeastAllocated), d-pack on MostAllocated over CPU and memory.",
		"| headline level | 0.4 |",
		"sha256 abc123",
		"| 0.2 | 1: 1 | 1h0m0s … 3h0m0s | 21.0% | 20.0% |",
		"| 0.4 | 2: 1, 2 | 1h0m0s … 3h0m0s | 40.0% | 39.0% |",
		"| g-binpack-poweroff | bin-packing + idle power-off",
		"| 0.4 | 2 | 2 | 0 | 0 | `hash-0.4-2` |",
		"## Load level 0.4 (headline)",
		"## Load level 0.2\n",
		"### Against g-binpack-poweroff",
		"| d-queue-aware | -12.5% (-44.3% … +19.3%) | -21.5% (-104.1% … +61.1%) | +0.0% (+0.0% … +0.0%) | -20.0% (-20.0% … -20.0%) | +0 s (+0 s … +0 s) | -3600 s (-3600 s … -3600 s) | +0.0 (+0.0 … +0.0) |",
		"| g-binpack-poweroff | -7.5% (-39.3% … +24.3%) | -7.5% (-39.3% … +24.3%) | +10.0% (+10.0% … +10.0%) | +0.0% (+0.0% … +0.0%) | +360 s (+360 s … +360 s) | +0 s (+0 s … +0 s) | +1.0 (+1.0 … +1.0) |",
		"| arm | of f-oracle-physical's saving | of f-oracle's saving |",
		"| d-queue-aware | 62.5% (-96.3% … 221.3%) | 46.7% (-122.7% … 216.1%) |",
		"| d-queue-aware | 1 | 7.2 | 3.2 | 8.0 | 2.0 | 0.9000 | 3.600 | 40.0% | 39.0% | 0 | 0 | 0 | 0 |",
		"| g-binpack-poweroff | 1 | 4.0 | 4.0 | 0.5 | 0.5 | 9.0 |",
		"| g-binpack-poweroff | 1 | performance | 1 | 1h6m0s / 1h6m0s / 1h6m0s | 6m0s | 1, 6m0s / 6m0s / 6m0s | 1.100 / 1.100 / 1.100 |",
		"| g-binpack-poweroff | 1 | standard | 1 | 3h0m0s / 3h0m0s / 3h0m0s | 1h0m0s | 0, – | 1.500 / 1.500 / 1.500 |",
		"One rule for every arm: a pod waited for a boot when",
		"| g-binpack-poweroff | performance | 2 | 0 | 6m0s / 6m0s / 6m0s |",
		"| b-binpack | performance | 0 | 0 | – |",
		"| tuning seeds | 101–110: ",
		"## Drain-to-empty accounting (secondary)",
		"| d-queue-aware | 1 | 3h0m0s | 2.7 | 8.0 | 1.0 | 0.3375 | 2h24m0s |",
		"| d-queue-aware | -10.0% (-10.0% … -10.0%) | -10.0% (-10.0% … -10.0%) |",
		"## The seed document's method (secondary)",
		"| d-queue-aware | -12.5% (-44.3% … +19.3%) | -10.0% (-10.0% … -10.0%) | +0.0% (+0.0% … +0.0%) | -10.0% (-10.0% … -10.0%) |",
		"| b-binpack | 2 | 2h0m0s | 2.0 | 2 | 0 | 4.0 | 0.0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// The headline level comes first, the secondary sections last.
	order := []string{"## Summary", "## Configuration", "## Load level 0.4 (headline)", "## Load level 0.2", "## Plots", "## Drain-to-empty", "## The seed document's method"}
	last := -1
	for _, s := range order {
		i := strings.Index(md, s)
		if i < last {
			t.Errorf("%q is out of order", s)
		}
		last = i
	}
}

func TestWriteReportAndPlots(t *testing.T) {
	st := handStats(t)
	dir := os.Getenv("REPORT_PLOTS_DIR") // to look at the plots
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "energy")
	}
	if err := Write(dir, Config{CPUNodes: 1, GPUNodes: 1, Horizon: 3 * h, Physics: "built-in"}, st); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`!\[[^]]*\]\(([^)]+)\)`).FindAllStringSubmatch(string(md), -1)
	var names []string
	for _, l := range links {
		names = append(names, l[1])
	}
	want := []string{PlotEnergy, PlotBreakdown, PlotPower, PlotStretch(Performance), PlotStretch(Standard)}
	if !slices.Equal(names, want) {
		t.Errorf("report.md links %v, want %v", names, want)
	}
	for _, name := range names {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("report.md links %s: %v", name, err)
			continue
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Errorf("%s is not a valid PNG: %v", name, err)
			continue
		}
		if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
			t.Errorf("%s is %v, want a drawn plot", name, b)
		}
	}
}

func TestPowerPlotShowsTheFirstWeekOfFourArms(t *testing.T) {
	rs := handResults()
	for i := range rs {
		// Ten days of runs; the power steps up at 200 h, after the week.
		for j := range rs[i].Jobs {
			rs[i].Jobs[j].End += 240 * h
		}
		rs[i].Power = append(rs[i].Power, sim.Sample{T: 200 * h, Watts: 5000})
	}
	st, err := Compute(0.4, rs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Headline.Runs {
		wantPower := r.Seed == 1 && slices.Contains(PowerArms, r.Arm)
		if (len(r.power) > 0) != wantPower || len(r.power) > 1 {
			t.Errorf("%s seed %d keeps %d power samples; want the first week of seed 1's b, g and d arms only", r.Arm, r.Seed, len(r.power))
		}
	}
	for _, r := range st.Level(0.2).Runs {
		if r.power != nil || r.stretch != nil {
			t.Errorf("level 0.2 keeps %s's power or stretches: only the headline level is plotted", r.Arm)
		}
	}
	p, err := powerPlot(st)
	if err != nil {
		t.Fatal(err)
	}
	if got := joinArms(powerPlotArms(st.Headline)); got != "b-binpack, g-binpack-poweroff, d-queue-aware" {
		t.Errorf("power plot of %s, want b, g and d (d-pack not run)", got)
	}
	if p.X.Max > 168 || p.X.Max < 167 || p.Y.Max > 1.5 {
		t.Errorf("power plot spans x to %v h, y to %v kW; want the first 168 h, before the step to 5 kW", p.X.Max, p.Y.Max)
	}
}

func TestPowerSlicesKeepEnergy(t *testing.T) {
	power := []sim.Sample{{T: 0, Watts: 1000}, {T: 90 * time.Minute, Watts: 3000}}
	pts, err := powerSlices(power, 2*h, 4)
	if err != nil {
		t.Fatal(err)
	}
	// slices of 30 min: 1, 1, 1, 3 kW at 0.25, 0.75, 1.25, 1.75 h
	want := [][2]float64{{0.25, 1}, {0.75, 1}, {1.25, 1}, {1.75, 3}}
	if len(pts) != len(want) {
		t.Fatalf("%d points, want %d", len(pts), len(want))
	}
	for i, w := range want {
		if !near(pts[i].X, w[0]) || !near(pts[i].Y, w[1]) {
			t.Errorf("point %d = (%v, %v), want (%v, %v)", i, pts[i].X, pts[i].Y, w[0], w[1])
		}
	}
}

func TestAccumulatorSeedBySeedInAnyOrder(t *testing.T) {
	all := handResults()
	want, err := Compute(0.4, all)
	if err != nil {
		t.Fatal(err)
	}
	acc := NewAccumulator(0.4)
	for _, k := range []struct {
		level float64
		seed  int64
	}{{0.4, 2}, {0.2, 1}, {0.4, 1}} {
		var rs []sim.Result
		for _, r := range all {
			if r.Seed == k.seed && r.Level == k.level {
				rs = append(rs, r)
			}
		}
		if err := acc.AddSeed(rs); err != nil {
			t.Fatal(err)
		}
	}
	got, err := acc.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if string(Markdown(Config{}, got)) != string(Markdown(Config{}, want)) {
		t.Error("statistics added seed by seed, 2 before 1, differ from Compute's")
	}
	var again []sim.Result
	for _, r := range all {
		if r.Seed == 1 && r.Level == 0.4 {
			again = append(again, r)
		}
	}
	if err := acc.AddSeed(again); err == nil || !strings.Contains(err.Error(), "seed 1 added twice at level 0.4") {
		t.Errorf("adding seed 1 again: %v", err)
	}
	mixed := []sim.Result{all[0], all[len(all)-1]}
	if err := NewAccumulator(0.4).AddSeed(mixed); err == nil || !strings.Contains(err.Error(), "added as one seed") {
		t.Errorf("adding two levels as one seed: %v", err)
	}
}

func TestStretchPlotOverAWideRange(t *testing.T) {
	rs := handResults()
	for i := range rs {
		if rs[i].Arm == sim.ArmBinPack {
			// j2 queued 58 h behind its 2 h of work: stretch 30
			rs[i].Jobs[1].Start, rs[i].Jobs[1].End = 58*h, 60*h
		}
	}
	st, err := Compute(0.4, rs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := stretchPlot(st, Standard)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.X.Scale.(plot.LogScale); !ok {
		t.Errorf("stretch from 1 to 30 on a %T axis, want a log axis", p.X.Scale)
	}
}

// TestChartProfile reads the scheduler profile the Helm chart ships
// (extender.scheduler.nodeResourcesFit in its values) and checks that the
// simulator's j-joulie runs the same one (sim.ShippedProfile) at the
// chart's extender weight, and that the report names it (ChartProfile).
func TestChartProfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "packaging", "helm", "joulie", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Extender struct {
			Scheduler struct {
				Weight           int64 `json:"weight"`
				NodeResourcesFit struct {
					ScoringStrategy string `json:"scoringStrategy"`
					Resources       []struct {
						Name   string `json:"name"`
						Weight int64  `json:"weight"`
					} `json:"resources"`
				} `json:"nodeResourcesFit"`
			} `json:"scheduler"`
		} `json:"extender"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	sch := values.Extender.Scheduler
	fit := sch.NodeResourcesFit
	if string(sim.ShippedProfile.Strategy) != fit.ScoringStrategy {
		t.Errorf("the chart scores with %q, sim.ShippedProfile with %q", fit.ScoringStrategy, sim.ShippedProfile.Strategy)
	}
	var chart, shipped []string
	for _, r := range fit.Resources {
		chart = append(chart, fmt.Sprintf("%s %d", r.Name, r.Weight))
	}
	for _, r := range sim.ShippedProfile.Resources {
		shipped = append(shipped, fmt.Sprintf("%s %d", r.Name, r.Weight))
	}
	if !slices.Equal(chart, shipped) {
		t.Errorf("the chart weighs %v, sim.ShippedProfile %v", chart, shipped)
	}
	for _, want := range []string{fit.ScoringStrategy, fmt.Sprintf("extender at weight %d", sch.Weight)} {
		if !strings.Contains(ChartProfile, want) {
			t.Errorf("ChartProfile %q does not say %q", ChartProfile, want)
		}
	}
	spec, err := sim.Spec(sim.ArmJoulie)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Profile.Strategy != sim.ShippedProfile.Strategy || len(spec.Profile.Resources) != len(sim.ShippedProfile.Resources) || spec.ExtenderWeight != 0 {
		t.Errorf("j-joulie runs %+v at extender weight %d, want the shipped profile at the chart's weight (0)", spec.Profile, spec.ExtenderWeight)
	}
}

// The power plot's axis labels round values, four or more of them: 0 to
// 262 kW reads 0, 50, ... 250, where gonum's default labelled 0 and 250
// alone.
func TestRoundTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 262.5, []string{"0", "50", "100", "150", "200", "250"}},
		{0, 1, []string{"0", "0.25", "0.5", "0.75", "1"}},
		{0, 399, []string{"0", "50", "100", "150", "200", "250", "300", "350"}},
		{12, 31, []string{"12.5", "15", "17.5", "20", "22.5", "25", "27.5", "30"}},
		{0, 0.3, []string{"0", "0.05", "0.1", "0.15", "0.2", "0.25", "0.3"}},
	} {
		var got []string
		for _, tk := range (roundTicks{}).Ticks(tc.lo, tc.hi) {
			got = append(got, tk.Label)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ticks of %v..%v: %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}

// The waits for a boot are those of the pods that waited, per class:
// their count, how many arrived in the window, and the p50, p95 and
// maximum of their waits; a level pools them over its seeds.
func TestBootWaitsAreThePodsThatWaitedAndTheirWaits(t *testing.T) {
	var results []sim.Result
	for seed, waits := range map[int64][]time.Duration{1: {0, 2 * time.Minute, 0, 10 * time.Minute}, 2: {time.Minute, 0, 30 * time.Minute, 0}} {
		for _, arm := range []sim.Arm{sim.ArmDefault, sim.ArmPowerOff} {
			r := handResult(0.4, seed, arm, armCase{parts: sim.Parts{IdleAwake: 1}, coreH: 1, gpuH: 1, watts: 100})
			r.Jobs = nil
			for i, w := range waits {
				arrival := time.Duration(i) * h // jobs 1 and 2 arrive in the window (1 h … 3 h)
				j := sim.JobResult{ID: fmt.Sprint("j", i), Class: Performance, CPUMilli: 1000, Work: h, Arrival: arrival, Start: arrival, End: arrival + h}
				if arm == sim.ArmPowerOff {
					j.Start, j.BootWait = arrival+w, w
					j.End = j.Start + h
				}
				r.Jobs = append(r.Jobs, j)
			}
			results = append(results, r)
		}
	}
	st, err := Compute(0.4, results)
	if err != nil {
		t.Fatal(err)
	}
	if b := st.Headline.Run(sim.ArmPowerOff, 1).BootWaits[Performance]; b != (BootWaits{N: 2, InWindow: 1, P50: 120, P95: 600, Max: 600}) {
		t.Errorf("seed 1: %+v, want 2 pods (1 in the window), p50 120 s, p95 and max 600 s", b)
	}
	if b := st.Headline.PooledBootWaits(sim.ArmPowerOff, Performance); b != (BootWaits{N: 4, InWindow: 2, P50: 120, P95: 1800, Max: 1800}) {
		t.Errorf("pooled: %+v, want 4 pods (2 in the window), p50 120 s, p95 and max 1800 s", b)
	}
	if b := st.Headline.PooledBootWaits(sim.ArmDefault, Performance); b.N != 0 || waitsText(b) != "–" {
		t.Errorf("a-default: %+v, want no pod waiting", b)
	}
}

// The headline compares j-joulie with the competent baseline (g), with
// b-tuned (its placement, always on) and with plain b, leading the
// summary and as a table under it.
func TestHeadlineComparesJoulieWithTheCompetentBaseline(t *testing.T) {
	perCore := map[sim.Arm][2]float64{ // kWh per core-hour on seeds 1 and 2, 10 core-hours each
		sim.ArmDefault: {1.2, 1.2}, sim.ArmBinPack: {1, 1}, sim.ArmBinPackTuned: {0.95, 0.95}, sim.ArmPowerOff: {0.8, 0.8}, sim.ArmJoulie: {0.76, 0.76},
	}
	st := perCoreStats(t, perCore)
	sum := Summary(st)
	want := "Headline, load level 0.4, 2 seeds: energy per core-hour of j-joulie (Joulie as it ships) -5.0% against g-binpack-poweroff (-5.0% … -5.0%; performance p95 -9.1%), -20.0% against b-tuned (-20.0% … -20.0%; performance p95 +0.0%), -24.0% against b-binpack (-24.0% … -24.0%; performance p95 +0.0%)"
	if len(sum) == 0 || !strings.HasPrefix(sum[0], want) {
		t.Errorf("summary leads with\n%q\nwant it to start\n%q", sum[0], want)
	}
	md := string(Markdown(Config{CPUNodes: 1, GPUNodes: 1, Horizon: 3 * h}, st))
	for _, row := range []string{
		"| j-joulie against | kWh per core-hour | performance p95 completion | standard p95 completion | performance pods waiting for a boot (a seed) |",
		"| g-binpack-poweroff | -5.0% (-5.0% … -5.0%) |",
		"| b-tuned | -20.0% (-20.0% … -20.0%) |",
		"| b-binpack | -24.0% (-24.0% … -24.0%) |",
		"### Against b-tuned",
	} {
		if !strings.Contains(md, row) {
			t.Errorf("report.md lacks %q", row)
		}
	}
	if i, j := strings.Index(md, "| j-joulie against"), strings.Index(md, "## Configuration"); i < 0 || i > j {
		t.Errorf("the headline table is not in the summary, before the configuration")
	}
}

// A run on the tuning seeds says in its report that it is one.
func TestATuningRunSaysSo(t *testing.T) {
	var results []sim.Result
	for _, seed := range []int64{9, TuningFirstSeed} {
		for _, arm := range []sim.Arm{sim.ArmDefault, sim.ArmBinPack} {
			results = append(results, handResult(0.4, seed, arm, armCase{parts: sim.Parts{IdleAwake: 1}, coreH: 1, gpuH: 1, watts: 100}))
		}
	}
	st, err := Compute(0.4, results)
	if err != nil {
		t.Fatal(err)
	}
	if md := string(Markdown(Config{}, st)); !strings.Contains(md, "Warning: this run includes the tuning seeds 101; it is a tuning run") {
		t.Errorf("a report on seed 101 does not warn that it is a tuning run")
	}
	st, _ = Compute(0.4, results[:2])
	if md := string(Markdown(Config{}, st)); strings.Contains(md, "tuning run") {
		t.Errorf("a report on seed 9 alone warns that it is a tuning run")
	}
}

// perCoreStats is level 0.4 on seeds 1 and 2 with each arm at the given
// kWh per core-hour (10 core-hours a seed).
func perCoreStats(t *testing.T, perCore map[sim.Arm][2]float64) *Stats {
	t.Helper()
	var results []sim.Result
	for i, seed := range []int64{1, 2} {
		for arm, e := range perCore {
			results = append(results, handResult(0.4, seed, arm, armCase{parts: sim.Parts{IdleAwake: 10 * e[i]}, coreH: 10, gpuH: 2, alloc: 0.4, watts: 1000}))
		}
	}
	st, err := Compute(0.4, results)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The saving taken apart: each step is its arm against the arm before
// it, paired by seed, and the steps present are those whose two arms
// ran; on each seed the steps' ratios multiply to the last arm's against
// b-binpack.
func TestTheSavingTakenApartStepByStep(t *testing.T) {
	perCore := map[sim.Arm][2]float64{ // kWh per core-hour on seeds 1 and 2, 10 core-hours each
		sim.ArmDefault: {1.2, 1.2}, sim.ArmBinPack: {1, 1}, sim.ArmBinPackTuned: {0.95, 0.9}, sim.ArmPowerOff: {0.8, 0.81},
		sim.ArmJoulieNoCaps: {0.84, 0.81}, sim.ArmJoulie: {0.756, 0.7695},
	}
	st := perCoreStats(t, perCore)
	want := map[sim.Arm]float64{ // mean of the two seeds' steps, in percent
		sim.ArmBinPackTuned: (-5.0 + -10.0) / 2,
		sim.ArmPowerOff:     (100*(0.8/0.95-1) + -10.0) / 2,
		sim.ArmJoulieNoCaps: (5.0 + 0.0) / 2,
		sim.ArmJoulie:       (-10.0 + -5.0) / 2,
	}
	var got []sim.Arm
	for _, s := range Steps {
		c, ok := st.Headline.StepComparison(s, MetricPerCoreHour)
		if !ok {
			continue
		}
		got = append(got, s.Arm)
		if !near(c.Mean, want[s.Arm]) || c.N != 2 {
			t.Errorf("step %q (%s against %s): %v%% over %d seeds, want %v%% over 2", s.What, s.Arm, s.Base, c.Mean, c.N, want[s.Arm])
		}
	}
	if !slices.Equal(got, []sim.Arm{sim.ArmBinPackTuned, sim.ArmPowerOff, sim.ArmJoulieNoCaps, sim.ArmJoulie}) {
		t.Errorf("steps %v: want the four whose arms ran, per-GPU caps left out", got)
	}
	for i, seed := range []int64{1, 2} {
		product := 1.0
		for _, s := range Steps[:4] {
			product *= perCore[s.Arm][i] / perCore[s.Base][i]
		}
		if !near(product, perCore[sim.ArmJoulie][i]/perCore[sim.ArmBinPack][i]) {
			t.Errorf("seed %d: the steps multiply to %v, j against b is %v", seed, product, perCore[sim.ArmJoulie][i])
		}
	}
	md := string(Markdown(Config{CPUNodes: 1, GPUNodes: 1, Horizon: 3 * h}, st))
	for _, row := range []string{
		"### The saving taken apart",
		"| Joulie's caps | j-joulie | j-joulie-nocaps | -7.5% (",
		"| placement: the chart's scheduler profile and the GPU taint | b-tuned | b-binpack | -7.5% (",
	} {
		if !strings.Contains(md, row) {
			t.Errorf("report.md lacks %q", row)
		}
	}
	if strings.Contains(md, "| per-GPU caps |") {
		t.Error("report.md shows the per-GPU step, whose arm did not run")
	}
}

// The pods of a job list that fit no node are counted per job list and
// named, with the requests that did not fit, so that a replay on too few
// nodes says what it left out.
func TestMarkdownNamesThePodsThatFitNoNode(t *testing.T) {
	rs := handResults()
	pending := []sim.Unplaceable{{ID: "huge", Class: "standard", CPUMilli: 900000, MemoryMiB: 1024}, {ID: "nine-gpus", Class: "performance", CPUMilli: 1000, MemoryMiB: 1024, GPUs: 9}}
	for i := range rs {
		rs[i].Unplaceable = pending
	}
	st, err := Compute(0.4, rs)
	if err != nil {
		t.Fatal(err)
	}
	md := string(Markdown(Config{CPUNodes: 1, GPUNodes: 1, Horizon: 3 * h}, st))
	for _, want := range []string{
		"| 0.4 | 2 | 2 | 0 | 2 | `hash-0.4-2` |",
		"stayed pending through the run in every arm",
		"| huge | standard | 900000 | 1024 | 0 |",
		"| nine-gpus | performance | 1000 | 1024 | 9 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}
