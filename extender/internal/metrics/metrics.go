// Package metrics exposes joulie-extender to Prometheus: how long the
// scheduler's calls take and how many fail, how many nodes the filter
// turns away and why, and how fresh the twins it scores by are. Twin
// freshness is read from the current snapshot at scrape time, so it moves
// with the clock even when no twin changes.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"joulie.io/joulie/extender/internal/state"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/pkg/version"
)

// Verbs of the extender, the values of the verb label.
const (
	VerbFilter     = "filter"
	VerbPrioritize = "prioritize"
)

// Reasons a request fails, the values of the reason label.
const (
	ReasonTooLarge = "too_large" // body over the size limit
	ReasonRead     = "read"      // body cut short or timed out
	ReasonDecode   = "decode"    // not an ExtenderArgs
	ReasonInvalid  = "invalid"   // an ExtenderArgs without pod or nodes
	ReasonBusy     = "busy"      // the memory budget for calls in flight is spent (503)
)

var (
	verbs   = []string{VerbFilter, VerbPrioritize}
	reasons = []string{ReasonTooLarge, ReasonRead, ReasonDecode, ReasonInvalid, ReasonBusy}
)

// Metrics records the extender's requests. Its methods are safe for
// concurrent use; the label values are resolved once, up front.
type Metrics struct {
	latency  map[string]prometheus.Observer
	errors   map[string]map[string]prometheus.Counter
	filtered map[scoring.Verdict]prometheus.Counter
}

// New registers the extender's metrics with reg. snapshot gives the
// current cluster view, staleness the TWIN_STALENESS_THRESHOLD, now the
// clock, inFlight the bytes the calls in flight hold.
func New(reg prometheus.Registerer, snapshot func() *state.Snapshot, staleness time.Duration, now func() time.Time, inFlight func() int64) *Metrics {
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "joulie_extender_request_duration_seconds",
		Help: "Time to answer a scheduler call, from the first byte read to the last written, by verb.",
		// From 50 µs, a small request by name, to 5 s, the scheduler's
		// default extender timeout.
		Buckets: []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
	}, []string{"verb"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "joulie_extender_request_errors_total",
		Help: "Scheduler calls refused, by verb and reason: with 400 for too_large, read, decode, invalid; with 503 for busy.",
	}, []string{"verb", "reason"})
	inFlightBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "joulie_extender_inflight_bytes",
		Help: "Memory the scheduler calls in flight hold (bodies, decoded nodes and pods, replies), counted against EXTENDER_MAX_INFLIGHT_BYTES.",
	}, func() float64 { return float64(inFlight()) })
	filtered := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "joulie_extender_filtered_nodes_total",
		Help: "Nodes the filter turned away from performance pods, by the rule that rejected them.",
	}, []string{"reason"})
	reg.MustRegister(latency, errs, filtered, inFlightBytes, &freshness{snapshot: snapshot, staleness: staleness, now: now})

	m := &Metrics{
		latency:  map[string]prometheus.Observer{},
		errors:   map[string]map[string]prometheus.Counter{},
		filtered: map[scoring.Verdict]prometheus.Counter{},
	}
	for _, v := range verbs {
		m.latency[v] = latency.WithLabelValues(v)
		m.errors[v] = map[string]prometheus.Counter{}
		for _, r := range reasons {
			m.errors[v][r] = errs.WithLabelValues(v, r)
		}
	}
	for _, v := range scoring.Verdicts {
		m.filtered[v] = filtered.WithLabelValues(v.String())
	}
	return m
}

// ObserveRequest records the duration of an answered or refused call.
func (m *Metrics) ObserveRequest(verb string, d time.Duration) {
	if o, ok := m.latency[verb]; ok {
		o.Observe(d.Seconds())
	}
}

// RequestError counts a refused call.
func (m *Metrics) RequestError(verb, reason string) {
	if c, ok := m.errors[verb][reason]; ok {
		c.Inc()
	}
}

// Filtered counts n nodes rejected by verdict v.
func (m *Metrics) Filtered(v scoring.Verdict, n int) {
	if c, ok := m.filtered[v]; ok && n > 0 {
		c.Add(float64(n))
	}
}

var (
	twinsDesc = prometheus.NewDesc("joulie_extender_twins",
		"NodeTwins in the extender's cache, by freshness: stale ones are older than TWIN_STALENESS_THRESHOLD or undated, and score a neutral 50.",
		[]string{"freshness"}, nil)
	oldestDesc = prometheus.NewDesc("joulie_extender_twin_oldest_age_seconds",
		"Age of the oldest dated NodeTwin in the cache; 0 when there is none.",
		nil, nil)
	syncedDesc = prometheus.NewDesc("joulie_extender_cache_synced",
		"1 once the cache has listed NodeTwins, NodeHardware and Nodes, 0 before.",
		nil, nil)
	knownDesc = prometheus.NewDesc("joulie_extender_known_nodes",
		"Nodes with a NodeTwin, a NodeHardware or a Joulie label in the cache.",
		nil, nil)
	infoDesc = prometheus.NewDesc("joulie_extender_build_info",
		"Constant 1, labelled with the extender's version.",
		[]string{"version"}, nil)
)

// freshness reads the snapshot at scrape time.
type freshness struct {
	snapshot  func() *state.Snapshot
	staleness time.Duration
	now       func() time.Time
}

func (f *freshness) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{twinsDesc, oldestDesc, syncedDesc, knownDesc, infoDesc} {
		ch <- d
	}
}

func (f *freshness) Collect(ch chan<- prometheus.Metric) {
	s := f.snapshot()
	now := f.now()
	var fresh, stale int
	var oldest time.Duration
	for _, n := range s.Nodes() {
		if n.Twin == nil {
			continue
		}
		if n.Twin.Stale(now, f.staleness) {
			stale++
		} else {
			fresh++
		}
		if !n.Twin.LastUpdated.IsZero() {
			oldest = max(oldest, now.Sub(n.Twin.LastUpdated))
		}
	}
	synced := 0.0
	if s.Synced {
		synced = 1
	}
	ch <- prometheus.MustNewConstMetric(twinsDesc, prometheus.GaugeValue, float64(fresh), "fresh")
	ch <- prometheus.MustNewConstMetric(twinsDesc, prometheus.GaugeValue, float64(stale), "stale")
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, oldest.Seconds())
	ch <- prometheus.MustNewConstMetric(syncedDesc, prometheus.GaugeValue, synced)
	ch <- prometheus.MustNewConstMetric(knownDesc, prometheus.GaugeValue, float64(len(s.Nodes())))
	ch <- prometheus.MustNewConstMetric(infoDesc, prometheus.GaugeValue, 1, version.Version)
}
