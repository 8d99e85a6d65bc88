package scoring

import (
	"fmt"
	"math"
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/powerest"
)

// Weights and limits of the design's formula.
const (
	// NeutralScore is what a node without a usable twin scores: it neither
	// attracts nor repels pods, so stale data cannot steer placement.
	NeutralScore = 50.0

	headroomWeight = 0.7
	coolingWeight  = 0.15
	// trendLimit bounds the trend bonus (SPEC.md: ±25 points).
	trendLimit = 25.0
	// burstTrendWPerMin is the summed cluster trend beyond which the
	// cluster counts as in a burst.
	burstTrendWPerMin = 500.0
	burstTrendScale   = 2.0
	steadyTrendScale  = 6.0
	// ecoProfileBonus steers standard pods toward eco nodes.
	ecoProfileBonus = 10.0
	// pressureWeight turns performance-node congestion (0..100) into a
	// penalty of up to 30 points for standard pods on performance nodes.
	pressureWeight = 0.3
	// fillWeight gives the pack formula's fill the weight headroom has in
	// the design's formula, so that the two modes score on one scale.
	fillWeight = 0.7
	// cpuFillWeight is CPU's weight in the fill; GPUFillWeight GPUs'.
	cpuFillWeight = 1.0
)

// GPUFillWeight is the weight of GPU fill against CPU fill's 1 in the pack
// formula, and of nvidia.com/gpu and amd.com/gpu in the NodeResourcesFit
// profile the Helm chart renders for kube-scheduler (a test keeps the two
// equal). GPUs are most of a GPU node's power: on an 8 × H100 SXM node
// with two Xeon 8480+, 8 × 700 W against 2 × 350 W (the hardware
// catalog's figures), and 8 × 70 W of its idle floor against about
// 128 W for the host. 5 rather than that ratio of 8, because nodes with
// fewer or smaller GPUs have a smaller one. A GPU pod then goes to the
// node whose GPUs it fills best, and CPU fill decides among nodes whose
// GPUs are equally full.
const GPUFillWeight = 5

// Mode names the formula pods are scored by.
type Mode string

const (
	// ModePack, the default: every pod prefers the node it fills best
	// among those the filter lets it use (a performance pod, the
	// performance nodes), so that work packs onto few nodes and the rest
	// can idle, be capped or be switched off; and a pod that asks for no
	// GPUs keeps off GPU nodes while a node without GPUs takes it, so
	// GPU nodes empty and can be parked (GPUs idle at several times a
	// CPU server's draw). The zero Mode scores as ModePack.
	ModePack Mode = "pack"
	// ModePackStandard packs standard pods as ModePack does, and scores
	// performance pods by the design's headroom formula, which spreads
	// them over the performance nodes. Measured on the energy benchmark's
	// tuning seeds, the spread keeps nearly every GPU node busy, so none
	// can be parked: kept for comparison.
	ModePackStandard Mode = "pack-standard"
	// ModeHeadroom is the scheduler-extender design's formula for every
	// pod: projected power headroom, cooling and power trend.
	ModeHeadroom Mode = "headroom"
)

// UnmarshalText accepts the modes' names.
func (m *Mode) UnmarshalText(text []byte) error {
	switch v := Mode(text); v {
	case ModePack, ModePackStandard, ModeHeadroom:
		*m = v
		return nil
	}
	return fmt.Errorf("unknown scoring mode %q: use pack (every pod fills the fullest node that fits it), "+
		"pack-standard (standard pods pack, performance pods by power headroom) or headroom (the design's power-headroom formula for every pod)", text)
}

// MarshalText writes the mode's name; the zero Mode is pack.
func (m Mode) MarshalText() ([]byte, error) {
	if m == "" {
		m = ModePack
	}
	return []byte(m), nil
}

// packs reports whether mode m scores pod by the fill.
func (m Mode) packs(pod Pod) bool {
	switch m {
	case ModeHeadroom:
		return false
	case ModePackStandard:
		return !pod.Performance
	}
	return true
}

// Twin is the part of a NodeTwin's status the extender uses. Scores run
// from 0 to 100, power is in watts.
type Twin struct {
	Class joulie.SchedulableClass
	// PredictedHeadroom is predictedPowerHeadroomScore, the fallback for
	// headroom when there is no power measurement.
	PredictedHeadroom float64
	// CoolingStress is predictedCoolingStressScore.
	CoolingStress float64
	// PUE is estimatedPUE; 0 when the twin has none.
	PUE float64
	// Measured is true when the twin carries a powerMeasurement block; the
	// fields below are only meaningful then.
	Measured bool
	// Source says where MeasuredW came from. static is the controller's
	// cap-based stand-in (MeasuredW = CappedW), which says nothing about
	// the node's draw: it counts as no measurement.
	Source       joulie.MeasurementSource
	MeasuredW    float64
	CappedW      float64
	TdpW         float64
	TrendWPerMin float64
	// LastUpdated is when the controller computed the twin; zero when it
	// never said.
	LastUpdated time.Time
}

// Stale reports whether the twin is too old to score by: older than
// threshold, or without a timestamp at all. A timestamp in the future
// (clock skew between controller and extender) counts as fresh.
func (t *Twin) Stale(now time.Time, threshold time.Duration) bool {
	return t.LastUpdated.IsZero() || t.LastUpdated.Before(now.Add(-threshold))
}

// HasMeasurement reports whether the twin carries power that stands for
// the node's draw: read by the agent or Kepler, or modelled from its pods
// (utilization). The static estimate is the node's budget, not its draw;
// taken as measured it would leave every such node without headroom and
// count every such performance node as fully congested.
func (t *Twin) HasMeasurement() bool {
	return t.Measured && t.Source != joulie.SourceStatic
}

// hasBudget reports whether headroom can be projected from measured power:
// a measurement with a positive budget to divide by.
func (t *Twin) hasBudget() bool {
	return t.HasMeasurement() && t.CappedW > 0 && !math.IsInf(t.CappedW, 1)
}

// Headroom is the node's headroom before any new pod, 0..100: what is left
// of its power budget by measurement, or the twin's predicted headroom
// when nothing is measured (no powerMeasurement, or source static).
func (t *Twin) Headroom() float64 {
	if t.hasBudget() {
		return clamp((t.CappedW-t.MeasuredW)/t.CappedW*100, 0, 100)
	}
	return clamp(t.PredictedHeadroom, 0, 100)
}

// Fill is how much of a node its pods reserve, counted as kube-scheduler
// counts it: the node's allocatable CPU and GPUs (nvidia.com/gpu and
// amd.com/gpu together) and the summed effective requests of the pods
// bound to it that have not ended. The zero Fill is a node whose
// allocatable is unknown.
type Fill struct {
	AllocatableCPU  float64 // cores
	RequestedCPU    float64 // cores
	AllocatableGPUs float64
	RequestedGPUs   float64
}

// Known reports whether the node's allocatable is known.
func (f Fill) Known() bool { return f.AllocatableCPU > 0 || f.AllocatableGPUs > 0 }

// Params are the operator's settings that shape the score.
type Params struct {
	// Mode is the scoring formula (SCORING_MODE).
	Mode         Mode
	Coefficients powerest.Coefficients
	// FacilityMetrics turns on PUE weighting of marginal power
	// (ENABLE_FACILITY_METRICS).
	FacilityMetrics bool
	// StalenessThreshold is the age beyond which a twin scores neutral
	// (TWIN_STALENESS_THRESHOLD).
	StalenessThreshold time.Duration
}

// Pod is what the score needs to know about the pod being placed.
type Pod struct {
	// Performance is true for performance pods (workload.Classify); every
	// other pod is standard here.
	Performance bool
	Demand      powerest.Demand
	// DaemonSet is true for a DaemonSet's pod, which the filter lets onto
	// every node unless it is performance-sensitive (FilterPod); the
	// score does not read it.
	DaemonSet bool
}

// Cluster holds the aggregates over all nodes that each node's score
// depends on. Compute it once per scheduling request with ClusterSum.
type Cluster struct {
	// TrendWPerMin is the sum of the fresh, measured twins' power trends.
	TrendWPerMin float64
	// PerfPressure is the mean congestion, 100 − headroom, of the fresh,
	// measured performance nodes; 0 when there are none.
	PerfPressure float64
}

// ClusterSum accumulates Cluster over a set of twins without allocating.
// Stale twins are left out, as they are from scoring: old trends and old
// congestion say nothing about the cluster now; so are twins without a
// measurement.
type ClusterSum struct {
	trend     float64
	congested float64
	perfNodes int
}

// Add counts one twin.
func (s *ClusterSum) Add(t *Twin, now time.Time, threshold time.Duration) {
	if t == nil || t.Stale(now, threshold) {
		return
	}
	if !t.HasMeasurement() {
		return
	}
	if finite(t.TrendWPerMin) {
		s.trend += t.TrendWPerMin
	}
	// Congestion is measured by measured headroom only, so that a busy
	// performance node counts as busy even though the twin's cap-based
	// prediction for it stays high; a node nothing measures says nothing
	// about congestion either way.
	if t.Class == joulie.ClassPerformance {
		s.congested += 100 - t.Headroom()
		s.perfNodes++
	}
}

// Cluster returns the aggregates of the twins added so far.
func (s *ClusterSum) Cluster() Cluster {
	c := Cluster{TrendWPerMin: s.trend}
	if s.perfNodes > 0 {
		c.PerfPressure = s.congested / float64(s.perfNodes)
	}
	return c
}

// TrendScale is the divisor of a node's trend: 2 during a cluster-wide
// burst (|clusterTrend| > 500 W/min), 6 otherwise.
func TrendScale(clusterTrendWPerMin float64) float64 {
	if math.Abs(clusterTrendWPerMin) > burstTrendWPerMin {
		return burstTrendScale
	}
	return steadyTrendScale
}

// TrendBonus rewards a node whose power is falling and penalizes one whose
// power is rising, within ±25 points.
func TrendBonus(nodeTrendWPerMin, clusterTrendWPerMin float64) float64 {
	return trendBonus(nodeTrendWPerMin, TrendScale(clusterTrendWPerMin))
}

func trendBonus(nodeTrendWPerMin, scale float64) float64 {
	if !finite(nodeTrendWPerMin) {
		return 0
	}
	b := -clamp(nodeTrendWPerMin/scale, -trendLimit, trendLimit)
	if b == 0 {
		return 0 // not −0, which reports would show as "-0"
	}
	return b
}

// Breakdown is a node's score for a pod, term by term, for tests and for
// /debug/scoring.
//
// Formula says which terms apply. ModeHeadroom (every performance pod,
// and every pod in headroom mode):
//
//	total = headroomTerm + coolingTerm + trendBonus + profileBonus + pressureRelief
//
// ModePack (standard pods in pack mode):
//
//	total = fillTerm + coolingTerm + profileBonus + pressureRelief
//
// the sum clamped to 0..100. The terms of the other formula stay zero.
type Breakdown struct {
	Formula Mode `json:"formula"`
	// Neutral is true when the node scored NeutralScore for lack of a
	// fresh twin; Stale says whether a twin was there but too old.
	Neutral bool `json:"neutral"`
	Stale   bool `json:"stale"`
	// MarginalW is the power the pod is expected to add, PUE-weighted.
	MarginalW float64 `json:"marginalW"`
	// Headroom is the projected headroom after placing the pod; it may be
	// negative.
	Headroom     float64 `json:"headroom"`
	HeadroomTerm float64 `json:"headroomTerm"`
	// CPUFill and GPUFill are the shares, 0..100, of the node's
	// allocatable CPU and GPUs reserved once the pod is placed; GPUs count
	// only for a pod that requests them (GPUCounted). Fill is their
	// weighted mean, NeutralScore when the node's allocatable is unknown
	// (FillKnown false).
	CPUFill    float64 `json:"cpuFill"`
	GPUFill    float64 `json:"gpuFill"`
	GPUCounted bool    `json:"gpuCounted"`
	FillKnown  bool    `json:"fillKnown"`
	Fill       float64 `json:"fill"`
	FillTerm   float64 `json:"fillTerm"`

	CoolingTerm    float64 `json:"coolingTerm"`
	TrendBonus     float64 `json:"trendBonus"`
	ProfileBonus   float64 `json:"profileBonus"`
	PressureRelief float64 `json:"pressureRelief"`
	// Total is the sum of the terms clamped to 0..100.
	Total float64 `json:"total"`
}

// Score returns the node's score for the pod, 0..100. twin is nil when
// the node has no NodeTwin; hw is the node's hardware, zero when unknown
// (the pod then adds no marginal power); fill is what its pods reserve,
// zero when unknown (the fill is then neutral). To score many nodes for
// one pod, make a Batch once instead.
func (p *Params) Score(pod Pod, c Cluster, twin *Twin, hw powerest.Node, fill Fill, now time.Time) float64 {
	b := p.Batch(pod, c, now)
	return b.Score(twin, hw, fill)
}

// Explain is Score with every term shown.
func (p *Params) Explain(pod Pod, c Cluster, twin *Twin, hw powerest.Node, fill Fill, now time.Time) Breakdown {
	b := p.Batch(pod, c, now)
	return b.Explain(twin, hw, fill)
}

// Batch scores nodes for one pod at one moment. What is the same for
// every node (the staleness cutoff, the trend scale, the pressure relief)
// is worked out once, since a request may score thousands of nodes.
type Batch struct {
	p          *Params
	pod        Pod
	pack       bool      // the pod is scored by the pack formula
	avoidGPUs  bool      // a pod without GPUs fills none of a GPU node's
	cutoff     time.Time // twins last updated before it are stale
	trendScale float64
	relief     float64 // for a standard pod on a performance node
}

// Batch prepares the scoring of nodes for pod, with cluster aggregates c,
// at now.
func (p *Params) Batch(pod Pod, c Cluster, now time.Time) Batch {
	return Batch{
		p:          p,
		pod:        pod,
		pack:       p.Mode.packs(pod),
		avoidGPUs:  p.Mode != ModePackStandard,
		cutoff:     now.Add(-p.StalenessThreshold),
		trendScale: TrendScale(c.TrendWPerMin),
		relief:     -clamp(c.PerfPressure, 0, 100) * pressureWeight,
	}
}

// Score is the node's score, 0..100.
func (b *Batch) Score(twin *Twin, hw powerest.Node, fill Fill) float64 {
	var r Breakdown
	b.explain(twin, hw, fill, &r)
	return r.Total
}

// Explain is the node's score term by term.
func (b *Batch) Explain(twin *Twin, hw powerest.Node, fill Fill) Breakdown {
	var r Breakdown
	b.explain(twin, hw, fill, &r)
	return r
}

// explain fills r, which must be zero. Filling the caller's value instead
// of returning one spares Score, run for every node of every request, a
// copy of the whole breakdown.
func (b *Batch) explain(twin *Twin, hw powerest.Node, fill Fill, r *Breakdown) {
	r.Formula = ModeHeadroom
	if b.pack {
		r.Formula = ModePack
	}
	if twin == nil {
		r.Neutral, r.Total = true, NeutralScore
		return
	}
	if twin.LastUpdated.IsZero() || twin.LastUpdated.Before(b.cutoff) {
		r.Neutral, r.Stale, r.Total = true, true, NeutralScore
		return
	}
	r.CoolingTerm = (100 - twin.CoolingStress) * coolingWeight
	if !b.pod.Performance {
		switch twin.Class {
		case joulie.ClassEco:
			r.ProfileBonus = ecoProfileBonus
		case joulie.ClassPerformance:
			r.PressureRelief = b.relief
		}
	}
	if b.pack {
		b.fill(fill, r)
		r.FillTerm = r.Fill * fillWeight
		// No trend bonus: a node whose power falls is one emptying, which
		// is the node packing should leave alone.
		r.Total = clamp(r.FillTerm+r.CoolingTerm+r.ProfileBonus+r.PressureRelief, 0, 100)
		return
	}
	if twin.hasBudget() {
		pue := 1.0
		if b.p.FacilityMetrics {
			pue = twin.PUE
		}
		r.MarginalW = b.p.Coefficients.Estimate(b.pod.Demand, hw, b.pod.Performance, pue).TotalWatts
		r.Headroom = (twin.CappedW - (twin.MeasuredW + r.MarginalW)) / twin.CappedW * 100
	} else {
		r.Headroom = twin.PredictedHeadroom
	}
	r.HeadroomTerm = r.Headroom * headroomWeight
	if twin.HasMeasurement() {
		r.TrendBonus = trendBonus(twin.TrendWPerMin, b.trendScale)
	}
	r.Total = clamp(r.HeadroomTerm+r.CoolingTerm+r.TrendBonus+r.ProfileBonus+r.PressureRelief, 0, 100)
}

// fill works out the pack formula's fill, in the manner of kube-scheduler's
// MostAllocated strategy: each resource's share of the node's allocatable
// reserved once the pod is placed (capped at 100), weighted. CPU counts on
// every node that has some, also for a pod that requests none, so that such
// a pod still goes to the fullest node. GPUs count for a pod that requests
// them; for a pod that requests none, ModePack counts a GPU node's GPUs as
// a resource the pod fills nothing of, at GPUFillWeight, so a CPU-only pod
// takes a GPU node's spare cores only when no CPU node fills as well by
// more than about five times (kube-scheduler's MostAllocated leaves such
// a resource out, and ModePackStandard does too). A GPU pod on a node
// without GPUs (which kube-scheduler's own fit check turns away) counts as
// filling none.
func (b *Batch) fill(f Fill, r *Breakdown) {
	if !f.Known() {
		r.Fill = NeutralScore
		return
	}
	r.FillKnown = true
	d := b.pod.Demand
	var sum, weights float64
	if f.AllocatableCPU > 0 {
		r.CPUFill = reserved(f.RequestedCPU+d.CPUCores, f.AllocatableCPU)
		sum += r.CPUFill * cpuFillWeight
		weights += cpuFillWeight
	}
	if d.GPUs > 0 {
		r.GPUCounted = true
		if f.AllocatableGPUs > 0 {
			r.GPUFill = reserved(f.RequestedGPUs+d.GPUs, f.AllocatableGPUs)
		}
		sum += r.GPUFill * GPUFillWeight
		weights += GPUFillWeight
	} else if b.avoidGPUs && f.AllocatableGPUs > 0 && f.AllocatableCPU > 0 {
		// Kept for GPU work: the pod's share of the GPUs is 0.
		r.GPUCounted = true
		weights += GPUFillWeight
	}
	if weights == 0 {
		// GPUs but no CPU allocatable, and a pod without GPUs: nothing to
		// fill that the pod asks for.
		r.FillKnown = false
		r.Fill = NeutralScore
		return
	}
	r.Fill = sum / weights
}

// reserved is requested as a percentage of allocatable, 0..100.
func reserved(requested, allocatable float64) float64 {
	return clamp(requested/allocatable*100, 0, 100)
}

// BaseScore is the node's score before anything that depends on the pod:
// headroom with no pod added, cooling and trend; NeutralScore without a
// fresh twin. /debug/scoring shows it so an operator can rank nodes
// without a scheduling event.
func (p *Params) BaseScore(c Cluster, twin *Twin, now time.Time) float64 {
	// A performance pod that requests nothing gets neither the profile
	// bonus nor the pressure relief, nor any marginal power: exactly the
	// node's own part of the formula.
	return p.Score(Pod{Performance: true}, c, twin, powerest.Node{}, Fill{}, now)
}

// ExtenderPriority scales a 0..100 score to the extender protocol's
// 0..MaxExtenderPriority (10), rounding to the nearest step, so that the
// scheduler's weighting treats Joulie like any extender.
func ExtenderPriority(score float64, maxPriority int64) int64 {
	if score != score { // NaN
		score = NeutralScore
	}
	// Non-negative, so adding a half and truncating rounds half up, as
	// math.Round would, at a fraction of its cost.
	return int64(clamp(score, 0, 100)*float64(maxPriority)/100 + 0.5)
}

// clamp bounds x to [lo, hi]; NaN becomes lo so that a broken input can
// only lower a node's score.
func clamp(x, lo, hi float64) float64 {
	if !(x >= lo) { // also true for NaN
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// finite reports whether x is neither NaN nor infinite: x − x is 0 for
// every finite x and NaN otherwise.
func finite(x float64) bool { return x-x == 0 }
