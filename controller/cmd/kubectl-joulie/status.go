package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/pkg/workload"
)

// The agent's side of a node, as the API shows it.
const (
	agentOK = "ok"
	// agentNone: no NodeHardware and nothing in the profile's status; no
	// agent has ever reported for the node.
	agentNone = "none"
	// agentBehind: the agent has not applied the profile's current
	// generation (it cannot reach the API, runs its failsafe, or failed
	// to write).
	agentBehind = "behind"
	// agentSilent: the agent's last power reading is older than the
	// controller's MEASUREMENT_MAX_AGE.
	agentSilent = "silent"
	// agentEcoRefused: the agent holds an eco target off while a
	// performance pod runs (its EcoRefused condition).
	agentEcoRefused = "eco-refused"
)

// measurementMaxAge is the controller's default MEASUREMENT_MAX_AGE: an
// agent reading older than this no longer feeds the twin.
const measurementMaxAge = 3 * time.Minute

// statusReport is kubectl joulie status: one entry per managed node and
// the cluster's totals. It is the -o json and -o yaml document.
type statusReport struct {
	Nodes    []nodeStatus `json:"nodes"`
	Totals   totals       `json:"totals"`
	Warnings []string     `json:"warnings,omitempty"`
}

// nodeStatus is one node.
type nodeStatus struct {
	Name string `json:"name"`
	// Profile is performance or eco (the profile's spec), draining while
	// the node is labelled or classed draining, or empty when the
	// controller has written no profile.
	Profile string `json:"profile"`
	// PowerState is awake, parking, parked, waking or wake-failed.
	PowerState string `json:"powerState"`
	// Agent is ok, none, behind, silent or eco-refused.
	Agent string    `json:"agent"`
	CPU   capStatus `json:"cpu"`
	// GPU is absent on a node without GPUs.
	GPU *capStatus `json:"gpu,omitempty"`
	// PowerW is the node's power and PowerSource where it comes from:
	// the twin's (agent, kepler, utilization, static), else the agent's
	// own reading (agent).
	PowerW      *float64 `json:"powerW,omitempty"`
	PowerSource string   `json:"powerSource,omitempty"`
	// HeadroomPct is the twin's headroom before any new pod, as the
	// extender scores it (scoring.Twin.Headroom).
	HeadroomPct     *float64 `json:"headroomPct,omitempty"`
	PerformancePods int      `json:"performancePods"`
	StandardPods    int      `json:"standardPods"`

	// What -o wide adds.
	TwinClass    string  `json:"twinClass,omitempty"`
	TwinStale    bool    `json:"twinStale,omitempty"`
	Cooling      float64 `json:"coolingStress,omitempty"`
	TrendWPerMin float64 `json:"powerTrendWPerMin,omitempty"`
	CPUModel     string  `json:"cpuModel,omitempty"`
	GPUModel     string  `json:"gpuModel,omitempty"`
	GPUCount     int32   `json:"gpuCount,omitempty"`
}

// capStatus is one device class's cap: what the controller asks and
// what the agent reports.
type capStatus struct {
	// Target is the spec's cap: "60%", "180W" or "uncapped".
	Target string `json:"target"`
	// Reason is the controller's reason for it.
	Reason string `json:"reason,omitempty"`
	// Result is the agent's: applied, blocked, error or none; empty
	// before it has reported.
	Result  string `json:"result,omitempty"`
	Backend string `json:"backend,omitempty"`
	// AppliedW is the cap in force on each device.
	AppliedW *float64 `json:"appliedW,omitempty"`
	Message  string   `json:"message,omitempty"`
	// Pending is true when the agent's result answers an older
	// generation of the profile than Target.
	Pending bool `json:"pending,omitempty"`
}

// totals are the cluster's.
type totals struct {
	Nodes int `json:"nodes"`
	// PowerW sums the nodes' measured or modelled power, PowerBySource
	// counts the nodes by its source, NodesWithoutPower those with none
	// (or only the static cap estimate).
	PowerW            float64        `json:"powerW"`
	PowerBySource     map[string]int `json:"powerBySource"`
	NodesWithoutPower int            `json:"nodesWithoutPower"`
	Profiles          map[string]int `json:"profiles"`
	PowerStates       map[string]int `json:"powerStates"`
	// PerformancePodsOnEcoNodes must be 0: a performance pod bound to a
	// node whose profile is eco runs under eco caps.
	PerformancePodsOnEcoNodes int      `json:"performancePodsOnEcoNodes"`
	PerformancePodsOnEco      []string `json:"performancePodsOnEco,omitempty"`
}

// buildStatus makes the report from what the API holds at now. The
// nodes shown are those of s (already narrowed by any selector) that
// Joulie knows: a profile, twin or hardware, or the managed label.
func buildStatus(s *snapshot, now time.Time) statusReport {
	profiles := byName(s.profiles, func(p *joulie.NodePowerProfile) string { return p.Name })
	twins := byName(s.twins, func(t *joulie.NodeTwin) string { return t.Name })
	hardware := byName(s.hardware, func(h *joulie.NodeHardware) string { return h.Name })
	type podCount struct {
		perf, std int
		perfPods  []string
	}
	pods := map[string]*podCount{}
	for i := range s.pods {
		p := &s.pods[i]
		if !workload.IsActive(p) || p.Spec.NodeName == "" {
			continue
		}
		c := pods[p.Spec.NodeName]
		if c == nil {
			c = &podCount{}
			pods[p.Spec.NodeName] = c
		}
		if workload.Classify(p) == workload.Performance {
			c.perf++
			c.perfPods = append(c.perfPods, p.Namespace+"/"+p.Name)
		} else {
			c.std++
		}
	}

	r := statusReport{Nodes: []nodeStatus{}, Totals: totals{PowerBySource: map[string]int{}, Profiles: map[string]int{}, PowerStates: map[string]int{}}}
	for i := range s.nodes {
		node := &s.nodes[i]
		p, t, h := profiles[node.Name], twins[node.Name], hardware[node.Name]
		if p == nil && t == nil && h == nil && node.Labels[joulie.LabelManaged] != "true" {
			continue
		}
		n := nodeStatus{Name: node.Name, PowerState: string(joulie.PowerAwake), Agent: agentOK, CPU: capStatus{Target: "uncapped"}}
		if p != nil {
			n.Profile = string(p.Spec.Profile)
			if p.Spec.PowerState != "" {
				n.PowerState = string(p.Spec.PowerState)
			}
			n.CPU = cpuCap(p)
			n.GPU = gpuCap(p)
		}
		if node.Labels[joulie.LabelDraining] == "true" || (t != nil && t.Status.SchedulableClass == joulie.ClassDraining) {
			n.Profile = string(joulie.ClassDraining)
		}
		if n.Profile == "" {
			n.Profile = node.Labels[joulie.LabelPowerProfile]
		}
		if h != nil {
			n.CPUModel = h.Status.CPU.Model
			if g := h.Status.GPU; g != nil && g.Count > 0 {
				n.GPUModel, n.GPUCount = g.Model, g.Count
			}
		}
		if n.GPUCount == 0 && n.GPU != nil && n.GPU.Target == "uncapped" && (n.GPU.Result == "" || n.GPU.Result == string(joulie.ResultNone)) {
			n.GPU = nil // nothing asked, nothing there
		}
		n.Agent = agentState(p, h, now)
		if n.Agent == agentBehind {
			// The results answer an older spec than the caps shown.
			n.CPU.Pending = true
			if n.GPU != nil {
				n.GPU.Pending = true
			}
		}
		if t != nil {
			tw := scoring.TwinOf(&t.Status)
			n.TwinClass = string(tw.Class)
			n.TwinStale = tw.Stale(now, scoring.DefaultParams().StalenessThreshold)
			n.Cooling = tw.CoolingStress
			headroom := tw.Headroom()
			n.HeadroomPct = &headroom
			if m := t.Status.PowerMeasurement; m != nil {
				w := m.MeasuredNodePowerW
				n.PowerW, n.PowerSource, n.TrendWPerMin = &w, string(m.Source), m.PowerTrendWPerMin
			}
		}
		if n.PowerW == nil && p != nil && p.Status.MeasuredPower != nil {
			w := p.Status.MeasuredPower.NodePowerWatts
			n.PowerW, n.PowerSource = &w, string(joulie.SourceAgent)
		}
		if n.PowerState == string(joulie.PowerParked) {
			// A parked node draws its standby power, which nothing
			// measures: the last reading is from before it went down.
			n.PowerW, n.PowerSource, n.HeadroomPct = nil, "", nil
		}
		if c := pods[node.Name]; c != nil {
			n.PerformancePods, n.StandardPods = c.perf, c.std
			if p != nil && p.Spec.Profile == joulie.ProfileEco {
				r.Totals.PerformancePodsOnEcoNodes += c.perf
				r.Totals.PerformancePodsOnEco = append(r.Totals.PerformancePodsOnEco, c.perfPods...)
			}
		}
		r.Nodes = append(r.Nodes, n)
		r.Warnings = append(r.Warnings, warnings(&n, p)...)

		r.Totals.Nodes++
		// The static figure is the node's cap budget, not its draw (the
		// extender treats it as no measurement): it stays out of the sum.
		if n.PowerW != nil && n.PowerSource != string(joulie.SourceStatic) {
			r.Totals.PowerW += *n.PowerW
			r.Totals.PowerBySource[n.PowerSource]++
		} else {
			r.Totals.NodesWithoutPower++
		}
		r.Totals.Profiles[orDash(n.Profile)]++
		r.Totals.PowerStates[n.PowerState]++
	}
	slices.Sort(r.Totals.PerformancePodsOnEco)
	return r
}

func byName[T any](items []T, name func(*T) string) map[string]*T {
	m := make(map[string]*T, len(items))
	for i := range items {
		m[name(&items[i])] = &items[i]
	}
	return m
}

// agentState reads the agent's side of a node from its objects.
func agentState(p *joulie.NodePowerProfile, h *joulie.NodeHardware, now time.Time) string {
	if p == nil {
		if h == nil {
			return agentNone
		}
		return agentOK
	}
	st := &p.Status
	if h == nil && st.CPU == nil && st.GPU == nil && st.MeasuredPower == nil && st.ObservedGeneration == 0 {
		return agentNone
	}
	if p.Spec.PowerState == joulie.PowerParked {
		return agentOK // switched off on purpose; silence is expected
	}
	if st.ObservedGeneration < p.Generation {
		return agentBehind
	}
	if m := st.MeasuredPower; m != nil && now.Sub(m.Time.Time) > measurementMaxAge {
		return agentSilent
	}
	if meta.IsStatusConditionTrue(st.Conditions, joulie.ConditionEcoRefused) {
		return agentEcoRefused
	}
	return agentOK
}

// warnings are what an operator should act on for the node.
func warnings(n *nodeStatus, p *joulie.NodePowerProfile) []string {
	var w []string
	switch n.Agent {
	case agentNone:
		w = append(w, fmt.Sprintf("node %s: no agent has reported (no NodeHardware, no profile status): install joulie-agent on the host and give it its kubeconfig (README.md, \"Install the agent\")", n.Name))
	case agentBehind:
		w = append(w, fmt.Sprintf("node %s: the agent has not applied generation %d of its profile (last applied: %d): it cannot reach the API server, runs its failsafe, or failed to write; see joulie-agentctl status on the host", n.Name, p.Generation, p.Status.ObservedGeneration))
	case agentSilent:
		w = append(w, fmt.Sprintf("node %s: the agent's last power reading is older than %s: is joulie-agentd running there?", n.Name, measurementMaxAge))
	}
	for _, c := range []struct {
		name string
		cs   *capStatus
	}{{"CPU", &n.CPU}, {"GPU", n.GPU}} {
		if c.cs != nil && (c.cs.Result == string(joulie.ResultBlocked) || c.cs.Result == string(joulie.ResultError)) {
			w = append(w, fmt.Sprintf("node %s: %s cap %s: %s", n.Name, c.name, c.cs.Result, orDash(c.cs.Message)))
		}
	}
	return w
}

func cpuCap(p *joulie.NodePowerProfile) capStatus {
	c := capStatus{Target: "uncapped"}
	if t := p.Spec.CPU; t != nil {
		c.Reason = t.Reason
		switch {
		case t.PackagePowerCapWatts != nil:
			c.Target = watts(*t.PackagePowerCapWatts)
		case t.PackagePowerCapPctOfMax != nil && *t.PackagePowerCapPctOfMax < 100:
			c.Target = percent(*t.PackagePowerCapPctOfMax)
		}
	}
	c.result(p.Status.CPU)
	return c
}

func gpuCap(p *joulie.NodePowerProfile) *capStatus {
	c := &capStatus{Target: "uncapped"}
	if t := p.Spec.GPU; t != nil {
		c.Reason = t.Reason
		if pc := t.PowerCap; pc != nil {
			switch {
			case pc.CapWattsPerGpu != nil:
				c.Target = watts(*pc.CapWattsPerGpu)
			case pc.CapPctOfMax != nil && *pc.CapPctOfMax < 100:
				c.Target = percent(*pc.CapPctOfMax)
			}
		}
	}
	c.result(p.Status.GPU)
	return c
}

func (c *capStatus) result(st *joulie.ControlStatus) {
	if st == nil {
		return
	}
	c.Result, c.Backend, c.Message, c.AppliedW = string(st.Result), string(st.Backend), st.Message, st.AppliedCapWatts
}

// cell is a cap as the table shows it: the cap in force when the agent
// applied one, else what was asked and what became of it.
func (c *capStatus) cell() string {
	if c == nil {
		return "-"
	}
	switch {
	case c.Result == "":
		return c.Target + " (not reported)"
	case c.Pending:
		return c.Target + " (not applied)"
	case c.Result == string(joulie.ResultApplied) && c.AppliedW != nil:
		return watts(*c.AppliedW) + " applied"
	case c.Result == string(joulie.ResultNone):
		return c.Target
	}
	return c.Target + " " + c.Result
}

func watts(w float64) string   { return strconv.FormatFloat(w, 'f', 0, 64) + "W" }
func percent(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) + "%" }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// power shows watts from 10 kW on in kW.
func power(w float64) string {
	if w >= 10_000 {
		return strconv.FormatFloat(w/1000, 'f', 1, 64) + " kW"
	}
	return watts(w)
}

// counts shows a map of counts in a stable order: the known keys first,
// in the order given, then the others sorted.
func counts(m map[string]int, order ...string) string {
	var parts []string
	for _, k := range order {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(order, k) && m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
