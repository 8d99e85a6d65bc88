package httpbackendtest_test

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/simulated/httpbackend"
	"joulie.io/joulie/agentd/internal/simulated/httpbackend/httpbackendtest"
)

func spec() httpbackendtest.NodeSpec {
	return httpbackendtest.NodeSpec{
		CPU: &httpbackendtest.CPUSpec{Packages: 2, MinWattsPerPackage: 90, MaxWattsPerPackage: 350, IdleWattsPerPackage: 50},
		GPUs: []httpbackendtest.GPUSpec{
			{UUID: "GPU-0", MinWatts: 200, MaxWatts: 700, DefaultWatts: 600, IdleWatts: 100},
		},
		OtherWatts: 100,
	}
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newServer(t *testing.T) (*httpbackendtest.Simulator, *httptest.Server, *fakeClock) {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	sim := httpbackendtest.New(clock.now)
	if err := sim.AddNode("n1", spec()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, srv, clock
}

func send(t *testing.T, srv *httptest.Server, method, path, body string, header http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

const head = `{"apiVersion":"joulie.io/http-backend/v1","node":"n1",`

func TestSimulatorRefusesMalformedRequests(t *testing.T) {
	_, srv, _ := newServer(t)
	v2 := http.Header{httpbackend.VersionHeader: {"joulie.io/http-backend/v2"}}
	cases := []struct {
		name, method, path, body string
		header                   http.Header
		status                   int
		result                   httpbackend.Result
		want                     string
	}{
		{"not JSON", "POST", "/control", "watts=3", nil, 400, "error", "invalid JSON at byte 1"},
		{"truncated", "POST", "/control", head + `"action":"rapl.set`, nil, 400, "error", "truncated"},
		{"empty", "POST", "/control", "", nil, 400, "error", "empty body"},
		{"unknown field", "POST", "/control", head + `"action":"dvfs.set_throttle_pct","pct":3,"why":1}`, nil, 400, "error", "field why: unknown field"},
		{"watts missing", "POST", "/control", head + `"action":"gpu.set_power_cap_watts","gpu":0}`, nil, 400, "error", "field watts: missing"},
		{"watts a string", "POST", "/control", head + `"action":"rapl.set_power_cap_watts","watts":"200"}`, nil, 400, "error", "field watts: not a number (got a string)"},
		{"pct on rapl", "POST", "/control", head + `"action":"rapl.set_power_cap_watts","watts":200,"pct":1}`, nil, 400, "error", "field pct: not taken by action"},
		{"other version in body", "POST", "/control", `{"apiVersion":"v9","node":"n1"}`, nil, 400, "error", `"v9" is not supported`},
		{"other version in header", "GET", "/telemetry?node=n1", "", v2, 400, "error", "joulie.io/http-backend/v2"},
		{"oversized", "POST", "/control", head + `"action":"x","pad":"` + strings.Repeat("x", httpbackend.MaxBodyBytes) + `"}`, nil, 413, "error", "body larger than"},
		{"GET control", "GET", "/control", "", nil, 405, "error", "POST"},
		{"POST telemetry", "POST", "/telemetry?node=n1", "{}", nil, 405, "error", "GET"},
		{"telemetry without node", "GET", "/telemetry", "", nil, 400, "error", "node is missing"},
		{"telemetry unknown node", "GET", "/telemetry?node=n9", "", nil, 404, "error", `no simulated node "n9"`},
		{"control unknown node", "POST", "/control", `{"apiVersion":"joulie.io/http-backend/v1","node":"n9","action":"dvfs.set_throttle_pct","pct":3}`, nil, 404, "error", `no simulated node "n9"`},
		{"unknown action", "POST", "/control", head + `"action":"fan.set_rpm","rpm":3}`, nil, 501, "blocked", "fan.set_rpm"},
		{"unknown route", "GET", "/metrics", "", nil, 404, "error", "no such route"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, data := send(t, srv, tc.method, tc.path, tc.body, tc.header)
			if status != tc.status {
				t.Errorf("status %d, want %d (%s)", status, tc.status, data)
			}
			resp, err := httpbackend.DecodeControlResponse(data)
			if err != nil {
				t.Fatalf("error body %s breaks the contract: %v", data, err)
			}
			if resp.Result != tc.result || !strings.Contains(resp.Message, tc.want) {
				t.Errorf("answer %+v, want result %s and a message containing %q", resp, tc.result, tc.want)
			}
		})
	}
}

func TestSimulatorRefusesOutOfRangeCaps(t *testing.T) {
	_, srv, _ := newServer(t)
	for _, body := range []string{
		head + `"action":"rapl.set_power_cap_watts","watts":351}`,
		head + `"action":"gpu.set_power_cap_watts","gpu":0,"watts":199}`,
		head + `"action":"gpu.set_power_cap_watts","gpu":1,"watts":300}`,
	} {
		status, data := send(t, srv, "POST", "/control", body, nil)
		resp, err := httpbackend.DecodeControlResponse(data)
		if status != 200 || err != nil || resp.Result != httpbackend.ResultError || resp.Message == "" {
			t.Errorf("%s: %d %s", body, status, data)
		}
	}
}

func TestPowerRespondsToCapsAndThrottle(t *testing.T) {
	sim, srv, clock := newServer(t)
	read := func() *httpbackend.Telemetry {
		t.Helper()
		status, data := send(t, srv, "GET", "/nodes/n1/telemetry?node=n1", "", nil)
		tel, err := httpbackend.DecodeTelemetry(data)
		if status != 200 || err != nil {
			t.Fatalf("%d %s: %v", status, data, err)
		}
		return tel
	}
	control := func(body string) {
		t.Helper()
		status, data := send(t, srv, "POST", "/nodes/n1/control", head+body, nil)
		if resp, err := httpbackend.DecodeControlResponse(data); status != 200 || err != nil || resp.Result != httpbackend.ResultApplied {
			t.Fatalf("%s: %d %s", body, status, data)
		}
	}

	idle := read()
	if idle.CPU.PackagePowerWatts[0] != 50 || idle.GPUs[0].PowerWatts != 100 || *idle.NodePowerWatts != 50+50+100+100 {
		t.Fatalf("idle: %+v %+v %v", idle.CPU, idle.GPUs, *idle.NodePowerWatts)
	}
	if err := sim.SetLoad("n1", 1, 1); err != nil {
		t.Fatal(err)
	}
	full := read()
	if full.CPU.PackagePowerWatts[1] != 350 || full.GPUs[0].PowerWatts != 600 {
		t.Fatalf("full load: %v %g", full.CPU.PackagePowerWatts, full.GPUs[0].PowerWatts)
	}

	control(`"action":"rapl.set_power_cap_watts","watts":200}`)
	control(`"action":"gpu.set_power_cap_watts","gpu":0,"watts":400}`)
	capped := read()
	if capped.CPU.PackagePowerWatts[0] != 200 || capped.CPU.CapWatts != 200 || capped.GPUs[0].PowerWatts != 400 {
		t.Fatalf("capped: %+v %+v", capped.CPU, capped.GPUs[0])
	}

	control(`"action":"rapl.set_power_cap_watts","watts":350}`)
	control(`"action":"dvfs.set_throttle_pct","pct":50}`)
	throttled := read()
	want := 50 + 300*(1-httpbackendtest.ThrottleDepth*0.5)
	if math.Abs(throttled.CPU.PackagePowerWatts[0]-want) > 1e-9 || throttled.CPU.ThrottlePct != 50 {
		t.Fatalf("throttled: %+v, want %g W", throttled.CPU, want)
	}

	// Energy integrates the GPU's draw: 400 W for 10 s.
	e0 := *read().GPUs[0].EnergyJoules
	clock.add(10 * time.Second)
	if e1 := *read().GPUs[0].EnergyJoules; e1-e0 != 4000 {
		t.Errorf("energy grew by %g J, want 4000", e1-e0)
	}
	if !read().Time.Equal(clock.now()) {
		t.Error("telemetry time is not the clock's")
	}
}

func TestAddNodeRefusesImpossibleSpecs(t *testing.T) {
	sim := httpbackendtest.New(nil)
	bad := map[string]func(*httpbackendtest.NodeSpec){
		"no packages":       func(s *httpbackendtest.NodeSpec) { s.CPU.Packages = 0 },
		"cpu range":         func(s *httpbackendtest.NodeSpec) { s.CPU.MinWattsPerPackage = 400 },
		"NaN watts":         func(s *httpbackendtest.NodeSpec) { s.GPUs[0].IdleWatts = math.NaN() },
		"default above max": func(s *httpbackendtest.NodeSpec) { s.GPUs[0].DefaultWatts = 800 },
		"repeated uuid":     func(s *httpbackendtest.NodeSpec) { s.GPUs = append(s.GPUs, s.GPUs[0]) },
		"negative other":    func(s *httpbackendtest.NodeSpec) { s.OtherWatts = -1 },
	}
	for name, mutate := range bad {
		s := spec()
		mutate(&s)
		if err := sim.AddNode("n1", s); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := sim.AddNode("", spec()); err == nil {
		t.Error("empty name accepted")
	}
	if err := sim.SetLoad("n1", 2, 0); err == nil {
		t.Error("load 2 accepted")
	}
	if err := sim.SetLoad("nope", 0, 0); err == nil {
		t.Error("load of an unknown node accepted")
	}
}

func TestSimulatorServesConcurrentRequests(t *testing.T) {
	_, srv, _ := newServer(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			var body string
			if i%2 == 0 {
				body = head + `"action":"gpu.set_power_cap_watts","gpu":0,"watts":300}`
				resp, err := srv.Client().Post(srv.URL+"/control", "application/json", strings.NewReader(body))
				if err == nil {
					resp.Body.Close()
				}
				return
			}
			resp, err := srv.Client().Get(srv.URL + "/telemetry?node=n1")
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var v any
			if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
