package sim

import (
	"context"
	"testing"
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/workload"
)

// Performance jobs that have not arrived yet have no pods: the controller
// cannot see them, so they must not raise queue_aware_v1's performance
// count.
func TestJobsNotYetArrivedAreNotPending(t *testing.T) {
	nodes := workload.StandardCluster(5, 0)
	var jobs []workload.Job
	for i := range 100 {
		jobs = append(jobs, workload.Job{ID: "perf-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Arrival: 10 * time.Hour,
			Class: workload.Performance, Boundness: physics.CPUCompute, CPUMilli: 1000, MemoryMiB: 1024, Work: time.Hour})
	}
	spec, _ := Spec(ArmQueueAware)
	s, err := newSimulation(spec, nodes, jobs, Options{Seed: 1, Model: physics.Default(),
		ReconcileInterval: time.Minute, AgentDelay: 5 * time.Second, MaxPodsPerNode: 110})
	if err != nil {
		t.Fatal(err)
	}
	defer s.sched.Close()
	if err := s.reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	eco := 0
	for _, n := range s.nodes {
		if n.obj.Labels[joulie.LabelPowerProfile] == string(joulie.ProfileEco) {
			eco++
		}
	}
	// QUEUE_HP_BASE_FRAC 0.6 of 5 nodes keeps 3 in performance; 100
	// pending performance pods would have asked for all 5.
	if eco != 2 {
		t.Errorf("%d of 5 nodes eco before any job arrived, want 2", eco)
	}
}
