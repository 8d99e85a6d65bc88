package report

import (
	"fmt"
	"math"
	"strings"

	"joulie.io/joulie/test/energy/sim"
)

// Issue 23's goal for Joulie's queue-aware arms, on the means over seeds
// of the paired differences of one load level.
const (
	// GoalEnergyPct: energy per unit of work (core-hour) against
	// b-binpack, at least 10% less.
	GoalEnergyPct = -10.0
	// GoalPerfP95Pct: performance p95 completion time against b-binpack,
	// at most 2% longer.
	GoalPerfP95Pct = 2.0
	// GoalOracleSharePct: at least 70% of the oracle's saving against
	// b-binpack, the physical oracle's (GoalOracle).
	GoalOracleSharePct = 70.0
)

// GoalOracle is the oracle the goal's share is measured against: the
// physical one, whose caps a cluster could set.
const GoalOracle = sim.ArmOraclePhysical

// GoalArms are the arms the goal is stated for.
var GoalArms = []sim.Arm{sim.ArmJoulie, sim.ArmQueueAware}

// Check is one condition of the goal.
type Check struct {
	// What the condition asks.
	What string
	// Run is false when an arm the condition needs was not run.
	Run bool
	Met bool
	// Value is what was measured, with its margin to the limit.
	Value string
}

// Goal is the goal's conditions for one arm at one level.
type Goal struct {
	Arm    sim.Arm
	Level  float64
	Checks []Check
}

// Met is whether every condition was judged and met.
func (g Goal) Met() bool {
	for _, c := range g.Checks {
		if !c.Run || !c.Met {
			return false
		}
	}
	return true
}

// margin says by how many points x is on the goal's side of limit
// (positive: met).
func margin(m float64, unit string) string {
	if m >= 0 {
		return fmt.Sprintf("met by %.1f %s", m, unit)
	}
	return fmt.Sprintf("missed by %.1f %s", -m, unit)
}

// GoalOf judges the goal for arm at level l.
func GoalOf(l *Level, arm sim.Arm) Goal {
	g := Goal{Arm: arm, Level: l.Level}
	notRun := func(what string, arms ...sim.Arm) Check {
		var missing []string
		for _, a := range append([]sim.Arm{arm}, arms...) {
			if !l.Has(a) {
				missing = append(missing, string(a))
			}
		}
		return Check{What: what, Value: "not judged: " + strings.Join(missing, ", ") + " not run"}
	}
	vs := func(base sim.Arm, metric, what string, limit float64, strict bool) Check {
		c, ok := l.Comparison(arm, base, metric)
		if !ok || math.IsNaN(c.Mean) {
			return notRun(what, base)
		}
		met := c.Mean <= limit
		if strict {
			met = c.Mean < limit
		}
		return Check{What: what, Run: true, Met: met, Value: fmt.Sprintf("%s (95%% CI %s), %s", signedPct(c.Mean), ci(c), margin(limit-c.Mean, "points"))}
	}
	g.Checks = append(g.Checks,
		vs(sim.ArmBinPack, MetricPerCoreHour, fmt.Sprintf("energy per core-hour at least %.0f%% below %s", -GoalEnergyPct, sim.ArmBinPack), GoalEnergyPct, false),
		vs(sim.ArmBinPack, MetricPerfP95, fmt.Sprintf("performance p95 completion time at most %.0f%% above %s", GoalPerfP95Pct, sim.ArmBinPack), GoalPerfP95Pct, false))

	waits := func(a sim.Arm) int {
		n := 0
		for _, seed := range l.Seeds {
			n += l.Run(a, seed).PerfBootWaits
		}
		return n
	}
	inWindow := func(a sim.Arm) int {
		n := 0
		for _, seed := range l.Seeds {
			n += l.Run(a, seed).PerfBootWaitsInWindow
		}
		return n
	}
	const noWait = "no performance pod waiting for a boot"
	if l.Has(arm) {
		n := waits(arm)
		g.Checks = append(g.Checks, Check{What: noWait, Run: true, Met: n == 0, Value: fmt.Sprintf("%d over %s, %d of them arriving in the steady-state window",
			n, plural(len(l.Seeds), "seed"), inWindow(arm))})
	} else {
		g.Checks = append(g.Checks, notRun(noWait))
	}

	g.Checks = append(g.Checks,
		vs(sim.ArmPowerOff, MetricPerCoreHour, "energy per core-hour no more than "+string(sim.ArmPowerOff)+"'s", 0, false),
		vs(sim.ArmPowerOff, MetricPerfP95, "performance p95 completion time shorter than "+string(sim.ArmPowerOff)+"'s", 0, true))
	fewer := "fewer performance pods waiting for a boot than " + string(sim.ArmPowerOff) + " (or none in either)"
	if l.Has(arm) && l.Has(sim.ArmPowerOff) {
		d, p := waits(arm), waits(sim.ArmPowerOff)
		g.Checks = append(g.Checks, Check{What: fewer, Run: true, Met: d < p || d == 0 && p == 0, Value: fmt.Sprintf("%d against %d", d, p)})
	} else {
		g.Checks = append(g.Checks, notRun(fewer, sim.ArmPowerOff))
	}

	share := fmt.Sprintf("at least %.0f%% of %s's saving against %s", GoalOracleSharePct, GoalOracle, sim.ArmBinPack)
	if o, ok := l.OracleShare(arm, GoalOracle); ok && !math.IsNaN(o.Mean) {
		g.Checks = append(g.Checks, Check{What: share, Run: true, Met: o.Mean >= GoalOracleSharePct,
			Value: fmt.Sprintf("%s (95%% CI %s), %s", plainPct(o.Mean), shareCI(o), margin(o.Mean-GoalOracleSharePct, "points"))})
	} else {
		g.Checks = append(g.Checks, notRun(share, GoalOracle, sim.ArmBinPack))
	}
	return g
}

// Sentence states the goal's verdict with every condition's margin.
func (g Goal) Sentence() string {
	verdict := "met"
	if !g.Met() {
		verdict = "not met"
	}
	var parts []string
	for _, c := range g.Checks {
		mark := "no"
		switch {
		case !c.Run:
			mark = "?"
		case c.Met:
			mark = "yes"
		}
		parts = append(parts, fmt.Sprintf("%s: %s [%s]", c.What, c.Value, mark))
	}
	return fmt.Sprintf("Issue 23's goal for %s at load level %s is %s on the means: %s.", g.Arm, levelName(g.Level), verdict, strings.Join(parts, "; "))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
