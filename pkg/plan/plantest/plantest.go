// Package plantest builds the nodes and pods that the tests of pkg/plan
// and of the controller's shell plan, so both describe one cluster.
package plantest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// GPUNode is a managed node labelled as 2 × EPYC 9654 with gpus H100 SXM,
// plus the extra labels.
func GPUNode(name string, gpus int, extra map[string]string) *corev1.Node {
	l := map[string]string{joulie.LabelManaged: "true", joulie.LabelHWCPUModel: "amd-epyc-9654",
		joulie.LabelHWGPUModel: "nvidia-h100-sxm", joulie.LabelHWGPUCount: fmt.Sprint(gpus)}
	return node(name, l, extra)
}

// CPUNode is a managed node labelled as 2 × EPYC 9654, plus the extra
// labels.
func CPUNode(name string, extra map[string]string) *corev1.Node {
	return node(name, map[string]string{joulie.LabelManaged: "true", joulie.LabelHWCPUModel: "amd-epyc-9654"}, extra)
}

func node(name string, l, extra map[string]string) *corev1.Node {
	for k, v := range extra {
		l[k] = v
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("384")}
	return n
}

// PerfPod is a performance-class pod on node (empty: not bound) in phase.
func PerfPod(name, node string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
		Annotations: map[string]string{joulie.AnnotationWorkloadClass: joulie.WorkloadClassPerformance}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
}

// Requesting is a pod on node asking for cores and NVIDIA GPUs (gpus empty:
// none), of class (empty: no annotation), in phase.
func Requesting(name, node string, cores, gpus string, class string, phase corev1.PodPhase) *corev1.Pod {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cores)}
	if gpus != "" {
		req[joulie.ResourceNVIDIAGPU] = resource.MustParse(gpus)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: req, Limits: req}}}},
		Status: corev1.PodStatus{Phase: phase}}
	if class != "" {
		p.Annotations = map[string]string{joulie.AnnotationWorkloadClass: class}
	}
	return p
}
