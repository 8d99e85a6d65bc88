package kubesync

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"joulie.io/joulie/agentd/internal/podenergy"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func pod(t *testing.T, ns, name, uid string, mod func(*corev1.Pod)) *unstructured.Unstructured {
	t.Helper()
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: corev1.PodSpec{NodeName: "gpu-07", Containers: []corev1.Container{{Name: "main", Image: "train:1",
			Env: []corev1.EnvVar{{Name: "TOKEN", Value: "s3cret"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if mod != nil {
		mod(p)
	}
	o, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: o}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The node's pods are asked for by field selector, named by UID once
// listed, classified as the controller and the extender classify them,
// and kept without their containers.
func TestNodePodsNamesAndClassifiesTheNodesPods(t *testing.T) {
	perfAnnotation := func(p *corev1.Pod) {
		p.Annotations = map[string]string{joulie.AnnotationWorkloadClass: joulie.WorkloadClassPerformance}
	}
	perfSelector := func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{joulie.LabelPowerProfile: string(joulie.ProfilePerformance)}
	}
	c := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{Pods: "PodList"},
		pod(t, "ml", "train", "u1", perfAnnotation), pod(t, "web", "front", "u2", nil), pod(t, "ml", "eval", "u3", perfSelector),
		pod(t, "ml", "done", "u4", func(p *corev1.Pod) { perfAnnotation(p); p.Status.Phase = corev1.PodSucceeded }))
	var selectors []string
	c.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		selectors = append(selectors, a.(k8stesting.ListAction).GetListRestrictions().Fields.String())
		return false, nil, nil
	})
	p := NewNodePods(c, "gpu-07")
	var changes atomic.Int32
	p.OnChange(func() { changes.Add(1) })
	if got := p.UIDs(); got != nil {
		t.Fatalf("UIDs before the first list: %v, want nil (not known yet)", got)
	}
	if _, err := p.PerformancePods(); err == nil {
		t.Fatal("PerformancePods before the first list: no error, want one (not known yet)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	waitFor(t, "the first list", func() bool { return p.UIDs() != nil })
	got := p.UIDs()
	want := map[string]podenergy.Key{"u1": {Namespace: "ml", Name: "train"}, "u2": {Namespace: "web", Name: "front"},
		"u3": {Namespace: "ml", Name: "eval"}, "u4": {Namespace: "ml", Name: "done"}}
	if len(got) != len(want) || got["u1"] != want["u1"] || got["u2"] != want["u2"] || got["u3"] != want["u3"] {
		t.Errorf("UIDs %v, want %v", got, want)
	}
	if len(selectors) == 0 || selectors[0] != "spec.nodeName=gpu-07" {
		t.Errorf("list field selectors %q, want the node's own pods asked for", selectors)
	}
	perf, err := p.PerformancePods()
	if err != nil || !slices.Equal(perf, []string{"ml/eval", "ml/train"}) {
		t.Fatalf("PerformancePods = %v, %v; want the annotated and the constrained running pods", perf, err)
	}
	if n := changes.Load(); n != 2 {
		t.Errorf("told of %d changes on the first list, want 2 (one per performance pod)", n)
	}
	for _, o := range p.informer.GetStore().List() {
		if cp := o.(*corev1.Pod); len(cp.Spec.Containers) != 0 {
			t.Fatalf("pod %s kept its containers in the cache", cp.Name)
		}
	}

	// A standard pod's update tells nothing; a performance pod's end does.
	if _, err := c.Resource(Pods).Namespace("web").Update(ctx, pod(t, "web", "front", "u2", func(p *corev1.Pod) { p.Labels = map[string]string{"v": "2"} }), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resource(Pods).Namespace("ml").Update(ctx, pod(t, "ml", "train", "u1", func(p *corev1.Pod) { perfAnnotation(p); p.Status.Phase = corev1.PodSucceeded }), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the end of ml/train", func() bool { perf, _ := p.PerformancePods(); return len(perf) == 1 })
	if n := changes.Load(); n != 3 {
		t.Errorf("told of %d changes, want 3", n)
	}
}

// A pool's informer follows the pods bound to any node, with one watch,
// and answers and tells by node.
func TestBoundPodsAnswerByNode(t *testing.T) {
	perf := func(node string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.NodeName = node
			p.Annotations = map[string]string{joulie.AnnotationWorkloadClass: joulie.WorkloadClassPerformance}
		}
	}
	c := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{Pods: "PodList"},
		pod(t, "ml", "a1", "u1", perf("node-a")), pod(t, "ml", "b1", "u2", perf("node-b")),
		pod(t, "web", "b2", "u3", func(p *corev1.Pod) { p.Spec.NodeName = "node-b" }))
	var selectors []string
	c.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		selectors = append(selectors, a.(k8stesting.ListAction).GetListRestrictions().Fields.String())
		return false, nil, nil
	})
	p := NewBoundPods(c)
	var mu sync.Mutex
	told := map[string]int{}
	p.OnNodeChange(func(node string) { mu.Lock(); told[node]++; mu.Unlock() })
	if _, err := p.PerformancePodsOn("node-a"); err == nil {
		t.Fatal("before the first list: no error, want one (not known yet)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	waitFor(t, "the first list", func() bool { _, err := p.PerformancePodsOn("node-a"); return err == nil })
	if len(selectors) == 0 || selectors[0] != "spec.nodeName!=" {
		t.Errorf("list field selectors %q, want every bound pod asked for", selectors)
	}
	for node, want := range map[string][]string{"node-a": {"ml/a1"}, "node-b": {"ml/b1"}, "node-c": nil} {
		if got, err := p.PerformancePodsOn(node); err != nil || !slices.Equal(got, want) {
			t.Errorf("PerformancePodsOn(%s) = %v, %v; want %v", node, got, err, want)
		}
	}
	if err := c.Resource(Pods).Namespace("ml").Delete(ctx, "b1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ml/b1 gone", func() bool { got, _ := p.PerformancePodsOn("node-b"); return len(got) == 0 })
	mu.Lock()
	defer mu.Unlock()
	if told["node-a"] != 1 || told["node-b"] != 2 {
		t.Errorf("told %v, want node-a once (its pod listed) and node-b twice (listed, deleted)", told)
	}
}
