package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"joulie.io/joulie/extender/internal/wire"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
)

// debugScoring is the body of GET /debug/scoring: the design's shape
// (coefficients and one entry per node), plus the scoring mode, the
// cluster aggregates every score of the moment shares, and each node's
// score term by term for a standard and a performance pod asking for Pod.
type debugScoring struct {
	ScoringMode         scoring.Mode          `json:"scoringMode"`
	Pod                 debugPod              `json:"pod"`
	Coefficients        powerest.Coefficients `json:"coefficients"`
	FacilityMetrics     bool                  `json:"facilityMetrics"`
	StalenessThreshold  string                `json:"stalenessThreshold"`
	Synced              bool                  `json:"synced"`
	ClusterTrendWPerMin float64               `json:"clusterTrendWPerMin"`
	TrendScale          float64               `json:"trendScale"`
	PerfPressure        float64               `json:"perfPressure"`
	Nodes               []debugNode           `json:"nodes"`
}

// debugPod is the pod the breakdowns are worked out for: the query's cpu
// (cores) and gpus, none by default.
type debugPod struct {
	CPUCores float64 `json:"cpuCores"`
	GPUs     float64 `json:"gpus"`
}

// debugNode is one node. headroom is the node's headroom before any pod
// (measured when possible, else predicted: powerSource static counts as
// no measurement); baseScore its score before anything pod-specific:
// headroom, cooling and trend, or 50 without a fresh twin. The allocatable
// and requested CPU and GPUs are what its fill is made of (zero when the
// extender has not seen the Node); standard and performance are its score
// for the query's pod of each class, term by term.
type debugNode struct {
	NodeName          string   `json:"nodeName"`
	SchedulableClass  string   `json:"schedulableClass"`
	Headroom          float64  `json:"headroom"`
	CoolingStress     float64  `json:"coolingStress"`
	MeasuredPowerW    float64  `json:"measuredPowerW"`
	PowerSource       string   `json:"powerSource,omitempty"`
	CappedPowerW      float64  `json:"cappedPowerW"`
	NodeTdpW          float64  `json:"nodeTdpW"`
	PowerTrendWPerMin float64  `json:"powerTrendWPerMin"`
	BaseScore         float64  `json:"baseScore"`
	CPUTotalCores     float64  `json:"cpuTotalCores"`
	CPUMaxWattsTotal  float64  `json:"cpuMaxWattsTotal"`
	GPUCount          float64  `json:"gpuCount"`
	GPUMaxWattsPerGPU float64  `json:"gpuMaxWattsPerGpu"`
	HasGPU            bool     `json:"hasGpu"`
	Stale             bool     `json:"stale"`
	HasTwin           bool     `json:"hasTwin"`
	EstimatedPUE      *float64 `json:"estimatedPUE,omitempty"`
	LastUpdated       string   `json:"lastUpdated,omitempty"`
	PowerProfileLabel string   `json:"powerProfileLabel,omitempty"`
	DrainingLabel     string   `json:"drainingLabel,omitempty"`
	WarmReserveLabel  string   `json:"warmReserveLabel,omitempty"`

	AllocatableCPU  float64           `json:"allocatableCpu"`
	RequestedCPU    float64           `json:"requestedCpu"`
	AllocatableGPUs float64           `json:"allocatableGpus"`
	RequestedGPUs   float64           `json:"requestedGpus"`
	Standard        scoring.Breakdown `json:"standard"`
	Performance     scoring.Breakdown `json:"performance"`
}

// parseDebugPod reads the query's pod: cpu in cores and gpus, each a
// non-negative number, absent meaning none.
func parseDebugPod(q url.Values) (debugPod, error) {
	var d debugPod
	for _, f := range []struct {
		key, unit string
		v         *float64
	}{{"cpu", "cores", &d.CPUCores}, {"gpus", "GPUs", &d.GPUs}} {
		s := q.Get(f.key)
		if s == "" {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v >= 0) || v > 1e9 {
			return d, fmt.Errorf("query parameter %s=%q: want a number of %s, 0 or more (such as %s=4)", f.key, s, f.unit, f.key)
		}
		*f.v = v
	}
	return d, nil
}

// parseDebugNodes reads the query's nodes: false leaves the node entries
// out, for a reader that wants only the settings and the aggregates
// (kubectl joulie explain), which at thousands of nodes are a few
// hundred bytes of a body of megabytes.
func parseDebugNodes(q url.Values) (bool, error) {
	switch s := q.Get("nodes"); s {
	case "", "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, fmt.Errorf("query parameter nodes=%q: want true (the default) or false (the settings and aggregates alone)", s)
	}
}

func (s *Server) debugScoring(w http.ResponseWriter, r *http.Request) {
	pod, err := parseDebugPod(r.URL.Query())
	var withNodes bool
	if err == nil {
		withNodes, err = parseDebugNodes(r.URL.Query())
	}
	if err != nil {
		body := wire.AppendError(nil, err.Error())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(body)
		return
	}
	snap := s.snapshot()
	now := s.now()
	p := &s.opts.Params
	c := snap.Cluster(now, p.StalenessThreshold)
	mode := p.Mode
	if mode == "" {
		mode = scoring.ModePack
	}
	demand := powerest.Demand{CPUCores: pod.CPUCores, GPUs: pod.GPUs}
	standard := p.Batch(scoring.Pod{Demand: demand}, c, now)
	performance := p.Batch(scoring.Pod{Performance: true, Demand: demand}, c, now)
	out := debugScoring{
		ScoringMode:         mode,
		Pod:                 pod,
		Coefficients:        p.Coefficients,
		FacilityMetrics:     p.FacilityMetrics,
		StalenessThreshold:  p.StalenessThreshold.String(),
		Synced:              snap.Synced,
		ClusterTrendWPerMin: c.TrendWPerMin,
		TrendScale:          scoring.TrendScale(c.TrendWPerMin),
		PerfPressure:        c.PerfPressure,
	}
	nodes := snap.Nodes()
	if !withNodes {
		nodes = nil
	}
	out.Nodes = make([]debugNode, 0, len(nodes))
	for _, n := range nodes {
		d := debugNode{
			NodeName:          n.Name,
			BaseScore:         p.BaseScore(c, n.Twin, now),
			CPUTotalCores:     n.Hardware.CPUTotalCores,
			CPUMaxWattsTotal:  n.Hardware.CPUMaxWatts,
			GPUCount:          n.Hardware.GPUCount,
			GPUMaxWattsPerGPU: n.Hardware.GPUMaxWattsPerGPU,
			HasGPU:            n.Hardware.GPUCount > 0,
			PowerProfileLabel: n.Labels.Profile,
			DrainingLabel:     n.Labels.Draining,
			WarmReserveLabel:  n.Labels.WarmReserve,
			AllocatableCPU:    n.Fill.AllocatableCPU,
			RequestedCPU:      n.Fill.RequestedCPU,
			AllocatableGPUs:   n.Fill.AllocatableGPUs,
			RequestedGPUs:     n.Fill.RequestedGPUs,
			Standard:          standard.Explain(n.Twin, n.Hardware, n.Fill),
			Performance:       performance.Explain(n.Twin, n.Hardware, n.Fill),
		}
		if t := n.Twin; t != nil {
			d.HasTwin = true
			d.SchedulableClass = string(t.Class)
			d.Headroom = t.Headroom()
			d.CoolingStress = t.CoolingStress
			d.MeasuredPowerW = t.MeasuredW
			d.PowerSource = string(t.Source)
			d.CappedPowerW = t.CappedW
			d.NodeTdpW = t.TdpW
			d.PowerTrendWPerMin = t.TrendWPerMin
			d.Stale = t.Stale(now, p.StalenessThreshold)
			if t.PUE > 0 {
				d.EstimatedPUE = &t.PUE
			}
			if !t.LastUpdated.IsZero() {
				d.LastUpdated = t.LastUpdated.UTC().Format(time.RFC3339)
			}
		}
		out.Nodes = append(out.Nodes, d)
	}
	body, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, append(body, '\n'))
}

// healthz (/readyz and /healthz) answers 200 once the cache has synced and 503 before: until
// then the extender would score every node a neutral 50 for want of data,
// which a readiness probe should keep away from the scheduler. The
// process itself is alive either way.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	snap := s.snapshot()
	status := struct {
		Status string `json:"status"`
		Synced bool   `json:"synced"`
		Nodes  int    `json:"nodes"`
	}{Status: "ok", Synced: snap.Synced, Nodes: len(snap.Nodes())}
	code := http.StatusOK
	if !snap.Synced {
		status.Status = "syncing"
		code = http.StatusServiceUnavailable
	}
	body, _ := json.Marshal(status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}
