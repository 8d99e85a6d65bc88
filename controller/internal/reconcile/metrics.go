package reconcile

import (
	"github.com/prometheus/client_golang/prometheus"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Metrics are the controller's Prometheus metrics.
type Metrics struct {
	ReconcileDuration prometheus.Histogram
	ReconcileErrors   prometheus.Counter
	Transitions       *prometheus.CounterVec
	Writes            *prometheus.CounterVec
	WriteErrors       *prometheus.CounterVec
	Nodes             *prometheus.GaugeVec
	EligibleNodes     prometheus.Gauge
	PerformanceTarget prometheus.Gauge
	PerformancePods   prometheus.Gauge
}

// NewMetrics registers the metrics with reg (none when reg is nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ReconcileDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "joulie_controller_reconcile_duration_seconds",
			Help: "Time of one reconcile of the whole cluster.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		ReconcileErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "joulie_controller_reconcile_errors_total",
			Help: "Reconciles in which at least one write failed."}),
		Transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "joulie_controller_transitions_total",
			Help: "Downgrade guard transitions by kind (defer, allow, still_blocked, unblocked, replan_perf, plan_perf, dwell)."}, []string{"transition"}),
		Writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "joulie_controller_writes_total",
			Help: "Writes to the API server by resource."}, []string{"resource"}),
		WriteErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "joulie_controller_write_errors_total",
			Help: "Failed writes to the API server by resource."}, []string{"resource"}),
		Nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "joulie_controller_nodes",
			Help: "Planned nodes by schedulable class (performance, draining, eco)."}, []string{"class"}),
		EligibleNodes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "joulie_controller_eligible_nodes",
			Help: "Nodes selected for planning (not reserved, not unschedulable)."}),
		PerformanceTarget: prometheus.NewGauge(prometheus.GaugeOpts{Name: "joulie_controller_performance_nodes_target",
			Help: "Performance node count the policy asks for."}),
		PerformancePods: prometheus.NewGauge(prometheus.GaugeOpts{Name: "joulie_controller_performance_pods",
			Help: "Active performance-sensitive pods in the cluster."}),
	}
	if reg != nil {
		reg.MustRegister(m.ReconcileDuration, m.ReconcileErrors, m.Transitions, m.Writes, m.WriteErrors,
			m.Nodes, m.EligibleNodes, m.PerformanceTarget, m.PerformancePods)
	}
	return m
}

func (m *Metrics) wrote(resource string, err error) {
	if err != nil {
		m.WriteErrors.WithLabelValues(resource).Inc()
		return
	}
	m.Writes.WithLabelValues(resource).Inc()
}

func (m *Metrics) observePlan(r Result) {
	counts := map[joulie.SchedulableClass]int{joulie.ClassPerformance: 0, joulie.ClassDraining: 0, joulie.ClassEco: 0}
	for _, n := range r.Nodes {
		if n.Managed {
			counts[n.Decision.Class]++
		}
	}
	for class, n := range counts {
		m.Nodes.WithLabelValues(string(class)).Set(float64(n))
	}
	m.EligibleNodes.Set(float64(r.Eligible))
	m.PerformanceTarget.Set(float64(r.HPCount))
	m.PerformancePods.Set(float64(r.PerfPods))
}
