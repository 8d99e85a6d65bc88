package kubesync

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"joulie.io/joulie/agentd/internal/podenergy"
	"joulie.io/joulie/pkg/workload"
)

// Pods is the resource of the pods bound to the node.
var Pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// NodePods follows the pods bound to one node. The per-pod energy meter
// needs their names and UIDs (the kubelet names pod cgroups by UID); the
// eco guard needs their class, which pkg/workload reads from the
// annotation and the scheduling constraints. The field selector asks the
// API server for this node's pods alone; RBAC cannot narrow the agent's
// list to them, so the agent's role grants list and watch of pods. Each
// pod is cut down to those fields as it arrives, so neither the cache nor
// anything the daemon logs holds containers, environments or volumes.
//
// A pool (NewBoundPods) follows the pods bound to every node the same
// way, with one watch for all its nodes, and asks by node.
type NodePods struct {
	informer cache.SharedIndexInformer
	node     string // "" for every node's pods

	mu       sync.Mutex
	err      error             // the last list or watch failure, nil once one succeeded
	onChange func(node string) // told when a performance pod comes or goes
}

// byNode indexes the pods by the node they are bound to.
const byNode = "node"

// NewNodePods builds the informer of node's pods over client. It is built
// by hand, like the profile's, rather than from client-go's informer
// factories, which link every built-in API group into the daemon.
func NewNodePods(client dynamic.Interface, node string) *NodePods {
	return newPods(client, node, fields.OneTermEqualSelector("spec.nodeName", node).String())
}

// NewBoundPods builds the informer of the pods bound to any node, for a
// pool that drives many nodes: PerformancePodsOn and OnNodeChange ask and
// tell by node. It needs list and watch of pods across the cluster.
func NewBoundPods(client dynamic.Interface) *NodePods {
	return newPods(client, "", fields.OneTermNotEqualSelector("spec.nodeName", "").String())
}

func newPods(client dynamic.Interface, node, sel string) *NodePods {
	pods := client.Resource(Pods)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return pods.Watch(ctx, o)
		},
	}
	// As with the profile: a client that cannot stream a list as watch
	// events (client-go's fakes) says so through the wrapper.
	p := &NodePods{node: node, informer: cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client),
		&unstructured.Unstructured{}, 10*time.Minute, cache.Indexers{byNode: podNode})}
	_ = p.informer.SetTransform(slimPod)
	_ = p.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		p.mu.Lock()
		what := "the pods of node " + node
		if node == "" {
			what = "the pods bound to nodes"
		}
		p.err = fmt.Errorf("list %s: %w", what, err)
		p.mu.Unlock()
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	_, _ = p.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.changed(nil, o) },
		UpdateFunc: p.changed,
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			p.changed(o, nil)
		},
	})
	return p
}

// OnChange asks to be told, on the informer's goroutine, whenever a
// performance pod starts or stops counting on the node; f must return at
// once (the agent's Kick).
func (p *NodePods) OnChange(f func()) {
	p.OnNodeChange(func(string) { f() })
}

// OnNodeChange is OnChange naming the pod's node, for a pool.
func (p *NodePods) OnNodeChange(f func(node string)) {
	p.mu.Lock()
	p.onChange = f
	p.mu.Unlock()
}

func (p *NodePods) changed(old, cur any) {
	o, _ := old.(*corev1.Pod)
	c, _ := cur.(*corev1.Pod)
	if isPerformance(o) == isPerformance(c) {
		return
	}
	p.mu.Lock()
	f := p.onChange
	p.mu.Unlock()
	if f == nil {
		return
	}
	// A pod's node does not change once bound; o is the deleted one.
	if c != nil {
		f(c.Spec.NodeName)
	} else {
		f(o.Spec.NodeName)
	}
}

// podNode is the byNode index: the node a pod is bound to.
func podNode(obj any) ([]string, error) {
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
		return []string{pod.Spec.NodeName}, nil
	}
	return nil, nil
}

// isPerformance is workload.IsPerformanceDemand for the informer's
// objects, which are nil on one side of an add or a delete.
func isPerformance(p *corev1.Pod) bool { return p != nil && workload.IsPerformanceDemand(p) }

// slimPod keeps of a pod what the meter and the guard read: its name,
// UID, annotations and owners, the node it is bound to, its scheduling
// constraints on nodes, and its phase.
func slimPod(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // a tombstone, or already cut down
	}
	keep := map[string]any{}
	for _, path := range [][]string{
		{"metadata", "name"}, {"metadata", "namespace"}, {"metadata", "uid"}, {"metadata", "resourceVersion"},
		{"metadata", "annotations"}, {"metadata", "ownerReferences"},
		{"spec", "nodeName"}, {"spec", "nodeSelector"}, {"spec", "affinity", "nodeAffinity"},
		{"status", "phase"},
	} {
		if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, path...); found {
			if err := unstructured.SetNestedField(keep, v, path...); err != nil {
				return nil, fmt.Errorf("keep %v of pod %s/%s: %w", path, u.GetNamespace(), u.GetName(), err)
			}
		}
	}
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(keep, pod); err != nil {
		return nil, fmt.Errorf("read pod %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return pod, nil
}

// Err is why the node's pods are not known yet: the last failure to list
// or watch them (RBAC without list and watch of pods, say), or nil.
func (p *NodePods) Err() error {
	if p.informer.HasSynced() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Run follows the pods until ctx ends.
func (p *NodePods) Run(ctx context.Context) { p.informer.RunWithContext(ctx) }

// pods is the node's pods; nil until the first list arrived.
func (p *NodePods) pods() []*corev1.Pod {
	if !p.informer.HasSynced() {
		return nil
	}
	var out []*corev1.Pod
	for _, o := range p.informer.GetStore().List() {
		if pod, ok := o.(*corev1.Pod); ok {
			out = append(out, pod)
		}
	}
	return out
}

// UIDs names the node's pods by UID; nil until the first list arrived,
// so a meter does not take "no pods yet" for "every pod ended".
func (p *NodePods) UIDs() map[string]podenergy.Key {
	if !p.informer.HasSynced() {
		return nil
	}
	out := map[string]podenergy.Key{}
	for _, pod := range p.pods() {
		out[string(pod.UID)] = podenergy.Key{Namespace: pod.Namespace, Name: pod.Name}
	}
	return out
}

// Performance reports whether the pod namespace/name on the node is an
// active performance-sensitive pod; known is false when the pod is not in
// the node's list (not listed yet, or gone).
func (p *NodePods) Performance(namespace, name string) (perf, known bool) {
	o, ok, err := p.informer.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return false, false
	}
	pod, ok := o.(*corev1.Pod)
	return ok && isPerformance(pod), ok
}

// PerformancePods names ("namespace/name", sorted) the active
// performance-sensitive pods bound to the node, by pkg/workload's
// classification, the one the controller and the extender use; an error
// while the pods are not known.
func (p *NodePods) PerformancePods() ([]string, error) { return p.PerformancePodsOn(p.node) }

// PerformancePodsOn is PerformancePods for one node of a pool's.
func (p *NodePods) PerformancePodsOn(node string) ([]string, error) {
	if !p.informer.HasSynced() {
		if err := p.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("the pods of this node are not listed yet")
	}
	objs, err := p.informer.GetIndexer().ByIndex(byNode, node)
	if err != nil {
		return nil, fmt.Errorf("the pods of node %s: %w", node, err)
	}
	var out []string
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok && isPerformance(pod) {
			out = append(out, pod.Namespace+"/"+pod.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// BoundPods reads the pods bound to node from the API server itself, not
// from an informer: a list with no resourceVersion is a consistent read,
// which shows every write the API server acknowledged before it, so a
// binding made just before it is seen. It is
// the API side of the last check before a park powers the host off.
func BoundPods(ctx context.Context, client dynamic.Interface, node string) ([]*corev1.Pod, error) {
	list, err := client.Resource(Pods).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, fmt.Errorf("list the pods bound to node %s: %w", node, err)
	}
	out := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		o, err := slimPod(&list.Items[i])
		if err != nil {
			return nil, err
		}
		if p := o.(*corev1.Pod); p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, nil
}
