package demoreport

import (
	"fmt"
	"strings"
)

// Comparison is the run with Joulie set against the run without it: the
// same job list on the same fleet, each run's energy counted from its
// start until its last pod finished, so that both count the same work
// and a run whose pods took longer pays for it.
//
// The saving is taken apart by accounting, not by more runs: ParkingJ is
// what the parked hosts kept from being drawn against their idle draw
// (boots counted against it), CapsJ what the caps kept from being drawn
// at the same loads, and PlacementJ the rest, so the three add up to
// SavedJ. The rest is where the pods ran (Joulie packs them, the default
// scheduler spreads them) less what the caps' slower work cost in
// running longer; the benchmark takes the same saving apart with an arm
// per step (test/energy/README.md, "The saving taken apart").
type Comparison struct {
	// Why, when set, says why the runs cannot be compared, and nothing
	// else is.
	Why string `json:"why,omitempty"`
	// JoulieSeconds and BaselineSeconds are how long each run took.
	JoulieSeconds   float64 `json:"joulieSeconds"`
	BaselineSeconds float64 `json:"baselineSeconds"`
	Pods            int     `json:"pods"`
	JoulieJ         float64 `json:"joulieJ"`
	BaselineJ       float64 `json:"baselineJ"`
	SavedJ          float64 `json:"savedJ"`
	SavedPct        float64 `json:"savedPct"`
	ParkingJ        float64 `json:"parkingJ"`
	CapsJ           float64 `json:"capsJ"`
	PlacementJ      float64 `json:"placementJ"`
	// What it cost, per class, Joulie's run against the other.
	Performance ClassCost `json:"performance"`
	Standard    ClassCost `json:"standard"`
}

// ClassCost is one class's figures in the two runs.
type ClassCost struct {
	Joulie   ClassSummary `json:"joulie"`
	Baseline ClassSummary `json:"baseline"`
}

// Compare sets joulie against baseline. Runs whose pods did not all
// finish, or that finished different numbers of pods, counted different
// work and are not compared: Why says so.
func Compare(joulie, baseline Run) Comparison {
	j, b := joulie.Summary, baseline.Summary
	var c Comparison
	switch {
	case j.Pods == 0 || j.Pods != b.Pods:
		c.Why = fmt.Sprintf("the runs created %d and %d pods: not the same workload", j.Pods, b.Pods)
	case j.Done != j.Pods || b.Done != b.Pods:
		c.Why = fmt.Sprintf("not every pod finished (%d of %d with Joulie, %d of %d without): the energies would count different work; a longer --duration lets them finish", j.Done, j.Pods, b.Done, b.Pods)
	case j.DurationSeconds <= 0 || b.DurationSeconds <= 0:
		c.Why = "a run has no span"
	}
	if c.Why != "" {
		return c
	}
	c.Pods = j.Pods
	c.JoulieSeconds, c.BaselineSeconds = j.DurationSeconds, b.DurationSeconds
	c.JoulieJ, c.BaselineJ = j.EnergyJ, b.EnergyJ
	c.SavedJ = c.BaselineJ - c.JoulieJ
	if c.BaselineJ > 0 {
		c.SavedPct = 100 * c.SavedJ / c.BaselineJ
	}
	// Without Joulie nothing is capped or parked, but the counters say
	// so rather than the comparison assuming it.
	c.ParkingJ = j.ParkingSavedJ - b.ParkingSavedJ
	c.CapsJ = j.CapsSavedJ - b.CapsSavedJ
	c.PlacementJ = c.SavedJ - c.ParkingJ - c.CapsJ
	c.Performance = classCost(j, b, ClassPerformance)
	c.Standard = classCost(j, b, ClassStandard)
	return c
}

func classCost(j, b Summary, class string) ClassCost {
	var cost ClassCost
	for _, x := range j.Classes {
		if x.Class == class {
			cost.Joulie = x
		}
	}
	for _, x := range b.Classes {
		if x.Class == class {
			cost.Baseline = x
		}
	}
	return cost
}

// Lines are the comparison as the demo prints it at its end and the
// report shows it.
func (c Comparison) Lines() []string {
	if c.Why != "" {
		return []string{"No comparison: " + c.Why + "."}
	}
	pct := func(j float64) string {
		if c.BaselineJ <= 0 {
			return "-"
		}
		return fmt.Sprintf("%+.1f%%", 100*j/c.BaselineJ)
	}
	kj := func(j float64) string { return fmt.Sprintf("%.0f kJ", j/1000) }
	part := func(name string, j float64) string {
		return fmt.Sprintf("    %-58s %7s (%s of the energy without)", name+":", kj(j), pct(j))
	}
	lines := []string{
		fmt.Sprintf("Joulie against the run without it, the same %d pods, each run until its last pod finished (%.0f s with Joulie, %.0f s without):",
			c.Pods, c.JoulieSeconds, c.BaselineSeconds),
		fmt.Sprintf("  energy: %s with Joulie, %s without: %.1f%% saved (%s)", kj(c.JoulieJ), kj(c.BaselineJ), c.SavedPct, kj(c.SavedJ)),
		part("parking (idle nodes off, boots counted against)", c.ParkingJ),
		part("caps (eco nodes' limits, at the same loads)", c.CapsJ),
		part("placement and the rest (packing, capped work running longer)", c.PlacementJ),
	}
	p, pb, s, sb := c.Performance.Joulie, c.Performance.Baseline, c.Standard.Joulie, c.Standard.Baseline
	lines = append(lines,
		fmt.Sprintf("  cost: performance pods waited %.1f s on average (p95 %.1f s) against %.1f s (p95 %.1f s); %d of them for a boot",
			p.MeanWaitSeconds, p.P95WaitSeconds, pb.MeanWaitSeconds, pb.P95WaitSeconds, p.WaitedForBoot),
		fmt.Sprintf("        performance pods ran %.2f× their work against %.2f×; standard pods %.2f× against %.2f× (waited %.1f s against %.1f s)",
			p.MeanStretch, pb.MeanStretch, s.MeanStretch, sb.MeanStretch, s.MeanWaitSeconds, sb.MeanWaitSeconds))
	return lines
}

// Text is Lines, one a line.
func (c Comparison) Text() string { return strings.Join(c.Lines(), "\n") + "\n" }
