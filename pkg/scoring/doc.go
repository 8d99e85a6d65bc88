// Package scoring holds the extender's decisions as pure functions over
// values: whether a node may take a pod (the filter) and how well it suits
// the pod (the score), following the scheduler-extender design.
//
// Nothing here reads the API, the clock or the network; callers pass the
// node's twin and hardware, the pod's class and demand, the cluster-wide
// aggregates and the current time. That keeps every rule testable with a
// table, lets the extender's HTTP layer score thousands of nodes without
// locks, and lets the simulator in test/ filter and score with the very
// rules joulie-extender runs.
//
// The score of a node for a pod, before clamping to 0..100:
//
//	projected  = measuredNodePowerW + marginal power of the pod
//	headroom   = (nodeCappedPowerW − projected) / nodeCappedPowerW × 100
//	score      = headroom × 0.7
//	           + (100 − coolingStress) × 0.15
//	           − clamp(powerTrendWPerMin / trendScale, −25, 25)
//	           + 10 for a standard pod on an eco node
//	           − perfPressure × 0.3 for a standard pod on a performance node
//
// trendScale is 2 while the cluster's summed trend exceeds 500 W/min in
// magnitude, else 6; the sum runs over the fresh, measured twins.
// perfPressure is the mean of (100 − headroom) over the fresh, measured
// performance nodes. A twin whose powerMeasurement has source agent, kepler
// or utilization is measured; one without the block, or with source static
// (the controller's cap-based stand-in, measuredNodePowerW =
// nodeCappedPowerW), is not: its predictedPowerHeadroomScore stands in for
// headroom, it gets no trend bonus, and it counts in neither aggregate. A
// node without a twin, or whose twin is older than the staleness threshold,
// scores a neutral 50.
package scoring
