package server

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"joulie.io/joulie/extender/internal/state"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/scoring"
)

// packSnapshot: two eco nodes of equal power, one holding 40 of its 64
// cores, one empty; two performance nodes, one busy (800 of 1000 W, 48
// cores requested), one idle (100 W, 4 cores).
func packSnapshot() *state.Snapshot {
	twins := []*joulie.NodeTwin{
		twinObj("eco-full", twinSpec{class: joulie.ClassEco, cappedW: 1000, measuredW: 500, cool: 20}),
		twinObj("eco-empty", twinSpec{class: joulie.ClassEco, cappedW: 1000, measuredW: 500, cool: 20}),
		twinObj("perf-busy", twinSpec{class: joulie.ClassPerformance, cappedW: 1000, measuredW: 800, cool: 20}),
		twinObj("perf-idle", twinSpec{class: joulie.ClassPerformance, cappedW: 1000, measuredW: 100, cool: 20}),
	}
	var hw []*joulie.NodeHardware
	var nodes []*corev1.Node
	for _, tw := range twins {
		hw = append(hw, cpuHardware(tw.Name))
		nodes = append(nodes, node(tw.Name, nil, "64", ""))
	}
	requests := map[string]state.Requests{"eco-full": {CPUMilli: 40000}, "perf-busy": {CPUMilli: 48000}, "perf-idle": {CPUMilli: 4000}}
	return state.Build(twins, hw, nodes, requests, true)
}

var packNodes = []string{"eco-full", "eco-empty", "perf-busy", "perf-idle"}

// In pack mode, the default, a standard pod goes to the fullest node and
// so does a performance pod, among the performance nodes; in
// pack-standard mode the performance pod goes to the one with power
// headroom.
func TestPrioritizePacksStandardPods(t *testing.T) {
	ts := newTestServer(t, defaultOptions(), packSnapshot())
	got := priorities(t, post(t, ts.Handler(), "/prioritize", marshal(t, byName(pod(""), packNodes))))
	want := map[string]int64{
		// fill (40 + 8) / 64 = 75: 75 × 0.7 + 80 × 0.15 + 10 = 74.5 → 7.
		"eco-full": 7,
		// 8 / 64 = 12.5: 8.75 + 12 + 10 = 30.75 → 3.
		"eco-empty": 3,
		// Performance pressure (80 + 10) / 2 = 45 takes 13.5 off.
		// 56 / 64 = 87.5: 61.25 + 12 − 13.5 = 59.75 → 6.
		"perf-busy": 6,
		// 12 / 64 = 18.75: 13.125 + 12 − 13.5 = 11.6 → 1.
		"perf-idle": 1,
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("standard pod, node %s: priority %d, want %d", n, got[n], w)
		}
	}
	perf := priorities(t, post(t, ts.Handler(), "/prioritize", marshal(t, byName(pod("performance"), []string{"perf-busy", "perf-idle"}))))
	// No pressure term for a performance pod: 61.25 + 12 = 73.25 → 7, and
	// 13.125 + 12 = 25.1 → 3.
	if perf["perf-busy"] != 7 || perf["perf-idle"] != 3 {
		t.Errorf("pack mode, performance pod: %v, want perf-busy 7 and perf-idle 3", perf)
	}
	opts := defaultOptions()
	opts.Params.Mode = scoring.ModePackStandard
	ts = newTestServer(t, opts, packSnapshot())
	perf = priorities(t, post(t, ts.Handler(), "/prioritize", marshal(t, byName(pod("performance"), []string{"perf-busy", "perf-idle"}))))
	// The pod adds 50 W: (1000 − 850) / 10 × 0.7 + 12 = 22.5 → 2, and
	// (1000 − 150) / 10 × 0.7 + 12 = 71.5 → 7.
	if perf["perf-busy"] != 2 || perf["perf-idle"] != 7 {
		t.Errorf("pack-standard mode, performance pod: %v, want perf-busy 2 and perf-idle 7", perf)
	}

	// In headroom mode the standard pod sees equal eco nodes, and prefers
	// the idle performance node to the busy one.
	ts = newTestServer(t, headroomOptions(), packSnapshot())
	got = priorities(t, post(t, ts.Handler(), "/prioritize", marshal(t, byName(pod(""), packNodes))))
	if got["eco-full"] != got["eco-empty"] || got["perf-idle"] <= got["perf-busy"] {
		t.Errorf("headroom mode, standard pod: %v, want eco nodes equal and perf-idle above perf-busy", got)
	}
}

// /debug/scoring shows the mode, each node's fill and its score for a
// standard and a performance pod term by term, for the pod the query
// asks about.
func TestDebugScoringExplainsEachTerm(t *testing.T) {
	ts := newTestServer(t, defaultOptions(), packSnapshot())
	get := func(query string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		ts.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/scoring"+query, nil))
		return rec
	}
	rec := get("?cpu=8")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var got struct {
		ScoringMode string `json:"scoringMode"`
		Pod         struct {
			CPUCores float64 `json:"cpuCores"`
			GPUs     float64 `json:"gpus"`
		} `json:"pod"`
		Nodes []struct {
			NodeName       string            `json:"nodeName"`
			AllocatableCPU float64           `json:"allocatableCpu"`
			RequestedCPU   float64           `json:"requestedCpu"`
			Standard       scoring.Breakdown `json:"standard"`
			Performance    scoring.Breakdown `json:"performance"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.ScoringMode != "pack" || got.Pod.CPUCores != 8 || got.Pod.GPUs != 0 {
		t.Errorf("mode %q, pod %+v; want pack and 8 cores", got.ScoringMode, got.Pod)
	}
	seen := 0
	for _, n := range got.Nodes {
		if n.NodeName != "perf-busy" {
			continue
		}
		seen++
		if n.AllocatableCPU != 64 || n.RequestedCPU != 48 {
			t.Errorf("perf-busy fill: %v of %v cores, want 48 of 64", n.RequestedCPU, n.AllocatableCPU)
		}
		std := scoring.Breakdown{Formula: scoring.ModePack, CPUFill: 87.5, FillKnown: true, Fill: 87.5, FillTerm: 61.25, CoolingTerm: 12, PressureRelief: -13.5, Total: 59.75}
		b := n.Standard
		if math.Abs(b.FillTerm-std.FillTerm) < 1e-9 {
			b.FillTerm = std.FillTerm // 87.5 × 0.7 is not exact in binary
		}
		if b != std {
			t.Errorf("perf-busy, standard pod:\n%+v\nwant\n%+v", n.Standard, std)
		}
		if p := n.Performance; p.Formula != scoring.ModePack || p.Fill != 87.5 || p.PressureRelief != 0 || math.Abs(p.Total-73.25) > 1e-9 {
			t.Errorf("perf-busy, performance pod: %+v, want the pack formula: fill 87.5, no pressure term, 73.25", p)
		}
	}
	if seen != 1 {
		t.Errorf("perf-busy shown %d times", seen)
	}
	// nodes=false: the settings and aggregates, no node.
	rec = get("?nodes=false")
	var head struct {
		ScoringMode        string            `json:"scoringMode"`
		StalenessThreshold string            `json:"stalenessThreshold"`
		Nodes              []json.RawMessage `json:"nodes"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &head); rec.Code != http.StatusOK || err != nil || head.ScoringMode != "pack" ||
		head.StalenessThreshold == "" || head.Nodes == nil || len(head.Nodes) != 0 {
		t.Errorf("?nodes=false: status %d, mode %q, staleness %q, %d nodes (nil %v), %v; want the settings and an empty node list",
			rec.Code, head.ScoringMode, head.StalenessThreshold, len(head.Nodes), head.Nodes == nil, err)
	}
	for _, q := range []string{"?cpu=-1", "?gpus=two", "?cpu=NaN", "?nodes=no", "?cpu=1&nodes=0"} {
		if rec := get(q); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"error"`) {
			t.Errorf("%s: status %d, body %s; want 400 with a JSON error", q, rec.Code, rec.Body)
		}
	}
}
