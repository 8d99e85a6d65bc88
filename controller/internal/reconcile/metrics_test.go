package reconcile

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"joulie.io/joulie/controller/internal/policy"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func TestMetricsPassLintAndCountThePlan(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.observePlan(Result{Eligible: 3, HPCount: 1, PerfPods: 4, Nodes: []NodePlan{
		{Managed: true, Decision: policy.Decision{Class: joulie.ClassPerformance}},
		{Managed: true, Decision: policy.Decision{Class: joulie.ClassDraining}},
		{Managed: true, Decision: policy.Decision{Class: joulie.ClassDraining}},
		{Managed: false, Decision: policy.Decision{Class: joulie.ClassPerformance}},
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
	if testutil.ToFloat64(m.PerformancePods) != 4 || testutil.ToFloat64(m.PerformanceTarget) != 1 {
		t.Error("plan gauges not set")
	}
}
