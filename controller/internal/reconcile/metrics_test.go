package reconcile

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/policy"
)

func TestMetricsPassLintAndCountThePlan(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.observePlan(plan.Result{Eligible: 3, HPCount: 1, PerfPods: 4, Nodes: []plan.NodePlan{
		{Name: "gpu-1", Managed: true, Decision: policy.Decision{Class: joulie.ClassPerformance, Profile: joulie.ProfilePerformance},
			Twin: joulie.NodeTwinStatus{SchedulableClass: joulie.ClassPerformance, PredictedPowerHeadroomScore: 73.5,
				PowerMeasurement: &joulie.PowerMeasurement{Source: joulie.SourceAgent, MeasuredNodePowerW: 2400}}},
		{Name: "gpu-2", Managed: true, Decision: policy.Decision{Class: joulie.ClassDraining}},
		{Name: "gpu-3", Managed: true, Decision: policy.Decision{Class: joulie.ClassDraining}},
		{Name: "cpu-1", Managed: false, Decision: policy.Decision{Class: joulie.ClassPerformance}},
	}})
	m.Transitions.WithLabelValues("defer").Inc()
	m.wrote("node", nil)
	m.ReconcileDuration.Observe(0.01)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
	if got := testutil.ToFloat64(m.Nodes.WithLabelValues("draining")); got != 2 {
		t.Errorf("draining nodes %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.Nodes.WithLabelValues("performance")); got != 1 {
		t.Errorf("performance nodes %v, want 1 (a released node is not planned)", got)
	}
	want := `
# HELP joulie_twin_power_headroom_score NodeTwin predictedPowerHeadroomScore (0..100).
# TYPE joulie_twin_power_headroom_score gauge
joulie_twin_power_headroom_score{node="cpu-1"} 0
joulie_twin_power_headroom_score{node="gpu-1"} 73.5
joulie_twin_power_headroom_score{node="gpu-2"} 0
joulie_twin_power_headroom_score{node="gpu-3"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "joulie_twin_power_headroom_score"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "joulie_twin_node_power_watts"); err != nil || n != 4 {
		t.Errorf("node power series %d (%v), want one per planned node", n, err)
	}
	if testutil.ToFloat64(m.PerformancePods) != 4 || testutil.ToFloat64(m.PerformanceTarget) != 1 {
		t.Error("plan gauges not set")
	}
	// A node that leaves the plan leaves the metrics with it.
	m.observePlan(plan.Result{Nodes: []plan.NodePlan{{Name: "gpu-1", Managed: true}}})
	if n, err := testutil.GatherAndCount(reg, "joulie_twin_power_headroom_score"); err != nil || n != 1 {
		t.Errorf("after three nodes left: %d headroom series (%v), want 1", n, err)
	}
}
