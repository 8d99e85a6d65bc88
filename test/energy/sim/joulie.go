package sim

import (
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
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/pkg/workload"
)

// reconcile is one pass of joulie-controller: the cluster as the
// controller's informers would show it goes through plan.Compute, and its
// outcome is written back as the controller writes it (node labels,
// NodePowerProfile spec and transition annotation, NodeTwin status). The
// agents apply the caps AgentDelay later.
func (s *simulation) reconcile(ctx context.Context) error {
	now := epoch.Add(s.now)
	in := plan.Inputs{Now: now, Profiles: map[string]*joulie.NodePowerProfile{}, PerfPods: map[string]int{},
		Loads: map[string]plan.NodeLoad{}}
	for _, n := range s.nodes {
		in.Nodes = append(in.Nodes, n.obj)
		if n.profile != nil {
			// The controller sees what the agent last published (publish.go),
			// not the draw of this instant.
			s.catchUp(n, s.now, n.watts)
			if n.pub.ok {
				n.profile.Status.MeasuredPower = &joulie.MeasuredPower{NodePowerWatts: n.pub.watts, Time: metav1.NewTime(epoch.Add(n.pub.at))}
			}
			in.Profiles[n.spec.Name] = n.profile
		}
	}
	for _, j := range s.jobs {
		switch {
		case j.done:
		case j.node < 0:
			// Pending means waiting in the queue: a job that has not
			// arrived has no pod yet, and one the seed's pass dropped has
			// none any more.
			if j.perfPod && j.queued {
				in.PerfPods[""]++
			}
		default:
			name := s.nodes[j.node].spec.Name
			if j.perfPod {
				in.PerfPods[name]++
			}
			l := in.Loads[name]
			l.Add(j.pod)
			in.Loads[name] = l
		}
	}
	res := plan.Compute(in, s.settings)
	relabelled := false
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
			relabelled = true
		}
		// The controller writes the spec; the status stays the agent's.
		var st joulie.NodePowerProfileStatus
		if n.profile != nil {
			st = n.profile.Status
		}
		n.profile = &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: np.Name,
			Annotations: map[string]string{plan.AnnotationLastTransition: np.LastTransition.UTC().Format(time.RFC3339)}},
			Spec: np.Spec, Status: st}
		v := np.View
		n.view = &v
		s.startPublishing(n)
		tw := np.Twin
		tw.LastUpdated = metav1.NewTime(now)
		n.twin = &tw
		cpuCap, gpuCap := capFractions(np.Spec)
		s.events.pushCaps(s.now+s.opts.AgentDelay, ni, cpuCap, gpuCap)
	}
	if relabelled {
		s.retry(ctx, nil)
	}
	return nil
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
func capFractions(spec joulie.NodePowerProfileSpec) (cpu, gpu float64) {
	cpu, gpu = 1, 1
	if c := spec.CPU; c != nil && c.PackagePowerCapPctOfMax != nil {
		cpu = *c.PackagePowerCapPctOfMax / 100
	}
	if g := spec.GPU; g != nil && g.PowerCap != nil && g.PowerCap.CapPctOfMax != nil {
		gpu = *g.PowerCap.CapPctOfMax / 100
	}
	return cpu, gpu
}

// extender is joulie-extender's filter and prioritize over the simulated
// NodeTwins, calling pkg/scoring as extender/internal/server does.
type extender struct {
	s      *simulation
	params scoring.Params
}

func newExtender(s *simulation) *extender {
	// The extender's defaults: MARGINAL_* coefficients, a 5m
	// TWIN_STALENESS_THRESHOLD, facility metrics off.
	return &extender{s: s, params: scoring.Params{Coefficients: powerest.DefaultCoefficients(), StalenessThreshold: 5 * time.Minute}}
}

func (e *extender) Weight() int64 { return 1 } // the chart's weight

func (e *extender) twinOf(name string) (scoring.Twin, bool) {
	n := e.s.nodes[e.s.byName[name]]
	if n.twin == nil {
		return scoring.Twin{}, false
	}
	return scoring.TwinOf(n.twin), true
}

func (e *extender) Filter(pod *v1.Pod, nodes []*v1.Node) ([]*v1.Node, map[string]string, error) {
	perf := workload.Classify(pod) == workload.Performance
	var kept []*v1.Node
	failed := map[string]string{}
	for _, node := range nodes {
		var tp *scoring.Twin
		if t, ok := e.twinOf(node.Name); ok {
			tp = &t
		}
		v := scoring.Filter(perf, tp, scoring.Labels{Profile: node.Labels[joulie.LabelPowerProfile], Draining: node.Labels[joulie.LabelDraining]})
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
	var sum scoring.ClusterSum
	for _, n := range e.s.nodes {
		if n.twin != nil {
			t := scoring.TwinOf(n.twin)
			sum.Add(&t, now, e.params.StalenessThreshold)
		}
	}
	batch := e.params.Batch(scoring.Pod{Performance: workload.Classify(pod) == workload.Performance, Demand: powerest.PodDemand(pod)}, sum.Cluster(), now)
	out := make(extenderv1.HostPriorityList, len(nodes))
	for i, node := range nodes {
		var tp *scoring.Twin
		if t, ok := e.twinOf(node.Name); ok {
			tp = &t
		}
		out[i] = extenderv1.HostPriority{Host: node.Name,
			Score: scoring.ExtenderPriority(batch.Score(tp, e.s.hardware(node.Name)), extenderv1.MaxExtenderPriority)}
	}
	return out, nil
}

// hardware is the node's marginal-power view as the agent's NodeHardware
// would give it: the catalog's figures for the node's models.
func (s *simulation) hardware(name string) powerest.Node {
	n := s.nodes[s.byName[name]]
	hw := powerest.Node{CPUTotalCores: float64(n.spec.CPUMilli) / 1000}
	if n.view != nil {
		hw.CPUTotalCores = float64(n.view.CPUTotalCores)
		hw.CPUMaxWatts = n.view.CPUMaxWattsPerSocket * float64(n.view.Sockets)
		hw.GPUCount = float64(n.view.GPUCount)
		hw.GPUMaxWattsPerGPU = n.view.GPUMaxWatts
	}
	return hw
}
