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
// Two modes (Mode) say how standard pods are scored. In pack mode, the
// default, a standard pod prefers the node it fills best, in the manner of
// kube-scheduler's MostAllocated strategy, so that work packs onto few
// nodes and the rest can be capped, idle or switched off:
//
//	cpuFill    = (requested CPU of the node's pods + the pod's) / allocatable CPU × 100
//	gpuFill    = the same for GPUs, counted only when the pod requests GPUs
//	fill       = (cpuFill × 1 + gpuFill × 5) / (weights counted), capped at 100
//	score      = fill × 0.7
//	           + (100 − coolingStress) × 0.15
//	           + 10 for a standard pod on an eco node
//	           − perfPressure × 0.3 for a standard pod on a performance node
//
// A node whose allocatable is unknown has a neutral fill of 50.
// Performance pods, and every pod in headroom mode, are scored by the
// design's formula, which keeps power headroom free for them:
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
// headroom, it gets no trend bonus, and it counts in neither aggregate. In
// every mode a node without a twin, or whose twin is older than the
// staleness threshold, scores a neutral 50.
package scoring
