package sim

import (
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/hwview"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/workload"
)

// powerState is where a node is in its power cycle.
type powerState uint8

const (
	awake powerState = iota
	shuttingDown
	off
	booting
)

type nodeState struct {
	idx  int
	spec workload.Node
	obj  *v1.Node
	// host is the node's CPU power curve and gpu its GPUs' figures: the
	// model's, scaled to the node's catalog figures (physicsFor).
	host physics.Curve
	gpu  physics.GPUNode
	// cpuCap and gpuCap are the cap fractions applied to the node (1:
	// none): by its agent AgentDelay after the reconcile that asked, or by
	// the physical oracle.
	cpuCap, gpuCap float64
	// gpuStdCap is the cap fraction of the GPUs standard jobs hold, with
	// per-GPU caps (gpu.standardPowerCap; 1: none).
	gpuStdCap float64
	// running holds the indices of the jobs on the node in ascending
	// order: the sums over them and the events they push come out the
	// same on every run (a map's order would not).
	running []int
	// parts is the node's draw as the accounts split it.
	parts   Parts
	profile *joulie.NodePowerProfile
	twin    *joulie.NodeTwinStatus
	view    *hwview.View // the controller's view of the hardware
	pub     publication  // the agent's last published measurement
	// lastTransition is the time the profile's annotation holds.
	lastTransition time.Time
	// askedCPU and askedGPU are the caps the last reconcile asked for (1:
	// none), which the agent has applied or will.
	askedCPU, askedGPU, askedStd float64
	// park is the node's parking state in a parking arm (parking.go).
	park parkingState
	// podsChanged says running changed since the controller's view of the
	// node's pods was last counted.
	podsChanged bool
	// The extender's view of the node, derived from twin and view when the
	// reconcile writes them.
	scoringTwin scoring.Twin
	hardware    powerest.Node

	// readyAt is when the node last became Ready after a boot (-1: it
	// has been awake since the start). The oracles' foresight boots end
	// before the pod they serve arrives and do not set it.
	readyAt time.Duration
	// state is the node's power state since stateAt; emptySince is when
	// it last became empty (the power-off rules).
	state      powerState
	stateAt    time.Duration
	emptySince time.Duration
	// reserved is what pending jobs waiting for this node's boot request.
	reservedCPU, reservedMem int64
	reservedGPU              int
}

// standard is the standard cluster's CPU node and GPU node, whose hardware
// the physics models: their catalog figures are what a node's own scale
// the model's curves against.
var standard = workload.StandardCluster(1, 1)

func (s *simulation) newNode(i int, n workload.Node, obj *v1.Node) *nodeState {
	ns := &nodeState{idx: i, spec: n, obj: obj, cpuCap: 1, gpuCap: 1, gpuStdCap: 1, askedCPU: 1, askedGPU: 1, askedStd: 1, readyAt: -1}
	ns.host, ns.gpu = physicsFor(s.model, n)
	return ns
}

// physicsFor is the physics of node n: the model's curves scaled by the
// node's catalog figures against the standard node's (its CPUs' summed
// TDP, its GPU's board power), the model's own where a figure is unknown.
// The curve keeps its shape: a node whose CPUs are rated at half the TDP
// draws half as much at every load, idle included.
func physicsFor(m *physics.Model, n workload.Node) (physics.Curve, physics.GPUNode) {
	hostScale, gpuScale := 1.0, 1.0
	if n.GPUs > 0 {
		if n.CPUTDPWatts > 0 {
			hostScale = n.CPUTDPWatts / standard[1].CPUTDPWatts
		}
		if n.GPUMaxWatts > 0 {
			gpuScale = n.GPUMaxWatts / standard[1].GPUMaxWatts
		}
		g := m.GPUNode.Scaled(hostScale, gpuScale)
		return g.Host, g
	}
	if n.CPUTDPWatts > 0 {
		hostScale = n.CPUTDPWatts / standard[0].CPUTDPWatts
	}
	return m.CPUNode.Scaled(hostScale), m.GPUNode
}

// NodePhysics is node n's host curve and GPU figures under model m, as
// the simulator draws them: for the lower bound (package bound), which
// must see the same hardware.
func NodePhysics(m *physics.Model, n workload.Node) (physics.Curve, physics.GPUNode) {
	return physicsFor(m, n)
}

// idleWatts is what node n draws awake with nothing running.
func (n *nodeState) idleWatts() float64 {
	return n.host.Idle() + float64(n.spec.GPUs)*n.gpu.GPUIdleWatts
}

// load is node n's CPU load: its jobs' requested CPUs, each kept busy at
// its job's true utilization, over the node's CPUs.
func (s *simulation) load(n *nodeState) float64 {
	var busyMilli float64
	for _, idx := range n.running {
		j := s.jobs[idx]
		busyMilli += float64(j.job.CPUMilli) * j.phys.Class(j.job.Boundness).Utilization
	}
	return busyMilli / float64(n.spec.CPUMilli)
}

// awakeWatts is the physics' draw of an awake node with its running jobs
// under its caps. A job keeps its share of the CPUs it requested busy at
// its true utilization, and each of its GPUs at the same utilization.
func (s *simulation) awakeWatts(n *nodeState) float64 {
	load := s.load(n)
	w := physics.Capped(n.host.At(load), s.model.EffectiveCap(n.cpuCap)*n.host.Max())
	if n.spec.GPUs > 0 {
		used := 0
		for _, idx := range n.running {
			j := s.jobs[idx]
			u := j.phys.Class(j.job.Boundness).Utilization
			c := s.gpuCapOf(j, n)
			w += float64(j.job.GPUs) * physics.Capped(n.gpu.GPUWatts(u), s.model.EffectiveCap(c)*n.gpu.GPUMaxWatts())
			used += j.job.GPUs
		}
		idle := physics.Capped(n.gpu.GPUIdleWatts, s.model.EffectiveCap(n.gpuCap)*n.gpu.GPUMaxWatts())
		w += float64(n.spec.GPUs-used) * idle
	}
	return w - s.oracleSaving(n, load)
}

// partsOf is node n's draw split as the accounts split it.
func (s *simulation) partsOf(n *nodeState) Parts {
	ps := s.model.Power
	switch n.state {
	case off:
		return Parts{Off: ps.Off(n.spec.GPUs > 0)}
	case shuttingDown:
		return Parts{Booting: ps.ShutdownWatts}
	case booting:
		return Parts{Booting: ps.Booting(n.spec.GPUs > 0)}
	}
	idle := n.idleWatts()
	return Parts{IdleAwake: idle, Dynamic: s.awakeWatts(n) - idle}
}

// setNodePower recomputes node n's draw and records a power step when it
// changed.
func (s *simulation) setNodePower(n *nodeState) {
	p := s.partsOf(n)
	if p == n.parts {
		return
	}
	s.catchUp(n, s.now, n.parts.Total())
	s.acct.step(s.now, p.add(n.parts, -1))
	n.parts = p
}

func nodeObject(n workload.Node, maxPods int64) *v1.Node {
	l := map[string]string{joulie.LabelManaged: "true", joulie.LabelHWCPUModel: n.CPUModel}
	res := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(n.CPUMilli, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(n.MemoryMiB<<20, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(maxPods, resource.DecimalSI),
	}
	if n.GPUs > 0 {
		l[joulie.LabelHWGPUModel] = n.GPUModel
		l[joulie.LabelHWGPUCount] = strconv.Itoa(n.GPUs)
		res[joulie.ResourceNVIDIAGPU] = *resource.NewQuantity(int64(n.GPUs), resource.DecimalSI)
	}
	o := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: types.UID("uid-" + n.Name), Labels: l}}
	o.Status.Capacity, o.Status.Allocatable = res, res.DeepCopy()
	o.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	return o
}

func podObject(j workload.Job) *v1.Pod {
	req := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(j.CPUMilli, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(j.MemoryMiB<<20, resource.BinarySI),
	}
	if j.GPUs > 0 {
		req[joulie.ResourceNVIDIAGPU] = *resource.NewQuantity(int64(j.GPUs), resource.DecimalSI)
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: j.ID, Namespace: "default", UID: types.UID("uid-" + j.ID)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "job", Resources: v1.ResourceRequirements{Requests: req, Limits: req}}}}}
	if j.Class == workload.Performance {
		p.Annotations = map[string]string{joulie.AnnotationWorkloadClass: joulie.WorkloadClassPerformance}
	}
	return p
}
