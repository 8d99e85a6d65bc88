package sim

import (
	"testing"
	"time"

	"joulie.io/joulie/test/energy/workload"
)

// A pod that fits no node of the cluster stays pending, as on a real
// cluster: every arm runs the others to completion, and names it with
// the requests that did not fit, instead of aborting the run. A CPU pod
// too large for every CPU node runs on a GPU node in the arms that taint
// GPU nodes too, so every arm does the same work.
func TestAPodThatFitsNoNodeStaysPendingAndTheRunGoesOn(t *testing.T) {
	nodes := workload.StandardCluster(2, 1)
	// CPU nodes smaller than the GPU node, so that a CPU pod can fit the
	// GPU node alone.
	nodes[0].CPUMilli, nodes[1].CPUMilli = 32000, 32000
	gpu := nodes[2]
	jobs := []workload.Job{
		cpuJob("fits", 0, 8, time.Hour),
		cpuJob("too-many-cpus", time.Minute, gpu.CPUMilli/1000+1, time.Hour),
		cpuJob("only-on-the-gpu-node", 2*time.Minute, 64, time.Hour),
		{ID: "too-many-gpus", Arrival: 3 * time.Minute, Class: workload.Performance, Boundness: "gpu-compute",
			CPUMilli: 1000, MemoryMiB: 1024, GPUs: gpu.GPUs + 1, Work: time.Hour},
		cpuJob("late", 5*time.Hour, 8, time.Minute),
	}
	var hash string
	for _, spec := range ArmSpecs {
		r := run(t, spec.Arm, nodes, jobs, Options{Seed: 1})
		var ran []string
		for _, j := range r.Jobs {
			ran = append(ran, j.ID)
		}
		if want := []string{"fits", "only-on-the-gpu-node", "late"}; !equalIDs(ran, want) {
			t.Errorf("%s: ran %v, want %v", spec.Arm, ran, want)
		}
		want := []Unplaceable{
			{ID: "too-many-cpus", Class: "standard", CPUMilli: gpu.CPUMilli + 1000, MemoryMiB: 1024},
			{ID: "too-many-gpus", Class: "performance", CPUMilli: 1000, MemoryMiB: 1024, GPUs: gpu.GPUs + 1},
		}
		if len(r.Unplaceable) != len(want) || r.Unplaceable[0] != want[0] || r.Unplaceable[1] != want[1] {
			t.Errorf("%s: unplaceable %+v, want %+v", spec.Arm, r.Unplaceable, want)
		}
		if hash == "" {
			hash = r.JobsHash
		} else if r.JobsHash != hash {
			t.Errorf("%s: job-list hash %s, want every arm's %s", spec.Arm, r.JobsHash, hash)
		}
	}
}

func equalIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
