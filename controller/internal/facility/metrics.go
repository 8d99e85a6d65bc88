package facility

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	upDesc = prometheus.NewDesc("joulie_facility_up",
		"1 when the last facility poll read every signal from Prometheus, 0 otherwise.", nil, nil)
	pollErrorsDesc = prometheus.NewDesc("joulie_facility_poll_errors_total",
		"Facility queries that failed (Prometheus unreachable, an error answer, no data, an unusable value), by query.",
		[]string{"query"}, nil)
	lastSuccessDesc = prometheus.NewDesc("joulie_facility_last_success_timestamp_seconds",
		"When a facility poll last read every signal, as a Unix time; absent before the first.", nil, nil)
	ambientDesc = prometheus.NewDesc("joulie_facility_ambient_temperature_celsius",
		"Last good facility ambient temperature (the hottest series), in degrees Celsius.", nil, nil)
	itPowerDesc = prometheus.NewDesc("joulie_facility_it_power_watts",
		"Last good facility IT power, in watts.", nil, nil)
	coolingPowerDesc = prometheus.NewDesc("joulie_facility_cooling_power_watts",
		"Last good facility cooling power, in watts.", nil, nil)
	pueDesc = prometheus.NewDesc("joulie_facility_pue",
		"Last good power usage effectiveness, (IT + cooling) / IT.", nil, nil)
)

// collector exports the poller's state at scrape time, so that a scrape
// shows one poll's values together and a value never read is absent
// rather than a misleading 0.
type collector struct{ p *Poller }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upDesc, pollErrorsDesc, lastSuccessDesc,
		ambientDesc, itPowerDesc, coolingPowerDesc, pueDesc} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.p.mu.RLock()
	r := c.p.reading
	failures := c.p.failures
	c.p.mu.RUnlock()

	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	up := 0.0
	if r.Healthy {
		up = 1
	}
	gauge(upDesc, up)
	for i, s := range c.p.signals {
		ch <- prometheus.MustNewConstMetric(pollErrorsDesc, prometheus.CounterValue, float64(failures[i]), s.name)
	}
	if !r.Time.IsZero() {
		gauge(lastSuccessDesc, float64(r.Time.UnixNano())/1e9)
	}
	for _, v := range []struct {
		d *prometheus.Desc
		v *float64
	}{{ambientDesc, r.AmbientTempC}, {itPowerDesc, r.ITPowerW}, {coolingPowerDesc, r.CoolingPowerW}, {pueDesc, r.PUE}} {
		if v.v != nil {
			gauge(v.d, *v.v)
		}
	}
}
