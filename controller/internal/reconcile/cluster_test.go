package reconcile

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/intent"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/powerest"
)

// The cluster the controller's tests run against: the same nodes and pods
// pkg/plan's tests plan, so a shell test and a planning test describe one
// cluster.

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func settings(p string) plan.Settings {
	sel, _ := labels.Parse(joulie.LabelManaged + "=true")
	return plan.Settings{NodeSelector: sel, Policy: p, StaticHPFrac: 0.5, Queue: policy.DefaultQueueAware(),
		Interval: time.Minute, Intent: intent.Default(), RackCapacityW: 50000, MeasurementMaxAge: 3 * time.Minute,
		Coefficients: powerest.DefaultCoefficients()}
}

func gpuNode(name string, gpus int, extra map[string]string) *corev1.Node {
	l := map[string]string{joulie.LabelManaged: "true", joulie.LabelHWCPUModel: "amd-epyc-9654",
		joulie.LabelHWGPUModel: "nvidia-h100-sxm", joulie.LabelHWGPUCount: fmt.Sprint(gpus)}
	for k, v := range extra {
		l[k] = v
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("384")}
	return n
}

func cpuNode(name string, extra map[string]string) *corev1.Node {
	l := map[string]string{joulie.LabelManaged: "true", joulie.LabelHWCPUModel: "amd-epyc-9654"}
	for k, v := range extra {
		l[k] = v
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("384")}
	return n
}

func perfPod(name, node string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
		Annotations: map[string]string{joulie.AnnotationWorkloadClass: joulie.WorkloadClassPerformance}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
}

// requesting is a pod on node asking for cores and NVIDIA GPUs.
func requesting(name, node string, cores, gpus string, class string, phase corev1.PodPhase) *corev1.Pod {
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
