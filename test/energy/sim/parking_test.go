package sim

import (
	"testing"
	"time"

	"joulie.io/joulie/pkg/park"
	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/workload"
)

// Three CPU nodes under Joulie's parking, one kept busy all along. The two
// empty ones are above the family's reserve of one idle node (no
// performance arrivals yet), so one is parked after the settle time. A
// performance job takes the idle node at once; the reserve is then short,
// so the parked node is woken before anyone needs it, and the next
// performance job starts on it as it arrives. Later a burst of two
// performance jobs exceeds the reserve: the second waits for a boot, and
// the run says so. The reserve is kept whatever the gap between
// performance arrivals (parking.reserveMaxGap 0): the first arrives after
// two quiet hours, which the priced reserve would not wait through
// (TestASparseFamilyKeepsNoReserve).
func TestParkingKeepsAReserveAndWakesForPendingPods(t *testing.T) {
	m := physics.Default()
	nodes := workload.StandardCluster(3, 0)
	perf := func(id string, at time.Duration) workload.Job { return perfJob(id, at, time.Hour) }
	jobs := []workload.Job{
		cpuJob("busy", 0, 300, 8*time.Hour),
		perf("first", 2*time.Hour),
		perf("second", 2*time.Hour+10*time.Minute),
		perf("burst-1", 6*time.Hour),
		perf("burst-2", 6*time.Hour),
	}
	always := park.DefaultParams()
	always.ReserveMaxGap = 0
	r := run(t, ArmJoulie, nodes, jobs, Options{Seed: 1, Parking: &always})
	byID := map[string]JobResult{}
	for _, j := range r.Jobs {
		byID[j.ID] = j
	}
	for _, id := range []string{"first", "second", "burst-1"} {
		if j := byID[id]; j.Start != j.Arrival || j.BootWait != 0 {
			t.Errorf("%s started %s after it arrived (boot wait %s), want at once", id, j.Start-j.Arrival, j.BootWait)
		}
	}
	// The pass for the pending pod runs parkWatchDelay after it; the node
	// is Ready a CPU boot later.
	b2 := byID["burst-2"]
	if want := parkWatchDelay + m.Power.BootTime(false); b2.Start-b2.Arrival != want || b2.BootWait != want {
		t.Errorf("burst-2 waited %s (boot wait %s), want %s", b2.Start-b2.Arrival, b2.BootWait, want)
	}
	if r.PerfBootWaits != 1 {
		t.Errorf("%d performance pods waited for a boot, want 1", r.PerfBootWaits)
	}
	// Counted in the window only when burst-2 arrived inside it.
	for _, w := range []Window{{Start: 5 * time.Hour, End: 7 * time.Hour}, {Start: 0, End: 5 * time.Hour}} {
		rw := run(t, ArmJoulie, nodes, jobs, Options{Seed: 1, Window: w, Parking: &always})
		if want := map[bool]int{true: 1, false: 0}[w.Start > 0]; rw.PerfBootWaitsInWindow != want {
			t.Errorf("window %v: %d performance boot waits arrived in it, want %d", w, rw.PerfBootWaitsInWindow, want)
		}
	}
	// Parked: one node at 10 min; after first and second end (3 h, 3 h 10)
	// one of their nodes is parked again; after the burst and busy end,
	// all but the reserve.
	if r.Shutdowns < 2 || r.Boots < 2 {
		t.Errorf("%d shutdowns and %d boots, want at least 2 of each", r.Shutdowns, r.Boots)
	}
	at := func(t0 time.Duration) Parts {
		var p Parts
		for _, s := range r.Power {
			if s.T <= t0 {
				p = s.Parts
			}
		}
		return p
	}
	parked := at(time.Hour).Off == m.Power.OffWatts
	if !parked {
		t.Error("no node was off at 1 h, when one of the two empty nodes is above the reserve")
	}
}

// The reserve priced by the gap between performance arrivals (the
// default parking.reserveMaxGap): on the same three nodes, a family with
// no performance pod yet keeps no idle node, so both empty nodes are off
// after the settle time and the first performance job waits for a boot.
// Two more arrive within minutes of it, and the gap rule still holds
// nothing (three in the hour are fewer than one per gap), so the
// performance job after them waits too; with the reserve kept whatever
// the gap, neither would.
func TestASparseFamilyKeepsNoReserve(t *testing.T) {
	m := physics.Default()
	nodes := workload.StandardCluster(3, 0)
	perf := func(id string, at time.Duration) workload.Job { return perfJob(id, at, 20*time.Minute) }
	jobs := []workload.Job{
		cpuJob("busy", 0, 300, 8*time.Hour),
		perf("first", 2*time.Hour),
		perf("second", 2*time.Hour+3*time.Minute),
		perf("third", 2*time.Hour+6*time.Minute),
		perf("later", 3*time.Hour),
	}
	priced := park.DefaultParams()
	if priced.ReserveMaxGap <= 0 {
		t.Fatalf("the default parking.reserveMaxGap is %v: this test is about the priced reserve", priced.ReserveMaxGap)
	}
	r := run(t, ArmJoulie, nodes, jobs, Options{Seed: 1, Parking: &priced})
	offAt := func(r Result, at time.Duration) float64 {
		var p Parts
		for _, s := range r.Power {
			if s.T <= at {
				p = s.Parts
			}
		}
		return p.Off
	}
	if got, want := offAt(r, time.Hour+50*time.Minute), 2*m.Power.OffWatts; got != want {
		t.Errorf("off draw at 1 h 50 min %v W, want both empty nodes off (%v W): a family without performance pods keeps no reserve", got, want)
	}
	waited := map[string]bool{}
	for _, j := range r.Jobs {
		waited[j.ID] = j.BootWait > 0
	}
	if !waited["first"] || !waited["later"] {
		t.Errorf("boot waits %v, want first and later to wait: the sparse family keeps no reserve for them", waited)
	}
	always := priced
	always.ReserveMaxGap = 0
	ra := run(t, ArmJoulie, nodes, jobs, Options{Seed: 1, Parking: &always})
	for _, j := range ra.Jobs {
		if (j.ID == "first" || j.ID == "later") && j.BootWait > 0 {
			t.Errorf("reserve kept whatever the gap: %s waited %s for a boot, want none", j.ID, j.BootWait)
		}
	}
	if r.EnergyJ >= ra.EnergyJ {
		t.Errorf("energy %v with the priced reserve, %v with the reserve kept whatever the gap: want less without the idle reserve", r.EnergyJ, ra.EnergyJ)
	}
}

// perfJob is a performance job of 300 CPUs arriving at at.
func perfJob(id string, at, work time.Duration) workload.Job {
	j := cpuJob(id, at, 300, work)
	j.Class = workload.Performance
	return j
}

// Nodes without the parkable label are never parked, whatever the arm.
func TestParkingNeedsTheLabel(t *testing.T) {
	s, err := newSimulation(mustSpec(t, ArmJoulie), workload.StandardCluster(1, 0), nil, Options{Seed: 1, Model: physics.Default()})
	if err != nil {
		t.Fatal(err)
	}
	if s.nodes[0].obj.Labels["joulie.io/parkable"] != "true" {
		t.Errorf("j-joulie's nodes are not labelled parkable: %v", s.nodes[0].obj.Labels)
	}
	s, err = newSimulation(mustSpec(t, ArmQueueAware), workload.StandardCluster(1, 0), nil, Options{Seed: 1, Model: physics.Default()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.nodes[0].obj.Labels["joulie.io/parkable"]; ok {
		t.Errorf("d-queue-aware's nodes are labelled parkable: %v", s.nodes[0].obj.Labels)
	}
}

func mustSpec(t *testing.T, a Arm) ArmSpec {
	t.Helper()
	s, err := Spec(a)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The same small cluster with the warm reserve kept for performance pods
// (parking.reserveFor: performance): a standard job that arrives while the
// only room is the reserve's idle node waits for a parked node to boot,
// and the performance job right after it takes the reserve at once. With
// the default, any, the standard job takes the reserve and the
// performance job waits for the boot instead.
func TestWarmReserveKeepsStandardPodsOffForPerformancePods(t *testing.T) {
	nodes := workload.StandardCluster(3, 0)
	perf := cpuJob("perf", 2*time.Hour+time.Minute, 300, time.Hour)
	perf.Class = workload.Performance
	jobs := []workload.Job{
		cpuJob("busy", 0, 300, 8*time.Hour),
		cpuJob("standard", 2*time.Hour, 300, time.Hour),
		perf,
	}
	for _, tc := range []struct {
		reserveFor               park.ReserveFor
		standardWaits, perfWaits bool
	}{
		{park.ReserveForAny, false, true},
		{park.ReserveForPerformance, true, false},
	} {
		s := park.DefaultParams()
		// The performance job is the first: only the reserve kept
		// whatever the gap has a node waiting for it.
		s.ReserveFor, s.ReserveMaxGap = tc.reserveFor, 0
		r := run(t, ArmJoulie, nodes, jobs, Options{Seed: 1, Parking: &s})
		byID := map[string]JobResult{}
		for _, j := range r.Jobs {
			byID[j.ID] = j
		}
		for id, waits := range map[string]bool{"standard": tc.standardWaits, "perf": tc.perfWaits} {
			if j := byID[id]; (j.BootWait > 0) != waits {
				t.Errorf("reserveFor %s: %s waited %s for a boot (started %s after it arrived), want a wait %v",
					tc.reserveFor, id, j.BootWait, j.Start-j.Arrival, waits)
			}
		}
		if want := map[bool]int{true: 1, false: 0}[tc.perfWaits]; r.PerfBootWaits != want {
			t.Errorf("reserveFor %s: %d performance boot waits, want %d", tc.reserveFor, r.PerfBootWaits, want)
		}
	}
}
