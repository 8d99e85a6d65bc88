package scoring

import (
	"cmp"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/workload"
)

// This file turns API objects into the values the filter and the score
// read, in one place, so that joulie-extender (from its watches) and
// kubectl joulie explain (from a list) see a node and a pod the same way.

// Node is what the filter and the score know about one node. Values
// shared between readers (the extender's snapshots) must not be modified.
type Node struct {
	Name string
	// Twin is the node's NodeTwin status; nil without a NodeTwin.
	Twin *Twin
	// HasHardware is true when the node has a NodeHardware; Hardware is
	// then its status, else zero, which the marginal power estimate reads
	// as unknown.
	HasHardware bool
	Hardware    powerest.Node
	// Labels are the node's Joulie labels, from the Node object.
	Labels Labels
	// Fill is the node's allocatable, from the Node object, and what the
	// pods bound to it request; zero without the Node object.
	Fill Fill
}

// Requests is what the pods bound to a node request, in milli-units (a
// core is 1000, a GPU 1000), so that adding and removing pods stays exact.
type Requests struct {
	CPUMilli, GPUMilli int64
}

// Holds returns the node a pod holds resources on, as kube-scheduler
// counts them (bound to a node and not ended), and its effective requests
// there; node is empty for a pod that holds nothing.
func Holds(pod *corev1.Pod) (node string, r Requests) {
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return "", Requests{}
	}
	d := powerest.PodDemand(pod)
	// PodDemand divided whole milli-units by 1000: rounding gets them back
	// exactly.
	return pod.Spec.NodeName, Requests{CPUMilli: int64(math.Round(d.CPUCores * 1000)), GPUMilli: int64(math.Round(d.GPUs * 1000))}
}

// LabelsOf reads the Joulie labels the filter looks at from a Node.
func LabelsOf(n *corev1.Node) Labels {
	return Labels{Profile: n.Labels[joulie.LabelPowerProfile], Draining: n.Labels[joulie.LabelDraining],
		WarmReserve: n.Labels[joulie.LabelWarmReserve]}
}

// FillOf is a node's fill: its allocatable CPU and GPUs (NVIDIA and AMD
// together, as powerest.PodDemand counts a pod's) and what its pods
// request.
func FillOf(n *corev1.Node, r Requests) Fill {
	a := n.Status.Allocatable
	cpu := a[corev1.ResourceCPU]
	nvidia, amd := a[joulie.ResourceNVIDIAGPU], a[joulie.ResourceAMDGPU]
	f := Fill{
		AllocatableCPU:  float64(cpu.MilliValue()) / 1000,
		AllocatableGPUs: float64(nvidia.MilliValue()+amd.MilliValue()) / 1000,
	}
	return f.WithRequests(r)
}

// WithRequests is f with what the node's pods request replaced by r, so
// that a change of pods alone updates a fill without its Node object.
func (f Fill) WithRequests(r Requests) Fill {
	f.RequestedCPU = float64(r.CPUMilli) / 1000
	f.RequestedGPUs = float64(r.GPUMilli) / 1000
	return f
}

// Nodes assembles the scoring view of every node Joulie knows from the
// NodeTwins, NodeHardware, Nodes and the requests of the pods bound to
// each node (by node name), sorted by name. A Node without a twin,
// hardware or a Joulie label is left out: to the filter and the score it
// is unknown either way (admitted, neutral), and a cluster's other nodes
// need cost nothing here. The twins of the result are allocated together.
func Nodes(twins []*joulie.NodeTwin, hardware []*joulie.NodeHardware, nodes []*corev1.Node, requests map[string]Requests) []Node {
	byName := make(map[string]*Node, max(len(twins), len(hardware)))
	get := func(name string) *Node {
		n, ok := byName[name]
		if !ok {
			n = &Node{Name: name}
			byName[name] = n
		}
		return n
	}
	views := make([]Twin, len(twins))
	for i, t := range twins {
		views[i] = TwinOf(&t.Status)
		get(t.Name).Twin = &views[i]
	}
	for _, h := range hardware {
		n := get(h.Name)
		n.HasHardware = true
		n.Hardware = HardwareOf(&h.Status)
	}
	// Twins and hardware are in byName already: a Node adds a node only
	// for its Joulie labels, and the fill only to a known node.
	for _, m := range nodes {
		l := LabelsOf(m)
		n, known := byName[m.Name]
		if !known {
			if l == (Labels{}) {
				continue
			}
			n = get(m.Name)
		}
		n.Labels = l
		n.Fill = FillOf(m, requests[m.Name])
	}
	out := make([]Node, 0, len(byName))
	for _, n := range byName {
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// PodOf is the scoring view of a pod: its class and its effective
// requests, and whether a DaemonSet runs it.
func PodOf(pod *corev1.Pod) Pod {
	return Pod{
		Performance: workload.Classify(pod) == workload.Performance,
		Demand:      powerest.PodDemand(pod),
		DaemonSet:   workload.IsDaemonSet(pod),
	}
}

// FilterPod is Filter for a pod as the extender applies it: a DaemonSet's
// pod that is not performance-sensitive belongs on every node, the warm
// reserve's included, and passes; every other pod goes through Filter.
func FilterPod(pod Pod, twin *Twin, labels Labels) Verdict {
	if pod.DaemonSet && !pod.Performance {
		return Admit
	}
	return Filter(pod.Performance, twin, labels)
}
