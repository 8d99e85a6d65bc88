package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
)

// fieldManager owns what the harness applies server-side.
const fieldManager = "joulie-harness"

// ApplyCRDs creates or updates every CustomResourceDefinition in the YAML
// files of dir and waits until each is served. The API server holds back
// creates of a custom resource for two seconds after its CRD becomes
// Established, so this waits those out too; install CRDs once per suite.
// A directory without CRDs is an error, not a silent no-op.
func (cp *ControlPlane) ApplyCRDs(ctx context.Context, dir string) error {
	docs, err := readManifests(dir)
	if err != nil {
		return err
	}
	client, err := apiextensionsclient.NewForConfig(cp.admin)
	if err != nil {
		return err
	}
	crdAPI := client.ApiextensionsV1().CustomResourceDefinitions()
	var names []string
	for _, doc := range docs {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := utilyaml.Unmarshal(doc.data, &crd); err != nil {
			return fmt.Errorf("decode %s: %w", doc.source, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			return fmt.Errorf("%s: want a CustomResourceDefinition, found kind %q", doc.source, crd.Kind)
		}
		_, err := crdAPI.Create(ctx, &crd, metav1.CreateOptions{FieldManager: fieldManager})
		if apierrors.IsAlreadyExists(err) {
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur, err := crdAPI.Get(ctx, crd.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				crd.ResourceVersion = cur.ResourceVersion
				_, err = crdAPI.Update(ctx, &crd, metav1.UpdateOptions{FieldManager: fieldManager})
				return err
			})
		}
		if err != nil {
			return fmt.Errorf("apply CRD %s from %s: %w", crd.Name, doc.source, err)
		}
		names = append(names, crd.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("no CustomResourceDefinition in %s", dir)
	}

	var established time.Time
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			crd, err := crdAPI.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					if c.LastTransitionTime.After(established) {
						established = c.LastTransitionTime.Time
					}
					return true, nil
				}
				if c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse {
					return false, fmt.Errorf("names not accepted: %s", c.Message)
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("wait for CRD %s to be established: %w", name, err)
		}
	}
	// The transition time is stored in whole seconds; wait from it, plus a
	// margin, as the server does.
	if d := time.Until(established.Add(2*time.Second + 100*time.Millisecond)); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// ApplyFile applies every object in the YAML file at path (or in the YAML
// files of the directory at path) as joulie:admin, with server-side apply.
func (cp *ControlPlane) ApplyFile(ctx context.Context, path string) error {
	docs, err := readManifests(path)
	if err != nil {
		return err
	}
	return cp.apply(ctx, docs, false)
}

// Apply applies the objects of a multi-document YAML text as joulie:admin,
// with server-side apply.
func (cp *ControlPlane) Apply(ctx context.Context, manifests []byte) error {
	docs, err := splitManifests("inline manifest", manifests)
	if err != nil {
		return err
	}
	return cp.apply(ctx, docs, false)
}

// ApplyDryRun sends the same server-side apply as Apply with dryRun=All:
// the API server decodes, defaults, validates and admits every object and
// stores none, so a manifest that would fail half-way through a real
// install fails here first. The namespaces the objects live in are created
// for real, as `helm install --create-namespace` does before anything else.
func (cp *ControlPlane) ApplyDryRun(ctx context.Context, manifests []byte) error {
	docs, err := splitManifests("inline manifest", manifests)
	if err != nil {
		return err
	}
	return cp.apply(ctx, docs, true)
}

func (cp *ControlPlane) apply(ctx context.Context, docs []manifest, dryRun bool) error {
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cp.admin)
	if err != nil {
		return err
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		return fmt.Errorf("discover API resources: %w", err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	dyn, err := dynamic.NewForConfig(cp.admin)
	if err != nil {
		return err
	}
	for _, doc := range docs {
		obj := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc.data, &obj.Object); err != nil {
			return fmt.Errorf("decode %s: %w", doc.source, err)
		}
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s: resource for %s: %w", doc.source, gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = metav1.NamespaceDefault
				obj.SetNamespace(ns)
			}
			if err := cp.ensureNamespace(ctx, ns); err != nil {
				return err
			}
			ri = dyn.Resource(mapping.Resource).Namespace(ns)
		}
		if _, err := ri.Apply(ctx, obj.GetName(), obj, opts); err != nil {
			what := "apply"
			if dryRun {
				what = "dry-run apply"
			}
			return fmt.Errorf("%s %s %s from %s: %w", what, gvk.Kind, obj.GetName(), doc.source, err)
		}
	}
	return nil
}

type manifest struct {
	source string
	data   []byte
}

// readManifests reads the YAML documents of a file, or of the .yaml and
// .yml files of a directory in name order.
func readManifests(path string) ([]manifest, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	files := []string{path}
	if info.IsDir() {
		files = nil
		for _, pattern := range []string{"*.yaml", "*.yml"} {
			m, err := filepath.Glob(filepath.Join(path, pattern))
			if err != nil {
				return nil, err
			}
			files = append(files, m...)
		}
		slices.Sort(files)
	}
	var docs []manifest
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read manifests: %w", err)
		}
		d, err := splitManifests(f, data)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	return docs, nil
}

func splitManifests(source string, data []byte) ([]manifest, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []manifest
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("split %s: %w", source, err)
		}
		if isBlankYAML(doc) {
			continue
		}
		docs = append(docs, manifest{source: fmt.Sprintf("%s#%d", source, i), data: doc})
	}
}

// isBlankYAML reports whether a document holds only comments and space.
func isBlankYAML(doc []byte) bool {
	for line := range bytes.SplitSeq(doc, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return false
		}
	}
	return true
}

// CreateReadyNode creates a node with labels and allocatable resources and
// marks it Ready, as a kubelet would. Capacity equals allocatable. When
// allocatable names no pods or memory, the node gets 110 pods and 256Gi so
// the scheduler can place pods on it. The node is deleted when t ends.
func (cp *ControlPlane) CreateReadyNode(t testing.TB, name string, labels map[string]string, allocatable corev1.ResourceList) *corev1.Node {
	t.Helper()
	ctx := testContext(t)
	cs := cp.AdminClient(t)
	alloc := allocatable.DeepCopy()
	if alloc == nil {
		alloc = corev1.ResourceList{}
	}
	if _, ok := alloc[corev1.ResourcePods]; !ok {
		alloc[corev1.ResourcePods] = resource.MustParse("110")
	}
	if _, ok := alloc[corev1.ResourceMemory]; !ok {
		alloc[corev1.ResourceMemory] = resource.MustParse("256Gi")
	}
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	t.Cleanup(func() {
		err := cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete node %s: %v", name, err)
		}
	})
	now := metav1.Now()
	node.Status = corev1.NodeStatus{
		Capacity:    alloc,
		Allocatable: alloc,
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{{
			Type:               corev1.NodeReady,
			Status:             corev1.ConditionTrue,
			Reason:             "KubeletReady",
			Message:            "set by the test harness",
			LastHeartbeatTime:  now,
			LastTransitionTime: now,
		}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}},
	}
	node, err = cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("mark node %s Ready: %v", name, err)
	}
	return node
}

// CreatePod creates pod as joulie:admin. An empty namespace means
// "default"; the namespace and its default ServiceAccount are created if
// missing, and a pod without containers gets one (its image is never
// pulled: there is no kubelet). The pod is deleted when t ends.
func (cp *ControlPlane) CreatePod(t testing.TB, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx := testContext(t)
	pod = pod.DeepCopy()
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	if len(pod.Spec.Containers) == 0 {
		pod.Spec.Containers = []corev1.Container{{Name: "main", Image: "registry.invalid/joulie/idle:0"}}
	}
	if err := cp.ensureNamespace(ctx, pod.Namespace); err != nil {
		t.Fatal(err)
	}
	cs := cp.AdminClient(t)
	created, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	t.Cleanup(func() {
		// Without a kubelet a graceful delete of a bound pod never ends.
		zero := int64(0)
		err := cs.CoreV1().Pods(created.Namespace).Delete(context.Background(), created.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete pod %s/%s: %v", created.Namespace, created.Name, err)
		}
	})
	return created
}

// BindPod binds a pod to a node through the binding subresource, as the
// scheduler does.
func (cp *ControlPlane) BindPod(t testing.TB, namespace, name, node string) {
	t.Helper()
	err := cp.AdminClient(t).CoreV1().Pods(namespace).Bind(testContext(t), &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("bind pod %s/%s to %s: %v", namespace, name, node, err)
	}
}

// SetPodPhase writes the status a kubelet would report for a pod in phase:
// Pending, Running (containers running and ready), Succeeded (containers
// exited 0) or Failed (exited 1).
func (cp *ControlPlane) SetPodPhase(t testing.TB, namespace, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	ctx := testContext(t)
	pods := cp.AdminClient(t).CoreV1().Pods(namespace)
	var updated *corev1.Pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Status = KubeletPodStatus(pod, phase)
		updated, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("set phase of pod %s/%s to %s: %v", namespace, name, phase, err)
	}
	return updated
}

// KubeletPodStatus is the status a kubelet would write for pod in phase:
// conditions, start time and one container status per container. Tests and
// the demo's pod stand-in, where no kubelet runs, write it themselves.
func KubeletPodStatus(pod *corev1.Pod, phase corev1.PodPhase) corev1.PodStatus {
	now := metav1.Now()
	st := pod.Status.DeepCopy()
	st.Phase = phase
	if st.StartTime == nil && phase != corev1.PodPending {
		st.StartTime = &now
	}
	running := phase == corev1.PodRunning
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
	}
	var conditions []corev1.PodCondition
	for _, c := range st.Conditions {
		// PodScheduled belongs to the scheduler; keep it.
		if c.Type == corev1.PodScheduled {
			conditions = append(conditions, c)
		}
	}
	if phase != corev1.PodPending {
		conditions = append(conditions,
			cond(corev1.PodInitialized, true),
			cond(corev1.ContainersReady, running),
			cond(corev1.PodReady, running),
		)
	}
	st.Conditions = conditions
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: running, Started: &running}
		switch phase {
		case corev1.PodRunning:
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
		case corev1.PodSucceeded, corev1.PodFailed:
			code, reason := int32(0), "Completed"
			if phase == corev1.PodFailed {
				code, reason = 1, "Error"
			}
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: *st.StartTime, FinishedAt: now}
		default:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	return *st
}

// WaitForPodBound waits until the pod is bound and returns the node name.
func (cp *ControlPlane) WaitForPodBound(t testing.TB, namespace, name string, timeout time.Duration) string {
	t.Helper()
	var node string
	pods := cp.AdminClient(t).CoreV1().Pods(namespace)
	err := wait.PollUntilContextTimeout(testContext(t), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = pod.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not bound within %s: %v", namespace, name, timeout, err)
	}
	return node
}

// testContext is t's context, which ends just before t's cleanups run.
func testContext(t testing.TB) context.Context { return t.Context() }
