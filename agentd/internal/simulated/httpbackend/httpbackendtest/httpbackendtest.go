// Package httpbackendtest is a test double of the other side of the HTTP
// backend contract (package httpbackend): an http.Handler that keeps the
// power state of any number of simulated nodes in memory, for agentd's
// unit tests behind httptest servers, as net/http/httptest serves
// net/http's.
//
// It is test support only: no package of the shipped agent imports it,
// and joulie-agentd's TestBinaryLinksNoTestSupport fails the build's
// tests if one does. Simulated hosts for real runs (make demo, the
// end-to-end tests) live in the test module, in
// joulie.io/joulie/test/demo/fleet, which serves the contract with the
// energy benchmark's physics.
//
// It serves GET .../telemetry and POST .../control under any path prefix
// (only the last path element is looked at), so a base URL such as
// http://sim:8080/nodes/{node} works as well as http://sim:8080. The node
// is always the one named in the query or body.
//
// # Power model
//
// Deterministic and simple, enough for a control loop to see its effect:
//
//   - A CPU package draws idle + load × (max − idle) watts before limits,
//     where max is MaxWattsPerPackage. A throttle of p% removes
//     ThrottleDepth × p% of the part above idle. The result is held
//     under the package cap.
//   - A GPU draws idle + load × (default − idle) watts, held under its
//     cap. Its energy counter integrates that draw over the clock.
//   - Node power is the sum plus OtherWatts (memory, fans, losses).
//
// # Faithful to hardware where the agent's safety depends on it
//
// A cap outside the device's range is refused (result error), not
// clamped, so tests catch an agent that forgets to clamp. A node whose
// package limits are read-only (like AMD EPYC RAPL) answers blocked.
// Actions listed in NodeSpec.Unmodeled, and actions this version does not
// know, answer 501.
package httpbackendtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"path"
	"slices"
	"sync"
	"time"

	"joulie.io/joulie/agentd/internal/simulated/httpbackend"
)

// ThrottleDepth is the share of above-idle package power a 100% throttle
// removes: the lowest frequency still draws something.
const ThrottleDepth = 0.7

// NodeSpec describes one simulated node.
type NodeSpec struct {
	// CPU is nil for a node whose CPU is not modeled: CPU actions then
	// answer 501 and telemetry has no cpu block.
	CPU *CPUSpec
	// GPUs are indexed by position.
	GPUs []GPUSpec
	// OtherWatts is the node's draw outside CPU packages and GPUs.
	OtherWatts float64
	// Unmodeled lists actions the node answers with 501, as a simulator
	// that does not model them would.
	Unmodeled []httpbackend.Action
}

// CPUSpec describes a node's CPU packages. Watts are per package.
type CPUSpec struct {
	Packages                               int
	MinWattsPerPackage, MaxWattsPerPackage float64
	IdleWattsPerPackage                    float64
	// ReadOnlyLimits makes rapl.set_power_cap_watts answer blocked.
	ReadOnlyLimits bool
}

// GPUSpec describes one GPU.
type GPUSpec struct {
	UUID, Name, PCIBusID                        string
	MinWatts, MaxWatts, DefaultWatts, IdleWatts float64
}

// Simulator is the handler and the state of every simulated node. It is
// safe for concurrent use.
type Simulator struct {
	clock func() time.Time

	mu    sync.Mutex
	nodes map[string]*node
}

type node struct {
	spec        NodeSpec
	cpuCap      float64
	throttlePct float64
	cpuLoad     float64
	gpuCap      []float64
	gpuLoad     float64
	gpuEnergy   []float64
	at          time.Time // when gpuEnergy was last brought up to date
	off         bool      // switched off by host.power_off, until PowerOn
}

// New returns a simulator without nodes. clock is nil for time.Now.
func New(clock func() time.Time) *Simulator {
	if clock == nil {
		clock = time.Now
	}
	return &Simulator{clock: clock, nodes: make(map[string]*node)}
}

// AddNode adds or replaces a node, uncapped, unthrottled and idle: each
// package at its maximum limit, each GPU at its default limit.
func (s *Simulator) AddNode(name string, spec NodeSpec) error {
	if err := validate(name, spec); err != nil {
		return fmt.Errorf("simulated node %q: %w", name, err)
	}
	spec.GPUs = slices.Clone(spec.GPUs)
	spec.Unmodeled = slices.Clone(spec.Unmodeled)
	if spec.CPU != nil {
		cpu := *spec.CPU
		spec.CPU = &cpu
	}
	n := &node{spec: spec, gpuEnergy: make([]float64, len(spec.GPUs))}
	if spec.CPU != nil {
		n.cpuCap = spec.CPU.MaxWattsPerPackage
	}
	for _, g := range spec.GPUs {
		n.gpuCap = append(n.gpuCap, g.DefaultWatts)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n.at = s.clock()
	s.nodes[name] = n
	return nil
}

func validate(name string, spec NodeSpec) error {
	if name == "" {
		return errors.New("empty name")
	}
	ok := func(w float64) bool { return w >= 0 && w <= httpbackend.MaxWatts }
	if !ok(spec.OtherWatts) {
		return fmt.Errorf("OtherWatts %g outside 0..%g", spec.OtherWatts, float64(httpbackend.MaxWatts))
	}
	if c := spec.CPU; c != nil {
		switch {
		case c.Packages < 1 || c.Packages > httpbackend.MaxPackages:
			return fmt.Errorf("%d CPU packages, want 1..%d", c.Packages, httpbackend.MaxPackages)
		case !ok(c.MinWattsPerPackage) || !ok(c.MaxWattsPerPackage) || !ok(c.IdleWattsPerPackage):
			return errors.New("CPU watts must be within 0..MaxWatts")
		case c.MinWattsPerPackage > c.MaxWattsPerPackage || c.IdleWattsPerPackage > c.MaxWattsPerPackage:
			return errors.New("CPU watts must satisfy min <= max and idle <= max")
		}
	}
	if len(spec.GPUs) > httpbackend.MaxGPUs {
		return fmt.Errorf("%d GPUs, at most %d", len(spec.GPUs), httpbackend.MaxGPUs)
	}
	seen := make(map[string]bool)
	for i, g := range spec.GPUs {
		switch {
		case g.UUID == "" || seen[g.UUID]:
			return fmt.Errorf("GPU %d: UUID empty or repeated", i)
		case !ok(g.MinWatts) || !ok(g.MaxWatts) || !ok(g.DefaultWatts) || !ok(g.IdleWatts):
			return fmt.Errorf("GPU %d: watts must be within 0..MaxWatts", i)
		case g.MinWatts > g.MaxWatts || g.DefaultWatts < g.MinWatts || g.DefaultWatts > g.MaxWatts || g.IdleWatts > g.DefaultWatts:
			return fmt.Errorf("GPU %d: watts must satisfy min <= default <= max and idle <= default", i)
		}
		seen[g.UUID] = true
	}
	return nil
}

// SetLoad sets the utilization, 0..1, of every CPU package and every GPU
// of a node.
func (s *Simulator) SetLoad(name string, cpu, gpu float64) error {
	if !(cpu >= 0 && cpu <= 1 && gpu >= 0 && gpu <= 1) {
		return fmt.Errorf("load of node %q: cpu %g and gpu %g must be within 0..1", name, cpu, gpu)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[name]
	if !ok {
		return fmt.Errorf("no simulated node %q", name)
	}
	n.advance(s.clock())
	n.cpuLoad, n.gpuLoad = cpu, gpu
	return nil
}

// Telemetry is what GET /telemetry answers for the node now.
func (s *Simulator) Telemetry(name string) (*httpbackend.Telemetry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[name]
	if !ok {
		return nil, false
	}
	now := s.clock()
	n.advance(now)
	return n.telemetry(name, now), true
}

// PoweredOff reports whether host.power_off has switched the node off
// (and PowerOn not yet on again).
func (s *Simulator) PoweredOff(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[name]
	return ok && n.off
}

// PowerOn switches a node on again, as its BMC or a magic packet would:
// the contract has no way in for it, since a switched-off host runs no
// agent to ask.
func (s *Simulator) PowerOn(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.nodes[name]; ok {
		n.off = false
	}
}

func (n *node) packageWatts() float64 {
	c := n.spec.CPU
	demand := c.IdleWattsPerPackage + n.cpuLoad*(c.MaxWattsPerPackage-c.IdleWattsPerPackage)
	dynamic := (demand - c.IdleWattsPerPackage) * (1 - ThrottleDepth*n.throttlePct/100)
	return math.Min(c.IdleWattsPerPackage+dynamic, n.cpuCap)
}

func (n *node) gpuWatts(i int) float64 {
	g := n.spec.GPUs[i]
	return math.Min(g.IdleWatts+n.gpuLoad*(g.DefaultWatts-g.IdleWatts), n.gpuCap[i])
}

// advance integrates GPU energy up to now; call it before any change to
// what the GPUs draw.
func (n *node) advance(now time.Time) {
	dt := now.Sub(n.at).Seconds()
	if dt <= 0 {
		return
	}
	for i := range n.spec.GPUs {
		n.gpuEnergy[i] += n.gpuWatts(i) * dt
	}
	n.at = now
}

func (n *node) telemetry(name string, now time.Time) *httpbackend.Telemetry {
	t := &httpbackend.Telemetry{APIVersion: httpbackend.APIVersion, Node: name, Time: now.UTC()}
	total := n.spec.OtherWatts
	if c := n.spec.CPU; c != nil {
		w := n.packageWatts()
		cpu := &httpbackend.CPUTelemetry{
			CapWatts:           n.cpuCap,
			MinWattsPerPackage: c.MinWattsPerPackage,
			MaxWattsPerPackage: c.MaxWattsPerPackage,
			ThrottlePct:        n.throttlePct,
		}
		for range c.Packages {
			cpu.PackagePowerWatts = append(cpu.PackagePowerWatts, w)
			total += w
		}
		t.CPU = cpu
	}
	for i, g := range n.spec.GPUs {
		e := n.gpuEnergy[i]
		w := n.gpuWatts(i)
		t.GPUs = append(t.GPUs, httpbackend.GPUTelemetry{
			Index: i, UUID: g.UUID, Name: g.Name, PCIBusID: g.PCIBusID,
			PowerWatts: w, EnergyJoules: &e, CapWatts: n.gpuCap[i],
			MinWatts: g.MinWatts, MaxWatts: g.MaxWatts, DefaultWatts: g.DefaultWatts,
		})
		total += w
	}
	t.NodePowerWatts = &total
	return t
}

// ServeHTTP answers the contract's two routes.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get(httpbackend.VersionHeader); v != "" && v != httpbackend.APIVersion {
		reply(w, http.StatusBadRequest, httpbackend.ResultError, fmt.Sprintf("%s %q is not supported, this simulator speaks %s", httpbackend.VersionHeader, v, httpbackend.APIVersion))
		return
	}
	switch path.Base(r.URL.Path) {
	case "telemetry":
		s.serveTelemetry(w, r)
	case "control":
		s.serveControl(w, r)
	default:
		reply(w, http.StatusNotFound, httpbackend.ResultError, "no such route: the contract has .../telemetry and .../control")
	}
}

func (s *Simulator) serveTelemetry(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		reply(w, http.StatusMethodNotAllowed, httpbackend.ResultError, "telemetry is read with GET")
		return
	}
	name := r.URL.Query().Get("node")
	if name == "" {
		reply(w, http.StatusBadRequest, httpbackend.ResultError, "query parameter node is missing")
		return
	}
	t, ok := s.Telemetry(name)
	if !ok {
		reply(w, http.StatusNotFound, httpbackend.ResultError, fmt.Sprintf("no simulated node %q", name))
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (s *Simulator) serveControl(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, httpbackend.ResultError, "controls are sent with POST")
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpbackend.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			reply(w, http.StatusRequestEntityTooLarge, httpbackend.ResultError, fmt.Sprintf("body larger than %d bytes", httpbackend.MaxBodyBytes))
			return
		}
		reply(w, http.StatusBadRequest, httpbackend.ResultError, "read body: "+err.Error())
		return
	}
	req, err := httpbackend.DecodeControlRequest(data)
	switch {
	case errors.Is(err, httpbackend.ErrUnknownAction):
		reply(w, http.StatusNotImplemented, httpbackend.ResultBlocked, err.Error())
		return
	case err != nil:
		reply(w, http.StatusBadRequest, httpbackend.ResultError, "malformed control request: "+err.Error())
		return
	}
	status, resp := s.apply(req)
	writeJSON(w, status, resp)
}

// apply carries out a valid request; the status is 200 unless the node is
// unknown (404) or does not model the action (501).
func (s *Simulator) apply(req *httpbackend.ControlRequest) (int, *httpbackend.ControlResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[req.Node]
	if !ok {
		return http.StatusNotFound, response(httpbackend.ResultError, fmt.Sprintf("no simulated node %q", req.Node))
	}
	if slices.Contains(n.spec.Unmodeled, req.Action) {
		return http.StatusNotImplemented, response(httpbackend.ResultBlocked, fmt.Sprintf("node %s does not model %s", req.Node, req.Action))
	}
	n.advance(s.clock())
	if n.off {
		return http.StatusOK, response(httpbackend.ResultError, fmt.Sprintf("node %s is switched off", req.Node))
	}
	switch req.Action {
	case httpbackend.ActionPowerOff:
		n.off = true
		return http.StatusOK, response(httpbackend.ResultApplied, "")
	case httpbackend.ActionSetPackageCap:
		c := n.spec.CPU
		switch {
		case c == nil:
			return http.StatusNotImplemented, response(httpbackend.ResultBlocked, fmt.Sprintf("node %s has no CPU model", req.Node))
		case c.ReadOnlyLimits:
			return http.StatusOK, response(httpbackend.ResultBlocked, "package power limits are read-only on this node")
		case *req.Watts < c.MinWattsPerPackage || *req.Watts > c.MaxWattsPerPackage:
			return http.StatusOK, response(httpbackend.ResultError, fmt.Sprintf("%g W is outside the package range %g..%g W", *req.Watts, c.MinWattsPerPackage, c.MaxWattsPerPackage))
		}
		n.cpuCap = *req.Watts
		resp := response(httpbackend.ResultApplied, "")
		applied := n.cpuCap
		resp.AppliedWatts = &applied
		return http.StatusOK, resp
	case httpbackend.ActionSetThrottle:
		if n.spec.CPU == nil {
			return http.StatusNotImplemented, response(httpbackend.ResultBlocked, fmt.Sprintf("node %s has no CPU model", req.Node))
		}
		n.throttlePct = *req.Pct
		resp := response(httpbackend.ResultApplied, "")
		applied := n.throttlePct
		resp.AppliedPct = &applied
		return http.StatusOK, resp
	case httpbackend.ActionSetGPUCap:
		i := *req.GPU
		if i >= len(n.spec.GPUs) {
			return http.StatusOK, response(httpbackend.ResultError, fmt.Sprintf("node %s has no GPU %d (%d GPUs)", req.Node, i, len(n.spec.GPUs)))
		}
		g := n.spec.GPUs[i]
		if *req.Watts < g.MinWatts || *req.Watts > g.MaxWatts {
			return http.StatusOK, response(httpbackend.ResultError, fmt.Sprintf("%g W is outside GPU %d's range %g..%g W", *req.Watts, i, g.MinWatts, g.MaxWatts))
		}
		n.gpuCap[i] = *req.Watts
		resp := response(httpbackend.ResultApplied, "")
		applied := n.gpuCap[i]
		resp.AppliedWatts = &applied
		return http.StatusOK, resp
	}
	// DecodeControlRequest lets only known actions through.
	return http.StatusNotImplemented, response(httpbackend.ResultBlocked, fmt.Sprintf("action %s is not modeled", req.Action))
}

func response(result httpbackend.Result, msg string) *httpbackend.ControlResponse {
	return &httpbackend.ControlResponse{APIVersion: httpbackend.APIVersion, Result: result, Message: msg}
}

func reply(w http.ResponseWriter, status int, result httpbackend.Result, msg string) {
	writeJSON(w, status, response(result, msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		// Every value here is finite (validated on the way in), so this
		// is a bug; answer it rather than panic.
		status, data = http.StatusInternalServerError, []byte(`{"apiVersion":"`+httpbackend.APIVersion+`","result":"error","message":"encode answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}
