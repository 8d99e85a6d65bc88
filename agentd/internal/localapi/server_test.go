package localapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func ptr(v float64) *float64 { return &v }

var t0 = metav1.NewTime(time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC))

// fakeAgent is the daemon as the server sees it: canned answers, and a
// profile override it keeps like the real agent would.
type fakeAgent struct {
	mu         sync.Mutex
	status     Status
	hardware   joulie.NodeHardwareStatus
	standalone bool
	configured joulie.NodePowerProfileSpec
	override   *joulie.NodePowerProfileSpec
	report     RestoreReport
	restoreErr error
	panics     bool
	restores   int
}

func newFakeAgent(standalone bool) *fakeAgent {
	return &fakeAgent{
		standalone: standalone,
		configured: joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance},
		status: Status{
			Node: "gpu-07", Version: "v0.4.0", Standalone: standalone, Profile: joulie.ProfileEco,
			Source: SourceCluster, ObservedGeneration: 12, CPUMode: joulie.BackendRAPL,
			CPU: &joulie.ControlStatus{Backend: joulie.BackendRAPL, Result: joulie.ResultApplied, AppliedCapWatts: ptr(210), LastTransitionTime: t0,
				Devices: []joulie.DeviceControlStatus{{ID: "package-0", Result: joulie.ResultApplied, AppliedCapWatts: ptr(210)}}},
			GPU: &joulie.ControlStatus{Backend: joulie.BackendNVML, Result: joulie.ResultError, Message: "1 of 2 GPUs failed", LastTransitionTime: t0,
				Devices: []joulie.DeviceControlStatus{
					{ID: "0", Result: joulie.ResultApplied, AppliedCapWatts: ptr(420)},
					{ID: "1", Result: joulie.ResultError, Message: "GPU is lost"}}},
			MeasuredPower:     &joulie.MeasuredPower{CPUPowerWatts: ptr(388.5), GPUPowerWatts: ptr(801), NodePowerWatts: 1189.5, Time: t0},
			LastSync:          &t0,
			Failsafe:          FailsafeState{Mode: "keep"},
			OriginalsRecorded: 4,
		},
		hardware: joulie.NodeHardwareStatus{
			CPU: joulie.CPUHardware{Vendor: "AuthenticAMD", Model: "AMD EPYC 9654 96-Core Processor", Sockets: 2,
				CapRange: &joulie.PowerRange{MinWatts: 150, MaxWatts: 400, Source: "catalog"}},
			GPU:      &joulie.GPUHardware{Vendor: "nvidia", Count: 2, Devices: []joulie.GPUDevice{{Index: 0, CurrentCapWatts: ptr(420)}, {Index: 1}}},
			Quality:  joulie.DiscoveryPartial,
			Warnings: []string{"RAPL limits are read-only"},
		},
	}
}

func (a *fakeAgent) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.panics {
		panic("status exploded")
	}
	return a.status
}

func (a *fakeAgent) Hardware() joulie.NodeHardwareStatus { return a.hardware }

func (a *fakeAgent) Pods() PodsReport {
	return PodsReport{Node: "gpu-07", Kubelet: "connected", Pods: []PodEnergy{{Namespace: "ml", Name: "train", GPUs: []string{"GPU-a"}, GPUJoules: 36000}}}
}

func (a *fakeAgent) Profile() ProfileState {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := ProfileState{Node: "gpu-07", Standalone: a.standalone}
	switch {
	case !a.standalone:
		st.Source, st.Generation, st.Spec = SourceCluster, 12, joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco}
	case a.override != nil:
		st.Source, st.Spec = SourceOverride, *a.override
	default:
		st.Source, st.Spec = SourceStandalone, a.configured
	}
	return st
}

func (a *fakeAgent) SetProfile(spec joulie.NodePowerProfileSpec) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.standalone {
		return ErrNotStandalone
	}
	a.override = &spec
	return nil
}

func (a *fakeAgent) ClearProfile() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.standalone {
		return ErrNotStandalone
	}
	a.override = nil
	return nil
}

func (a *fakeAgent) Restore() (RestoreReport, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.restores++
	return a.report, a.restoreErr
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// serve runs the local API for agent on a fresh socket and returns its
// path; the server stops, and must stop cleanly, when the test ends.
func serve(t *testing.T, agent Agent) string {
	t.Helper()
	// The test's own group may read, so the read tests pass without root.
	return serveWith(t, agent, Options{AllowedGID: os.Getegid(), Logger: quietLogger()})
}

func serveWith(t *testing.T, agent Agent, opts Options) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentd.sock")
	sock, err := Listen(path, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, sock, agent, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve returned %v after shutdown", err)
		}
	})
	return path
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("write verbs are root's only: run the tests as root, as make check does on CI")
	}
}

// rawRequest sends a request over the socket without the Client, to see
// status codes and bodies as they are.
func rawRequest(t *testing.T, path, method, url string, body io.Reader) (int, http.Header, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(method, "http://agentd"+url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

func errorOf(t *testing.T, body string) string {
	t.Helper()
	var e ErrorResponse
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" {
		t.Fatalf("body is not a JSON error: %q", body)
	}
	return e.Error
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestReadVerbsRoundTripTheAgentsJSON(t *testing.T) {
	agent := newFakeAgent(false)
	c := NewClient(serve(t, agent))
	ctx := context.Background()

	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustJSON(t, st), mustJSON(t, agent.status); got != want {
		t.Errorf("status changed on the way:\ngot  %s\nwant %s", got, want)
	}
	hw, err := c.Hardware(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustJSON(t, hw), mustJSON(t, agent.hardware); got != want {
		t.Errorf("hardware changed on the way:\ngot  %s\nwant %s", got, want)
	}
	pods, err := c.Pods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustJSON(t, pods), mustJSON(t, agent.Pods()); got != want {
		t.Errorf("pods changed on the way:\ngot  %s\nwant %s", got, want)
	}
	prof, err := c.Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if prof.Source != SourceCluster || prof.Spec.Profile != joulie.ProfileEco || prof.Generation != 12 {
		t.Errorf("profile = %+v", prof)
	}
}

func TestStatusJSONUsesAPIFieldNames(t *testing.T) {
	path := serve(t, newFakeAgent(false))
	code, hdr, body := rawRequest(t, path, http.MethodGet, "/v1/status", nil)
	if code != http.StatusOK || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", code, hdr.Get("Content-Type"), body)
	}
	for _, key := range []string{`"node":`, `"standalone":`, `"cpuMode":"rapl"`, `"observedGeneration":12`,
		`"appliedCapWatts":210`, `"lastTransitionTime":"2026-03-14T09:26:53Z"`, `"measuredPower":{`,
		`"nodePowerWatts":1189.5`, `"lastSync":"2026-03-14T09:26:53Z"`, `"failsafe":{"active":false,"mode":"keep"}`,
		`"originalsRecorded":4`} {
		if !strings.Contains(body, key) {
			t.Errorf("status JSON lacks %s:\n%s", key, body)
		}
	}
}

func TestSetProfileInStandaloneModeOverridesAndClears(t *testing.T) {
	requireRoot(t)
	agent := newFakeAgent(true)
	c := NewClient(serve(t, agent))
	ctx := context.Background()
	spec := joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco,
		CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr(60)},
		GPU: &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapWattsPerGpu: ptr(350)}}}
	got, err := c.SetProfile(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != SourceOverride || mustJSON(t, got.Spec) != mustJSON(t, spec) {
		t.Errorf("after set: %+v", got)
	}
	got, err = c.ClearProfile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != SourceStandalone || got.Spec.Profile != joulie.ProfilePerformance {
		t.Errorf("after clear: %+v", got)
	}
}

func TestSetProfileInClusterModeIsAConflict(t *testing.T) {
	requireRoot(t)
	path := serve(t, newFakeAgent(false))
	const want = "the profile is set by the cluster (NodePowerProfile gpu-07); use kubectl"
	for _, method := range []string{http.MethodPut, http.MethodDelete} {
		code, _, body := rawRequest(t, path, method, "/v1/profile", strings.NewReader(`{"profile":"eco"}`))
		if code != http.StatusConflict || errorOf(t, body) != want {
			t.Errorf("%s: %d %s", method, code, body)
		}
	}
	_, err := NewClient(path).SetProfile(context.Background(), joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusConflict || err.Error() != want {
		t.Errorf("client error = %v", err)
	}
}

func TestMalformedProfileBodiesAreRefused(t *testing.T) {
	requireRoot(t)
	agent := newFakeAgent(true)
	path := serve(t, agent)
	for _, tc := range []struct {
		name, body string
		code       int
		message    string
	}{
		{"empty body", "", 400, "the body is empty"},
		{"not JSON", "profile=eco", 400, "is not a NodePowerProfileSpec in JSON"},
		{"truncated", `{"profile":"eco"`, 400, "is not a NodePowerProfileSpec in JSON"},
		{"misspelt cap", `{"profile":"eco","cpu":{"packagePowerCapPct":60}}`, 400, `unknown field "packagePowerCapPct"`},
		{"wrong type", `{"profile":"eco","cpu":{"packagePowerCapWatts":"200"}}`, 400, "cannot unmarshal string"},
		{"two values", `{"profile":"eco"} {"profile":"performance"}`, 400, "more than one JSON value"},
		{"trailing brace", `{"profile":"eco"}}`, 400, "more than one JSON value"},
		{"null", `null`, 400, "spec.profile is required"},
		{"unknown profile", `{"profile":"turbo"}`, 400, `spec.profile "turbo" is not one of performance, eco`},
		{"percentage over 100", `{"profile":"eco","gpu":{"powerCap":{"capPctOfMax":120}}}`, 400, "spec.gpu.powerCap.capPctOfMax must be a percentage from 0 to 100 (got 120)"},
		{"negative watts", `{"profile":"eco","cpu":{"packagePowerCapWatts":-5}}`, 400, "spec.cpu.packagePowerCapWatts must be a number of watts"},
		{"huge body", `{"profile":"eco","x":"` + strings.Repeat("a", 70<<10) + `"}`, 413, "the body is over 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := rawRequest(t, path, http.MethodPut, "/v1/profile", strings.NewReader(tc.body))
			if code != tc.code || !strings.Contains(errorOf(t, body), tc.message) {
				t.Errorf("got %d %s, want %d with %q", code, body, tc.code, tc.message)
			}
		})
	}
	if agent.override != nil {
		t.Errorf("a refused body reached the agent: %+v", agent.override)
	}
}

func TestUnknownPathsAndMethodsAnswerInJSON(t *testing.T) {
	path := serve(t, newFakeAgent(false))
	code, _, body := rawRequest(t, path, http.MethodGet, "/v2/status", nil)
	if code != http.StatusNotFound || !strings.Contains(errorOf(t, body), "no /v2/status") {
		t.Errorf("unknown path: %d %s", code, body)
	}
	code, hdr, body := rawRequest(t, path, http.MethodPost, "/v1/profile", nil)
	if code != http.StatusMethodNotAllowed || hdr.Get("Allow") != "DELETE, GET, PUT" {
		t.Errorf("wrong method: %d Allow=%q %s", code, hdr.Get("Allow"), body)
	}
}

func TestRestoreReportsWhatItDid(t *testing.T) {
	requireRoot(t)
	agent := newFakeAgent(false)
	agent.report = RestoreReport{
		Restored: 1,
		Controls: []RecordedControl{{Backend: "rapl", ID: "intel-rapl:0/constraint_0_power_limit_uw", Original: "350000000"}},
		Message:  "enforcement is paused until the target changes",
	}
	c := NewClient(serve(t, agent))
	got, err := c.Restore(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, got) != mustJSON(t, agent.report) || agent.restores != 1 {
		t.Errorf("report %+v after %d restores", got, agent.restores)
	}
}

func TestFailedRestoreStillCarriesTheReport(t *testing.T) {
	requireRoot(t)
	agent := newFakeAgent(false)
	agent.report = RestoreReport{
		Restored: 1, Kept: 1,
		Controls: []RecordedControl{
			{Backend: "rapl", ID: "intel-rapl:0/constraint_0_power_limit_uw", Original: "350000000"},
			{Backend: "nvml", ID: "GPU-1", Original: "700000", Error: "GPU is lost"}},
	}
	agent.restoreErr = errors.New("restore nvml GPU-1 to 700000: GPU is lost")
	got, err := NewClient(serve(t, agent)).Restore(context.Background())
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || err.Error() != "restore nvml GPU-1 to 700000: GPU is lost" {
		t.Fatalf("error = %v", err)
	}
	if got.Restored != 1 || got.Kept != 1 || len(got.Controls) != 2 || got.Controls[1].Error != "GPU is lost" {
		t.Errorf("report = %+v", got)
	}
}

func TestPanickingAgentGetsA500NotADroppedConnection(t *testing.T) {
	agent := newFakeAgent(false)
	agent.panics = true
	_, err := NewClient(serve(t, agent)).Status(context.Background())
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !strings.Contains(err.Error(), "journalctl -u joulie-agentd") {
		t.Errorf("error = %v", err)
	}
}

func TestUnencodableAnswerIsA500(t *testing.T) {
	agent := newFakeAgent(false)
	agent.status.MeasuredPower.NodePowerWatts = math.NaN()
	_, err := NewClient(serve(t, agent)).Status(context.Background())
	if err == nil || !strings.Contains(err.Error(), "could not encode its answer") {
		t.Errorf("error = %v", err)
	}
}

// TestRefusalsSayWhatIsNeeded drives the handler with credentials set by
// hand; the kernel's side is tested with real processes in
// joulie-agentctl's tests.
func TestRefusalsSayWhatIsNeeded(t *testing.T) {
	user := peer{uid: 1000, gid: 1000, pid: 4242, groups: []uint32{4, 998}}
	for _, tc := range []struct {
		name       string
		p          peer
		allowedGID int
		method     string
		url        string
		code       int
		message    string
	}{
		{"root reads", peer{}, 998, "GET", "/v1/status", 200, ""},
		{"root restores", peer{}, 998, "POST", "/v1/restore", 200, ""},
		{"member by supplementary group reads", user, 998, "GET", "/v1/hardware", 200, ""},
		{"member by primary group reads", user, 1000, "GET", "/v1/profile", 200, ""},
		{"member may not restore", user, 998, "POST", "/v1/restore", 403, "restore needs root; run with sudo"},
		{"member may not set the profile", user, 998, "PUT", "/v1/profile", 403, "profile set needs root; run with sudo"},
		{"member may not clear the profile", user, 998, "DELETE", "/v1/profile", 403, "profile set --clear needs root; run with sudo"},
		{"stranger may not read", user, 999, "GET", "/v1/status", 403, "status needs root or membership in group joulie"},
		{"no group on the host", user, -1, "GET", "/v1/status", 403, "the socket admits no group on this host"},
		{"unidentified peer", peer{err: errors.New("no SO_PEERCRED")}, 998, "GET", "/v1/status", 403, "cannot tell who is asking (no SO_PEERCRED)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &server{agent: newFakeAgent(false), opts: Options{AllowedGID: tc.allowedGID, Logger: quietLogger()}.withDefaults(), log: quietLogger()}
			req := httptest.NewRequest(tc.method, tc.url, nil)
			req = req.WithContext(context.WithValue(req.Context(), peerKey{}, tc.p))
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != tc.code || (tc.message != "" && !strings.Contains(errorOf(t, rec.Body.String()), tc.message)) {
				t.Errorf("got %d %s, want %d with %q", rec.Code, rec.Body, tc.code, tc.message)
			}
		})
	}
}

func TestRequestWithoutCredentialsIsRefused(t *testing.T) {
	s := &server{agent: newFakeAgent(false), opts: Options{}.withDefaults(), log: quietLogger()}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/status", nil))
	if rec.Code != 403 {
		t.Errorf("got %d %s", rec.Code, rec.Body)
	}
}

func TestServeRefusesATCPListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = Serve(context.Background(), l, newFakeAgent(false), Options{Logger: quietLogger()})
	if err == nil || !strings.Contains(err.Error(), "only on a Unix socket") {
		t.Errorf("err = %v", err)
	}
}

func TestShutdownRemovesTheSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.sock")
	sock, err := Listen(path, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, sock, newFakeAgent(false), Options{AllowedGID: os.Getegid(), Logger: quietLogger()})
	}()
	if _, err := NewClient(path).Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("socket still there after shutdown: %v", err)
	}
	_, err = NewClient(path).Status(context.Background())
	if !errors.Is(err, ErrNotRunning) {
		t.Errorf("after shutdown: %v", err)
	}
}

func TestServerTimesOutASlowClient(t *testing.T) {
	path := serveWith(t, newFakeAgent(false), Options{Logger: quietLogger(), ReadHeaderTimeout: 100 * time.Millisecond})
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("GET /v1/status HTTP/1.1\r\n")) // and never the rest
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, conn); err != nil {
		t.Fatalf("the server did not hang up on a slow client: %v", err)
	}
}
