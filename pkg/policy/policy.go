// Package policy decides how many managed nodes supply performance and
// which ones, as the policy-algorithms seed describes and SPEC.md adjusts:
// static_partition, queue_aware_v1 and the debug policy rule_swap_v1, the
// density ordering, and the family floor. Everything here is a pure
// function over values, so the properties the seed promises
// (determinism, monotonic in pressure, bounds, family floor, density
// order) are table-tested. Nothing here reads the API, the clock or the
// network: the controller feeds it from informers, the simulator in test/
// from its simulated cluster.
package policy

import (
	"math"
	"slices"
	"strings"
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Node is an eligible node as the planner sees it.
type Node struct {
	Name string
	// Family is the hardware family: the GPU model for GPU nodes, the CPU
	// model for CPU-only nodes.
	Family string
	// Density is the node's normalized compute density; denser nodes
	// supply performance first.
	Density float64
	// Use is what the node runs, which AssignByDemand orders the nodes of
	// a family by; UseUnknown when its pods are not known.
	Use Use
}

// Use is what a node runs, as the demand spread orders a family's nodes
// for performance: equally dense nodes are interchangeable for the
// count, but not for what their profile costs.
type Use uint8

const (
	// UseUnknown: nothing said; ordered between empty and standard.
	UseUnknown Use = iota
	// UsePerformance: the node runs performance pods. It stays
	// performance first, so they are not moved through draining.
	UsePerformance
	// UseEmpty: no workload pods. An eco cap on an idle node binds on no
	// draw and buys nothing, while it turns away the next performance
	// pod, which then waits for a flip or a boot.
	UseEmpty
	// UseStandard: standard pods only, where an eco cap pays: last.
	UseStandard
)

// rank is u's place in a family's order for performance.
func (u Use) rank() int {
	switch u {
	case UsePerformance:
		return 0
	case UseEmpty:
		return 1
	case UseStandard:
		return 3
	}
	return 2
}

// Plan maps each node to the profile it should supply.
type Plan map[string]joulie.Profile

// PerformanceCount returns how many nodes the plan puts on performance.
func (p Plan) PerformanceCount() int {
	n := 0
	for _, profile := range p {
		if profile == joulie.ProfilePerformance {
			n++
		}
	}
	return n
}

// StaticHPCount is static_partition's count: round(N × frac), clamped to
// [0, N].
func StaticHPCount(n int, frac float64) int {
	return clampInt(roundHalfUp(float64(n)*frac), 0, n)
}

// QueueAware holds queue_aware_v1's knobs (QUEUE_HP_BASE_FRAC,
// QUEUE_HP_MIN, QUEUE_HP_MAX, QUEUE_PERF_PER_HP_NODE).
type QueueAware struct {
	BaseFrac float64
	Min      int
	// Max bounds the count; 0 or less means unbounded (the default).
	Max           int
	PerfPerHPNode int
}

// DefaultQueueAware is SPEC.md's defaults: 0.6, 1, unbounded, 10.
func DefaultQueueAware() QueueAware {
	return QueueAware{BaseFrac: 0.6, Min: 1, PerfPerHPNode: 10}
}

// HPCount is queue_aware_v1's count for n nodes and p active
// performance-sensitive pods: max(round(N × base), ceil(P / perHP)),
// clamped to [min, max], then to [0, N].
func (q QueueAware) HPCount(n, p int) int {
	base := roundHalfUp(float64(n) * q.BaseFrac)
	need := 0
	if q.PerfPerHPNode > 0 && p > 0 {
		need = (p + q.PerfPerHPNode - 1) / q.PerfPerHPNode
	}
	hp := max(base, need)
	if hp < q.Min {
		hp = q.Min
	}
	if q.Max > 0 && hp > q.Max {
		hp = q.Max
	}
	return clampInt(hp, 0, n)
}

// ByDensity returns the nodes densest first; equal densities go by name,
// so the order, and every plan built on it, is deterministic.
func ByDensity(nodes []Node) []Node {
	out := slices.Clone(nodes)
	slices.SortStableFunc(out, func(a, b Node) int {
		switch {
		case a.Density > b.Density:
			return -1
		case a.Density < b.Density:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Assign puts hpCount nodes on performance and the rest on eco. Within
// hpCount, the densest node of each hardware family comes first (families
// in the order of their densest node), then the remaining nodes by
// density: every family keeps some performance capacity when the count
// allows it, and the family floor never raises the count (SPEC.md).
func Assign(nodes []Node, hpCount int) Plan {
	ordered := ByDensity(nodes)
	hpCount = clampInt(hpCount, 0, len(ordered))
	plan := make(Plan, len(ordered))
	for _, n := range ordered {
		plan[n.Name] = joulie.ProfileEco
	}
	chosen := 0
	seen := map[string]bool{}
	for _, n := range ordered { // the family floor
		if chosen == hpCount {
			break
		}
		if !seen[n.Family] {
			seen[n.Family] = true
			plan[n.Name] = joulie.ProfilePerformance
			chosen++
		}
	}
	for _, n := range ordered { // the rest by density
		if chosen == hpCount {
			break
		}
		if plan[n.Name] != joulie.ProfilePerformance {
			plan[n.Name] = joulie.ProfilePerformance
			chosen++
		}
	}
	return plan
}

// How a plan shares its performance count out beyond the family floor
// (performanceSpread).
const (
	// SpreadDensity is the seeds' order: after the family floor, the
	// densest nodes (Assign). Density counts GPUs, so on a cluster of CPU
	// and GPU nodes every GPU node is performance before any CPU node,
	// and no GPU ever runs under an eco cap.
	SpreadDensity = "density"
	// SpreadDemand shares the count beyond the floor out among the
	// families in proportion to their performance demand
	// (AssignByDemand).
	SpreadDemand = "demand"
)

// AssignByDemand puts hpCount nodes on performance and the rest on eco,
// like Assign, but shares the count out among hardware families in
// proportion to demand, each family's performance demand (in any one
// unit; the planner uses node-equivalents of performance requests):
// first the family floor as in Assign, then one node at a time to the
// family with the highest demand / (2 × nodes it has + 1), the
// Sainte-Laguë rule, which makes each family's share of the count, floor
// included, as nearly proportional to its demand as whole nodes allow.
// Within a family, nodes go in density order, then by Use (nodes running
// performance pods, then empty ones, then those running standard work
// only), then by name. When no family has any
// demand the families' sizes stand in for it; a family with none gets
// nothing beyond its floor until the families with demand are full, and
// then the rest goes by density as in Assign.
//
// So a family whose performance work is light, often the GPU nodes when
// most performance pods want CPUs only, keeps eco nodes where a GPU eco
// cap can save energy on standard work, while every family keeps its
// densest node on performance.
func AssignByDemand(nodes []Node, hpCount int, demand map[string]float64) Plan {
	ordered := slices.Clone(nodes)
	slices.SortStableFunc(ordered, func(a, b Node) int {
		switch {
		case a.Density != b.Density:
			return cmpDesc(a.Density, b.Density)
		case a.Use.rank() != b.Use.rank():
			return a.Use.rank() - b.Use.rank()
		}
		return strings.Compare(a.Name, b.Name)
	})
	hpCount = clampInt(hpCount, 0, len(ordered))
	plan := make(Plan, len(ordered))
	var families []string
	members := map[string][]Node{}
	for _, n := range ordered {
		plan[n.Name] = joulie.ProfileEco
		if _, ok := members[n.Family]; !ok {
			families = append(families, n.Family)
		}
		members[n.Family] = append(members[n.Family], n)
	}
	chosen := 0
	taken := make([]int, len(families))
	for i, f := range families { // the family floor
		if chosen == hpCount {
			break
		}
		plan[members[f][0].Name] = joulie.ProfilePerformance
		taken[i], chosen = 1, chosen+1
	}
	weights := make([]float64, len(families))
	var total float64
	for i, f := range families {
		if d := demand[f]; d > 0 && !math.IsInf(d, 1) {
			weights[i] = d
			total += d
		}
	}
	if total == 0 {
		for i, f := range families {
			weights[i] = float64(len(members[f]))
		}
	}
	for chosen < hpCount {
		best, bestQ := -1, 0.0
		for i, f := range families {
			if taken[i] == len(members[f]) || weights[i] == 0 {
				continue
			}
			if q := weights[i] / float64(2*taken[i]+1); best < 0 || q > bestQ {
				best, bestQ = i, q
			}
		}
		if best < 0 {
			break
		}
		plan[members[families[best]][taken[best]].Name] = joulie.ProfilePerformance
		taken[best]++
		chosen++
	}
	for _, n := range ordered { // the families without demand, by density
		if chosen == hpCount {
			break
		}
		if plan[n.Name] != joulie.ProfilePerformance {
			plan[n.Name] = joulie.ProfilePerformance
			chosen++
		}
	}
	return plan
}

func cmpDesc(a, b float64) int {
	if a > b {
		return -1
	}
	return 1
}

// RuleSwap is the debug policy rule_swap_v1: the phase of the wall clock
// in units of the reconcile interval picks which of the first two nodes
// (by density) runs eco; every other node stays performance, so each
// interval shows a visible transition.
func RuleSwap(nodes []Node, now time.Time, interval time.Duration) Plan {
	ordered := ByDensity(nodes)
	plan := make(Plan, len(ordered))
	for _, n := range ordered {
		plan[n.Name] = joulie.ProfilePerformance
	}
	if len(ordered) == 0 || interval <= 0 {
		return plan
	}
	phase := int((now.UnixNano() / int64(interval)) % 2)
	if phase < len(ordered) {
		plan[ordered[phase].Name] = joulie.ProfileEco
	}
	return plan
}

func roundHalfUp(v float64) int {
	if math.IsNaN(v) || v < 0 {
		return 0
	}
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(math.Floor(v + 0.5))
}

func clampInt(v, lo, hi int) int {
	return min(max(v, lo), hi)
}
