package scoring

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func requestingPod(node string, phase corev1.PodPhase, cpu, gpus string) *corev1.Pod {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	if gpus != "" {
		req[joulie.ResourceNVIDIAGPU] = resource.MustParse(gpus)
	}
	return &corev1.Pod{
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func TestHoldsCountsBoundPodsThatHaveNotEnded(t *testing.T) {
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		node string
		want Requests
	}{
		{"pending, unbound", requestingPod("", corev1.PodPending, "2", ""), "", Requests{}},
		{"bound, pending", requestingPod("n1", corev1.PodPending, "1500m", "1"), "n1", Requests{CPUMilli: 1500, GPUMilli: 1000}},
		{"running", requestingPod("n1", corev1.PodRunning, "250m", ""), "n1", Requests{CPUMilli: 250}},
		{"succeeded", requestingPod("n1", corev1.PodSucceeded, "2", ""), "", Requests{}},
		{"failed", requestingPod("n1", corev1.PodFailed, "2", "2"), "", Requests{}},
	} {
		node, got := Holds(c.pod)
		if node != c.node || got != c.want {
			t.Errorf("%s: Holds = %q %+v, want %q %+v", c.name, node, got, c.node, c.want)
		}
	}
}

func TestFilterPodLetsDaemonSetPodsOntoTheWarmReserve(t *testing.T) {
	ds := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}}}
	perfDS := ds.DeepCopy()
	perfDS.Annotations = map[string]string{joulie.AnnotationWorkloadClass: joulie.WorkloadClassPerformance}
	reserve := Labels{WarmReserve: "true"}
	eco := &Twin{Class: joulie.ClassEco}
	for _, c := range []struct {
		name   string
		pod    *corev1.Pod
		twin   *Twin
		labels Labels
		want   Verdict
	}{
		{"standard pod, warm reserve", &corev1.Pod{}, nil, reserve, RejectWarmReserve},
		{"DaemonSet pod, warm reserve", ds, nil, reserve, Admit},
		{"DaemonSet pod, eco twin", ds, eco, Labels{}, Admit},
		{"performance DaemonSet pod, eco twin", perfDS, eco, Labels{}, RejectTwinEco},
	} {
		if got := FilterPod(PodOf(c.pod), c.twin, c.labels); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestNodesLeavesOutNodesJoulieDoesNotKnow(t *testing.T) {
	nodes := Nodes(
		[]*joulie.NodeTwin{{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: joulie.NodeTwinStatus{SchedulableClass: joulie.ClassEco}}},
		[]*joulie.NodeHardware{{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: joulie.NodeHardwareStatus{CPU: joulie.CPUHardware{TotalCores: 64}}}},
		[]*corev1.Node{
			{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("63500m")}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{joulie.LabelDraining: "true"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
		},
		map[string]Requests{"a": {CPUMilli: 2000}},
	)
	if len(nodes) != 3 || nodes[0].Name != "a" || nodes[1].Name != "b" || nodes[2].Name != "c" {
		t.Fatalf("nodes %+v, want a, b, c", nodes)
	}
	if a := nodes[0]; !a.HasHardware || a.Hardware.CPUTotalCores != 64 || a.Fill != (Fill{AllocatableCPU: 63.5, RequestedCPU: 2}) || a.Twin != nil {
		t.Errorf("a: %+v", a)
	}
	if b := nodes[1]; b.Twin == nil || b.Twin.Class != joulie.ClassEco || b.HasHardware {
		t.Errorf("b: %+v", b)
	}
	if c := nodes[2]; c.Labels != (Labels{Draining: "true"}) {
		t.Errorf("c: %+v", c)
	}
}
