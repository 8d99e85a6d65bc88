// Package sim is the energy benchmark's discrete-event simulator: one
// job list, one physics model, kube-scheduler's own framework (schedsim)
// and, for Joulie's arms, the controller's plan.Compute and the
// extender's pkg/scoring, all on a simulated clock. Arm f, the oracle
// bound, caps each standard job on its own at the cap that minimises its
// energy (oracle.go). See test/energy/README.md, section Simulator.
package sim

import "time"

// Arm names the compared configurations (issue 14, section 2 "Arms").
type Arm string

const (
	ArmDefault    Arm = "a-default"       // kube-scheduler default profile (LeastAllocated), no caps
	ArmBinPack    Arm = "b-binpack"       // MostAllocated, no caps
	ArmStatic     Arm = "c-static"        // Joulie static_partition
	ArmQueueAware Arm = "d-queue-aware"   // Joulie queue_aware_v1
	ArmNoCaps     Arm = "e-joulie-nocaps" // as d, caps never enforced
	ArmOracle     Arm = "f-oracle"        // oracle bound
)

// JobResult is what happened to one job in one arm.
type JobResult struct {
	ID                  string
	Class               string /* performance|standard */
	Boundness           string
	GPUs                int
	CPUMilli            int64
	Work                time.Duration // full-speed runtime
	Arrival, Start, End time.Duration // from the simulation's start
	Node                string
	Profile             string // node's profile when the job started: performance|eco|draining|none
	Truncated           bool
}

// Sample is a step of the cluster's IT power.
type Sample struct {
	T     time.Duration
	Watts float64
} // cluster IT power, step function: Watts holds from T to the next sample

// Result is one arm's run over one job list.
type Result struct {
	Arm                       Arm
	Seed                      int64
	JobsHash                  string
	Nodes, CPUNodes, GPUNodes int
	Jobs                      []JobResult
	Power                     []Sample      // cluster power over time, one sample per step change (or per accounting step)
	EnergyJ                   float64       // ∫ power dt over [0, Window]
	Window                    time.Duration // common window: first arrival .. latest completion of ANY arm (set by the caller via Options; see below)
	PerfOnEcoOrDraining       int           // performance pods ever placed on an eco or draining node (must be 0)
	Makespan                  time.Duration
	// The seed's method, side by side: fixed window, jobs that don't fit at once dropped, jobs counted.
	SeedMethod *SeedMethod
}

// SeedMethod is the seed document's accounting of the same arm.
type SeedMethod struct {
	Window                              time.Duration
	EnergyJ                             float64
	Accepted, Dropped                   int
	AcceptedCoreHours, AcceptedGPUHours float64
}
