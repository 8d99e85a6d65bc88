package report

import (
	"math"
	"strings"
	"testing"

	"joulie.io/joulie/test/energy/sim"
)

// limitResults is level 0.4's two seeds of the hand-built cases, with
// j-joulie spending as d-queue-aware does.
func limitResults() map[int64][]sim.Result {
	out := map[int64][]sim.Result{}
	for _, seed := range []int64{1, 2} {
		for arm, c := range headlineCases[seed] {
			out[seed] = append(out[seed], handResult(0.4, seed, arm, c))
		}
		j := handResult(0.4, seed, sim.ArmQueueAware, headlineCases[seed][sim.ArmQueueAware])
		j.Arm = sim.ArmJoulie
		out[seed] = append(out[seed], j)
	}
	return out
}

func limitStats(bounds map[int64]Bound) (*Stats, error) {
	acc := NewAccumulator(0.4)
	for seed, rs := range limitResults() {
		if err := acc.AddSeed(rs); err != nil {
			return nil, err
		}
		if b, ok := bounds[seed]; ok {
			if err := acc.AddBound(0.4, seed, b); err != nil {
				return nil, err
			}
		}
	}
	return acc.Stats()
}

// An arm below the lower bound means the simulator or the bound is wrong:
// the report refuses to be written. f-oracle answers to the bound with
// its per-slice caps, the others to the physical one.
func TestAnArmBelowTheBoundFailsTheReport(t *testing.T) {
	// Seed 1: d-queue-aware and j-joulie 7.2 kWh, f-oracle 7 kWh.
	_, err := limitStats(map[int64]Bound{1: {Physical: 7.5 * kWh, SliceCaps: 6.5 * kWh}, 2: {Physical: kWh, SliceCaps: kWh}})
	if err == nil || !strings.Contains(err.Error(), "seed 1, level 0.4") || !strings.Contains(err.Error(), "below the lower bound") {
		t.Fatalf("an arm 0.3 kWh below the bound: %v, want an error naming it", err)
	}
	if _, err := limitStats(map[int64]Bound{1: {Physical: 7.1 * kWh, SliceCaps: 6.9 * kWh}, 2: {Physical: kWh, SliceCaps: kWh}}); err != nil {
		t.Errorf("f-oracle at 7 kWh against its 6.9 kWh bound with slice caps, the rest above 7.1 kWh: %v", err)
	}
	if _, err := limitStats(map[int64]Bound{1: {Physical: 7.1 * kWh, SliceCaps: 7.05 * kWh}, 2: {Physical: kWh, SliceCaps: kWh}}); err == nil || !strings.Contains(err.Error(), "arm f-oracle,") {
		t.Errorf("f-oracle at 7 kWh below its 7.05 kWh bound: %v, want an error naming it", err)
	}
	if _, err := limitStats(map[int64]Bound{1: {Physical: kWh, SliceCaps: kWh}}); err == nil || !strings.Contains(err.Error(), "seed 2 has no lower bound") {
		t.Errorf("a bound for one seed of two: %v", err)
	}
}

func TestDistanceToTheBoundAndJoulieShareOfTheGap(t *testing.T) {
	st, err := limitStats(map[int64]Bound{1: {Physical: 5 * kWh, SliceCaps: 3.5 * kWh}, 2: {Physical: 2.5 * kWh, SliceCaps: 2.5 * kWh}})
	if err != nil {
		t.Fatal(err)
	}
	lim := st.Headline.Limit
	if lim == nil {
		t.Fatal("no limit at the headline level")
	}
	for _, tc := range []struct {
		arm  sim.Arm
		want float64
	}{
		{sim.ArmBinPack, 2}, // 10/5, 5/2.5
		{sim.ArmQueueAware, (7.2/5 + 4.25/2.5) / 2},
		{sim.ArmOracle, (7.0/3.5 + 3.75/2.5) / 2}, // against the bound with slice caps
	} {
		d, ok := lim.Distance(tc.arm)
		if !ok || d.N != 2 || math.Abs(d.Mean-tc.want) > 1e-12 {
			t.Errorf("%s: distance %+v, want %v over 2 seeds", tc.arm, d, tc.want)
		}
	}
	// Seed 1: (10 − 7.2)/(10 − 5) = 56%; seed 2: (5 − 4.25)/(5 − 2.5) = 30%.
	if g := lim.GapShare; g.N != 2 || math.Abs(g.Mean-43) > 1e-9 {
		t.Errorf("j-joulie's share of the gap: %+v, want 43%% over 2 seeds", g)
	}
	md := string(Markdown(Config{}, st))
	for _, want := range []string{
		"### Against the physical limit",
		"| b-binpack | 2.000 (2.000 … 2.000) |",
		"j-joulie closes 43.0% (95% CI ",
		"| 1 | 5.0 | 3.5 |",
		"f-oracle-physical and f-oracle are heuristics with foresight, not bounds",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if s := strings.Join(Summary(st), "\n"); !strings.Contains(s, "Window energy over the physical lower bound at level 0.4: ") {
		t.Errorf("summary lacks the distance to the bound:\n%s", s)
	}
	if st, err := limitStats(nil); err != nil || st.Headline.Limit != nil || strings.Contains(string(Markdown(Config{}, st)), "physical limit") {
		t.Errorf("without bounds: err %v, or a limit section", err)
	}
}
