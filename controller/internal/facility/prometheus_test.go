package facility

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixtureExporter is a data center's facility exporter: the three metrics
// of the operator seed in the Prometheus text format, set by the test,
// served on /metrics until the test takes it down. One lock covers the
// three values, so that no scrape sees half of an update.
type fixtureExporter struct {
	srv *httptest.Server

	mu                   sync.Mutex
	tempC, itW, coolingW float64
	down                 bool
}

func newFixtureExporter(t *testing.T) *fixtureExporter {
	t.Helper()
	e := &fixtureExporter{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.down {
			http.Error(w, "exporter down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		for _, m := range []struct {
			name, help string
			v          float64
		}{
			{DefaultAmbientTempMetric, "Data hall ambient temperature.", e.tempC},
			{DefaultITPowerMetric, "IT load measured at the PDUs.", e.itW},
			{DefaultCoolingMetric, "Power drawn by the cooling plant.", e.coolingW},
		} {
			fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %g\n", m.name, m.help, m.name, m.name, m.v)
		}
		// Two nodes' power, per component, as a Kepler-like exporter
		// would label it.
		fmt.Fprintf(w, "# HELP test_node_power_watts Node power by component.\n# TYPE test_node_power_watts gauge\n")
		for _, s := range []string{`node_name="gpu-1",component="cpu"} 400`, `node_name="gpu-1",component="gpu"} 2400`, `node_name="cpu-1",component="cpu"} 350`} {
			fmt.Fprintf(w, "test_node_power_watts{%s\n", s)
		}
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *fixtureExporter) set(tempC, itW, coolingW float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tempC, e.itW, e.coolingW = tempC, itW, coolingW
}

func (e *fixtureExporter) setDown(down bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.down = down
}

// promServer is a Prometheus server process of the test's own.
type promServer struct {
	url    string
	logs   string
	cmd    *exec.Cmd
	exited chan struct{}
	once   sync.Once
}

// startPrometheus runs bin scraping target every second, and returns once
// Prometheus says it is ready. It is killed when the test ends, and its
// log is printed if the test failed.
func startPrometheus(t *testing.T, bin, target string) *promServer {
	t.Helper()
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: facility
    static_configs:
      - targets: [%q]
`, strings.TrimPrefix(target, "http://"))
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()

	s := &promServer{url: "http://" + addr, logs: logPath, exited: make(chan struct{})}
	s.cmd = exec.Command(bin,
		"--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
	)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = killWithParent()
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("prometheus log:\n%s", b)
		}
	})

	ready := s.url + "/-/ready"
	err = waitFor(15*time.Second, s.exited, func() error {
		resp, err := http.Get(ready)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: HTTP %d", ready, resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("prometheus not ready: %v", err)
	}
	return s
}

// stop kills Prometheus and waits until it is gone, so that its port is
// closed when stop returns.
func (s *promServer) stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitFor calls try until it succeeds, the time is up, or exited closes
// (the process under test died, so waiting longer is pointless).
func waitFor(limit time.Duration, exited <-chan struct{}, try func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := try()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still failing after %v: %w", limit, err)
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited; last error: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestAgainstARealPrometheus runs Debian's Prometheus server scraping a
// fixture exporter every second, and follows the poller through what an
// operator meets: values arriving and changing, the exporter failing (the
// next failed scrape marks its series stale, so the instant query comes
// back empty at once rather than repeating the last sample for the 5-minute
// lookback), and Prometheus itself going away.
func TestAgainstARealPrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("this test runs a real Prometheus server and none is installed (%v): run `make deps`, which installs Debian's prometheus package", err)
	}
	exp := newFixtureExporter(t)
	exp.set(24.5, 100000, 30000)
	prom := startPrometheus(t, bin, exp.srv.URL)
	p := newTestPoller(t, prom.url, nil)
	ctx := context.Background()

	// Until the first scrape lands the queries come back empty.
	if err := waitFor(15*time.Second, prom.exited, func() error { return p.Poll(ctx) }); err != nil {
		t.Fatalf("no facility data from Prometheus: %v", err)
	}
	r := p.Latest()
	wantReading(t, r, 24.5, 100000, 30000, 1.3)
	if !r.Healthy {
		t.Errorf("unhealthy after a good poll: %s", r.Err)
	}

	// Per-node power through a real PromQL aggregation.
	np, err := NewNodePower(p.cfg, "sum by (node_name) (test_node_power_watts)", "node_name", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := np.Poll(ctx); err != nil {
		t.Fatalf("node power: %v", err)
	}
	if got := np.Latest(); got["gpu-1"].Watts != 2800 || got["cpu-1"].Watts != 350 || len(got) != 2 || got["gpu-1"].Time.IsZero() {
		t.Errorf("node power %+v, want gpu-1 2800 W and cpu-1 350 W", got)
	}

	exp.set(26, 120000, 30000)
	err = waitFor(10*time.Second, prom.exited, func() error {
		if err := p.Poll(ctx); err != nil {
			return err
		}
		// Each figure is its own instant query, so a scrape can land
		// between two of them: wait for both changed figures, not one
		// (the ambient temperature once lagged the IT power under load).
		if l := p.Latest(); val(l.ITPowerW) != 120000 || val(l.AmbientTempC) != 26 {
			return fmt.Errorf("IT power %g and ambient %g °C, not yet the new 120000 W and 26 °C", val(l.ITPowerW), val(l.AmbientTempC))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("new values did not come through: %v", err)
	}
	wantReading(t, p.Latest(), 26, 120000, 30000, 1.25)
	goodTime := p.Latest().Time
	logsBefore := len(p.logs.String())

	// The exporter fails its scrapes: Prometheus writes staleness markers
	// and the series drop out of instant queries. Until the next scrape
	// the last samples are still current, and polls still succeed.
	exp.setDown(true)
	err = waitFor(10*time.Second, prom.exited, func() error {
		err := p.Poll(ctx)
		if err == nil {
			goodTime = p.Latest().Time
			return errors.New("Prometheus still returns the exporter's series")
		}
		if n := strings.Count(err.Error(), errNoData.Error()); n != numSignals {
			return fmt.Errorf("%d of %d queries empty: %w", n, numSignals, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("series of a failing target never went stale: %v", err)
	}
	r = p.Latest()
	wantReading(t, r, 26, 120000, 30000, 1.25)
	if r.Healthy || !r.Time.Equal(goodTime) || !strings.Contains(r.Err, "empty vector") {
		t.Errorf("with the exporter down: healthy %v, time %v (last good %v), err %q", r.Healthy, r.Time, goodTime, r.Err)
	}
	p.wantMetrics(t, helpUp+"joulie_facility_up 0\n"+fillValues("26", "30000", "120000", "1.25"),
		append([]string{"joulie_facility_up"}, valueNames...)...)

	// Prometheus itself goes away.
	prom.stop()
	err = p.Poll(ctx)
	if err == nil || !strings.Contains(err.Error(), "server unreachable") || !strings.Contains(err.Error(), prom.url) {
		t.Fatalf("with Prometheus gone: got %v, want an error saying %s is unreachable", err, prom.url)
	}
	r = p.Latest()
	wantReading(t, r, 26, 120000, 30000, 1.25)
	if r.Healthy || !r.Time.Equal(goodTime) {
		t.Errorf("with Prometheus gone: healthy %v, time %v (last good %v)", r.Healthy, r.Time, goodTime)
	}
	p.wantMetrics(t, helpUp+"joulie_facility_up 0\n"+fillValues("26", "30000", "120000", "1.25"),
		append([]string{"joulie_facility_up"}, valueNames...)...)
	// The startup (no scrape yet) had its own warning; the outage that went
	// from stale series to no Prometheus at all is one more.
	if outage := p.logs.String()[logsBefore:]; strings.Count(outage, "level=WARN") != 1 {
		t.Errorf("want one warning over one outage that changed cause:\n%s", outage)
	}
}
