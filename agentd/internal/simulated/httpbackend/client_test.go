package httpbackend_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/simulated/httpbackend"
	"joulie.io/joulie/agentd/internal/simulated/httpbackend/httpbackendtest"
	"joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// h100Node is a two-socket node with two H100-like GPUs.
func h100Node() httpbackendtest.NodeSpec {
	gpu := func(uuid string) httpbackendtest.GPUSpec {
		return httpbackendtest.GPUSpec{UUID: uuid, Name: "NVIDIA H100 80GB HBM3", MinWatts: 200, MaxWatts: 700, DefaultWatts: 700, IdleWatts: 70}
	}
	return httpbackendtest.NodeSpec{
		CPU:        &httpbackendtest.CPUSpec{Packages: 2, MinWattsPerPackage: 90, MaxWattsPerPackage: 350, IdleWattsPerPackage: 60},
		GPUs:       []httpbackendtest.GPUSpec{gpu("GPU-aaaa"), gpu("GPU-bbbb")},
		OtherWatts: 150,
	}
}

// counter counts the requests that reach the wrapped handler, by route.
type counter struct {
	next                http.Handler
	telemetry, controls atomic.Int64
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/control") {
		c.controls.Add(1)
	} else {
		c.telemetry.Add(1)
	}
	c.next.ServeHTTP(w, r)
}

type fixture struct {
	sim    *httpbackendtest.Simulator
	count  *counter
	client *httpbackend.Client
}

// newFixture serves a simulator with node-a (and any extra nodes) on
// loopback and returns a client for node.
func newFixture(t *testing.T, node string, specs map[string]httpbackendtest.NodeSpec) *fixture {
	t.Helper()
	sim := httpbackendtest.New(nil)
	if specs == nil {
		specs = map[string]httpbackendtest.NodeSpec{"node-a": h100Node()}
	}
	for name, spec := range specs {
		if err := sim.AddNode(name, spec); err != nil {
			t.Fatal(err)
		}
	}
	count := &counter{next: sim}
	srv := httptest.NewServer(count)
	t.Cleanup(srv.Close)
	ep := httpbackend.Endpoint{URL: srv.URL, Timeout: 5 * time.Second}
	c, err := httpbackend.New(httpbackend.Config{Node: node, Telemetry: ep, Control: ep, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{sim: sim, count: count, client: c}
}

func (f *fixture) simState(t *testing.T, node string) *httpbackend.Telemetry {
	t.Helper()
	tel, ok := f.sim.Telemetry(node)
	if !ok {
		t.Fatalf("no node %s in the simulator", node)
	}
	return tel
}

func TestSetPackageCapRoundTrips(t *testing.T) {
	f := newFixture(t, "node-a", nil)
	ctx := t.Context()
	got, err := f.client.SetPackageCapWatts(ctx, 215.5)
	if err != nil || got != 215.5 {
		t.Fatalf("SetPackageCapWatts = %g, %v; want 215.5", got, err)
	}
	if c := f.simState(t, "node-a").CPU.CapWatts; c != 215.5 {
		t.Errorf("simulator holds %g W", c)
	}
	cpu, err := f.client.CPUPower(ctx)
	if err != nil || cpu.CapWatts != 215.5 || len(cpu.PackagePowerWatts) != 2 {
		t.Fatalf("CPUPower = %+v, %v", cpu, err)
	}
}

func TestSetPackageCapClampsToTheReportedRange(t *testing.T) {
	// The simulator refuses out-of-range limits, so success proves the
	// client clamped.
	cases := []struct {
		name      string
		in, want  float64
		wantError bool
	}{
		{"above max", 9999, 350, false},
		{"below min", 10, 90, false},
		{"negative", -5, 90, false},
		{"plus infinity", math.Inf(1), 350, false},
		{"minus infinity", math.Inf(-1), 90, false},
		{"NaN", math.NaN(), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "node-a", nil)
			got, err := f.client.SetPackageCapWatts(t.Context(), tc.in)
			if tc.wantError {
				if err == nil || f.count.controls.Load() != 0 {
					t.Fatalf("want an error and no request, got %g, %v", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %g, %v; want %g", got, err, tc.want)
			}
		})
	}
}

func TestSetThrottleRoundTripsAndLowersPower(t *testing.T) {
	f := newFixture(t, "node-a", nil)
	ctx := t.Context()
	if err := f.sim.SetLoad("node-a", 1, 0); err != nil {
		t.Fatal(err)
	}
	before, err := f.client.CPUPower(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.client.SetThrottlePct(ctx, 30)
	if err != nil || got != 30 {
		t.Fatalf("SetThrottlePct = %g, %v", got, err)
	}
	after, err := f.client.CPUPower(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.ThrottlePct != 30 || after.HottestPackageWatts() >= before.HottestPackageWatts() {
		t.Errorf("throttle 30%%: %g W -> %g W, throttle %g", before.HottestPackageWatts(), after.HottestPackageWatts(), after.ThrottlePct)
	}
	for in, want := range map[float64]float64{150: 100, -3: 0, math.Inf(1): 100} {
		if got, err := f.client.SetThrottlePct(ctx, in); err != nil || got != want {
			t.Errorf("SetThrottlePct(%g) = %g, %v; want %g", in, got, err, want)
		}
	}
	if _, err := f.client.SetThrottlePct(ctx, math.NaN()); err == nil {
		t.Error("NaN throttle accepted")
	}
}

func TestGPUCapperRoundTrips(t *testing.T) {
	f := newFixture(t, "node-a", nil)
	g := httpbackend.NewGPUCapper(f.client)
	if g.Name() != "http" {
		t.Errorf("Name = %q", g.Name())
	}
	gpus, err := g.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 2 || gpus[1].UUID != "GPU-bbbb" || gpus[1].MinWatts != 200 || gpus[1].MaxWatts != 700 ||
		gpus[1].DefaultWatts != 700 || gpus[1].CapWatts != 700 || !gpus[1].HasPower || !gpus[1].HasEnergy {
		t.Fatalf("GPUs = %+v", gpus)
	}
	got, err := g.SetCap(1, 420)
	if err != nil || got != 420 {
		t.Fatalf("SetCap(1, 420) = %g, %v", got, err)
	}
	st := f.simState(t, "node-a")
	if st.GPUs[1].CapWatts != 420 || st.GPUs[0].CapWatts != 700 {
		t.Errorf("simulator caps: %g %g", st.GPUs[0].CapWatts, st.GPUs[1].CapWatts)
	}
	if got, err := g.SetCap(0, 50); err != nil || got != 200 {
		t.Errorf("SetCap below range = %g, %v; want clamped to 200", got, err)
	}
	_, err = g.SetCap(5, 300)
	if err == nil || backend.IsBlocked(err) || !strings.Contains(err.Error(), "no GPU 5 (2 GPUs)") {
		t.Errorf("SetCap on a missing GPU: %v", err)
	}
}

func TestSetCapSkipsTheWriteWhenTheLimitIsInForce(t *testing.T) {
	f := newFixture(t, "node-a", nil)
	g := httpbackend.NewGPUCapper(f.client)
	if _, err := g.GPUs(); err != nil {
		t.Fatal(err)
	}
	// The default limit, 700 W, is in force: no control request.
	if got, err := g.SetCap(0, 700); err != nil || got != 700 {
		t.Fatalf("SetCap(0, 700) = %g, %v", got, err)
	}
	if _, err := g.SetCap(0, 420); err != nil {
		t.Fatal(err)
	}
	// The applied 420 W is folded into the reading, so repeating it
	// costs nothing either.
	if _, err := g.SetCap(0, 420); err != nil {
		t.Fatal(err)
	}
	if n, m := f.count.controls.Load(), f.count.telemetry.Load(); n != 1 || m != 1 {
		t.Errorf("%d control and %d telemetry requests, want 1 and 1", n, m)
	}
}

func TestWritesReadTelemetryAgainWhenTheReadingIsOld(t *testing.T) {
	f := newFixture(t, "node-a", nil)
	ctx := t.Context()
	// A client that never reuses readings reads before every write.
	c := newClientLike(t, f, httpbackend.Config{MaxTelemetryAge: -1})
	for range 3 {
		if _, err := c.SetGPUCap(ctx, 0, 300); err != nil {
			t.Fatal(err)
		}
	}
	if n, m := f.count.controls.Load(), f.count.telemetry.Load(); n != 1 || m != 3 {
		t.Errorf("%d control and %d telemetry requests, want 1 and 3", n, m)
	}
}

// newClientLike builds another client against f's server with cfg's
// tuning.
func newClientLike(t *testing.T, f *fixture, cfg httpbackend.Config) *httpbackend.Client {
	t.Helper()
	srv := httptest.NewServer(f.count)
	t.Cleanup(srv.Close)
	cfg.Node = f.client.Node()
	cfg.Telemetry = httpbackend.Endpoint{URL: srv.URL}
	cfg.Control = cfg.Telemetry
	cfg.HTTPClient = srv.Client()
	c, err := httpbackend.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestReadOnlyPackageLimitsAreBlocked(t *testing.T) {
	spec := h100Node()
	spec.CPU.ReadOnlyLimits = true
	f := newFixture(t, "epyc", map[string]httpbackendtest.NodeSpec{"epyc": spec})
	_, err := f.client.SetPackageCapWatts(t.Context(), 200)
	if !backend.IsBlocked(err) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("error = %v, want blocked (read-only)", err)
	}
	// The DVFS fallback still works.
	if _, err := f.client.SetThrottlePct(t.Context(), 20); err != nil {
		t.Fatal(err)
	}
}

func TestUnmodeledControlIsBlocked(t *testing.T) {
	spec := h100Node()
	spec.Unmodeled = []httpbackend.Action{httpbackend.ActionSetGPUCap}
	f := newFixture(t, "node-a", map[string]httpbackendtest.NodeSpec{"node-a": spec})
	_, err := httpbackend.NewGPUCapper(f.client).SetCap(0, 300)
	if !backend.IsBlocked(err) || !strings.Contains(err.Error(), "501 Not Implemented: node node-a does not model gpu.set_power_cap_watts") {
		t.Fatalf("error = %v, want blocked by 501", err)
	}
}

func TestPowerOffSwitchesOnlyTheNamedNodeOff(t *testing.T) {
	f := newFixture(t, "node-a", map[string]httpbackendtest.NodeSpec{"node-a": h100Node(), "node-b": h100Node()})
	if err := f.client.PowerOff(t.Context()); err != nil {
		t.Fatalf("PowerOff: %v", err)
	}
	if !f.sim.PoweredOff("node-a") || f.sim.PoweredOff("node-b") {
		t.Fatalf("after node-a's power-off: node-a off %v, node-b off %v; want only node-a off",
			f.sim.PoweredOff("node-a"), f.sim.PoweredOff("node-b"))
	}
	// A switched-off node takes no control until its simulator powers it
	// on, as a host that is off runs nothing.
	if _, err := f.client.SetPackageCapWatts(t.Context(), 200); err == nil || !strings.Contains(err.Error(), "switched off") {
		t.Fatalf("cap on a switched-off node: %v, want the simulator's refusal", err)
	}
	f.sim.PowerOn("node-a")
	if got, err := f.client.SetPackageCapWatts(t.Context(), 200); err != nil || got != 200 {
		t.Fatalf("cap after power-on = %g, %v", got, err)
	}
}

func TestPowerOffUnmodeledIsBlocked(t *testing.T) {
	spec := h100Node()
	spec.Unmodeled = []httpbackend.Action{httpbackend.ActionPowerOff}
	f := newFixture(t, "node-a", map[string]httpbackendtest.NodeSpec{"node-a": spec})
	err := f.client.PowerOff(t.Context())
	if !backend.IsBlocked(err) || !strings.Contains(err.Error(), "host.power_off") {
		t.Fatalf("error = %v, want blocked naming the action", err)
	}
	if f.sim.PoweredOff("node-a") {
		t.Fatal("a simulator that does not model power-off switched the node off")
	}
}

func TestNodeWithoutCPUModelBlocksCPUControls(t *testing.T) {
	spec := h100Node()
	spec.CPU = nil
	f := newFixture(t, "gpu-only", map[string]httpbackendtest.NodeSpec{"gpu-only": spec})
	if _, err := f.client.CPUPower(t.Context()); !backend.IsBlocked(err) {
		t.Errorf("CPUPower: %v, want blocked", err)
	}
	if _, err := f.client.SetPackageCapWatts(t.Context(), 200); !backend.IsBlocked(err) {
		t.Errorf("SetPackageCapWatts: %v, want blocked", err)
	}
	if _, err := f.client.SetThrottlePct(t.Context(), 20); !backend.IsBlocked(err) {
		t.Errorf("SetThrottlePct: %v, want blocked", err)
	}
}

func TestRestoreIsANoOp(t *testing.T) {
	f := newFixture(t, "node-a", nil)
	if err := httpbackend.NewGPUCapper(f.client).Restore("GPU-aaaa", "700"); err != nil {
		t.Fatal(err)
	}
	if n := f.count.controls.Load() + f.count.telemetry.Load(); n != 0 {
		t.Errorf("Restore sent %d requests", n)
	}
}

func TestNodeIsSubstitutedIntoTheURL(t *testing.T) {
	for _, tc := range []struct{ node, wantPath string }{
		{"node-a", "/nodes/node-a/"},
		{"odd name", "/nodes/odd%20name/"},
	} {
		t.Run(tc.node, func(t *testing.T) {
			sim := httpbackendtest.New(nil)
			if err := sim.AddNode(tc.node, h100Node()); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var seen []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Method+" "+r.URL.EscapedPath()+"?"+r.URL.RawQuery)
				mu.Unlock()
				sim.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			ep := httpbackend.Endpoint{URL: srv.URL + "/nodes/{node}/"}
			c, err := httpbackend.New(httpbackend.Config{Node: tc.node, Telemetry: ep, Control: ep, HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.SetGPUCap(t.Context(), 0, 400); err != nil {
				t.Fatal(err)
			}
			q := "node=" + strings.ReplaceAll(tc.node, " ", "+")
			want := []string{"GET " + tc.wantPath + "telemetry?" + q, "POST " + tc.wantPath + "control?"}
			mu.Lock()
			defer mu.Unlock()
			if strings.Join(seen, "\n") != strings.Join(want, "\n") {
				t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// stuck answers nothing until the client gives up. It reads the body
// first: only then does the server watch the connection and cancel the
// request's context when the client hangs up.
func stuck(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// stuckMidBody sends the status and part of a body, then stalls.
func stuckMidBody(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"apiVersion":`)
	w.(http.Flusher).Flush()
	stuck(w, r)
}

func TestSlowSimulatorTimesOut(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{"no answer": stuck, "stalled body": stuckMidBody} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			ep := httpbackend.Endpoint{URL: srv.URL, Timeout: 100 * time.Millisecond}
			c, err := httpbackend.New(httpbackend.Config{Node: "n1", Telemetry: ep, Control: ep, HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = c.Telemetry(t.Context())
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 100ms (timeout)") ||
				!strings.Contains(err.Error(), "telemetry from "+srv.URL) {
				t.Errorf("telemetry error = %v", err)
			}
			_, err = c.SetThrottlePct(t.Context(), 10)
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "dvfs.set_throttle_pct 10% for node n1 via "+srv.URL+"/control") {
				t.Errorf("control error = %v", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("two 100ms timeouts took %v", d)
			}
		})
	}
}

func TestCancelledContextAbandonsTheRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(stuck))
	t.Cleanup(srv.Close)
	ep := httpbackend.Endpoint{URL: srv.URL, Timeout: time.Minute}
	c, err := httpbackend.New(httpbackend.Config{Node: "n1", Telemetry: ep, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = c.Telemetry(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "abandoned") {
		t.Errorf("error = %v", err)
	}
}

// fixed answers every request with one status and body.
func fixed(status int, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}

func clientFor(t *testing.T, h http.Handler) (*httpbackend.Client, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ep := httpbackend.Endpoint{URL: srv.URL, Timeout: 5 * time.Second}
	c, err := httpbackend.New(httpbackend.Config{Node: "n1", Telemetry: ep, Control: ep, HTTPClient: srv.Client(), MaxTelemetryAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c, srv.URL
}

func TestStatusCodesMapToResults(t *testing.T) {
	const v1 = `"apiVersion":"joulie.io/http-backend/v1"`
	cases := []struct {
		name        string
		status      int
		body        string
		wantBlocked bool
		want        string
	}{
		{"501 is blocked", 501, `{` + v1 + `,"result":"blocked","message":"no throttle model"}`, true, "blocked: simulator answered 501 Not Implemented: no throttle model"},
		{"500 is an error", 500, `{` + v1 + `,"result":"error","message":"boom"}`, false, "simulator answered 500 Internal Server Error: boom"},
		{"503 from a proxy", 503, "<html>upstream\x1b[31m down</html>", false, `simulator answered 503 Service Unavailable: body "<html>upstream [31m down</html>"`},
		{"400 is an error", 400, `{` + v1 + `,"result":"error","message":"field pct: missing"}`, false, "simulator answered 400 Bad Request: field pct: missing"},
		{"404 without body", 404, ``, false, "simulator answered 404 Not Found: (empty body)"},
		{"200 blocked", 200, `{` + v1 + `,"result":"blocked","message":"read-only"}`, true, "blocked: read-only"},
		{"200 error", 200, `{` + v1 + `,"result":"error"}`, false, "simulator reports error: (no message)"},
		{"200 applied without value", 200, `{` + v1 + `,"result":"applied"}`, false, "result applied without appliedPct"},
		{"200 not JSON", 200, `OK`, false, "invalid JSON at byte 1"},
		{"204 no body", 204, ``, false, "empty body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, base := clientFor(t, fixed(tc.status, tc.body))
			_, err := c.SetThrottlePct(t.Context(), 10)
			if err == nil || backend.IsBlocked(err) != tc.wantBlocked || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), base+"/control") {
				t.Errorf("error = %v\nwant blocked=%v containing %q", err, tc.wantBlocked, tc.want)
			}
		})
	}
	t.Run("telemetry 501 is blocked", func(t *testing.T) {
		c, _ := clientFor(t, fixed(501, `{"message":"no telemetry here"}`))
		if _, err := c.Telemetry(t.Context()); !backend.IsBlocked(err) || !strings.Contains(err.Error(), "no telemetry here") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("telemetry 500 is an error", func(t *testing.T) {
		c, _ := clientFor(t, fixed(500, `boom`))
		if _, err := c.Telemetry(t.Context()); err == nil || backend.IsBlocked(err) {
			t.Errorf("error = %v", err)
		}
	})
}

func TestMalformedTelemetryGivesAClearError(t *testing.T) {
	const head = `{"apiVersion":"joulie.io/http-backend/v1","node":"n1","time":"2026-03-01T12:00:00Z"`
	gpu := func(i int, power string) string {
		idx := string(rune('0' + i))
		return `{"index":` + idx + `,"uuid":"G` + idx + `","powerWatts":` + power + `,"capWatts":300,"minWatts":100,"maxWatts":400}`
	}
	oversized := head + `,"gpus":[{"index":0,"uuid":"` + strings.Repeat("x", httpbackend.MaxBodyBytes) + `"}]}`
	cases := []struct{ name, body, want string }{
		{"gpu power not a number", head + `,"gpus":[` + gpu(0, "1") + `,` + gpu(1, "2") + `,` + gpu(2, `"3"`) + `]}`,
			"field gpus[2].powerWatts: not a number (got a string)"},
		{"truncated", head + `,"gpus":[` + gpu(0, "1"), "invalid JSON: truncated"},
		{"oversized", oversized, "is larger than 1048576 bytes"},
		{"HTML", "<!doctype html><title>oops</title>", "invalid JSON at byte 1"},
		{"two values", head + `}` + head + `}`, "more data after the value"},
		{"another node", `{"apiVersion":"joulie.io/http-backend/v1","node":"n2","time":"2026-03-01T12:00:00Z"}`, `answer is for node "n2", not "n1"`},
		{"another version", `{"apiVersion":"v0"}`, `field apiVersion: "v0" is not supported`},
		{"missing time", `{"apiVersion":"joulie.io/http-backend/v1","node":"n1"}`, "field time: missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, base := clientFor(t, fixed(200, tc.body))
			_, err := c.Telemetry(t.Context())
			prefix := "telemetry from " + base + "/telemetry?node=n1: "
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %.300v\nwant %q...%q", err, prefix, tc.want)
			}
			// A write depends on the reading and fails the same way.
			if _, err := c.SetGPUCap(t.Context(), 0, 300); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("SetGPUCap error = %.300v", err)
			}
		})
	}
}

func TestNewRefusesUnusableConfig(t *testing.T) {
	ok := httpbackend.Endpoint{URL: "http://sim:8080"}
	cases := []struct {
		name string
		cfg  httpbackend.Config
		want string
	}{
		{"no node", httpbackend.Config{Telemetry: ok}, "node name is empty"},
		{"no URL", httpbackend.Config{Node: "n1"}, "neither a telemetry nor a control URL"},
		{"bad scheme", httpbackend.Config{Node: "n1", Control: httpbackend.Endpoint{URL: "ftp://sim/{node}"}}, "ftp://sim/n1 must start with http:// or https://"},
		{"no host", httpbackend.Config{Node: "n1", Telemetry: httpbackend.Endpoint{URL: "http:///x"}}, "no host"},
		{"query", httpbackend.Config{Node: "n1", Telemetry: httpbackend.Endpoint{URL: "http://sim/?node={node}"}}, "must have no query or fragment"},
		{"password is redacted", httpbackend.Config{Node: "n1", Telemetry: httpbackend.Endpoint{URL: "http://u:secret@sim/#x"}}, "http://u:xxxxx@sim/#x"},
		{"unparsable", httpbackend.Config{Node: "n1", Telemetry: httpbackend.Endpoint{URL: "http://[::1"}}, "telemetry URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := httpbackend.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestHalfRoutedClientBlocksTheOtherHalf(t *testing.T) {
	c, err := httpbackend.New(httpbackend.Config{Node: "node-a", Control: httpbackend.Endpoint{URL: "http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Telemetry(t.Context()); !backend.IsBlocked(err) {
		t.Errorf("telemetry: %v, want blocked", err)
	}
	// Without telemetry there is no range to clamp to, so no write.
	if _, err := c.SetGPUCap(t.Context(), 0, 300); !backend.IsBlocked(err) {
		t.Errorf("SetGPUCap: %v, want blocked", err)
	}
}

func TestConfigForFollowsTheProfile(t *testing.T) {
	spec := &v1alpha1.TelemetryProfileSpec{
		Telemetry: &v1alpha1.Endpoint{Type: v1alpha1.EndpointHTTP, URL: "http://sim/{node}", Timeout: &metav1.Duration{Duration: 5 * time.Second}},
		Control:   &v1alpha1.Endpoint{Type: v1alpha1.EndpointHost},
	}
	cfg, ok := httpbackend.ConfigFor(spec, "n1")
	if !ok || cfg.Node != "n1" || cfg.Telemetry.URL != "http://sim/{node}" || cfg.Telemetry.Timeout != 5*time.Second || cfg.Control.URL != "" {
		t.Errorf("ConfigFor = %+v, %v", cfg, ok)
	}
	spec.Telemetry.Type = v1alpha1.EndpointHost
	if _, ok := httpbackend.ConfigFor(spec, "n1"); ok {
		t.Error("host-only profile routed over http")
	}
	if _, ok := httpbackend.ConfigFor(nil, "n1"); ok {
		t.Error("no profile routed over http")
	}
}

func TestConcurrentUseOfOneClient(t *testing.T) {
	f := newFixture(t, "node-a", nil)
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Go(func() {
			var err error
			switch i % 4 {
			case 0:
				_, err = f.client.SetGPUCap(ctx, 0, float64(300+i))
			case 1:
				_, err = f.client.SetGPUCap(ctx, 1, float64(300+i))
			case 2:
				_, err = f.client.SetPackageCapWatts(ctx, float64(100+i))
			case 3:
				var tel *httpbackend.Telemetry
				if tel, err = f.client.Telemetry(ctx); err == nil {
					tel.GPUs[0].CapWatts = -1 // the caller's copy
				}
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The simulator's telemetry is what the client decodes: the two halves
// agree on the wire format.
func TestSimulatorTelemetryDecodesStrictly(t *testing.T) {
	f := newFixture(t, "node-a", nil)
	if err := f.sim.SetLoad("node-a", 0.5, 0.5); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(f.simState(t, "node-a"))
	if err != nil {
		t.Fatal(err)
	}
	tel, err := httpbackend.DecodeTelemetry(data)
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if tel.MeasuredWatts() <= 150 || tel.NodePowerWatts == nil {
		t.Errorf("node power = %v", tel.NodePowerWatts)
	}
}
