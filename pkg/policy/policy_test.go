package policy

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func TestStaticHPCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		frac float64
		want int
	}{
		{10, 0.5, 5}, {5, 0.5, 3}, {3, 0.5, 2}, {4, 0, 0}, {4, 1, 4}, {4, 1.7, 4}, {4, -1, 0}, {0, 0.5, 0},
	} {
		if got := StaticHPCount(tc.n, tc.frac); got != tc.want {
			t.Errorf("StaticHPCount(%d, %g) = %d, want %d", tc.n, tc.frac, got, tc.want)
		}
	}
}

func TestQueueAwareHPCount(t *testing.T) {
	q := DefaultQueueAware()
	for _, tc := range []struct {
		name string
		q    QueueAware
		n, p int
		want int
	}{
		{"base wins at low pressure", q, 10, 5, 6},
		{"need wins at high pressure", q, 10, 75, 8},
		{"clamped to N", q, 10, 500, 10},
		{"min when the base is 0", QueueAware{BaseFrac: 0, Min: 1, PerfPerHPNode: 10}, 10, 0, 1},
		{"max bounds", QueueAware{BaseFrac: 0.6, Min: 1, Max: 3, PerfPerHPNode: 10}, 10, 100, 3},
		{"no nodes", q, 0, 50, 0},
	} {
		if got := tc.q.HPCount(tc.n, tc.p); got != tc.want {
			t.Errorf("%s: HPCount(%d, %d) = %d, want %d", tc.name, tc.n, tc.p, got, tc.want)
		}
	}
}

func TestQueueAwareIsMonotonicInPressure(t *testing.T) {
	q := DefaultQueueAware()
	for n := 0; n <= 20; n++ {
		prev := -1
		for p := 0; p <= 300; p++ {
			got := q.HPCount(n, p)
			if got < prev || got < 0 || got > n {
				t.Fatalf("HPCount(%d, %d) = %d after %d: not monotonic or out of [0, %d]", n, p, got, prev, n)
			}
			prev = got
		}
	}
}

func cluster() []Node {
	return []Node{
		{Name: "cpu-a", Family: "epyc-9654", Density: 1.0}, {Name: "cpu-b", Family: "epyc-9654", Density: 1.0},
		{Name: "h100-a", Family: "h100", Density: 9.0}, {Name: "h100-b", Family: "h100", Density: 8.5}, {Name: "h100-c", Family: "h100", Density: 8.5},
		{Name: "l40s-a", Family: "l40s", Density: 3.0},
	}
}

func perfNodes(p Plan) string {
	var out []string
	for _, n := range ByDensity(cluster()) {
		if p[n.Name] == joulie.ProfilePerformance {
			out = append(out, n.Name)
		}
	}
	return fmt.Sprint(out)
}

func TestAssignFamilyFloorThenDensity(t *testing.T) {
	for _, tc := range []struct {
		hp   int
		want string
	}{
		{0, "[]"},
		{1, "[h100-a]"},                     // the count is never raised by the floor
		{2, "[h100-a l40s-a]"},              // each family's densest, families by their densest node
		{3, "[h100-a l40s-a cpu-a]"},        // ties by name
		{4, "[h100-a h100-b l40s-a cpu-a]"}, // then the rest by density
		{6, "[h100-a h100-b h100-c l40s-a cpu-a cpu-b]"},
		{9, "[h100-a h100-b h100-c l40s-a cpu-a cpu-b]"},
	} {
		p := Assign(cluster(), tc.hp)
		if got := perfNodes(p); got != tc.want {
			t.Errorf("Assign(hp=%d) performance = %s, want %s", tc.hp, got, tc.want)
		}
		if len(p) != len(cluster()) {
			t.Errorf("Assign(hp=%d) planned %d of %d nodes", tc.hp, len(p), len(cluster()))
		}
	}
}

func TestAssignIsDeterministicWhateverTheInputOrder(t *testing.T) {
	a := cluster()
	b := []Node{a[5], a[3], a[1], a[4], a[0], a[2]}
	for hp := 0; hp <= len(a); hp++ {
		if pa, pb := perfNodes(Assign(a, hp)), perfNodes(Assign(b, hp)); pa != pb {
			t.Fatalf("hp=%d: %s vs %s", hp, pa, pb)
		}
	}
}

func TestRuleSwapAlternatesTheFirstTwoNodes(t *testing.T) {
	iv := time.Minute
	t0 := time.Unix(0, 0).Add(10 * iv)
	p0, p1 := RuleSwap(cluster(), t0, iv), RuleSwap(cluster(), t0.Add(iv), iv)
	if p0["h100-a"] != joulie.ProfileEco || p0["h100-b"] != joulie.ProfilePerformance ||
		p1["h100-a"] != joulie.ProfilePerformance || p1["h100-b"] != joulie.ProfileEco || p0.PerformanceCount() != 5 {
		t.Fatalf("phase 0 %v, phase 1 %v", p0, p1)
	}
}

func TestGuard(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	eco, perf := joulie.ProfileEco, joulie.ProfilePerformance
	for _, tc := range []struct {
		name    string
		in      GuardInput
		want    State
		profile joulie.Profile
		drain   bool
		class   joulie.SchedulableClass
		tr      Transition
	}{
		{"new node planned performance", GuardInput{Planned: perf}, ActivePerformance, perf, false, joulie.ClassPerformance, None},
		{"allow: eco with no performance pods", GuardInput{Current: ActivePerformance, Planned: eco}, ActiveEco, eco, false, joulie.ClassEco, Allow},
		{"defer: eco with performance pods", GuardInput{Current: ActivePerformance, Planned: eco, PerfPods: 2}, DrainingPerformance, eco, true, joulie.ClassDraining, Defer},
		{"still blocked", GuardInput{Current: DrainingPerformance, Planned: eco, PerfPods: 1}, DrainingPerformance, eco, true, joulie.ClassDraining, StillBlocked},
		{"unblocked", GuardInput{Current: DrainingPerformance, Planned: eco}, ActiveEco, eco, false, joulie.ClassEco, Unblocked},
		{"re-plan performance while draining", GuardInput{Current: DrainingPerformance, Planned: perf, PerfPods: 1}, ActivePerformance, perf, false, joulie.ClassPerformance, ReplanPerf},
		{"plan performance from eco is never delayed", GuardInput{Current: ActiveEco, Planned: perf, LastChange: now, MinEcoDwell: time.Hour, Now: now}, ActivePerformance, perf, false, joulie.ClassPerformance, PlanPerf},
		{"dwell holds a fresh performance node", GuardInput{Current: ActivePerformance, Planned: eco, LastChange: now.Add(-time.Minute), MinEcoDwell: 5 * time.Minute, Now: now}, ActivePerformance, perf, false, joulie.ClassPerformance, Dwell},
		{"dwell over", GuardInput{Current: ActivePerformance, Planned: eco, LastChange: now.Add(-6 * time.Minute), MinEcoDwell: 5 * time.Minute, Now: now}, ActiveEco, eco, false, joulie.ClassEco, Allow},
		{"zero dwell is the seed's behaviour", GuardInput{Current: ActivePerformance, Planned: eco, LastChange: now, Now: now}, ActiveEco, eco, false, joulie.ClassEco, Allow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Guard(tc.in)
			if d.Next != tc.want || d.Profile != tc.profile || d.Draining != tc.drain || d.Class != tc.class || d.Transition != tc.tr {
				t.Fatalf("Guard = %+v, want %s/%s/draining=%v/%s/%q", d, tc.want, tc.profile, tc.drain, tc.class, tc.tr)
			}
			// The seed's guard publishes the caps of the profile it labels,
			// draining included.
			if d.Applied != d.Profile {
				t.Fatalf("GuardSeed applies %s on a node labelled %s", d.Applied, d.Profile)
			}
		})
	}
}

// Under GuardDrain no move reaches eco without draining first, and a
// draining node keeps its performance caps until it has drained for
// DrainDwell with no performance pod on it.
func TestGuardDrain(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	eco, perf := joulie.ProfileEco, joulie.ProfilePerformance
	const dwell = 15 * time.Second
	for _, tc := range []struct {
		name    string
		in      GuardInput
		want    State
		applied joulie.Profile
		tr      Transition
	}{
		{"a fresh node planned eco drains first", GuardInput{Planned: eco}, DrainingPerformance, perf, Drain},
		{"no performance pods: drain, not eco", GuardInput{Current: ActivePerformance, Planned: eco, LastChange: now.Add(-time.Hour)}, DrainingPerformance, perf, Drain},
		{"performance pods: defer, uncapped", GuardInput{Current: ActivePerformance, Planned: eco, PerfPods: 1}, DrainingPerformance, perf, Defer},
		{"the eco dwell still holds", GuardInput{Current: ActivePerformance, Planned: eco, LastChange: now.Add(-time.Minute), MinEcoDwell: 5 * time.Minute}, ActivePerformance, perf, Dwell},
		{"drained, but not for the drain dwell", GuardInput{Current: DrainingPerformance, Planned: eco, LastChange: now.Add(-dwell + time.Second)}, DrainingPerformance, perf, None},
		{"a pod bound while draining holds it", GuardInput{Current: DrainingPerformance, Planned: eco, PerfPods: 1, LastChange: now.Add(-time.Hour)}, DrainingPerformance, perf, StillBlocked},
		{"drained for the dwell: eco", GuardInput{Current: DrainingPerformance, Planned: eco, LastChange: now.Add(-dwell)}, ActiveEco, eco, Unblocked},
		{"performance again while draining", GuardInput{Current: DrainingPerformance, Planned: perf, LastChange: now}, ActivePerformance, perf, ReplanPerf},
		{"eco stays eco", GuardInput{Current: ActiveEco, Planned: eco}, ActiveEco, eco, None},
		{"eco to performance at once", GuardInput{Current: ActiveEco, Planned: perf, LastChange: now}, ActivePerformance, perf, PlanPerf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Mode, in.DrainDwell, in.Now = GuardDrain, dwell, now
			d := Guard(in)
			if d.Next != tc.want || d.Applied != tc.applied || d.Transition != tc.tr {
				t.Fatalf("Guard = %+v, want %s applying %s (%q)", d, tc.want, tc.applied, tc.tr)
			}
			if d.Next != ActiveEco && d.Applied == eco {
				t.Fatalf("%s applies eco", d.Next)
			}
		})
	}
}

func TestAssignByDemandSharesTheCountByFamilyDemand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hp     int
		demand map[string]float64
		want   string
	}{
		{"the count is never raised by the floor", 1, map[string]float64{"epyc-9654": 3}, "[h100-a]"},
		{"the floor first", 3, map[string]float64{"epyc-9654": 3}, "[h100-a l40s-a cpu-a]"},
		// epyc 3/(2×1+1) = 1 against h100 1/3: the CPU family's second node
		// before the densest family's second.
		{"the family with the demand next", 4, map[string]float64{"epyc-9654": 3, "h100": 1}, "[h100-a l40s-a cpu-a cpu-b]"},
		{"then the next highest average", 5, map[string]float64{"epyc-9654": 3, "h100": 1}, "[h100-a h100-b l40s-a cpu-a cpu-b]"},
		{"families without demand by density once the others are full", 5, map[string]float64{"epyc-9654": 3}, "[h100-a h100-b l40s-a cpu-a cpu-b]"},
		{"no demand at all: family sizes stand in", 4, nil, "[h100-a h100-b l40s-a cpu-a]"},
		{"negative, NaN and infinite demand count as none", 4, map[string]float64{"h100": -5, "l40s": math.NaN(), "epyc-9654": math.Inf(1)}, "[h100-a h100-b l40s-a cpu-a]"},
		{"every node", 9, map[string]float64{"h100": 1}, "[h100-a h100-b h100-c l40s-a cpu-a cpu-b]"},
	} {
		p := AssignByDemand(cluster(), tc.hp, tc.demand)
		if got := perfNodes(p); got != tc.want {
			t.Errorf("%s: AssignByDemand(hp=%d) performance = %s, want %s", tc.name, tc.hp, got, tc.want)
		}
		if len(p) != len(cluster()) || p.PerformanceCount() != min(tc.hp, len(cluster())) {
			t.Errorf("%s: planned %d nodes, %d performance", tc.name, len(p), p.PerformanceCount())
		}
	}
}

// On the benchmark's shape, CPU nodes (density 50) and GPU nodes (density
// 100), the seeds' order puts every GPU node on performance; by demand the
// count splits as the demand does.
func TestAssignByDemandLetsEcoReachGPUNodes(t *testing.T) {
	var nodes []Node
	for i := range 100 {
		nodes = append(nodes, Node{Name: fmt.Sprintf("cpu-%03d", i), Family: "cpu:amd-epyc-9654", Density: 50})
	}
	for i := range 25 {
		nodes = append(nodes, Node{Name: fmt.Sprintf("gpu-%03d", i), Family: "gpu:nvidia-h100-sxm", Density: 100})
	}
	count := func(p Plan, prefix string) int {
		n := 0
		for name, prof := range p {
			if prof == joulie.ProfilePerformance && strings.HasPrefix(name, prefix) {
				n++
			}
		}
		return n
	}
	seeds := Assign(nodes, 60)
	if count(seeds, "gpu-") != 25 {
		t.Fatalf("seeds' order: %d GPU nodes on performance, want all 25", count(seeds, "gpu-"))
	}
	p := AssignByDemand(nodes, 60, map[string]float64{"cpu:amd-epyc-9654": 30, "gpu:nvidia-h100-sxm": 10})
	if c, g := count(p, "cpu-"), count(p, "gpu-"); c != 45 || g != 15 {
		t.Errorf("by demand 3:1: %d CPU and %d GPU nodes on performance, want 45 and 15", c, g)
	}
	shuffled := append(slices.Clone(nodes[60:]), nodes[:60]...)
	if !maps.Equal(p, AssignByDemand(shuffled, 60, map[string]float64{"cpu:amd-epyc-9654": 30, "gpu:nvidia-h100-sxm": 10})) {
		t.Errorf("input order changes the plan")
	}
}

// Within a family the demand spread puts on performance the nodes running
// performance pods first, then empty ones, and the nodes running standard
// work only last, where an eco cap pays; without use, the order is the
// seeds' (density, then name).
func TestAssignByDemandPrefersPerformanceThenEmptyNodes(t *testing.T) {
	nodes := []Node{
		{Name: "a", Family: "f", Density: 1, Use: UseStandard},
		{Name: "b", Family: "f", Density: 1, Use: UseEmpty},
		{Name: "c", Family: "f", Density: 1, Use: UsePerformance},
		{Name: "d", Family: "f", Density: 1},
		{Name: "e", Family: "f", Density: 1, Use: UseStandard},
	}
	perf := func(p Plan) []string {
		var out []string
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			if p[n] == joulie.ProfilePerformance {
				out = append(out, n)
			}
		}
		return out
	}
	demand := map[string]float64{"f": 1}
	for count, want := range map[int][]string{1: {"c"}, 2: {"b", "c"}, 3: {"b", "c", "d"}, 4: {"a", "b", "c", "d"}} {
		if got := perf(AssignByDemand(nodes, count, demand)); !slices.Equal(got, want) {
			t.Errorf("count %d: performance %v, want %v", count, got, want)
		}
	}
	for i := range nodes {
		nodes[i].Use = UseUnknown
	}
	if got := perf(AssignByDemand(nodes, 2, demand)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("without use: performance %v, want [a b] (name order)", got)
	}
}
