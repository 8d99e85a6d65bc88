package parking

import (
	"github.com/prometheus/client_golang/prometheus"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Metrics are parking's Prometheus metrics.
type Metrics struct {
	Nodes        *prometheus.GaugeVec
	Parks        prometheus.Counter
	ParkAborts   prometheus.Counter
	Wakes        prometheus.Counter
	WakeErrors   prometheus.Counter
	WakeFailures prometheus.Counter
	WakeLatency  prometheus.Histogram
	SyncErrors   prometheus.Counter
	// WakeCallsInFlight are the Waker calls running; WakeCallsWaiting,
	// those waiting for one of parking.maxConcurrentWakes slots.
	WakeCallsInFlight prometheus.Gauge
	WakeCallsWaiting  prometheus.Gauge
}

// States lists every power state, so that the gauge shows each from the
// start.
var States = []joulie.PowerState{joulie.PowerAwake, joulie.PowerParking, joulie.PowerParked, joulie.PowerWaking, joulie.PowerWakeFailed}

// NewMetrics registers the metrics with reg (none when reg is nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "joulie_controller_power_state_nodes",
			Help: "Nodes by power state (awake, parking, parked, waking, wake-failed), as their NodePowerProfiles record it."}, []string{"state"}),
		Parks: prometheus.NewCounter(prometheus.CounterOpts{Name: "joulie_controller_parks_total",
			Help: "Parks completed: nodes handed to their agent to switch off."}),
		ParkAborts: prometheus.NewCounter(prometheus.CounterOpts{Name: "joulie_controller_park_aborts_total",
			Help: "Parks aborted between the taint and the switch-off (a pod landed, a pending pod fits, the reserve ran short, the label went)."}),
		Wakes: prometheus.NewCounter(prometheus.CounterOpts{Name: "joulie_controller_wakes_total",
			Help: "Wake attempts, retries included."}),
		WakeErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "joulie_controller_wake_errors_total",
			Help: "Wake attempts the waker (BMC or Wake-on-LAN) refused or could not send."}),
		WakeFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "joulie_controller_wake_failures_total",
			Help: "Nodes declared wake-failed: not Ready within the resume timeout after every attempt."}),
		WakeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "joulie_controller_wake_latency_seconds",
			Help:    "Time from the last wake attempt to the node being Ready with its agent up.",
			Buckets: prometheus.ExponentialBuckets(5, 2, 9)}),
		SyncErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "joulie_controller_parking_sync_errors_total",
			Help: "Parking passes in which at least one write failed."}),
		WakeCallsInFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "joulie_controller_wake_calls_in_flight",
			Help: "Wake calls (to a BMC, or listing a MAC for Wake-on-LAN) running now, at most parking.maxConcurrentWakes."}),
		WakeCallsWaiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "joulie_controller_wake_calls_waiting",
			Help: "Wake calls waiting for a free slot of parking.maxConcurrentWakes."}),
	}
	for _, s := range States {
		m.Nodes.WithLabelValues(string(s))
	}
	if reg != nil {
		reg.MustRegister(m.Nodes, m.Parks, m.ParkAborts, m.Wakes, m.WakeErrors, m.WakeFailures, m.WakeLatency, m.SyncErrors,
			m.WakeCallsInFlight, m.WakeCallsWaiting)
	}
	return m
}
