package facility

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeProm answers /api/v1/query the way Prometheus does, with one
// handler per query expression that a test can swap between polls.
type fakeProm struct {
	srv      *httptest.Server
	requests atomic.Int64

	mu       sync.Mutex
	answers  map[string]http.HandlerFunc
	lastArgs map[string]string // query → timeout parameter
}

func newFakeProm(t *testing.T, prefix string) *fakeProm {
	t.Helper()
	f := &fakeProm{answers: map[string]http.HandlerFunc{}, lastArgs: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+prefix+"/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		q := r.URL.Query().Get("query")
		f.mu.Lock()
		h, ok := f.answers[q]
		f.lastArgs[q] = r.URL.Query().Get("timeout")
		f.mu.Unlock()
		if !ok {
			http.Error(w, `{"status":"error","errorType":"bad_data","error":"no fake answer for this query"}`, http.StatusBadRequest)
			return
		}
		h(w, r)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProm) set(expr string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[expr] = h
}

// setAll answers the three default queries with one value each.
func (f *fakeProm) setAll(tempC, itW, coolingW float64) {
	f.set(DefaultAmbientTempMetric, answer(vectorAnswer(one(DefaultAmbientTempMetric, tempC))))
	f.set(DefaultITPowerMetric, answer(vectorAnswer(one(DefaultITPowerMetric, itW))))
	f.set(DefaultCoolingMetric, answer(vectorAnswer(one(DefaultCoolingMetric, coolingW))))
}

func answer(body []byte) http.HandlerFunc {
	return status(http.StatusOK, string(body))
}

func status(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

// hang answers only after the client has given up.
func hang(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
	status(http.StatusOK, `{"status":"success","data":{"resultType":"vector","result":[]}}`)(w, r)
}

type testPoller struct {
	*Poller
	reg  *prometheus.Registry
	logs *syncBuffer
}

// syncBuffer is a log sink that the race detector accepts reading from
// while the poller writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newTestPoller(t *testing.T, url string, edit func(*Config)) testPoller {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled = true
	cfg.PrometheusURL = url
	cfg.Timeout = 2 * time.Second
	if edit != nil {
		edit(&cfg)
	}
	reg := prometheus.NewPedanticRegistry()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p, err := New(cfg, reg, log)
	if err != nil {
		t.Fatal(err)
	}
	return testPoller{p, reg, logs}
}

func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// wantReading compares the values of a reading; NaN stands for "never
// known" (nil).
func wantReading(t *testing.T, r Reading, tempC, itW, coolingW, pue float64) {
	t.Helper()
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"ambient temperature", val(r.AmbientTempC), tempC}, {"IT power", val(r.ITPowerW), itW},
		{"cooling power", val(r.CoolingPowerW), coolingW}, {"PUE", val(r.PUE), pue}} {
		if !sameFloat(c.got, c.want) && math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s: got %g, want %g", c.name, c.got, c.want)
		}
	}
}

func (tp testPoller) wantMetrics(t *testing.T, text string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(tp.reg, strings.NewReader(text), names...); err != nil {
		t.Error(err)
	}
}

const (
	helpUp     = "# HELP joulie_facility_up 1 when the last facility poll read every signal from Prometheus, 0 otherwise.\n# TYPE joulie_facility_up gauge\n"
	helpErrors = "# HELP joulie_facility_poll_errors_total Facility queries that failed (Prometheus unreachable, an error answer, no data, an unusable value), by query.\n# TYPE joulie_facility_poll_errors_total counter\n"
	helpValues = `# HELP joulie_facility_ambient_temperature_celsius Last good facility ambient temperature (the hottest series), in degrees Celsius.
# TYPE joulie_facility_ambient_temperature_celsius gauge
joulie_facility_ambient_temperature_celsius %s
# HELP joulie_facility_cooling_power_watts Last good facility cooling power, in watts.
# TYPE joulie_facility_cooling_power_watts gauge
joulie_facility_cooling_power_watts %s
# HELP joulie_facility_it_power_watts Last good facility IT power, in watts.
# TYPE joulie_facility_it_power_watts gauge
joulie_facility_it_power_watts %s
# HELP joulie_facility_pue Last good power usage effectiveness, (IT + cooling) / IT.
# TYPE joulie_facility_pue gauge
joulie_facility_pue %s
`
)

var valueNames = []string{"joulie_facility_ambient_temperature_celsius", "joulie_facility_cooling_power_watts",
	"joulie_facility_it_power_watts", "joulie_facility_pue"}

func errorsText(temp, it, cooling int) string {
	return helpErrors + strings.NewReplacer("T", strconv.Itoa(temp), "I", strconv.Itoa(it), "C", strconv.Itoa(cooling)).Replace(
		"joulie_facility_poll_errors_total{query=\"ambient_temperature\"} T\n"+
			"joulie_facility_poll_errors_total{query=\"cooling_power\"} C\n"+
			"joulie_facility_poll_errors_total{query=\"it_power\"} I\n")
}

func TestPollReadsEverySignalAndComputesPUE(t *testing.T) {
	f := newFakeProm(t, "")
	f.setAll(24.5, 100000, 30000)
	p := newTestPoller(t, f.srv.URL, nil)

	before := time.Now()
	if err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := p.Latest()
	wantReading(t, r, 24.5, 100000, 30000, 1.3)
	if !r.Healthy || r.Err != "" {
		t.Errorf("healthy %v, err %q after a clean poll", r.Healthy, r.Err)
	}
	if r.Time.Before(before) || r.Time.After(time.Now()) {
		t.Errorf("time of the reading %v is not the poll's", r.Time)
	}
	p.wantMetrics(t, helpUp+"joulie_facility_up 1\n"+errorsText(0, 0, 0)+
		fillValues("24.5", "30000", "100000", "1.3"),
		append([]string{"joulie_facility_up", "joulie_facility_poll_errors_total"}, valueNames...)...)

	got := testutil.ToFloat64(gaugeOf(t, p.reg, "joulie_facility_last_success_timestamp_seconds"))
	if want := float64(r.Time.UnixNano()) / 1e9; got != want {
		t.Errorf("last success timestamp %v, want %v", got, want)
	}
	if !strings.Contains(p.logs.String(), `msg="facility metrics: first reading"`) {
		t.Errorf("no log line for the first reading:\n%s", p.logs)
	}
}

// fillValues is the exposition of the four value gauges, in the
// registry's (alphabetical) order.
func fillValues(temp, cooling, it, pue string) string {
	return fmt.Sprintf(helpValues, temp, cooling, it, pue)
}

// gaugeOf finds one gathered gauge and wraps it so that testutil.ToFloat64
// reads it.
func gaugeOf(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "copy"})
			g.Set(mf.GetMetric()[0].GetGauge().GetValue())
			return g
		}
	}
	t.Fatalf("%s not gathered", name)
	return nil
}

func TestAQueryThatFailsKeepsItsLastGoodValue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  http.HandlerFunc
		timeout time.Duration
		wantErr string
	}{
		{"error status", status(http.StatusBadRequest, `{"status":"error","errorType":"bad_data","error":"1:10: parse error: unexpected end of input"}`),
			0, `it_power (query "datacenter_it_power_watts"): HTTP 400: bad_data: 1:10: parse error`},
		{"error status with 200", answer([]byte(`{"status":"error","errorType":"execution","error":"query processing would load too many samples"}`)),
			0, "query refused: execution: query processing would load too many samples"},
		{"empty vector", answer([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`)),
			0, "no data: the query returned an empty vector"},
		{"HTTP 500", status(http.StatusInternalServerError, "internal error\n"),
			0, "HTTP 500: internal error"},
		{"HTTP 503 without a body", status(http.StatusServiceUnavailable, ""),
			0, "HTTP 503"},
		{"garbage JSON", answer([]byte(`{"status":"success","data":{"resultType":"vec`)),
			0, "not a Prometheus API answer"},
		{"matrix", answer([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`)),
			0, `result type "matrix", want a vector`},
		{"NaN", answer(vectorAnswer(one(DefaultITPowerMetric, math.NaN()))),
			0, "value NaN is not a usable number"},
		{"negative", answer(vectorAnswer(one(DefaultITPowerMetric, -1))),
			0, "IT power must be positive"},
		{"slower than the timeout", hang, 200 * time.Millisecond, "no answer within 200ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeProm(t, "")
			f.setAll(24.5, 100000, 30000)
			p := newTestPoller(t, f.srv.URL, func(c *Config) {
				if tc.timeout > 0 {
					c.Timeout = tc.timeout
				}
			})
			if err := p.Poll(context.Background()); err != nil {
				t.Fatal(err)
			}
			good := p.Latest()

			// The other signals move on while IT power fails.
			f.setAll(26, 0, 35000)
			f.set(DefaultITPowerMetric, tc.answer)
			start := time.Now()
			err := p.Poll(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("poll error %v, want one saying %q", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), "it_power") || strings.Contains(err.Error(), "cooling_power") {
				t.Errorf("error %q should name it_power and only it", err)
			}
			if tc.timeout > 0 && time.Since(start) > 5*tc.timeout {
				t.Errorf("poll took %v with a %v timeout", time.Since(start), tc.timeout)
			}
			r := p.Latest()
			// PUE keeps its last value: cooling alone moved.
			wantReading(t, r, 26, 100000, 35000, 1.3)
			if r.Healthy || r.Err != err.Error() {
				t.Errorf("healthy %v, err %q; want false, %q", r.Healthy, r.Err, err)
			}
			if !r.Time.Equal(good.Time) {
				t.Errorf("time moved from %v to %v without a full success", good.Time, r.Time)
			}
			p.wantMetrics(t, helpUp+"joulie_facility_up 0\n"+errorsText(0, 1, 0)+
				fillValues("26", "35000", "100000", "1.3"),
				append([]string{"joulie_facility_up", "joulie_facility_poll_errors_total"}, valueNames...)...)
			if got := testutil.ToFloat64(gaugeOf(t, p.reg, "joulie_facility_last_success_timestamp_seconds")); got != float64(good.Time.UnixNano())/1e9 {
				t.Errorf("last success timestamp moved to %v", got)
			}
		})
	}
}

func TestPrometheusDownKeepsEveryValue(t *testing.T) {
	f := newFakeProm(t, "")
	f.setAll(24.5, 100000, 30000)
	p := newTestPoller(t, f.srv.URL, nil)
	if err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.srv.Close()

	err := p.Poll(context.Background())
	if err == nil {
		t.Fatal("poll of a closed server succeeded")
	}
	for _, want := range []string{"facility poll of Prometheus at " + f.srv.URL, "ambient_temperature", "it_power", "cooling_power", "server unreachable", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	wantReading(t, p.Latest(), 24.5, 100000, 30000, 1.3)
	p.wantMetrics(t, helpUp+"joulie_facility_up 0\n"+errorsText(1, 1, 1), "joulie_facility_up", "joulie_facility_poll_errors_total")
}

// A PUE from an IT reading and a cooling reading of different rounds
// could be far off; it waits for a round with both.
func TestPUEMovesOnlyWithBothPowers(t *testing.T) {
	f := newFakeProm(t, "")
	f.setAll(24.5, 100000, 30000)
	p := newTestPoller(t, f.srv.URL, nil)
	if err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.setAll(24.5, 200000, 30000)
	f.set(DefaultCoolingMetric, status(http.StatusInternalServerError, "boom"))
	if err := p.Poll(context.Background()); err == nil {
		t.Fatal("want an error for cooling power")
	}
	wantReading(t, p.Latest(), 24.5, 200000, 30000, 1.3)

	f.setAll(24.5, 200000, 40000)
	if err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantReading(t, p.Latest(), 24.5, 200000, 40000, 1.2)
}

func TestSeveralSeriesAreCombined(t *testing.T) {
	f := newFakeProm(t, "")
	series := func(name string, vals ...float64) []sample {
		out := make([]sample, len(vals))
		for i, v := range vals {
			out[i] = sample{labels: map[string]string{"__name__": name, "instance": strconv.Itoa(i)}, value: v}
		}
		return out
	}
	f.set(DefaultAmbientTempMetric, answer(vectorAnswer(series(DefaultAmbientTempMetric, 22, 29, 25)...)))
	f.set(DefaultITPowerMetric, answer(vectorAnswer(series(DefaultITPowerMetric, 50000, 30000, 20000)...)))
	f.set(DefaultCoolingMetric, answer(vectorAnswer(series(DefaultCoolingMetric, 10000, 15000)...)))
	p := newTestPoller(t, f.srv.URL, nil)
	if err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantReading(t, p.Latest(), 29, 100000, 25000, 1.25)
}

func TestNothingReadYetExportsNoValues(t *testing.T) {
	f := newFakeProm(t, "")
	empty := answer([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	for _, q := range []string{DefaultAmbientTempMetric, DefaultITPowerMetric, DefaultCoolingMetric} {
		f.set(q, empty)
	}
	p := newTestPoller(t, f.srv.URL, nil)
	err := p.Poll(context.Background())
	if err == nil {
		t.Fatal("poll with no data succeeded")
	}
	if !errors.Is(err, errNoData) {
		t.Errorf("errors.Is(%v, errNoData) is false", err)
	}
	r := p.Latest()
	if r.AmbientTempC != nil || r.ITPowerW != nil || r.CoolingPowerW != nil || r.PUE != nil || !r.Time.IsZero() {
		t.Errorf("reading %+v has values that were never read", r)
	}
	// No gauge pretends 0 °C or a PUE of 0, and no timestamp of 1970.
	p.wantMetrics(t, helpUp+"joulie_facility_up 0\n"+errorsText(1, 1, 1),
		append([]string{"joulie_facility_up", "joulie_facility_poll_errors_total", "joulie_facility_last_success_timestamp_seconds"}, valueNames...)...)
	if !strings.Contains(p.logs.String(), `lastSuccess=never`) {
		t.Errorf("warning should say there never was a good value:\n%s", p.logs)
	}
}

func TestLogsOnlyWhenTheStateChanges(t *testing.T) {
	f := newFakeProm(t, "")
	f.setAll(24.5, 100000, 30000)
	p := newTestPoller(t, f.srv.URL, nil)
	poll := func() { _ = p.Poll(context.Background()) }

	poll()
	f.set(DefaultITPowerMetric, status(http.StatusBadGateway, "bad gateway"))
	poll()
	poll()
	poll()
	f.setAll(24.5, 100000, 30000)
	poll()
	poll()

	logs := p.logs.String()
	if n := strings.Count(logs, "level=WARN"); n != 1 {
		t.Errorf("%d warnings for one outage, want 1:\n%s", n, logs)
	}
	if n := strings.Count(logs, "facility metrics available again"); n != 1 {
		t.Errorf("%d recovery lines, want 1:\n%s", n, logs)
	}
	warn := logs[strings.Index(logs, "level=WARN"):]
	warn = warn[:strings.IndexByte(warn, '\n')]
	for _, want := range []string{"prometheus=" + f.srv.URL, "failed=it_power", "keeping the last good values", "HTTP 502"} {
		if !strings.Contains(warn, want) {
			t.Errorf("warning %q does not say %q", warn, want)
		}
	}
}

func TestMetricsPassLint(t *testing.T) {
	f := newFakeProm(t, "")
	f.setAll(24.5, 100000, 30000)
	p := newTestPoller(t, f.srv.URL, nil)
	for _, stage := range []string{"before the first poll", "after a good poll", "after a failed poll"} {
		switch stage {
		case "after a good poll":
			_ = p.Poll(context.Background())
		case "after a failed poll":
			f.srv.Close()
			_ = p.Poll(context.Background())
		}
		problems, err := testutil.GatherAndLint(p.reg)
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		for _, pr := range problems {
			t.Errorf("%s: lint: %s: %s", stage, pr.Metric, pr.Text)
		}
	}
}

func TestRunPollsAtOnceThenEveryIntervalUntilCancelled(t *testing.T) {
	f := newFakeProm(t, "")
	f.setAll(24.5, 100000, 30000)
	p := newTestPoller(t, f.srv.URL, func(c *Config) { c.Interval = 20 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()

	// Readers while the poller writes: the race detector's part.
	deadline := time.Now().Add(10 * time.Second)
	for f.requests.Load() < 3*5 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d queries in 10s at a 20ms interval", f.requests.Load())
		}
		_ = p.Latest()
		if _, err := p.reg.Gather(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	wantReading(t, p.Latest(), 24.5, 100000, 30000, 1.3)
}

func TestRunPollsBeforeTheFirstTick(t *testing.T) {
	f := newFakeProm(t, "")
	f.setAll(24.5, 100000, 30000)
	p := newTestPoller(t, f.srv.URL, func(c *Config) { c.Interval = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for !p.Latest().Healthy {
		if time.Now().After(deadline) {
			t.Fatal("no poll within 10s with an hourly interval: Run waited for the first tick")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Shutting the controller down is not a Prometheus outage.
func TestCancelledPollChangesNothing(t *testing.T) {
	f := newFakeProm(t, "")
	f.setAll(24.5, 100000, 30000)
	p := newTestPoller(t, f.srv.URL, nil)
	if err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.set(DefaultITPowerMetric, hang)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	err := p.Poll(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if r := p.Latest(); !r.Healthy {
		t.Errorf("a cancelled poll marked the poller unhealthy: %q", r.Err)
	}
	p.wantMetrics(t, helpUp+"joulie_facility_up 1\n"+errorsText(0, 0, 0), "joulie_facility_up", "joulie_facility_poll_errors_total")
	if strings.Contains(p.logs.String(), "level=WARN") {
		t.Errorf("a cancelled poll logged a warning:\n%s", p.logs)
	}
}

// Prometheus behind a proxy lives under a path; the query's timeout goes
// to Prometheus too, so that it stops evaluating when the poller gives up.
func TestQueryUsesThePathPrefixAndPassesTheTimeout(t *testing.T) {
	f := newFakeProm(t, "/prom")
	f.setAll(24.5, 100000, 30000)
	p := newTestPoller(t, f.srv.URL+"/prom/", func(c *Config) { c.Timeout = 1500 * time.Millisecond })
	if err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if got := f.lastArgs[DefaultITPowerMetric]; got != "1.5" {
		t.Errorf("timeout parameter %q, want 1.5 (seconds)", got)
	}
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PrometheusURL = ""
	if _, err := New(cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "facility.prometheusURL: is empty") {
		t.Errorf("empty URL: got %v", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := New(DefaultConfig(), reg, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := New(DefaultConfig(), reg, nil); err == nil || !strings.Contains(err.Error(), "register facility metrics") {
		t.Errorf("second poller on one registry: got %v", err)
	}
}
