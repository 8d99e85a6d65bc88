package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
)

// fakeSim speaks the agent's HTTP control contract
// (joulie.io/http-backend/v1) for one node with two CPU packages: enough
// to see a TelemetryProfile route a node's controls away from its host.
type fakeSim struct {
	mu      sync.Mutex
	capW    float64
	actions []string
}

func (f *fakeSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const version = "joulie.io/http-backend/v1"
	w.Header().Set("Content-Type", "application/json")
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/sim/agent-route-node/telemetry":
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": version, "node": r.URL.Query().Get("node"), "time": time.Now().UTC().Format(time.RFC3339),
			"cpu": map[string]any{"packagePowerWatts": []float64{120, 120}, "capWatts": f.capW,
				"minWattsPerPackage": 50, "maxWattsPerPackage": 300, "throttlePct": 0},
		})
	case "/sim/agent-route-node/control":
		var req struct {
			Action string  `json:"action"`
			Watts  float64 `json:"watts"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.actions = append(f.actions, req.Action)
		if req.Action != "rapl.set_power_cap_watts" {
			w.WriteHeader(http.StatusNotImplemented)
			_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": version, "result": "blocked", "message": "not modeled"})
			return
		}
		f.capW = req.Watts
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": version, "result": "applied", "appliedWatts": req.Watts})
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeSim) cap() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.capW
}

func TestTelemetryProfileRoutesANodeToASimulator(t *testing.T) {
	const node = "agent-route-node"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	sim := &fakeSim{capW: 300}
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
		if err == nil && p.Status.CPU != nil && p.Status.CPU.Backend == joulie.BackendHTTP && p.Status.CPU.Result == joulie.ResultApplied && sim.cap() == 180 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no routed cap: status %+v, simulator cap %g W, actions %v", p.Status.CPU, sim.cap(), sim.actions)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
