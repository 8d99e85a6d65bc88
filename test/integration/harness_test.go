package integration

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"joulie.io/joulie/test/harness"
)

// The write counter must count what a component sends, reads excluded,
// refusals included, under the identity the component authenticated as.
// The controller's ServiceAccount has the chart's RBAC: it may label nodes
// but not delete them.
func TestWriteCounterCountsTheControllersWrites(t *testing.T) {
	node := "writes-node"
	cp.CreateReadyNode(t, node, nil, nil)
	ctrl := kubernetes.NewForConfigOrDie(cp.ControllerConfig(t)).CoreV1().Nodes()
	user := harness.ServiceAccountUser(harness.ControllerNamespace, harness.ControllerServiceAccount)
	before := cp.WriteCount(t, user)

	ctx := t.Context()
	if _, err := ctrl.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("controller listing nodes: %v", err)
	}
	for _, profile := range []string{"eco", "performance"} {
		patch := []byte(`{"metadata":{"labels":{"joulie.io/power-profile":"` + profile + `"}}}`)
		if _, err := ctrl.Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("controller labelling node: %v", err)
		}
	}
	if _, err := ctrl.Get(ctx, node, metav1.GetOptions{}); err != nil {
		t.Fatalf("controller reading node: %v", err)
	}
	if err := ctrl.Delete(ctx, node, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("controller deleting a node: want Forbidden, got %v", err)
	}

	writes := cp.Writes(t, user)[before:]
	var got []string
	for _, w := range writes {
		got = append(got, strings.TrimPrefix(w.String(), user+" "))
	}
	want := []string{
		"patch nodes writes-node -> 200",
		"patch nodes writes-node -> 200",
		"delete nodes writes-node -> 403",
	}
	if !slices.Equal(got, want) {
		t.Errorf("writes of %s:\n got %q\nwant %q", user, got, want)
	}
	if len(writes) > 0 && !slices.Contains(writes[0].Groups, "system:serviceaccounts:joulie-system") {
		t.Errorf("controller authenticated in groups %v, want its ServiceAccount groups", writes[0].Groups)
	}
}

// Without a kubelet the harness plays its part: a pod is bound, runs and
// completes because the test says so.
func TestPodLifecycleWithoutKubelet(t *testing.T) {
	node := cp.CreateReadyNode(t, "lifecycle-node", map[string]string{"joulie.io/managed": "true"}, corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("64"),
		"nvidia.com/gpu":                resource.MustParse("8"),
		corev1.ResourceMemory:           resource.MustParse("512Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	})
	if !isReady(node) {
		t.Fatalf("node not Ready: %+v", node.Status.Conditions)
	}
	if got := node.Status.Allocatable["nvidia.com/gpu"]; got.Value() != 8 {
		t.Errorf("allocatable GPUs %s, want 8", got.String())
	}
	if len(node.Spec.Taints) > 0 {
		t.Errorf("new node is tainted %v; the harness must leave it schedulable", node.Spec.Taints)
	}

	pod := cp.CreatePod(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "lifecycle",
			Namespace:   "workloads",
			Annotations: map[string]string{"joulie.io/workload-class": "performance"},
		},
		Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "joulie.io/power-profile", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"eco"}}},
				}}},
			}},
		},
	})
	cp.BindPod(t, pod.Namespace, pod.Name, node.Name)
	running := cp.SetPodPhase(t, pod.Namespace, pod.Name, corev1.PodRunning)
	if running.Spec.NodeName != node.Name || running.Status.Phase != corev1.PodRunning || !podReady(running) {
		t.Fatalf("pod after SetPodPhase(Running): node %q phase %s ready %v", running.Spec.NodeName, running.Status.Phase, podReady(running))
	}
	done := cp.SetPodPhase(t, pod.Namespace, pod.Name, corev1.PodSucceeded)
	if done.Status.Phase != corev1.PodSucceeded || podReady(done) {
		t.Fatalf("pod after SetPodPhase(Succeeded): phase %s ready %v", done.Status.Phase, podReady(done))
	}
	if term := done.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 0 {
		t.Errorf("container state after success: %+v", done.Status.ContainerStatuses[0].State)
	}
}

func isReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
