package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
)

// fakeSim speaks the agent's HTTP control contract
// (joulie.io/http-backend/v1) at /sim/<node>/ for any node, each with two
// CPU packages of 50..300 W: enough to see controls reach a simulator.
type fakeSim struct {
	mu   sync.Mutex
	caps map[string]float64
}

func newFakeSim() *fakeSim { return &fakeSim{caps: map[string]float64{}} }

func (f *fakeSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const version = "joulie.io/http-backend/v1"
	w.Header().Set("Content-Type", "application/json")
	rest, ok := strings.CutPrefix(r.URL.Path, "/sim/")
	node, route, _ := strings.Cut(rest, "/")
	if !ok || node == "" {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	capW, seen := f.caps[node]
	if !seen {
		capW = 300
	}
	switch route {
	case "telemetry":
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": version, "node": r.URL.Query().Get("node"), "time": time.Now().UTC().Format(time.RFC3339),
			"cpu": map[string]any{"packagePowerWatts": []float64{120, 120}, "capWatts": capW,
				"minWattsPerPackage": 50, "maxWattsPerPackage": 300, "throttlePct": 0},
		})
	case "control":
		var req struct {
			Action string  `json:"action"`
			Watts  float64 `json:"watts"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Action != "rapl.set_power_cap_watts" {
			w.WriteHeader(http.StatusNotImplemented)
			_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": version, "result": "blocked", "message": "not modeled"})
			return
		}
		f.caps[node] = req.Watts
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": version, "result": "applied", "appliedWatts": req.Watts})
	default:
		http.NotFound(w, r)
	}
}

// cap is the package limit the simulator holds for node (300 W untouched).
func (f *fakeSim) cap(node string) float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.caps[node]; ok {
		return w
	}
	return 300
}

func TestTelemetryProfileRoutesANodeToASimulator(t *testing.T) {
	const node = "agent-route-node"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	sim := newFakeSim()
	srv := httptest.NewServer(sim)
	defer srv.Close()

	cp.CreateReadyNode(t, node, map[string]string{joulie.LabelManaged: "true", "joulie.io/simulated": "true"}, nil)
	deleteNodeObjects(t, admin, node)
	route := &joulie.TelemetryProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "route-simulated-nodes"},
		Spec: joulie.TelemetryProfileSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"joulie.io/simulated": "true"}},
			Telemetry:    &joulie.Endpoint{Type: joulie.EndpointHTTP, URL: srv.URL + "/sim/{node}"},
			Control:      &joulie.Endpoint{Type: joulie.EndpointHTTP, URL: srv.URL + "/sim/{node}"},
		},
	}
	if _, err := admin.JoulieV1alpha1().TelemetryProfiles().Create(ctx, route, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.JoulieV1alpha1().TelemetryProfiles().Delete(context.Background(), route.Name, metav1.DeleteOptions{})
	})
	if _, err := admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco,
			CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(60.0)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	runAgent(t, node, cp.WriteKubeconfig(t, cp.AgentConfig(t, node)))

	// The simulator, not the host, received 60% of its 300 W package
	// maximum, and the agent reports it through the http backend.
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := admin.JoulieV1alpha1().NodePowerProfiles().Get(ctx, node, metav1.GetOptions{})
		if err == nil && p.Status.CPU != nil && p.Status.CPU.Backend == joulie.BackendHTTP && p.Status.CPU.Result == joulie.ResultApplied && sim.cap(node) == 180 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no routed cap: status %+v, simulator cap %g W", p.Status.CPU, sim.cap(node))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
