package demoreport

import (
	"fmt"
	"math"
)

// Expect says what a run with Joulie must show.
type Expect struct {
	// CappedPaths are the paths ("pool", "daemon") through which at least
	// one eco node must have had a cap applied by its agent.
	CappedPaths []string
	// AllDone asks that every pod succeeded.
	AllDone bool
	// ParkAndWake asks that at least one node was parked and one woken
	// (booted) during the run.
	ParkAndWake bool
	// EcoCapWithin, when positive, is the longest an awake node may be
	// eco (not draining) without a cap below 100% applied: the time its
	// agent has to enforce the eco profile, observation steps included.
	EcoCapWithin float64
}

// PodSucceeded is the phase of a pod that finished its work.
const PodSucceeded = "Succeeded"

// Check returns what in a run with Joulie breaks Joulie's promises or the
// report's own arithmetic; nil when nothing does.
func (run *Run) Check(e Expect) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	s := run.Summary
	for _, path := range e.CappedPaths {
		if s.EcoCappedNodes[path] == 0 {
			fail("run %s: no eco node of path %q was seen with a cap applied", run.Name, path)
		}
	}
	if e.EcoCapWithin > 0 {
		for _, n := range run.Nodes {
			if at, lasted := uncappedEco(n, s.DurationSeconds); lasted > e.EcoCapWithin {
				fail("run %s: node %s (path %s) was eco without a cap for %.1f s from %.1f s, more than %.1f s",
					run.Name, n.Name, n.Path, lasted, at, e.EcoCapWithin)
			}
		}
	}
	if s.PerfOnEcoMax > 0 {
		fail("run %s: up to %d performance pods ran on eco nodes at once", run.Name, s.PerfOnEcoMax)
	}
	for _, p := range run.Pods {
		if p.Class == ClassPerformance && p.Started >= 0 && p.startedOnEco() {
			fail("run %s: performance pod %s started on %s, which was %s", run.Name, p.Name, p.Node, p.ProfileAtStart)
		}
		if e.AllDone && (p.Phase != PodSucceeded || p.Finished < 0) {
			fail("run %s: pod %s did not complete (phase %q, node %q)", run.Name, p.Name, p.Phase, p.Node)
		}
	}
	if e.ParkAndWake && s.Parks == 0 {
		fail("run %s: no node was parked", run.Name)
	}
	if e.ParkAndWake && s.Wakes == 0 {
		fail("run %s: no parked node was woken", run.Name)
	}
	if e.AllDone && len(run.Pods) == 0 {
		fail("run %s: no pods", run.Name)
	}
	if tol := energyTolerance(run.Samples, s.EnergyJ); math.Abs(s.EnergyJ-s.IntegralJ) > tol {
		fail("run %s: the fleet's energy %.1f J differs from the integral of its reported power %.1f J by more than %.1f J",
			run.Name, s.EnergyJ, s.IntegralJ, tol)
	}
	return errs
}

// energyTolerance bounds how far the fleet's per-step integral may be
// from the left sum of the sampled power. Between two samples the fleet
// adds every step's power while the left sum holds the first sample's;
// with power moving one way in between, they differ by at most the
// change in power times the interval. The 0.1% absorbs rounding.
func energyTolerance(samples []Sample, energyJ float64) float64 {
	tol := 1e-3 * math.Abs(energyJ)
	for i := 1; i < len(samples); i++ {
		tol += (samples[i].T - samples[i-1].T) * math.Abs(samples[i].PowerW-samples[i-1].PowerW)
	}
	return tol
}

// uncappedEco is the longest span in which awake node n was eco, not
// draining, with no cap below 100% applied, and when it began; the
// timeline's last state lasts until end.
func uncappedEco(n Node, end float64) (at, longest float64) {
	start := -1.0
	for i, c := range n.Timeline {
		uncapped := c.Profile == ProfileEco && !c.Draining && c.PowerState == StateAwake && c.CPUCapPct >= 100 && c.GPUCapPct >= 100
		if uncapped && start < 0 {
			start = c.T
		}
		if start >= 0 && (!uncapped || i == len(n.Timeline)-1) {
			stop := c.T
			if uncapped {
				stop = end
			}
			if stop-start > longest {
				at, longest = start, stop-start
			}
			start = -1
		}
	}
	return at, longest
}
