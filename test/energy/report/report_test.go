package report

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"

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

const h = time.Hour

// synthetic is two seeds of three arms over two jobs, small enough to work
// every statistic out by hand:
//
//	j1 performance, 1 GPU, 4 CPUs, 1 h of work: runs 0-1 h in every arm
//	j2 standard, 0 GPUs, 2 CPUs, 2 h of work: 0-2 h in a, queued 1 h then
//	   1-3 h in b, 0-2.4 h in d (capped)
//
// Work: 4 + 4 = 8 core-hours, 1 GPU-hour. The common window is 3 h. Power
// is constant: a 1000 W on both seeds, b 1200 W then 1000 W, d 900 W then
// 800 W, so energy is a 3, 3; b 3.6, 3; d 2.7, 2.4 kWh.
func synthetic() []sim.Result {
	jobs := func(j2Start, j2End time.Duration) []sim.JobResult {
		return []sim.JobResult{
			{ID: "j1", Class: Performance, GPUs: 1, CPUMilli: 4000, Work: h, Arrival: 0, Start: 0, End: h},
			{ID: "j2", Class: Standard, CPUMilli: 2000, Work: 2 * h, Arrival: 0, Start: j2Start, End: j2End},
		}
	}
	watts := map[sim.Arm][2]float64{sim.ArmDefault: {1000, 1000}, sim.ArmBinPack: {1200, 1000}, sim.ArmQueueAware: {900, 800}}
	var out []sim.Result
	for i, seed := range []int64{1, 2} {
		for _, arm := range []sim.Arm{sim.ArmQueueAware, sim.ArmBinPack, sim.ArmDefault} {
			r := sim.Result{Arm: arm, Seed: seed, JobsHash: "hash" + string(rune('0'+seed)), Nodes: 2, CPUNodes: 1, GPUNodes: 1,
				Power: []sim.Sample{{T: 0, Watts: watts[arm][i]}}}
			switch arm {
			case sim.ArmDefault:
				r.Jobs = jobs(0, 2*h)
			case sim.ArmBinPack:
				r.Jobs = jobs(h, 3*h)
				r.SeedMethod = &sim.SeedMethod{Window: 2 * h, EnergyJ: 2 * 3.6e6, Accepted: 2, AcceptedCoreHours: 4}
			case sim.ArmQueueAware:
				r.Jobs = jobs(0, 2*h+24*time.Minute)
				r.SeedMethod = &sim.SeedMethod{Window: 2 * h, EnergyJ: 1.8 * 3.6e6, Accepted: 1, Dropped: 1, AcceptedCoreHours: 3.6}
			}
			out = append(out, r)
		}
	}
	return out
}

func TestComputeBySeedAndArm(t *testing.T) {
	st, err := Compute(synthetic())
	if err != nil {
		t.Fatal(err)
	}
	if got := joinArms(st.Arms); got != "a-default, b-binpack, d-queue-aware" {
		t.Errorf("arms %s, want a-default first, in sim's order", got)
	}
	for _, tc := range []struct {
		arm                  sim.Arm
		seed                 int64
		kWh, perCore, perGPU float64
		stdStretch           float64
		stdQueue             float64
		makespan             time.Duration
	}{
		{sim.ArmDefault, 1, 3, 3.0 / 8, 3, 1, 0, 2 * h},
		{sim.ArmBinPack, 1, 3.6, 3.6 / 8, 3.6, 1.5, 3600, 3 * h},
		{sim.ArmBinPack, 2, 3, 3.0 / 8, 3, 1.5, 3600, 3 * h},
		{sim.ArmQueueAware, 1, 2.7, 2.7 / 8, 2.7, 1.2, 0, 2*h + 24*time.Minute},
		{sim.ArmQueueAware, 2, 2.4, 2.4 / 8, 2.4, 1.2, 0, 2*h + 24*time.Minute},
	} {
		r := st.Run(tc.arm, tc.seed)
		if r == nil {
			t.Fatalf("no run for %s seed %d", tc.arm, tc.seed)
		}
		if r.Window != 3*h || r.CoreHours != 8 || r.GPUHours != 1 {
			t.Errorf("%s/%d: window %v, %v core-hours, %v GPU-hours; want 3h, 8, 1", tc.arm, tc.seed, r.Window, r.CoreHours, r.GPUHours)
		}
		if !near(r.EnergyKWh, tc.kWh) || !near(r.KWhPerCoreHour, tc.perCore) || !near(r.KWhPerGPUHour, tc.perGPU) {
			t.Errorf("%s/%d: %v kWh, %v per core-hour, %v per GPU-hour; want %v, %v, %v", tc.arm, tc.seed, r.EnergyKWh, r.KWhPerCoreHour, r.KWhPerGPUHour, tc.kWh, tc.perCore, tc.perGPU)
		}
		if s := r.Stretch[Standard]; s.N != 1 || !near(s.P95, tc.stdStretch) {
			t.Errorf("%s/%d: standard stretch %+v, want p95 %v", tc.arm, tc.seed, s, tc.stdStretch)
		}
		if s := r.Stretch[Performance]; !near(s.P99, 1) {
			t.Errorf("%s/%d: performance stretch %+v, want 1", tc.arm, tc.seed, s)
		}
		if q := r.Queue[Standard]; !near(q.P50, tc.stdQueue) {
			t.Errorf("%s/%d: standard queueing p50 %v s, want %v s", tc.arm, tc.seed, q.P50, tc.stdQueue)
		}
		if r.Makespan != tc.makespan {
			t.Errorf("%s/%d: makespan %v, want %v", tc.arm, tc.seed, r.Makespan, tc.makespan)
		}
	}
}

func TestComparisonsArePairedBySeed(t *testing.T) {
	st, err := Compute(synthetic())
	if err != nil {
		t.Fatal(err)
	}
	// d against b: −25% and −20%, mean −22.5%, s = 3.5355, half width
	// 12.706205 × 3.5355/√2 = 31.765513.
	for _, tc := range []struct {
		arm, base    sim.Arm
		metric       string
		mean, lo, hi float64
	}{
		{sim.ArmQueueAware, sim.ArmBinPack, MetricEnergy, -22.5, -22.5 - 31.765513, -22.5 + 31.765513},
		{sim.ArmQueueAware, sim.ArmBinPack, MetricPerCoreHour, -22.5, -22.5 - 31.765513, -22.5 + 31.765513},
		{sim.ArmQueueAware, sim.ArmBinPack, MetricPerfP95, 0, 0, 0},
		{sim.ArmQueueAware, sim.ArmBinPack, MetricStandardP95, -20, -20, -20},
		// d against a: −10% and −20%.
		{sim.ArmQueueAware, sim.ArmDefault, MetricEnergy, -15, -15 - 63.531025, -15 + 63.531025},
		// b against a: +20% and 0%.
		{sim.ArmBinPack, sim.ArmDefault, MetricEnergy, 10, 10 - 127.06205, 10 + 127.06205},
		{sim.ArmQueueAware, sim.ArmBinPack, MetricSeedEnergy, -10, -10, -10},
		{sim.ArmQueueAware, sim.ArmBinPack, MetricSeedCoreHours, -10, -10, -10},
		{sim.ArmQueueAware, sim.ArmBinPack, MetricSeedPerCoreHour, 0, 0, 0},
	} {
		c, ok := st.Comparison(tc.arm, tc.base, tc.metric)
		if !ok {
			t.Errorf("no comparison of %s against %s on %s", tc.arm, tc.base, tc.metric)
			continue
		}
		if c.N != 2 || !near(c.Mean, tc.mean) || !near(c.Lo, tc.lo) || !near(c.Hi, tc.hi) {
			t.Errorf("%s against %s, %s: n %d, %v [%v, %v]; want 2, %v [%v, %v]", tc.arm, tc.base, tc.metric, c.N, c.Mean, c.Lo, c.Hi, tc.mean, tc.lo, tc.hi)
		}
	}
	if _, ok := st.Comparison(sim.ArmDefault, sim.ArmBinPack, MetricSeedEnergy); ok {
		t.Error("a comparison on the seed's method for an arm that did not run it")
	}
}

func TestComputeRefusesResultsThatCannotBeCompared(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func([]sim.Result) []sim.Result
		want   string
	}{
		{"no reference arm", func(rs []sim.Result) []sim.Result {
			var out []sim.Result
			for _, r := range rs {
				if r.Arm != sim.ArmDefault || r.Seed != 2 {
					out = append(out, r)
				}
			}
			return out
		}, "seed 2 has no result for arm a-default"},
		{"different job lists", func(rs []sim.Result) []sim.Result { rs[0].JobsHash = "other"; return rs }, "must share one job list"},
		{"a job missing in the reference", func(rs []sim.Result) []sim.Result { rs[0].Jobs[0].ID = "j9"; return rs }, "job j9 is not in arm a-default"},
		{"an arm missing on one seed", func(rs []sim.Result) []sim.Result { return rs[1:] }, "seed 2 ran arms a-default, b-binpack, d-queue-aware but seed 1 ran a-default, b-binpack: every seed must run the same arms"},
		{"twice the same arm and seed", func(rs []sim.Result) []sim.Result { return append(rs, rs[0]) }, "two results for arm d-queue-aware, seed 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compute(tc.change(synthetic()))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestGoalSentence(t *testing.T) {
	for _, tc := range []struct {
		name         string
		energy, perf Comparison
		want         string
	}{
		{"met with both intervals inside", Comparison{Mean: -15, Lo: -18, Hi: -12}, Comparison{Mean: 1, Lo: 0, Hi: 1.5}, "is met, and the whole of both"},
		{"met on the means only", Comparison{Mean: -15, Lo: -25, Hi: -5}, Comparison{Mean: 1, Lo: 0, Hi: 1.5}, "is met, on the means"},
		{"energy short", Comparison{Mean: -6.5, Lo: -7, Hi: -6}, Comparison{Mean: 0, Lo: 0, Hi: 0}, "not met: energy per unit of work is 3.5 points short"},
		{"performance slowed", Comparison{Mean: -12, Lo: -13, Hi: -11}, Comparison{Mean: 5, Lo: 4, Hi: 6}, "not met: performance p95 completion time is 3.0 points past"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := goalSentence(tc.energy, tc.perf); !strings.Contains(got, tc.want) {
				t.Errorf("goalSentence = %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

func TestWriteReportAndPlots(t *testing.T) {
	st, err := Compute(synthetic())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "energy")
	cfg := Config{CPUNodes: 1, GPUNodes: 1, Horizon: 3 * h, Physics: "built-in", PhysicsSHA256: "abc123"}
	if err := Write(dir, cfg, st); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"d-queue-aware) used 22.5% less IT energy per unit of completed work (mean of 2 seeds, 95% CI -54.3% … +9.3%)",
		"performance class's p95 completion time 0.0% longer",
		"Issue 14's goal (at least 10% less energy per unit of work, performance p95 at most 2% longer) is met, on the means",
		"| 1 | 2 | 0 | `hash1` | 3h0m0s |",
		"sha256 abc123",
		"| d-queue-aware | -22.5% (-54.3% … +9.3%) | -10.0% (-10.0% … -10.0%) | -10.0% (-10.0% … -10.0%) | +0.0% (+0.0% … +0.0%) |",
		"| a-default | -8.3% (-114.2% … +97.6%) | not run | not run | not run |",
		"| b-binpack | 1 | 3.6 | 0.4500 | 3.600 | 3h0m0s | 0 |",
		"| b-binpack | 1 | standard | 1 | 1.500 / 1.500 / 1.500 | 3h0m0s / 3h0m0s / 3h0m0s | 1h0m0s / 1h0m0s / 1h0m0s |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	links := regexp.MustCompile(`!\[[^]]*\]\(([^)]+)\)`).FindAllStringSubmatch(string(md), -1)
	if len(links) != 4 {
		t.Errorf("report.md links %d plots, want 4: energy, two stretch CDFs, power", len(links))
	}
	for _, l := range links {
		f, err := os.Open(filepath.Join(dir, l[1]))
		if err != nil {
			t.Errorf("report.md links %s: %v", l[1], err)
			continue
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Errorf("%s is not a valid PNG: %v", l[1], err)
			continue
		}
		if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
			t.Errorf("%s is %v, want a drawn plot", l[1], b)
		}
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
	all := synthetic()
	want, err := Compute(all)
	if err != nil {
		t.Fatal(err)
	}
	var acc Accumulator
	for _, seed := range []int64{2, 1} { // seed 2 finished first
		var rs []sim.Result
		for _, r := range all {
			if r.Seed == seed {
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
	for _, r := range got.Runs {
		if (r.power != nil) != (r.Seed == 1) {
			t.Errorf("arm %s seed %d keeps power %v; only the lowest seed's is plotted", r.Arm, r.Seed, r.power != nil)
		}
	}
	if err := acc.AddSeed(all[:3]); err == nil || !strings.Contains(err.Error(), "seed 1 added twice") {
		t.Errorf("adding seed 1 again: %v", err)
	}
}

func TestStretchPlotOverAWideRange(t *testing.T) {
	rs := synthetic()
	for i := range rs {
		if rs[i].Arm == sim.ArmBinPack {
			// j2 queued 58 h behind its 2 h of work: stretch 30
			rs[i].Jobs[1].Start, rs[i].Jobs[1].End = 58*h, 60*h
		}
	}
	st, err := Compute(rs)
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
	if err := Write(t.TempDir(), Config{}, st); err != nil {
		t.Fatal(err)
	}
}

// withOracle adds arm f to synthetic's seeds: a's placement, j2 stretched
// to 2.5 h by its cap, 800 W then 700 W: 2.4 and 2.1 kWh over the 3 h
// window, −20% and −30% against a.
func withOracle(rs []sim.Result) []sim.Result {
	for i, seed := range []int64{1, 2} {
		r := sim.Result{Arm: sim.ArmOracle, Seed: seed, JobsHash: "hash" + string(rune('0'+seed)), Nodes: 2, CPUNodes: 1, GPUNodes: 1,
			Power: []sim.Sample{{T: 0, Watts: []float64{800, 700}[i]}},
			Jobs: []sim.JobResult{
				{ID: "j1", Class: Performance, GPUs: 1, CPUMilli: 4000, Work: h, Arrival: 0, Start: 0, End: h},
				{ID: "j2", Class: Standard, CPUMilli: 2000, Work: 2 * h, Arrival: 0, Start: 0, End: 2*h + 30*time.Minute},
			}}
		rs = append(rs, r)
	}
	return rs
}

func TestReportSetsTheOracleBesideJoulie(t *testing.T) {
	st, err := Compute(withOracle(synthetic()))
	if err != nil {
		t.Fatal(err)
	}
	md := string(Markdown(Config{CPUNodes: 1, GPUNodes: 1, Horizon: 3 * h, Physics: "built-in"}, st))
	for _, want := range []string{
		"| arms | a-default, b-binpack, d-queue-aware, f-oracle |",
		// −20% and −30% against a; d: −10% and −20%.
		"On the default scheduler's placement (a-default), capping every standard job at the cap that minimises its own energy, the oracle bound, used 25.0% less IT energy per unit of completed work",
		"against the same arm, Joulie queue_aware_v1 (d-queue-aware) used 15.0% less",
		// Against b: 2.4 / 3.6 and 2.1 / 3.
		"Against bin-packing (b-binpack), the oracle bound (f-oracle) used 31.7% less IT energy per unit of completed work",
		"| f-oracle | 1 | 2.4 | 0.3000 | 2.400 | 2h30m0s | 0 |",
		"| f-oracle | 1 | standard | 1 | 1.250 / 1.250 / 1.250 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if _, err := writePlots(t.TempDir(), st); err != nil {
		t.Errorf("plots with arm f: %v", err)
	}
}
