package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"joulie.io/joulie/extender/internal/fixture"
	"joulie.io/joulie/extender/internal/state"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/scoring"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func defaultOptions() Options {
	return Options{
		Params:           scoring.DefaultParams(),
		MaxRequestBytes:  1 << 20,
		MaxInFlightBytes: 64 << 20,
	}
}

// headroomOptions score by the design's formula (headroom mode).
func headroomOptions() Options {
	o := defaultOptions()
	o.Params.Mode = scoring.ModeHeadroom
	return o
}

// testServer is a Server over a snapshot the test swaps at will.
type testServer struct {
	*Server
	snap atomic.Pointer[state.Snapshot]
	reg  *prometheus.Registry
}

func newTestServer(t testing.TB, opts Options, snap *state.Snapshot) *testServer {
	t.Helper()
	ts := &testServer{reg: prometheus.NewPedanticRegistry()}
	ts.snap.Store(snap)
	ts.Server = New(opts, ts.snap.Load, ts.reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ts.now = func() time.Time { return now }
	return ts
}

type twinSpec struct {
	class                     joulie.SchedulableClass
	cappedW, measuredW, cool  float64
	trend                     float64
	age                       time.Duration
	noTimestamp, noMeasurment bool
}

func twinObj(name string, s twinSpec) *joulie.NodeTwin {
	t := &joulie.NodeTwin{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: joulie.NodeTwinStatus{
		SchedulableClass: s.class, PredictedPowerHeadroomScore: 60, PredictedCoolingStressScore: s.cool,
	}}
	if !s.noMeasurment {
		t.Status.PowerMeasurement = &joulie.PowerMeasurement{
			Source: joulie.SourceAgent, NodeCappedPowerW: s.cappedW, MeasuredNodePowerW: s.measuredW, NodeTdpW: s.cappedW * 1.5, PowerTrendWPerMin: s.trend,
		}
	}
	if !s.noTimestamp {
		t.Status.LastUpdated = metav1.NewTime(now.Add(-s.age - 20*time.Second))
	}
	return t
}

// cpuHardware is a 64-core node whose sockets draw at most 500 W together.
func cpuHardware(name string) *joulie.NodeHardware {
	return &joulie.NodeHardware{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: joulie.NodeHardwareStatus{
		CPU: joulie.CPUHardware{Sockets: 2, TotalCores: 64, CapRange: &joulie.PowerRange{MaxWatts: 250}},
	}}
}

// node is a Node as the cache keeps it: its labels, and allocatable CPU
// and GPUs when cpu or gpus are positive.
func node(name string, labels map[string]string, cpu, gpus string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if cpu != "" || gpus != "" {
		n.Status.Allocatable = corev1.ResourceList{}
		if cpu != "" {
			n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if gpus != "" {
			n.Status.Allocatable[joulie.ResourceNVIDIAGPU] = resource.MustParse(gpus)
		}
	}
	return n
}

// clusterSnapshot holds one node of each situation the filter and the
// score distinguish.
func clusterSnapshot() *state.Snapshot {
	twins := []*joulie.NodeTwin{
		twinObj("perf", twinSpec{class: joulie.ClassPerformance, cappedW: 600, measuredW: 300, cool: 20}),
		twinObj("eco", twinSpec{class: joulie.ClassEco, cappedW: 1000, measuredW: 0, cool: 0}),
		twinObj("draining", twinSpec{class: joulie.ClassDraining, cappedW: 600, measuredW: 300, cool: 20}),
		twinObj("stale", twinSpec{class: joulie.ClassEco, cappedW: 1000, cool: 0, age: 10 * time.Minute}),
		twinObj("undated", twinSpec{class: joulie.ClassEco, cappedW: 1000, cool: 0, noTimestamp: true}),
	}
	var hw []*joulie.NodeHardware
	for _, n := range []string{"perf", "eco", "draining", "stale"} {
		hw = append(hw, cpuHardware(n))
	}
	nodes := []*corev1.Node{
		node("perf", map[string]string{joulie.LabelPowerProfile: "performance"}, "64", ""),
		node("eco", map[string]string{joulie.LabelPowerProfile: "eco"}, "64", ""),
		node("labelled-eco", map[string]string{joulie.LabelPowerProfile: "eco"}, "", ""),
		node("labelled-draining", map[string]string{joulie.LabelPowerProfile: "performance", joulie.LabelDraining: "true"}, "", ""),
		node("plain", nil, "64", ""),
	}
	// perf is half full, eco holds one 8-core pod.
	requests := map[string]state.Requests{"perf": {CPUMilli: 32000}, "eco": {CPUMilli: 8000}, "plain": {CPUMilli: 60000}}
	return state.Build(twins, hw, nodes, requests, true)
}

var allNodes = []string{"perf", "eco", "draining", "stale", "undated", "labelled-eco", "labelled-draining", "plain", "unknown"}

func post(t testing.TB, h http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	return rec
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pod requests 8 cores: 50 W on the fixture hardware.
func pod(class string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
		}}}},
	}
	if class != "" {
		p.Annotations = map[string]string{joulie.AnnotationWorkloadClass: class}
	}
	return p
}

func byName(p *corev1.Pod, names []string) extenderv1.ExtenderArgs {
	return extenderv1.ExtenderArgs{Pod: p, NodeNames: &names}
}

// withNodes sends Node objects with the labels the snapshot has for them.
func withNodes(p *corev1.Pod, names []string) extenderv1.ExtenderArgs {
	list := &corev1.NodeList{}
	snap := clusterSnapshot()
	for _, n := range names {
		node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}}
		if k := snap.Lookup([]byte(n)); k != nil {
			if k.Labels.Profile != "" {
				node.Labels[joulie.LabelPowerProfile] = k.Labels.Profile
			}
			if k.Labels.Draining != "" {
				node.Labels[joulie.LabelDraining] = k.Labels.Draining
			}
		}
		list.Items = append(list.Items, node)
	}
	return extenderv1.ExtenderArgs{Pod: p, Nodes: list}
}

func filterResult(t *testing.T, rec *httptest.ResponseRecorder) (kept []string, failed map[string]string) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var res extenderv1.ExtenderFilterResult
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.NodeNames != nil {
		kept = *res.NodeNames
	}
	if res.Nodes != nil {
		for _, n := range res.Nodes.Items {
			kept = append(kept, n.Name)
		}
	}
	if len(res.FailedNodes) != 0 {
		t.Errorf("FailedNodes %v: rejections belong in FailedAndUnresolvableNodes", res.FailedNodes)
	}
	return kept, res.FailedAndUnresolvableNodes
}

func TestFilterKeepsPerformancePodsOffEcoAndDrainingNodes(t *testing.T) {
	ts := newTestServer(t, defaultOptions(), clusterSnapshot())
	for _, form := range []struct {
		name string
		args func(*corev1.Pod, []string) extenderv1.ExtenderArgs
	}{{"by name", byName}, {"with nodes", withNodes}} {
		t.Run(form.name, func(t *testing.T) {
			kept, failed := filterResult(t, post(t, ts.Handler(), "/filter", marshal(t, form.args(pod("performance"), allNodes))))
			// The stale and undated eco twins still reject: staleness only
			// takes a twin's say in the score away.
			wantKept := "perf,plain,unknown"
			if got := strings.Join(kept, ","); got != wantKept {
				t.Errorf("kept %s, want %s", got, wantKept)
			}
			wantFailed := map[string]scoring.Verdict{
				"eco": scoring.RejectTwinEco, "draining": scoring.RejectTwinDraining, "stale": scoring.RejectTwinEco,
				"undated": scoring.RejectTwinEco, "labelled-eco": scoring.RejectLabelEco, "labelled-draining": scoring.RejectLabelDraining,
			}
			if len(failed) != len(wantFailed) {
				t.Errorf("failed %v", failed)
			}
			for n, v := range wantFailed {
				if failed[n] != v.Reason() {
					t.Errorf("node %s: reason %q, want %q", n, failed[n], v.Reason())
				}
			}
		})
	}
}

// A pod whose required affinity excludes eco is performance by the shared
// classification, annotation or not.
func TestFilterUsesTheSharedClassification(t *testing.T) {
	ts := newTestServer(t, defaultOptions(), clusterSnapshot())
	p := pod("")
	p.Spec.NodeSelector = map[string]string{joulie.LabelPowerProfile: "performance"}
	_, failed := filterResult(t, post(t, ts.Handler(), "/filter", marshal(t, byName(p, allNodes))))
	if failed["eco"] == "" {
		t.Errorf("pod selecting performance nodes was let onto the eco node: failed %v", failed)
	}
}

func TestFilterPassesStandardPodsEverywhere(t *testing.T) {
	ts := newTestServer(t, defaultOptions(), clusterSnapshot())
	for _, class := range []string{"", "standard", "Performance"} {
		for _, args := range []extenderv1.ExtenderArgs{byName(pod(class), allNodes), withNodes(pod(class), allNodes)} {
			kept, failed := filterResult(t, post(t, ts.Handler(), "/filter", marshal(t, args)))
			if len(kept) != len(allNodes) || len(failed) != 0 {
				t.Errorf("class %q: kept %v, failed %v", class, kept, failed)
			}
		}
	}
}

// A node the controller holds as the warm reserve for performance pods
// (joulie.io/warm-reserve=true) turns away every other pod but a
// DaemonSet's, whether the scheduler names the node or sends it whole.
func TestFilterKeepsOtherPodsOffTheWarmReserve(t *testing.T) {
	labels := map[string]map[string]string{
		"warm": {joulie.LabelPowerProfile: "performance", joulie.LabelWarmReserve: "true"},
		"free": {joulie.LabelPowerProfile: "performance"},
		"cold": {joulie.LabelPowerProfile: "performance", joulie.LabelWarmReserve: "false"},
	}
	names := []string{"cold", "free", "warm"}
	var nodes []*corev1.Node
	list := &corev1.NodeList{}
	for _, n := range names {
		nodes = append(nodes, node(n, labels[n], "64", ""))
		list.Items = append(list.Items, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: labels[n]}})
	}
	twins := []*joulie.NodeTwin{twinObj("warm", twinSpec{class: joulie.ClassPerformance, cappedW: 600, measuredW: 300})}
	ts := newTestServer(t, defaultOptions(), state.Build(twins, nil, nodes, nil, true))
	daemon := pod("")
	daemon.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "u", Controller: new(true)}}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		wantKept string
	}{
		{"standard pod", pod(""), "cold,free"},
		{"pod of class standard", pod("standard"), "cold,free"},
		{"performance pod", pod("performance"), "cold,free,warm"},
		{"DaemonSet pod", daemon, "cold,free,warm"},
	} {
		for _, form := range []struct {
			name string
			args extenderv1.ExtenderArgs
		}{{"by name", byName(tc.pod, names)}, {"with nodes", extenderv1.ExtenderArgs{Pod: tc.pod, Nodes: list}}} {
			t.Run(tc.name+" "+form.name, func(t *testing.T) {
				kept, failed := filterResult(t, post(t, ts.Handler(), "/filter", marshal(t, form.args)))
				if got := strings.Join(kept, ","); got != tc.wantKept {
					t.Errorf("kept %s, want %s", got, tc.wantKept)
				}
				if tc.wantKept != "cold,free,warm" && failed["warm"] != scoring.RejectWarmReserve.Reason() {
					t.Errorf("failed %v, want warm turned away with %q", failed, scoring.RejectWarmReserve.Reason())
				}
			})
		}
	}
	rec := httptest.NewRecorder()
	ts.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if want := `joulie_extender_filtered_nodes_total{reason="warm_reserve"} 4`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

func TestFilterReturnsTheSchedulersNodesUnchanged(t *testing.T) {
	ts := newTestServer(t, defaultOptions(), clusterSnapshot())
	args := fixture.WithNodes(fixture.Pod("performance"), 6)
	rec := post(t, ts.Handler(), "/filter", marshal(t, args))
	var res extenderv1.ExtenderFilterResult
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	// The fixture labels every third node eco; no twins know them.
	if len(res.Nodes.Items) != 4 || len(res.FailedAndUnresolvableNodes) != 2 {
		t.Fatalf("kept %d, failed %v", len(res.Nodes.Items), res.FailedAndUnresolvableNodes)
	}
	for _, n := range res.Nodes.Items {
		var i int
		_, _ = fmt.Sscanf(n.Name, "gpu-node-%d", &i)
		if string(marshal(t, n)) != string(marshal(t, args.Nodes.Items[i])) {
			t.Errorf("node %s came back changed", n.Name)
		}
	}
}

func priorities(t *testing.T, rec *httptest.ResponseRecorder) map[string]int64 {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var list extenderv1.HostPriorityList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, hp := range list {
		out[hp.Host] = hp.Score
	}
	return out
}

func TestPrioritizeScoresByTheFormula(t *testing.T) {
	ts := newTestServer(t, headroomOptions(), clusterSnapshot())
	for _, form := range []struct {
		name string
		args func(*corev1.Pod, []string) extenderv1.ExtenderArgs
	}{{"by name", byName}, {"with nodes", withNodes}} {
		t.Run(form.name, func(t *testing.T) {
			got := priorities(t, post(t, ts.Handler(), "/prioritize", marshal(t, form.args(pod(""), allNodes))))
			want := map[string]int64{
				// The design's first example, 41.2, less the pressure
				// relief of the only performance node (50 × 0.3 = 15
				// points): 26.2 → 3.
				"perf": 3,
				// The second example, a standard pod on an ideal eco node:
				// 95 less the pod's 50 W (5 × 0.7) = 91.5 → 9.
				"eco": 9,
				// Draining: 41.2, no bonus, no relief → 4.
				"draining": 4,
				// Stale, undated, twinless and unknown nodes: 50 → 5.
				"stale": 5, "undated": 5, "labelled-eco": 5, "labelled-draining": 5, "plain": 5, "unknown": 5,
			}
			for n, w := range want {
				if got[n] != w {
					t.Errorf("node %s: priority %d, want %d", n, got[n], w)
				}
			}
			if len(got) != len(allNodes) {
				t.Errorf("%d priorities for %d nodes", len(got), len(allNodes))
			}
		})
	}
}

// The design's worked examples through the whole HTTP path.
func TestPrioritizeWorkedExamples(t *testing.T) {
	snap := state.Build([]*joulie.NodeTwin{
		twinObj("example-1", twinSpec{class: joulie.ClassPerformance, cappedW: 600, measuredW: 300, cool: 20}),
		twinObj("example-2", twinSpec{class: joulie.ClassEco, cappedW: 1000, cool: 0}),
	}, []*joulie.NodeHardware{cpuHardware("example-1")}, nil, nil, true)
	ts := newTestServer(t, headroomOptions(), snap)
	// Example 1: a performance pod adding 50 W (no profile terms): 41.2 → 4.
	if got := priorities(t, post(t, ts.Handler(), "/prioritize", marshal(t, byName(pod("performance"), []string{"example-1"})))); got["example-1"] != 4 {
		t.Errorf("example 1: priority %d, want 4 (41.2)", got["example-1"])
	}
	// Example 2: a standard pod with no requests on the ideal eco node: 95 → 10.
	empty := pod("")
	empty.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	if got := priorities(t, post(t, ts.Handler(), "/prioritize", marshal(t, byName(empty, []string{"example-2"})))); got["example-2"] != 10 {
		t.Errorf("example 2: priority %d, want 10 (95)", got["example-2"])
	}
}

func TestBadRequestsGet400WithAJSONError(t *testing.T) {
	opts := defaultOptions()
	opts.MaxRequestBytes = 4096
	ts := newTestServer(t, opts, clusterSnapshot())
	valid := marshal(t, byName(pod(""), allNodes))
	tests := []struct {
		name, body, reason string
	}{
		{"empty body", "", "decode"},
		{"not JSON", "hello", "decode"},
		{"truncated JSON", string(valid[:len(valid)-3]), "decode"},
		{"wrong types", `{"Pod":{},"NodeNames":"a"}`, "decode"},
		{"no pod", `{"NodeNames":["a"]}`, "invalid"},
		{"no nodes", `{"Pod":{}}`, "invalid"},
		{"null", `null`, "invalid"},
		{"oversized", `{"Pod":{},"NodeNames":["` + strings.Repeat("a", 5000) + `"]}`, "too_large"},
	}
	for _, path := range []string{"/filter", "/prioritize"} {
		for _, tt := range tests {
			t.Run(path+" "+tt.name, func(t *testing.T) {
				rec := post(t, ts.Handler(), path, []byte(tt.body))
				if rec.Code != http.StatusBadRequest {
					t.Fatalf("status %d, want 400: %s", rec.Code, rec.Body)
				}
				if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
				var e struct{ Error string }
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
					t.Errorf("body %q is not a JSON error: %v", rec.Body, err)
				}
			})
		}
	}
	mfs, err := ts.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "joulie_extender_request_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			want := map[string]float64{"decode": 4, "invalid": 3, "too_large": 1, "read": 0}[m.GetLabel()[0].GetValue()]
			if m.GetCounter().GetValue() != want {
				t.Errorf("errors %v: %v, want %v", m.GetLabel(), m.GetCounter().GetValue(), want)
			}
		}
	}
}

func TestWrongMethodsAreRefused(t *testing.T) {
	ts := newTestServer(t, defaultOptions(), clusterSnapshot())
	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/filter", nil),
		httptest.NewRequest(http.MethodPut, "/prioritize", nil),
		httptest.NewRequest(http.MethodPost, "/healthz", nil),
	} {
		rec := httptest.NewRecorder()
		ts.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: status %d, want 405", req.Method, req.URL.Path, rec.Code)
		}
	}
}

// Over a real connection: a body cut short of its Content-Length, and an
// oversized chunked body whose length is not announced.
func TestTruncatedAndUnannouncedOversizedBodies(t *testing.T) {
	opts := defaultOptions()
	opts.MaxRequestBytes = 4096
	opts.ReadTimeout = 5 * time.Second
	ts := newTestServer(t, opts, clusterSnapshot())
	srv := httptest.NewUnstartedServer(ts.Handler())
	srv.Config = ts.HTTPServer()
	srv.Start()
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"Pod":{},"NodeNames":["a","b"]}`
	fmt.Fprintf(conn, "POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body)+100, body)
	_ = conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"error"`) {
		t.Errorf("truncated body: status %d, body %s", resp.StatusCode, b)
	}

	big := io.MultiReader(strings.NewReader(`{"Pod":{},"NodeNames":["`), strings.NewReader(strings.Repeat("x", 100_000)), strings.NewReader(`"]}`))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/filter", big)
	resp, err = srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "over the limit") {
		t.Errorf("oversized chunked body: status %d, body %s", resp.StatusCode, b)
	}
}

func TestDebugScoring(t *testing.T) {
	ts := newTestServer(t, defaultOptions(), clusterSnapshot())
	rec := httptest.NewRecorder()
	ts.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/scoring", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	var got struct {
		Coefficients map[string]float64 `json:"coefficients"`
		PerfPressure float64            `json:"perfPressure"`
		Nodes        []map[string]any   `json:"nodes"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Coefficients["cpuUtilCoeff"] != 0.8 || got.Coefficients["gpuUtilCoeffStandard"] != 0.6 || got.Coefficients["gpuUtilCoeffPerformance"] != 0.9 {
		t.Errorf("coefficients %v", got.Coefficients)
	}
	if got.PerfPressure != 50 {
		t.Errorf("perfPressure %v, want 50", got.PerfPressure)
	}
	// Every field of the design's example, for every node.
	fields := []string{"nodeName", "schedulableClass", "headroom", "coolingStress", "measuredPowerW", "cappedPowerW", "nodeTdpW",
		"powerTrendWPerMin", "baseScore", "cpuTotalCores", "cpuMaxWattsTotal", "gpuCount", "gpuMaxWattsPerGpu", "hasGpu", "stale"}
	byName := map[string]map[string]any{}
	for _, n := range got.Nodes {
		for _, f := range fields {
			if _, ok := n[f]; !ok {
				t.Errorf("node %v has no %s", n["nodeName"], f)
			}
		}
		byName[n["nodeName"].(string)] = n
	}
	perf := byName["perf"]
	if perf["headroom"] != 50.0 || perf["cappedPowerW"] != 600.0 || perf["cpuMaxWattsTotal"] != 500.0 || perf["stale"] != false || perf["powerSource"] != "agent" {
		t.Errorf("perf node %v", perf)
	}
	// 50 × 0.7 + 80 × 0.15 = 47.
	if b := perf["baseScore"].(float64); b < 46.99 || b > 47.01 {
		t.Errorf("perf baseScore %v, want 47", b)
	}
	if byName["stale"]["stale"] != true || byName["stale"]["baseScore"] != 50.0 {
		t.Errorf("stale node %v", byName["stale"])
	}
	if len(got.Nodes) != 7 {
		t.Errorf("%d nodes, want the 7 Joulie knows", len(got.Nodes))
	}
}

func TestReadyzAndHealthzWaitForTheCache(t *testing.T) {
	ts := newTestServer(t, defaultOptions(), state.Build(nil, nil, nil, nil, false))
	get := func(path string) int {
		rec := httptest.NewRecorder()
		ts.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	paths := []string{"/readyz", "/healthz"}
	for _, p := range paths {
		if code := get(p); code != http.StatusServiceUnavailable {
			t.Errorf("%s before sync: %d, want 503", p, code)
		}
	}
	ts.snap.Store(clusterSnapshot())
	for _, p := range paths {
		if code := get(p); code != http.StatusOK {
			t.Errorf("%s after sync: %d, want 200", p, code)
		}
	}
}

func TestMetricsEndpoint(t *testing.T) {
	ts := newTestServer(t, defaultOptions(), clusterSnapshot())
	post(t, ts.Handler(), "/filter", marshal(t, byName(pod("performance"), allNodes)))
	rec := httptest.NewRecorder()
	ts.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`joulie_extender_request_duration_seconds_count{verb="filter"} 1`,
		`joulie_extender_filtered_nodes_total{reason="twin_eco"} 3`,
		`joulie_extender_twins{freshness="stale"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Requests run in parallel with snapshot swaps, under the race detector,
// and each sees one consistent snapshot.
func TestConcurrentRequestsAndSnapshotSwaps(t *testing.T) {
	ts := newTestServer(t, defaultOptions(), clusterSnapshot())
	body := marshal(t, byName(pod("performance"), allNodes))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				ts.snap.Store(clusterSnapshot())
			}
		}
	})
	var clients sync.WaitGroup
	for range 8 {
		clients.Go(func() {
			for range 50 {
				for _, path := range []string{"/filter", "/prioritize"} {
					if rec := post(t, ts.Handler(), path, body); rec.Code != http.StatusOK {
						t.Errorf("%s: %d", path, rec.Code)
						return
					}
				}
			}
		})
	}
	clients.Wait()
	close(stop)
	wg.Wait()
}
