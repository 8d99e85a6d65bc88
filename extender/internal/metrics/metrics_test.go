package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"joulie.io/joulie/extender/internal/state"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/scoring"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func snapshot() *state.Snapshot {
	tw := func(name string, age time.Duration) *joulie.NodeTwin {
		t := &joulie.NodeTwin{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: joulie.NodeTwinStatus{SchedulableClass: joulie.ClassEco}}
		if age >= 0 {
			t.Status.LastUpdated = metav1.NewTime(now.Add(-age))
		}
		return t
	}
	return state.Build([]*joulie.NodeTwin{tw("a", time.Minute), tw("b", 10*time.Minute), tw("c", -1)}, nil,
		[]*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "d", Labels: map[string]string{joulie.LabelPowerProfile: "eco"}}}},
		nil, true)
}

func newMetrics(t *testing.T) (*prometheus.Registry, *Metrics) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m := New(reg, snapshot, 5*time.Minute, func() time.Time { return now }, func() int64 { return 12345 })
	return reg, m
}

func TestMetricsPassLint(t *testing.T) {
	reg, m := newMetrics(t)
	m.ObserveRequest(VerbFilter, time.Millisecond)
	m.RequestError(VerbPrioritize, ReasonDecode)
	m.Filtered(scoring.RejectTwinEco, 3)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

func TestScrapeTimeGauges(t *testing.T) {
	reg, _ := newMetrics(t)
	want := `
# HELP joulie_extender_cache_synced 1 once the cache has listed NodeTwins, NodeHardware and Nodes, 0 before.
# TYPE joulie_extender_cache_synced gauge
joulie_extender_cache_synced 1
# HELP joulie_extender_known_nodes Nodes with a NodeTwin, a NodeHardware or a Joulie label in the cache.
# TYPE joulie_extender_known_nodes gauge
joulie_extender_known_nodes 4
# HELP joulie_extender_twin_oldest_age_seconds Age of the oldest dated NodeTwin in the cache; 0 when there is none.
# TYPE joulie_extender_twin_oldest_age_seconds gauge
joulie_extender_twin_oldest_age_seconds 600
# HELP joulie_extender_twins NodeTwins in the extender's cache, by freshness: stale ones are older than TWIN_STALENESS_THRESHOLD or undated, and score a neutral 50.
# TYPE joulie_extender_twins gauge
joulie_extender_twins{freshness="fresh"} 1
joulie_extender_twins{freshness="stale"} 2
# HELP joulie_extender_inflight_bytes Memory the scheduler calls in flight hold (bodies, decoded nodes and pods, replies), counted against EXTENDER_MAX_INFLIGHT_BYTES.
# TYPE joulie_extender_inflight_bytes gauge
joulie_extender_inflight_bytes 12345
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"joulie_extender_cache_synced", "joulie_extender_known_nodes", "joulie_extender_twin_oldest_age_seconds", "joulie_extender_twins", "joulie_extender_inflight_bytes"); err != nil {
		t.Error(err)
	}
}

func TestRequestCounters(t *testing.T) {
	reg, m := newMetrics(t)
	m.Filtered(scoring.RejectLabelEco, 2)
	m.Filtered(scoring.RejectLabelEco, 1)
	m.Filtered(scoring.Admit, 5) // not a rejection: not counted
	m.RequestError(VerbFilter, ReasonTooLarge)
	m.RequestError("nonsense", ReasonTooLarge)
	m.ObserveRequest(VerbPrioritize, 300*time.Microsecond)
	m.ObserveRequest(VerbPrioritize, 2*time.Millisecond)

	if got := testutil.ToFloat64(m.filtered[scoring.RejectLabelEco]); got != 3 {
		t.Errorf("label_eco rejections %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.errors[VerbFilter][ReasonTooLarge]); got != 1 {
		t.Errorf("too_large errors %v, want 1", got)
	}
	// Every verb, reason and rejection shows from the start.
	n, err := testutil.GatherAndCount(reg, "joulie_extender_request_errors_total", "joulie_extender_filtered_nodes_total", "joulie_extender_request_duration_seconds")
	if err != nil {
		t.Fatal(err)
	}
	if want := len(verbs)*len(reasons) + len(scoring.Verdicts) + len(verbs); n != want {
		t.Errorf("%d series, want %d", n, want)
	}
}
