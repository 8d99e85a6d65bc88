// Package plan is the controller's decision step. Compute derives from the
// nodes, their hardware, the current profiles and the pods, for every
// managed node, the profile the policy wants, what the downgrade guard
// allows, the NodePowerProfile spec (with the cap that pays on eco
// nodes, caps.go), the node labels and the NodeTwin
// status, with the node's power from its agent, Kepler, the utilization
// model of its pods' requests (power.go) or its caps. Trends turns the
// measured power it is fed into each node's trend.
//
// Nothing here reads the API, the clock or the network: callers pass one
// snapshot of the cluster and the time. joulie-controller feeds it from
// informer caches and writes only the differences
// (controller/internal/reconcile); the simulator in test/ feeds it its
// simulated cluster, so both run the same decisions.
package plan

import (
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/catalog"
	"joulie.io/joulie/pkg/hwview"
	"joulie.io/joulie/pkg/intent"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/twin"
	"joulie.io/joulie/pkg/workload"
)

// Policy names (POLICY_TYPE).
const (
	PolicyStaticPartition = "static_partition"
	PolicyQueueAware      = "queue_aware_v1"
	PolicyRuleSwap        = "rule_swap_v1"
)

// AnnotationLastTransition on a NodePowerProfile records when the
// controller last changed the node's guard state, so the eco dwell
// survives a restart or a leader change.
const AnnotationLastTransition = "joulie.io/last-transition"

// Params are the controller's planning knobs: its configuration's
// planning keys (pkg/settings is how they are read) and what it knows
// beside them (the catalog).
type Params struct {
	NodeSelector labels.Selector
	Policy       string
	StaticHPFrac float64
	Queue        policy.QueueAware
	Interval     time.Duration // RECONCILE_INTERVAL, the phase of rule_swap_v1
	MinEcoDwell  time.Duration
	// Guard is how a node goes to eco (policy.GuardDrain, or
	// policy.GuardSeed, also what an empty value means), and DrainDwell
	// how long GuardDrain keeps it draining, uncapped, first.
	Guard      policy.GuardMode
	DrainDwell time.Duration
	Intent     intent.Config
	Cooling    twin.CoolingModel
	// RackCapacityW is the PSU stress reference (50 kW).
	RackCapacityW float64
	// MeasurementMaxAge is how old an agent's measured power may be and
	// still count (3m: the agent publishes every minute).
	MeasurementMaxAge time.Duration
	Catalog           *catalog.Catalog
	// Coefficients are the marginal-power coefficients of the utilization
	// model, the extender's MARGINAL_* variables.
	Coefficients powerest.Coefficients
	// CapMode is how eco nodes are capped: CapModePays, or CapModeFixed
	// (the seeds', also what an empty value means).
	CapMode string
	// Spread is how the performance count is shared out beyond the family
	// floor: policy.SpreadDemand, or policy.SpreadDensity (the seeds',
	// also what an empty value means).
	Spread string
	// GPUCapScope is how GPU caps follow the pods: GPUScopeNode, a node's
	// GPUs all take its profile's cap (also what an empty value means), or
	// GPUScopePod, which also caps, on performance nodes, the GPUs only
	// standard pods hold.
	GPUCapScope string
}

// GPU cap scopes (gpuCapScope).
const (
	GPUScopeNode = "node"
	GPUScopePod  = "pod"
)

// Facility is the facility poller's latest reading; nil fields are
// unknown.
type Facility struct {
	AmbientTempC *float64
	ITPowerW     *float64
	PUE          *float64
}

// NodeReading is a node's measured power and when it was measured.
type NodeReading struct {
	Watts float64
	Time  time.Time
}

// Inputs is one snapshot of the cluster.
type Inputs struct {
	Nodes    []*corev1.Node
	Hardware map[string]*joulie.NodeHardware
	Profiles map[string]*joulie.NodePowerProfile
	// PerfPods counts active performance-sensitive pods by node; pods not
	// yet scheduled count under "". CountPerformancePods builds it.
	PerfPods map[string]int
	Facility Facility
	// KeplerPower is each node's power as Kepler measured it, when the
	// controller is configured to read it.
	KeplerPower map[string]NodeReading
	// Loads are the requests of the active pods on each node (PodLoads
	// builds it), for the utilization model of nodes nothing measures; nil
	// when the pods are not known, which leaves those nodes on the static
	// estimate.
	Loads map[string]NodeLoad
	// Trends is each node's power trend in W/min.
	Trends map[string]float64
	Now    time.Time
}

// NodePlan is the outcome for one node.
type NodePlan struct {
	Name string
	// Managed is false for a node that left the plan (unselected, reserved
	// or unschedulable) but still has a profile: it is released to
	// performance so nothing stays capped.
	Managed  bool
	View     hwview.View
	Planned  joulie.Profile
	Decision policy.Decision
	// Spec is the NodePowerProfile spec to publish.
	Spec joulie.NodePowerProfileSpec
	// Caps is the cap that pays an eco node gets in capMode pays; nil on
	// other nodes and in capMode fixed.
	Caps *Caps
	// LastTransition is when the guard state last changed.
	LastTransition time.Time
	PerfPods       int
	// Twin is the NodeTwin status, without lastUpdated.
	Twin joulie.NodeTwinStatus
}

// Result is a whole plan.
type Result struct {
	Nodes    []NodePlan // sorted by name
	Eligible int
	HPCount  int
	// PerfPods counts active performance-sensitive pods cluster-wide.
	PerfPods int
	// Replan, when positive, is how soon a draining node's drain dwell
	// ends: plan again then rather than at the next interval, or the
	// node stays uncapped for the rest of it.
	Replan time.Duration
}

// Eligible reports whether the node takes part in planning. A node being
// parked, parked or not yet back from a wake (it carries the
// joulie.io/parked taint) does not: counting it would hand the
// performance share to nodes that are off.
func Eligible(n *corev1.Node, sel labels.Selector) bool {
	if n.Spec.Unschedulable || n.Labels[joulie.LabelReserved] == "true" || parked(n) {
		return false
	}
	return sel == nil || sel.Matches(labels.Set(n.Labels))
}

func parked(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == joulie.TaintParked {
			return true
		}
	}
	return false
}

// CurrentState reads a node's guard state from its labels.
func CurrentState(n *corev1.Node) policy.State {
	switch {
	case n.Labels[joulie.LabelPowerProfile] != string(joulie.ProfileEco):
		return policy.ActivePerformance
	case n.Labels[joulie.LabelDraining] == "true":
		return policy.DrainingPerformance
	}
	return policy.ActiveEco
}

// Compute plans every node in three phases: which profile each node gets
// (policy and guard), the NodePowerProfile spec that profile means on the
// node (intent), and the node's twin.
func Compute(in Inputs, s Params) Result {
	cat := s.Catalog
	if cat == nil {
		cat = catalog.Default()
	}
	byName := make(map[string]*corev1.Node, len(in.Nodes))
	for _, n := range in.Nodes {
		byName[n.Name] = n
	}
	res := decide(in, s, cat, byName)
	for i := range res.Nodes {
		p := &res.Nodes[i]
		n := intentNode(p, byName[p.Name])
		if s.CapMode == CapModePays && p.Decision.Applied == joulie.ProfileEco {
			p.Caps = chooseCaps(p, in, s)
			n.CPUCap, n.GPUCap = p.Caps.CPU, p.Caps.GPU
		}
		p.Spec = s.Intent.Spec(p.Decision.Applied, n)
		if s.GPUCapScope == GPUScopePod && p.Decision.Applied == joulie.ProfilePerformance && p.Spec.GPU != nil {
			// Standard work sharing a performance node is capped on its own
			// GPUs at the fixed eco cap: the cap that pays would need each
			// GPU's own draw, which the node's measured power does not say.
			n.CPUCap, n.GPUCap = nil, nil
			if eco := s.Intent.Spec(joulie.ProfileEco, n).GPU; eco != nil {
				p.Spec.GPU.StandardPowerCap = eco.PowerCap
			}
		}
	}
	twins(res.Nodes, byName, in, s)
	slices.SortFunc(res.Nodes, func(a, b NodePlan) int { return strings.Compare(a.Name, b.Name) })
	return res
}

// decide is the plan phase: it picks the profile of every eligible node by
// the policy, releases the nodes that left the plan to performance, and
// lets the downgrade guard decide each node's next state. The nodes come
// out eligible first, in input order, then the released ones.
func decide(in Inputs, s Params, cat *catalog.Catalog, byName map[string]*corev1.Node) Result {
	var res Result
	perfOnNode := in.PerfPods
	for _, n := range perfOnNode {
		res.PerfPods += n
	}

	views := make(map[string]hwview.View, len(in.Nodes))
	var eligible []policy.Node
	var released []*corev1.Node
	for _, n := range in.Nodes {
		if Eligible(n, s.NodeSelector) {
			v := hwview.Build(n, in.Hardware[n.Name], cat)
			views[n.Name] = v
			eligible = append(eligible, policy.Node{Name: n.Name, Family: v.Family, Density: v.DensityScore})
		} else if _, had := in.Profiles[n.Name]; had {
			views[n.Name] = hwview.Build(n, in.Hardware[n.Name], cat)
			released = append(released, n)
		}
	}
	res.Eligible = len(eligible)

	var plan policy.Plan
	switch s.Policy {
	case PolicyRuleSwap:
		plan = policy.RuleSwap(eligible, in.Now, s.Interval)
		res.HPCount = plan.PerformanceCount()
	case PolicyStaticPartition:
		res.HPCount = policy.StaticHPCount(len(eligible), s.StaticHPFrac)
		plan = assign(eligible, res.HPCount, views, in.Loads, s.Spread, byName)
	default:
		res.HPCount = s.Queue.HPCount(len(eligible), res.PerfPods)
		plan = assign(eligible, res.HPCount, views, in.Loads, s.Spread, byName)
	}

	// rule_swap_v1 exists to show a swap every RECONCILE_INTERVAL; a dwell
	// longer than the interval would hold the node that just came back to
	// performance there and stretch the swap to the dwell.
	dwell := s.MinEcoDwell
	if s.Policy == PolicyRuleSwap {
		dwell = 0
	}
	res.Nodes = make([]NodePlan, 0, len(eligible)+len(released))
	for _, e := range eligible {
		n := byName[e.Name]
		last := LastTransition(in.Profiles[e.Name])
		d := policy.Guard(policy.GuardInput{
			Current: CurrentState(n), Planned: plan[e.Name], PerfPods: perfOnNode[e.Name],
			LastChange: last, MinEcoDwell: dwell, Mode: s.Guard, DrainDwell: s.DrainDwell, Now: in.Now,
		})
		if d.Next != CurrentState(n) || last.IsZero() {
			last = in.Now
		}
		if s.Guard == policy.GuardDrain && d.Next == policy.DrainingPerformance && perfOnNode[e.Name] == 0 {
			if wait := s.DrainDwell - in.Now.Sub(last); wait > 0 && (res.Replan == 0 || wait < res.Replan) {
				res.Replan = wait
			}
		}
		res.Nodes = append(res.Nodes, NodePlan{Name: e.Name, Managed: true, View: views[e.Name], Planned: plan[e.Name],
			Decision: d, LastTransition: last, PerfPods: perfOnNode[e.Name]})
	}
	for _, n := range released {
		d := policy.Guard(policy.GuardInput{Current: CurrentState(n), Planned: joulie.ProfilePerformance})
		last := LastTransition(in.Profiles[n.Name])
		if d.Next != CurrentState(n) || last.IsZero() {
			last = in.Now
		}
		res.Nodes = append(res.Nodes, NodePlan{Name: n.Name, View: views[n.Name], Planned: joulie.ProfilePerformance,
			Decision: d, LastTransition: last, PerfPods: perfOnNode[n.Name]})
	}
	return res
}

// assign places the performance count on nodes: by density after the
// family floor (the seeds'), or with policy.SpreadDemand in proportion to
// each family's performance demand, measured in node-equivalents: the
// share of each node's cores or GPUs, whichever is larger, that its
// active performance pods request. Pods not yet scheduled are not
// counted: they have no family yet, and they raise the count itself.
// A node parking holds as the warm reserve (joulie.io/warm-reserve=true)
// is performance on top of the count.
func assign(eligible []policy.Node, hp int, views map[string]hwview.View, loads map[string]NodeLoad, spread string, byName map[string]*corev1.Node) policy.Plan {
	if spread != policy.SpreadDemand {
		return policy.Assign(eligible, hp)
	}
	demand := map[string]float64{}
	held := 0
	for i, n := range eligible {
		if node := byName[n.Name]; node != nil && node.Labels[joulie.LabelWarmReserve] == "true" {
			// Parking holds the node idle for the performance pods to
			// come (parking.reserveFor: performance); planned eco, the
			// filter would turn them away from it. It comes on top of
			// the policy's count, first among its family's nodes, as a
			// whole node of demand.
			eligible[i].Use = policy.UsePerformance
			demand[n.Family]++
			held++
			continue
		}
		l, ok := loads[n.Name]
		if !ok {
			if loads != nil {
				eligible[i].Use = policy.UseEmpty // pods known, none on it
			}
			continue
		}
		switch {
		case l.Performance != (powerest.Demand{}):
			eligible[i].Use = policy.UsePerformance
		case l.Standard != (powerest.Demand{}):
			eligible[i].Use = policy.UseStandard
		default:
			eligible[i].Use = policy.UseEmpty
		}
		v := views[n.Name]
		var share float64
		if v.CPUTotalCores > 0 {
			share = l.Performance.CPUCores / float64(v.CPUTotalCores)
		}
		if v.GPUCount > 0 {
			share = math.Max(share, l.Performance.GPUs/float64(v.GPUCount))
		}
		demand[n.Family] += math.Min(share, 1)
	}
	return policy.AssignByDemand(eligible, min(hp+held, len(eligible)), demand)
}

// intentNode is what the intent step reads of a node: its labels and the
// power limits of its hardware.
func intentNode(p *NodePlan, n *corev1.Node) intent.Node {
	return intent.Node{Labels: n.Labels, CPUMaxWattsPerSocket: p.View.CPUMaxWattsPerSocket,
		GPUCount: p.View.GPUCount, GPUProduct: p.View.GPUProduct}
}

// twins is the twin phase: it fills every node's twin status from its
// spec, its power and the facility. PSU stress waits for the cluster's
// total, which is known only once every node's power is.
func twins(nodes []NodePlan, byName map[string]*corev1.Node, in Inputs, s Params) {
	ambient := twin.DefaultTempBaselineC
	if in.Facility.AmbientTempC != nil {
		ambient = *in.Facility.AmbientTempC
	}
	type power struct {
		out      twin.Output
		source   joulie.MeasurementSource
		measured float64
	}
	powers := make([]power, len(nodes))
	var clusterW float64
	for i := range nodes {
		p := &nodes[i]
		cpuPct, gpuPct := intent.CapPcts(p.Spec, intentNode(p, byName[p.Name]))
		out := twin.Compute(twin.Input{CPUMaxWattsPerSocket: p.View.CPUMaxWattsPerSocket, Sockets: p.View.Sockets,
			GPUMaxWatts: p.View.GPUMaxWatts, GPUCount: p.View.GPUCount, CPUCapPct: cpuPct, GPUCapPct: gpuPct,
			AmbientTempC: ambient}, s.Cooling)
		powers[i].out = out
		powers[i].source, powers[i].measured = nodePower(p, out.NodeCappedPowerW, in, s)
		clusterW += powers[i].measured
	}
	if in.Facility.ITPowerW != nil {
		clusterW = *in.Facility.ITPowerW
	}
	psu := twin.PSUStress(clusterW, s.RackCapacityW)
	for i := range nodes {
		p, pw := &nodes[i], powers[i]
		out := pw.out
		out.PSUStress = psu
		pm := &joulie.PowerMeasurement{Source: pw.source, MeasuredNodePowerW: round1(pw.measured),
			CPUCappedPowerW: round1(out.CPUCappedPowerW), GPUCappedPowerW: round1(out.GPUCappedPowerW), NodeCappedPowerW: round1(out.NodeCappedPowerW),
			CPUTdpW: round1(out.CPUTdpW), GPUTdpW: round1(out.GPUTdpW), NodeTdpW: round1(out.NodeTdpW), PowerTrendWPerMin: round1(in.Trends[p.Name])}
		p.Twin = joulie.NodeTwinStatus{
			SchedulableClass:            p.Decision.Class,
			PredictedPowerHeadroomScore: round1(out.Headroom),
			PredictedCoolingStressScore: round1(out.CoolingStress),
			PredictedPsuStressScore:     round1(out.PSUStress),
			HardwareDensityScore:        p.View.DensityScore,
			PowerMeasurement:            pm,
		}
		if in.Facility.PUE != nil {
			v := math.Round(*in.Facility.PUE*1000) / 1000
			p.Twin.EstimatedPUE = &v
		}
	}
}

// CountPerformancePods counts the performance demand by node ("" for pods
// not yet scheduled).
func CountPerformancePods(pods []*corev1.Pod) map[string]int {
	out := map[string]int{}
	for _, p := range pods {
		if workload.IsPerformanceDemand(p) {
			out[p.Spec.NodeName]++
		}
	}
	return out
}

// LastTransition is when the controller last changed the guard state of
// p's node, from AnnotationLastTransition; zero when p or the annotation
// is missing or unreadable.
func LastTransition(p *joulie.NodePowerProfile) time.Time {
	if p == nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, p.Annotations[AnnotationLastTransition])
	if err != nil {
		return time.Time{}
	}
	return t
}

// freshMeasurement is the agent's measured power when it is recent enough
// to stand for the node's draw.
func freshMeasurement(p *joulie.NodePowerProfile, now time.Time, maxAge time.Duration) *joulie.MeasuredPower {
	if p == nil || p.Status.MeasuredPower == nil {
		return nil
	}
	m := p.Status.MeasuredPower
	if maxAge > 0 && now.Sub(m.Time.Time) > maxAge {
		return nil
	}
	return m
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
