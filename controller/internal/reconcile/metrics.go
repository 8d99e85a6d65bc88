package reconcile

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/ecocap"
	"joulie.io/joulie/pkg/plan"
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
	// LatePerformancePods counts the performance pods the fresh read
	// before an eco cap found on a draining node when the cache had none.
	LatePerformancePods prometheus.Counter
	twins               *twinCollector
}

// NewMetrics registers the metrics with reg (none when reg is nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ReconcileDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "joulie_controller_reconcile_duration_seconds",
			Help: "Time of one reconcile of the whole cluster.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		ReconcileErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "joulie_controller_reconcile_errors_total",
			Help: "Reconciles in which at least one write failed."}),
		Transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "joulie_controller_transitions_total",
			Help: "Downgrade guard transitions by kind (drain, defer, allow, still_blocked, unblocked, replan_perf, plan_perf, dwell)."}, []string{"transition"}),
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
		LatePerformancePods: prometheus.NewCounter(prometheus.CounterOpts{Name: "joulie_controller_late_performance_pods_total",
			Help: "Performance pods found on a draining node by the fresh read before its eco cap, which the pod cache had not seen yet (the node stayed draining, uncapped)."}),
		twins: newTwinCollector(),
	}
	if reg != nil {
		reg.MustRegister(m.ReconcileDuration, m.ReconcileErrors, m.Transitions, m.Writes, m.WriteErrors,
			m.Nodes, m.EligibleNodes, m.PerformanceTarget, m.PerformancePods, m.LatePerformancePods, m.twins)
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

func (m *Metrics) observePlan(r plan.Result) {
	counts := map[joulie.SchedulableClass]int{joulie.ClassPerformance: 0, joulie.ClassDraining: 0, joulie.ClassEco: 0}
	for _, n := range r.Nodes {
		if n.Managed {
			counts[n.Decision.Class]++
		}
	}
	for class, n := range counts {
		m.Nodes.WithLabelValues(string(class)).Set(float64(n))
	}
	m.twins.observe(r)
	m.EligibleNodes.Set(float64(r.Eligible))
	m.PerformanceTarget.Set(float64(r.HPCount))
	m.PerformancePods.Set(float64(r.PerfPods))
}

// twinCollector exports the last plan's per-node twin scores and profile,
// built from one snapshot at scrape time, so a scrape never sees half a
// plan and a deleted node's series disappear with it.
type twinCollector struct {
	last                                   atomic.Pointer[[]nodeMetric]
	headroom, cooling, psu, density, power *prometheus.Desc
	profile                                *prometheus.Desc
	capPct, capDraw                        *prometheus.Desc
}

type nodeMetric struct {
	node, profile, class            string
	headroom, cooling, psu, density float64
	measuredW                       float64
	source                          string
	caps                            []capMetric
}

// capMetric is the cap that pays chosen for one device class of an eco
// node.
type capMetric struct {
	device, kind string
	pct          float64 // 100: uncapped
	draw         float64
	drawKnown    bool
}

func newTwinCollector() *twinCollector {
	node := []string{"node"}
	return &twinCollector{
		headroom: prometheus.NewDesc("joulie_twin_power_headroom_score", "NodeTwin predictedPowerHeadroomScore (0..100).", node, nil),
		cooling:  prometheus.NewDesc("joulie_twin_cooling_stress_score", "NodeTwin predictedCoolingStressScore (0..100).", node, nil),
		psu:      prometheus.NewDesc("joulie_twin_psu_stress_score", "NodeTwin predictedPsuStressScore (0..100).", node, nil),
		density:  prometheus.NewDesc("joulie_twin_hardware_density_score", "NodeTwin hardwareDensityScore (0..100).", node, nil),
		power:    prometheus.NewDesc("joulie_twin_node_power_watts", "NodeTwin powerMeasurement.measuredNodePowerW, by source (agent, kepler, static).", []string{"node", "source"}, nil),
		profile:  prometheus.NewDesc("joulie_controller_node_profile", "1 for each planned node's profile and schedulable class.", []string{"node", "profile", "class"}, nil),
		capPct: prometheus.NewDesc("joulie_controller_node_cap_pct_of_max",
			"The cap that pays (capMode pays) chosen for an eco node's CPU packages or GPUs, in percent of their maximum (100: uncapped), with the kind of reason: not-binding, not-paying, optimum, floor, performance-pods, no-work or unknown.",
			[]string{"node", "device", "reason"}, nil),
		capDraw: prometheus.NewDesc("joulie_controller_node_cap_draw_watts",
			"The projected uncapped draw of an eco node's CPU packages or GPUs that the cap that pays weighed.",
			[]string{"node", "device"}, nil),
	}
}

func (c *twinCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.headroom, c.cooling, c.psu, c.density, c.power, c.profile, c.capPct, c.capDraw} {
		ch <- d
	}
}

func (c *twinCollector) Collect(ch chan<- prometheus.Metric) {
	last := c.last.Load()
	if last == nil {
		return
	}
	for _, n := range *last {
		ch <- prometheus.MustNewConstMetric(c.headroom, prometheus.GaugeValue, n.headroom, n.node)
		ch <- prometheus.MustNewConstMetric(c.cooling, prometheus.GaugeValue, n.cooling, n.node)
		ch <- prometheus.MustNewConstMetric(c.psu, prometheus.GaugeValue, n.psu, n.node)
		ch <- prometheus.MustNewConstMetric(c.density, prometheus.GaugeValue, n.density, n.node)
		ch <- prometheus.MustNewConstMetric(c.power, prometheus.GaugeValue, n.measuredW, n.node, n.source)
		ch <- prometheus.MustNewConstMetric(c.profile, prometheus.GaugeValue, 1, n.node, n.profile, n.class)
		for _, cm := range n.caps {
			ch <- prometheus.MustNewConstMetric(c.capPct, prometheus.GaugeValue, cm.pct, n.node, cm.device, cm.kind)
			if cm.drawKnown {
				ch <- prometheus.MustNewConstMetric(c.capDraw, prometheus.GaugeValue, cm.draw, n.node, cm.device)
			}
		}
	}
}

// capMetrics are the cap choices of an eco node (none without them).
func capMetrics(c *plan.Caps) []capMetric {
	if c == nil {
		return nil
	}
	var out []capMetric
	add := func(device string, ch *ecocap.Choice, d ecocap.Draw) {
		if ch == nil {
			return
		}
		pct := ch.PctOfMax
		if !ch.Capped() {
			pct = 100
		}
		out = append(out, capMetric{device: device, kind: string(ch.Kind), pct: pct, draw: d.Watts, drawKnown: d.Known})
	}
	add("cpu", c.CPU, c.CPUDraw)
	add("gpu", c.GPU, c.GPUDraw)
	return out
}

func (c *twinCollector) observe(r plan.Result) {
	out := make([]nodeMetric, 0, len(r.Nodes))
	for _, n := range r.Nodes {
		m := nodeMetric{node: n.Name, profile: string(n.Decision.Profile), class: string(n.Twin.SchedulableClass),
			headroom: n.Twin.PredictedPowerHeadroomScore, cooling: n.Twin.PredictedCoolingStressScore,
			psu: n.Twin.PredictedPsuStressScore, density: n.Twin.HardwareDensityScore, caps: capMetrics(n.Caps)}
		if pm := n.Twin.PowerMeasurement; pm != nil {
			m.measuredW, m.source = pm.MeasuredNodePowerW, string(pm.Source)
		}
		out = append(out, m)
	}
	c.last.Store(&out)
}
