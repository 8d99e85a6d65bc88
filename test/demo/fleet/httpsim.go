package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"time"
)

// The HTTP backend contract (agentd/internal/simulated/httpbackend/
// CONTRACT.md), served for the pool nodes. The agent's package is internal
// to agentd, so this side is written from the contract's text alone, as
// any simulator author would write it.
const (
	httpAPIVersion    = "joulie.io/http-backend/v1"
	httpVersionHeader = "Joulie-Api-Version"
	httpMaxBody       = 1 << 20
)

type wireTelemetry struct {
	APIVersion     string    `json:"apiVersion"`
	Node           string    `json:"node"`
	Time           time.Time `json:"time"`
	NodePowerWatts float64   `json:"nodePowerWatts"`
	CPU            *wireCPU  `json:"cpu,omitempty"`
	GPUs           []wireGPU `json:"gpus,omitempty"`
}

type wireCPU struct {
	PackagePowerWatts  []float64 `json:"packagePowerWatts"`
	CapWatts           float64   `json:"capWatts"`
	MinWattsPerPackage float64   `json:"minWattsPerPackage"`
	MaxWattsPerPackage float64   `json:"maxWattsPerPackage"`
	ThrottlePct        float64   `json:"throttlePct"`
}

type wireGPU struct {
	Index        int     `json:"index"`
	UUID         string  `json:"uuid"`
	Name         string  `json:"name,omitempty"`
	PCIBusID     string  `json:"pciBusId,omitempty"`
	PowerWatts   float64 `json:"powerWatts"`
	EnergyJoules float64 `json:"energyJoules"`
	CapWatts     float64 `json:"capWatts"`
	MinWatts     float64 `json:"minWatts"`
	MaxWatts     float64 `json:"maxWatts"`
	DefaultWatts float64 `json:"defaultWatts"`
}

type wireControl struct {
	APIVersion string   `json:"apiVersion"`
	Node       string   `json:"node"`
	Action     string   `json:"action"`
	Watts      *float64 `json:"watts,omitempty"`
	Pct        *float64 `json:"pct,omitempty"`
	GPU        *int     `json:"gpu,omitempty"`
}

type wireAnswer struct {
	APIVersion   string   `json:"apiVersion"`
	Result       string   `json:"result"`
	Message      string   `json:"message,omitempty"`
	AppliedWatts *float64 `json:"appliedWatts,omitempty"`
	AppliedPct   *float64 `json:"appliedPct,omitempty"`
}

// gpuUUID and gpuBusID name GPU i of a node the same way on both paths
// (HTTP telemetry and the fake NVML), stable across runs.
func gpuUUID(node string, i int) string {
	var h uint32 = 2166136261
	for _, c := range []byte(node) {
		h = (h ^ uint32(c)) * 16777619
	}
	return fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", h, i)
}

func gpuBusID(i int) string { return fmt.Sprintf("0000:%02x:00.0", 0x18+0x10*i) }

// ServeHTTP answers GET .../telemetry and POST .../control for the pool
// nodes; only the last path element is looked at, so any base URL with or
// without {node} works.
func (s *sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get(httpVersionHeader); v != "" && v != httpAPIVersion {
		answer(w, http.StatusBadRequest, "error", fmt.Sprintf("%s %q is not served here; this simulator speaks %s", httpVersionHeader, v, httpAPIVersion))
		return
	}
	switch path.Base(r.URL.Path) {
	case "telemetry":
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			answer(w, http.StatusMethodNotAllowed, "error", "telemetry is read with GET")
			return
		}
		t, ok := s.telemetry(r.URL.Query().Get("node"))
		if !ok {
			answer(w, http.StatusNotFound, "error", fmt.Sprintf("no pool node %q in this fleet", r.URL.Query().Get("node")))
			return
		}
		writeJSON(w, http.StatusOK, t)
	case "control":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			answer(w, http.StatusMethodNotAllowed, "error", "controls are sent with POST")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpMaxBody))
		if err != nil {
			answer(w, http.StatusRequestEntityTooLarge, "error", "read body: "+err.Error())
			return
		}
		var req wireControl
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil || dec.More() {
			answer(w, http.StatusBadRequest, "error", fmt.Sprintf("malformed control request: %v", err))
			return
		}
		if req.APIVersion != httpAPIVersion {
			answer(w, http.StatusBadRequest, "error", fmt.Sprintf("apiVersion %q, want %s", req.APIVersion, httpAPIVersion))
			return
		}
		status, a := s.control(&req)
		writeJSON(w, status, a)
	default:
		answer(w, http.StatusNotFound, "error", "no such route: the contract has .../telemetry and .../control")
	}
}

func (s *sim) telemetry(name string) (*wireTelemetry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[name]
	if !ok || n.hostTree != nil {
		return nil, false
	}
	f := n.fam
	t := &wireTelemetry{APIVersion: httpAPIVersion, Node: name, Time: s.now.UTC(), NodePowerWatts: n.watts,
		CPU: &wireCPU{CapWatts: n.cpuCapW, MinWattsPerPackage: f.PackageMinW, MaxWattsPerPackage: f.PackageMaxW, ThrottlePct: n.throttlePct}}
	for range f.Sockets {
		t.CPU.PackagePowerWatts = append(t.CPU.PackagePowerWatts, n.pkgW)
	}
	for i := range f.GPUs {
		t.GPUs = append(t.GPUs, wireGPU{Index: i, UUID: gpuUUID(name, i), Name: f.GPUName, PCIBusID: gpuBusID(i),
			PowerWatts: n.gpuW[i], EnergyJoules: n.gpuEnergyJ[i], CapWatts: n.gpuCapW[i],
			MinWatts: f.GPUMinW, MaxWatts: f.GPUMaxW, DefaultWatts: f.GPUMaxW})
	}
	return t, true
}

// control applies one action. Like hardware, and unlike the agent, it
// does not clamp: a value outside the range is an error, so an agent that
// forgot to clamp shows it.
func (s *sim) control(req *wireControl) (int, *wireAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[req.Node]
	if !ok || n.hostTree != nil {
		return http.StatusNotFound, &wireAnswer{APIVersion: httpAPIVersion, Result: "error", Message: fmt.Sprintf("no pool node %q in this fleet", req.Node)}
	}
	if n.host != HostOn {
		// Nothing runs on a host that is off or still booting, so
		// nothing takes a control, a second power-off included.
		return http.StatusOK, &wireAnswer{APIVersion: httpAPIVersion, Result: "error", Message: fmt.Sprintf("node %s is %s", n.name, n.host)}
	}
	f := n.fam
	applied := func(w, pct *float64) (int, *wireAnswer) {
		return http.StatusOK, &wireAnswer{APIVersion: httpAPIVersion, Result: "applied", AppliedWatts: w, AppliedPct: pct}
	}
	refuse := func(status int, msg string) (int, *wireAnswer) {
		return status, &wireAnswer{APIVersion: httpAPIVersion, Result: "error", Message: msg}
	}
	switch req.Action {
	case "host.power_off":
		if req.Watts != nil || req.Pct != nil || req.GPU != nil {
			return refuse(http.StatusBadRequest, "host.power_off takes no field")
		}
		s.switchOff(n, PowerOffByAgent)
		return http.StatusOK, &wireAnswer{APIVersion: httpAPIVersion, Result: "applied"}
	case "rapl.set_power_cap_watts":
		if req.Watts == nil || req.Pct != nil || req.GPU != nil {
			return refuse(http.StatusBadRequest, "rapl.set_power_cap_watts takes watts alone")
		}
		if w := *req.Watts; w < f.PackageMinW || w > f.PackageMaxW {
			return refuse(http.StatusOK, fmt.Sprintf("%g W is outside the package range %g..%g W", w, f.PackageMinW, f.PackageMaxW))
		}
		n.cpuCapW = *req.Watts
		v := n.cpuCapW
		return applied(&v, nil)
	case "dvfs.set_throttle_pct":
		if req.Pct == nil || req.Watts != nil || req.GPU != nil {
			return refuse(http.StatusBadRequest, "dvfs.set_throttle_pct takes pct alone")
		}
		if p := *req.Pct; p < 0 || p > 100 {
			return refuse(http.StatusOK, fmt.Sprintf("throttle %g%% is outside 0..100", p))
		}
		n.throttlePct = *req.Pct
		v := n.throttlePct
		return applied(nil, &v)
	case "gpu.set_power_cap_watts":
		if req.Watts == nil || req.GPU == nil || req.Pct != nil {
			return refuse(http.StatusBadRequest, "gpu.set_power_cap_watts takes gpu and watts")
		}
		i, w := *req.GPU, *req.Watts
		if i < 0 || i >= f.GPUs {
			return refuse(http.StatusOK, fmt.Sprintf("node %s has no GPU %d (%d GPUs)", n.name, i, f.GPUs))
		}
		if w < f.GPUMinW || w > f.GPUMaxW {
			return refuse(http.StatusOK, fmt.Sprintf("%g W is outside GPU %d's range %g..%g W", w, i, f.GPUMinW, f.GPUMaxW))
		}
		n.gpuCapW[i] = w
		return applied(&w, nil)
	}
	return http.StatusNotImplemented, &wireAnswer{APIVersion: httpAPIVersion, Result: "blocked", Message: fmt.Sprintf("action %q is not modelled", req.Action)}
}

func answer(w http.ResponseWriter, status int, result, msg string) {
	writeJSON(w, status, &wireAnswer{APIVersion: httpAPIVersion, Result: result, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data, _ = json.Marshal(&wireAnswer{APIVersion: httpAPIVersion, Result: "error", Message: errors.Join(errors.New("encode answer"), err).Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}
