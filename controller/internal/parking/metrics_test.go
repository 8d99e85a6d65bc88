package parking

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func TestMetricsCountParksWakesAndStates(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	f.ctrl.opts.Metrics = NewMetrics(reg)
	ctx := context.Background()
	parking := parkableNode("parking", true)
	woken := parkableNode("woken", true) // Ready: it is back
	failing := parkableNode("failing", true)
	failing.Status.Conditions[0].Status = corev1.ConditionUnknown
	for _, n := range []*corev1.Node{parking, woken, failing} {
		if _, err := f.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wp := profile("woken", joulie.PowerWaking, t0.Add(-90*time.Second))
	wp.Spec.WakeAttempts = 1
	fp := profile("failing", joulie.PowerWaking, t0.Add(-time.Hour))
	fp.Spec.WakeAttempts = 3
	fp.Status.PowerState = joulie.PowerParked
	f.cache(t, parking, woken, failing, profile("parking", joulie.PowerParking, t0.Add(-time.Minute)), wp, fp, renewed(woken, t0))
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	m := f.ctrl.opts.Metrics
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
	for name, c := range map[string]struct {
		got, want float64
	}{
		"parks":         {testutil.ToFloat64(m.Parks), 1},
		"wake failures": {testutil.ToFloat64(m.WakeFailures), 1},
		"parked nodes":  {testutil.ToFloat64(m.Nodes.WithLabelValues("parked")), 1},
		"awake nodes":   {testutil.ToFloat64(m.Nodes.WithLabelValues("awake")), 1},
		"failed nodes":  {testutil.ToFloat64(m.Nodes.WithLabelValues("wake-failed")), 1},
		"waking nodes":  {testutil.ToFloat64(m.Nodes.WithLabelValues("waking")), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s %v, want %v", name, c.got, c.want)
		}
	}
	var h dto.Metric
	if err := m.WakeLatency.Write(&h); err != nil {
		t.Fatal(err)
	}
	if h.Histogram.GetSampleCount() != 1 || h.Histogram.GetSampleSum() != 90 {
		t.Errorf("wake latency %d samples summing to %v s, want one of 90 s", h.Histogram.GetSampleCount(), h.Histogram.GetSampleSum())
	}
}

// Every parking metric is on the chart's Grafana dashboard, so a metric
// added here is not left out of where operators look.
func TestDashboardShowsEveryParkingMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	dashboard, err := os.ReadFile(filepath.Join("..", "..", "..", "packaging", "helm", "joulie", "files", "joulie-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 10 {
		t.Errorf("%d metric families registered, want the 10 this test was written for", len(families))
	}
	for _, f := range families {
		name := f.GetName()
		if f.GetType() == dto.MetricType_HISTOGRAM {
			name += "_bucket"
		}
		if !strings.Contains(string(dashboard), name) {
			t.Errorf("the dashboard does not query %s", name)
		}
	}
}
