package powerest

import (
	corev1 "k8s.io/api/core/v1"

	"joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Demand is what a pod asks of a node, in the units of the estimate.
type Demand struct {
	// CPUCores is the pod's effective CPU request in cores (500m = 0.5).
	CPUCores float64
	// GPUs is the number of whole GPUs the pod asks for, NVIDIA and AMD
	// together.
	GPUs float64
}

// amounts accumulate a pod's CPU and GPUs in milli-units, the resolution
// of Kubernetes quantities, so that summing containers stays exact.
type amounts struct {
	cpu, gpu int64
}

func (a *amounts) add(b amounts) {
	a.cpu += b.cpu
	a.gpu += b.gpu
}

func (a *amounts) atLeast(b amounts) {
	a.cpu = max(a.cpu, b.cpu)
	a.gpu = max(a.gpu, b.gpu)
}

// PodDemand returns the CPU and GPUs the scheduler reserves for pod,
// following Kubernetes' rule for a pod's effective request:
//
//   - app containers and restartable ("sidecar") init containers run for the
//     whole life of the pod, so their requests add up;
//   - classic init containers run one at a time before the app containers,
//     each next to the sidecars started before it, so the pod needs at
//     least the largest of those moments;
//   - the effective request is the larger of the two, replaced by the
//     pod-level CPU request when spec.resources sets one, plus the pod
//     overhead of its RuntimeClass.
//
// A container's CPU is its request, or its limit when it has no request,
// just as the API server defaults it; that way pods that never went
// through the API server (tests, simulators) count the same. GPUs are read
// from the nvidia.com/gpu and amd.com/gpu limits, falling back to the
// requests; Kubernetes requires the two to be equal for extended resources.
//
// The spec's desired resources are used, not the resources an in-place
// resize has already applied: the estimate is for a pod being placed.
func PodDemand(pod *corev1.Pod) Demand {
	if pod == nil {
		return Demand{}
	}
	spec := &pod.Spec

	var long amounts // app containers and sidecars
	for i := range spec.Containers {
		long.add(containerAmounts(&spec.Containers[i].Resources))
	}
	var sidecars, initPeak amounts
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		a := containerAmounts(&c.Resources)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars.add(a)
			initPeak.atLeast(sidecars)
			continue
		}
		a.add(sidecars)
		initPeak.atLeast(a)
	}
	long.add(sidecars)
	total := long
	total.atLeast(initPeak)

	if r := spec.Resources; r != nil {
		// Pod-level requests override the containers' sum. Pod-level limits
		// alone stand in for requests only when no container requests CPU,
		// which is how the API server defaults them.
		if v, ok := milli(r.Requests, corev1.ResourceCPU); ok {
			total.cpu = v
		} else if v, ok := milli(r.Limits, corev1.ResourceCPU); ok && total.cpu == 0 {
			total.cpu = v
		}
	}
	if v, ok := milli(spec.Overhead, corev1.ResourceCPU); ok {
		total.cpu += v
	}

	return Demand{
		CPUCores: float64(max(total.cpu, 0)) / 1000,
		GPUs:     float64(max(total.gpu, 0)) / 1000,
	}
}

func containerAmounts(r *corev1.ResourceRequirements) amounts {
	var a amounts
	if v, ok := milli(r.Requests, corev1.ResourceCPU); ok {
		a.cpu = v
	} else if v, ok := milli(r.Limits, corev1.ResourceCPU); ok {
		a.cpu = v
	}
	a.gpu = gpuMilli(r, v1alpha1.ResourceNVIDIAGPU) + gpuMilli(r, v1alpha1.ResourceAMDGPU)
	return a
}

func gpuMilli(r *corev1.ResourceRequirements, name corev1.ResourceName) int64 {
	if v, ok := milli(r.Limits, name); ok {
		return v
	}
	v, _ := milli(r.Requests, name)
	return v
}

func milli(list corev1.ResourceList, name corev1.ResourceName) (int64, bool) {
	q, ok := list[name]
	if !ok {
		return 0, false
	}
	return q.MilliValue(), true
}
