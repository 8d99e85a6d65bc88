package demoreport

import (
	"math"
	"strings"
	"testing"
)

func summaryRun(name string, seconds, energyJ, capsJ, parkingJ float64, pods, done int) Run {
	return Run{Name: name, Summary: Summary{DurationSeconds: seconds, EnergyJ: energyJ, CapsSavedJ: capsJ, ParkingSavedJ: parkingJ,
		Pods: pods, Done: done, Classes: []ClassSummary{
			{Class: ClassPerformance, MeanWaitSeconds: 2, P95WaitSeconds: 9, MeanStretch: 1, WaitedForBoot: 3},
			{Class: ClassStandard, MeanWaitSeconds: 1, MeanStretch: 1.1},
		}}}
}

// The saving's parts add up to it, and each is the counter of the run
// with Joulie less that of the run without; each run's energy is its
// whole, however long it took.
func TestCompareTakesTheSavingApart(t *testing.T) {
	j := summaryRun(RunJoulie, 100, 800e3, 50e3, 120e3, 40, 40)
	b := summaryRun(RunBaseline, 110, 1000e3, 0, 0, 40, 40)
	c := Compare(j, b)
	if c.Why != "" {
		t.Fatalf("not compared: %s", c.Why)
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("%s %v, want %v", name, got, want)
		}
	}
	near("time with Joulie", c.JoulieSeconds, 100)
	near("time without", c.BaselineSeconds, 110)
	near("baseline energy", c.BaselineJ, 1000e3)
	near("saved", c.SavedJ, 200e3)
	near("saved %", c.SavedPct, 20)
	near("parking", c.ParkingJ, 120e3)
	near("caps", c.CapsJ, 50e3)
	near("placement and the rest", c.PlacementJ, 30e3)
	if c.Performance.Joulie.WaitedForBoot != 3 || c.Performance.Joulie.P95WaitSeconds != 9 || c.Standard.Joulie.MeanStretch != 1.1 || c.Standard.Baseline.MeanStretch != 1.1 {
		t.Errorf("costs %+v %+v", c.Performance, c.Standard)
	}
	text := c.Text()
	for _, want := range []string{"20.0% saved (200 kJ)", "parking", "120 kJ (+12.0% of the energy without)", "caps", "placement and the rest", "3 of them for a boot", "standard pods 1.10×"} {
		if !strings.Contains(text, want) {
			t.Errorf("the comparison's text lacks %q:\n%s", want, text)
		}
	}
	// A baseline that parked or capped anything takes its own counters off.
	b.Summary.ParkingSavedJ = 10e3
	if c := Compare(j, b); math.Abs(c.ParkingJ-(120e3-10e3)) > 1e-6 || math.Abs(c.ParkingJ+c.CapsJ+c.PlacementJ-c.SavedJ) > 1e-6 {
		t.Errorf("with the baseline's own parking: parts %v + %v + %v, saved %v", c.ParkingJ, c.CapsJ, c.PlacementJ, c.SavedJ)
	}
}

// Runs that did different work are not compared, and say why.
func TestCompareRefusesDifferentWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		j, b Run
		want string
	}{
		{"unfinished", summaryRun(RunJoulie, 100, 1, 0, 0, 40, 39), summaryRun(RunBaseline, 100, 1, 0, 0, 40, 40), "not every pod finished"},
		{"other pods", summaryRun(RunJoulie, 100, 1, 0, 0, 40, 40), summaryRun(RunBaseline, 100, 1, 0, 0, 41, 41), "not the same workload"},
		{"no pods", summaryRun(RunJoulie, 100, 1, 0, 0, 0, 0), summaryRun(RunBaseline, 100, 1, 0, 0, 0, 0), "not the same workload"},
	} {
		c := Compare(tc.j, tc.b)
		if !strings.Contains(c.Why, tc.want) || c.SavedJ != 0 {
			t.Errorf("%s: why %q, saved %v; want %q and nothing else", tc.name, c.Why, c.SavedJ, tc.want)
		}
		if !strings.HasPrefix(c.Text(), "No comparison: ") {
			t.Errorf("%s: text %q", tc.name, c.Text())
		}
	}
}

// A pod that started on a node whose boot began while it waited waited
// for a boot; one that started before the boot did not. The recorder
// carries the fleet's counters into the summary.
func TestSummaryCountsBootWaitsAndSavings(t *testing.T) {
	f := &fakeFleet{}
	rec := NewRecorder(RunJoulie, t0)
	var first, last Observation
	for k := range 60 {
		o := f.observation(k)
		if k == 0 {
			first = o
		}
		last = o
		rec.Observe(o)
	}
	pods := append(samplePods(),
		// daemon-a boots from 42 to 46.
		Pod{Name: "job-000003", Class: ClassPerformance, Node: "daemon-a", Created: 41, Started: 46, Finished: 50, WorkSeconds: 4, Phase: PodSucceeded},
		Pod{Name: "job-000004", Class: ClassPerformance, Node: "daemon-a", Created: 20, Started: 21, Finished: 27, WorkSeconds: 6, Phase: PodSucceeded})
	run := rec.Finish(pods)
	var perf ClassSummary
	for _, c := range run.Summary.Classes {
		if c.Class == ClassPerformance {
			perf = c
		}
	}
	if perf.WaitedForBoot != 1 {
		t.Errorf("performance pods that waited for a boot: %d, want 1", perf.WaitedForBoot)
	}
	if s := run.Summary; s.CapsSavedJ != last.CapsSavedJ-first.CapsSavedJ || s.ParkingSavedJ != last.ParkingSavedJ-first.ParkingSavedJ || s.CapsSavedJ <= 0 || s.ParkingSavedJ <= 0 {
		t.Errorf("summary caps %v, parking %v J; the fleet counted %v and %v", s.CapsSavedJ, s.ParkingSavedJ,
			last.CapsSavedJ-first.CapsSavedJ, last.ParkingSavedJ-first.ParkingSavedJ)
	}
}
