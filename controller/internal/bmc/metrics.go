package bmc

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics count the calls to BMCs by operation and result, and time them.
type metrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "joulie_controller_ipmi_calls_total",
			Help: "Calls to nodes' BMCs over IPMI by operation (power_on, power_cycle, power_off, soft_shutdown, power_status) and result " +
				"(ok, already, no_secret, no_address, no_credentials, auth_failed, unreachable, no_cipher_suite, command_refused, error)."},
			[]string{"operation", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "joulie_controller_ipmi_call_duration_seconds",
			Help:    "Time of one call to a node's BMC (Secret read, session, command, close) by operation.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10)}, []string{"operation"}),
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.duration)
	}
	return m
}

func (m *metrics) observe(op, result string, d time.Duration) {
	m.calls.WithLabelValues(op, result).Inc()
	m.duration.WithLabelValues(op).Observe(d.Seconds())
}
