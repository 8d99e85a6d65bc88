package sim

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/pkg/workload"
)

// reconcile is one pass of joulie-controller: the cluster as the
// controller's informers would show it goes through plan.Compute, and its
// outcome is written back as the controller writes it (node labels,
// NodePowerProfile spec and transition annotation, NodeTwin status). The
// agents apply the caps AgentDelay later.
//
// The reconcile runs every simulated minute over days of a long tail, so
// what it hands plan.Compute is kept up to date as the cluster changes
// rather than rebuilt (controllerView); plan.Compute reads its inputs and
// drainReplan marks the extra reconcile a drain dwell asks for; the
// periodic ones carry 0.
const drainReplan = 1

// never writes them.
func (s *simulation) reconcile(ctx context.Context) error {
	now := epoch.Add(s.now)
	c := &s.ctl
	for _, n := range s.nodes {
		if n.profile != nil {
			// The controller sees what the agent last published (publish.go),
			// not the draw of this instant.
			s.catchUp(n, s.now, n.parts.Total())
			if n.pub.ok {
				n.profile.Status.MeasuredPower = &joulie.MeasuredPower{NodePowerWatts: n.pub.watts, Time: metav1.NewTime(epoch.Add(n.pub.at))}
			}
		}
		if n.podsChanged {
			c.recount(s, n)
		}
	}
	if s.pendingPerf > 0 {
		c.perfPods[""] = s.pendingPerf
	} else {
		delete(c.perfPods, "")
	}
	res := plan.Compute(plan.Inputs{Now: now, Nodes: c.nodes, Profiles: c.profiles, PerfPods: c.perfPods, Loads: c.loads}, s.plan)
	relabelled := false
	var caps []capsChange
	for i := range res.Nodes {
		np := &res.Nodes[i]
		ni, ok := s.byName[np.Name]
		if !ok {
			return fmt.Errorf("sim: the plan names node %q, which the cluster does not have", np.Name)
		}
		n := s.nodes[ni]
		if changed, err := s.applyLabels(n, np); err != nil {
			return err
		} else if changed {
			c.nodes[ni] = n.obj
			relabelled = true
		}
		s.writeProfile(n, np)
		n.view = &np.View
		tw := np.Twin
		tw.LastUpdated = metav1.NewTime(now)
		n.twin = &tw
		n.scoringTwin = scoring.TwinOf(n.twin)
		n.hardware = s.hardwareOf(n)
		// The agent of a node asked for the caps it already has does
		// nothing (applyCaps); only a change is worth an event.
		if cpuCap, gpuCap, stdCap := capFractions(np.Spec); cpuCap != n.askedCPU || gpuCap != n.askedGPU || stdCap != n.askedStd {
			n.askedCPU, n.askedGPU, n.askedStd = cpuCap, gpuCap, stdCap
			caps = append(caps, capsChange{node: ni, cpuCap: cpuCap, gpuCap: gpuCap, gpuStdCap: stdCap})
		}
	}
	s.twinGen++
	if res.Replan > 0 {
		// The controller plans again when a drain dwell ends (its queue
		// holds one such pass, the earliest).
		if at := s.now + res.Replan; s.replanAt <= s.now || at < s.replanAt {
			s.replanAt = at
			heap.Push(&s.events, event{t: at, kind: evReconcile, idx: drainReplan})
		}
	}
	if len(res.Nodes) > 0 {
		// One event even when nothing changed, so the clock stops at the
		// same instants, and the energy sums the same terms, as when every
		// node had its own.
		heap.Push(&s.events, event{t: s.now + s.opts.AgentDelay, kind: evCaps, caps: caps})
	}
	if relabelled {
		s.retry(ctx, nil)
	}
	return s.parkPass(ctx)
}

// controllerView is what the controller's informers hold, kept current by
// the simulation: the node objects in node order, each node's
// NodePowerProfile, and the active pods' performance counts and loads by
// node.
type controllerView struct {
	nodes    []*v1.Node
	profiles map[string]*joulie.NodePowerProfile
	perfPods map[string]int
	loads    map[string]plan.NodeLoad
}

// recount refreshes node n's performance count and load from the jobs on
// it, summed in the order of the job list, as a rebuild from all jobs
// would sum them (the loads are floats).
func (c *controllerView) recount(s *simulation, n *nodeState) {
	n.podsChanged = false
	var load plan.NodeLoad
	perf := 0
	for _, idx := range n.running {
		j := s.jobs[idx]
		if j.perfPod {
			perf++
		}
		load.Add(j.pod)
	}
	name := n.spec.Name
	if len(n.running) == 0 {
		delete(c.loads, name)
	} else {
		c.loads[name] = load
	}
	if perf == 0 {
		delete(c.perfPods, name)
	} else {
		c.perfPods[name] = perf
	}
}

// writeProfile writes node n's NodePowerProfile spec and transition
// annotation; the status stays the agent's.
func (s *simulation) writeProfile(n *nodeState, np *plan.NodePlan) {
	if n.profile == nil {
		n.profile = &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: np.Name}}
		s.ctl.profiles[np.Name] = n.profile
		s.startPublishing(n)
	}
	n.profile.Spec = np.Spec
	if n.profile.Annotations == nil || !np.LastTransition.Equal(n.lastTransition) {
		n.lastTransition = np.LastTransition
		n.profile.Annotations = map[string]string{plan.AnnotationLastTransition: np.LastTransition.UTC().Format(time.RFC3339)}
	}
}

// applyLabels sets joulie.io/power-profile and joulie.io/draining as the
// controller's applyLabels does.
func (s *simulation) applyLabels(n *nodeState, np *plan.NodePlan) (bool, error) {
	profile, draining := string(np.Decision.Profile), strconv.FormatBool(np.Decision.Draining)
	if n.obj.Labels[joulie.LabelPowerProfile] == profile && n.obj.Labels[joulie.LabelDraining] == draining {
		return false, nil
	}
	l := maps.Clone(n.obj.Labels)
	l[joulie.LabelPowerProfile], l[joulie.LabelDraining] = profile, draining
	n.obj = n.obj.DeepCopy()
	n.obj.Labels = l
	if err := s.sched.SetNodeLabels(n.spec.Name, l); err != nil {
		return false, fmt.Errorf("sim: label node %s: %w", n.spec.Name, err)
	}
	return true, nil
}

// capFractions reads a profile's caps as fractions of the maximum, as the
// agent resolves them (1: no cap). The controller writes percentages
// unless CPU_WRITE_ABSOLUTE_CAPS is set, which the simulator does not do.
func capFractions(spec joulie.NodePowerProfileSpec) (cpu, gpu, gpuStd float64) {
	cpu, gpu, gpuStd = 1, 1, 1
	if c := spec.CPU; c != nil && c.PackagePowerCapPctOfMax != nil {
		cpu = *c.PackagePowerCapPctOfMax / 100
	}
	if g := spec.GPU; g != nil && g.PowerCap != nil && g.PowerCap.CapPctOfMax != nil {
		gpu = *g.PowerCap.CapPctOfMax / 100
		gpuStd = gpu
		// The agent caps the GPUs only standard pods hold at the standard
		// cap, and needs the node's cap beside it.
		if sc := g.StandardPowerCap; sc != nil && sc.CapPctOfMax != nil {
			gpuStd = *sc.CapPctOfMax / 100
		}
	}
	return cpu, gpu, gpuStd
}

// extender is joulie-extender's filter and prioritize over the simulated
// NodeTwins, calling pkg/scoring as extender/internal/server does.
type extender struct {
	s      *simulation
	params scoring.Params
	weight int64
	// The cluster aggregate of the last pod, valid while the clock and
	// the twins are those it was computed at.
	sum      scoring.Cluster
	sumAt    time.Duration
	sumGen   uint64
	sumValid bool
}

func newExtender(s *simulation) *extender {
	// The extender's defaults, which its key table takes its own from, but
	// for the arm's scoring mode and weight.
	e := &extender{s: s, params: scoring.DefaultParams(), weight: scoring.ChartWeight}
	if s.spec.Scoring != "" {
		e.params.Mode = s.spec.Scoring
	}
	if s.spec.ExtenderWeight != 0 {
		e.weight = s.spec.ExtenderWeight
	}
	return e
}

func (e *extender) Weight() int64 { return e.weight }

func (e *extender) twinOf(name string) (scoring.Twin, bool) {
	n := e.s.nodes[e.s.byName[name]]
	return n.scoringTwin, n.twin != nil
}

func (e *extender) Filter(pod *v1.Pod, nodes []*v1.Node) ([]*v1.Node, map[string]string, error) {
	perf := workload.Classify(pod) == workload.Performance
	// A DaemonSet's pod belongs on every node, the warm reserve's too.
	daemon := workload.IsDaemonSet(pod)
	var kept []*v1.Node
	failed := map[string]string{}
	for _, node := range nodes {
		var tp *scoring.Twin
		if t, ok := e.twinOf(node.Name); ok {
			tp = &t
		}
		l := scoring.Labels{Profile: node.Labels[joulie.LabelPowerProfile], Draining: node.Labels[joulie.LabelDraining]}
		if !daemon {
			l.WarmReserve = node.Labels[joulie.LabelWarmReserve]
		}
		v := scoring.Filter(perf, tp, l)
		if v == scoring.Admit {
			kept = append(kept, node)
		} else {
			failed[node.Name] = v.Reason()
		}
	}
	return kept, failed, nil
}

func (e *extender) Prioritize(pod *v1.Pod, nodes []*v1.Node) (extenderv1.HostPriorityList, error) {
	now := epoch.Add(e.s.now)
	batch := e.params.Batch(scoring.Pod{Performance: workload.Classify(pod) == workload.Performance, Demand: powerest.PodDemand(pod)}, e.clusterSum(), now)
	out := make(extenderv1.HostPriorityList, len(nodes))
	for i, node := range nodes {
		n := e.s.nodes[e.s.byName[node.Name]]
		var tp *scoring.Twin
		if n.twin != nil {
			tp = &n.scoringTwin
		}
		// The fill the extender's pod store sums: the node's allocatable
		// and its jobs' requests (headroom mode does not read it).
		cpu, _, gpus := e.s.free(n)
		fill := scoring.Fill{AllocatableCPU: float64(n.spec.CPUMilli) / 1000, RequestedCPU: float64(n.spec.CPUMilli-cpu) / 1000,
			AllocatableGPUs: float64(n.spec.GPUs), RequestedGPUs: float64(n.spec.GPUs - gpus)}
		out[i] = extenderv1.HostPriority{Host: node.Name,
			Score: scoring.ExtenderPriority(batch.Score(tp, n.hardware, fill), extenderv1.MaxExtenderPriority)}
	}
	return out, nil
}

// clusterSum is the aggregate over all twins the extender computes for
// each pod. It depends only on the twins, which change at a reconcile,
// and on the time, through staleness: so one sum serves every pod
// scheduled at one instant between two reconciles.
func (e *extender) clusterSum() scoring.Cluster {
	if e.sumValid && e.sumAt == e.s.now && e.sumGen == e.s.twinGen {
		return e.sum
	}
	now := epoch.Add(e.s.now)
	var sum scoring.ClusterSum
	for _, n := range e.s.nodes {
		if n.twin != nil {
			sum.Add(&n.scoringTwin, now, e.params.StalenessThreshold)
		}
	}
	e.sum, e.sumAt, e.sumGen, e.sumValid = sum.Cluster(), e.s.now, e.s.twinGen, true
	return e.sum
}

// hardwareOf is the node's marginal-power view as the agent's
// NodeHardware would give it: the catalog's figures for the node's models,
// from the controller's hardware view once there is one.
func (s *simulation) hardwareOf(n *nodeState) powerest.Node {
	hw := powerest.Node{CPUTotalCores: float64(n.spec.CPUMilli) / 1000}
	if n.view != nil {
		hw.CPUTotalCores = float64(n.view.CPUTotalCores)
		hw.CPUMaxWatts = n.view.CPUMaxWattsPerSocket * float64(n.view.Sockets)
		hw.GPUCount = float64(n.view.GPUCount)
		hw.GPUMaxWattsPerGPU = n.view.GPUMaxWatts
	}
	return hw
}

// capsChange is the caps a reconcile asks node's agent for.
type capsChange struct {
	node                      int
	cpuCap, gpuCap, gpuStdCap float64
}

// planParams are the controller's defaults (plan.DefaultParams, which
// its key table takes its own from) with the arm's policy and the run's
// reconcile interval and intent. An arm runs the seeds' fixed eco caps
// and density order, which issue 14's results were taken with, unless its
// spec asks for the cap that pays or the demand spread (issue 23), the
// controller's defaults since.
func planParams(spec ArmSpec, opts Options) plan.Params {
	ps := plan.DefaultParams()
	ps.CapMode = cmp.Or(spec.CapMode, plan.CapModeFixed)
	ps.Spread = cmp.Or(spec.Spread, policy.SpreadDensity)
	ps.Guard = cmp.Or(spec.Guard, policy.GuardSeed)
	ps.GPUCapScope = cmp.Or(spec.GPUCapScope, plan.GPUScopeNode)
	ps.Policy = spec.Policy
	ps.Interval = opts.ReconcileInterval
	if opts.Intent != nil {
		ps.Intent = *opts.Intent
	}
	return ps
}
