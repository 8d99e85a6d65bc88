package kubesync

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"joulie.io/joulie/agentd/internal/podenergy"
)

// Pods is the resource of the pods bound to the node.
var Pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// NodePods follows the pods bound to one node, metadata only: the per-pod
// energy meter needs their names and UIDs (the kubelet names pod cgroups by
// UID), nothing of their specs. The field selector asks the API server
// for this node's pods alone; RBAC cannot narrow the agent's list to them,
// so the agent's role grants list and watch of pods, and the metadata
// client keeps specs (and whatever their environments hold) off the wire.
type NodePods struct {
	informer cache.SharedIndexInformer

	mu  sync.Mutex
	err error // the last list or watch failure, nil once one succeeded
}

// NewNodePods builds the informer of node's pods over client. It is built
// by hand, like the profile's, rather than from client-go's
// metadatainformer, which links every built-in API group into the daemon
// (18 MB of binary).
func NewNodePods(client metadata.Interface, node string) *NodePods {
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
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
	p := &NodePods{informer: cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client),
		&metav1.PartialObjectMetadata{}, 10*time.Minute, cache.Indexers{})}
	_ = p.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		p.mu.Lock()
		p.err = fmt.Errorf("list the pods of node %s: %w", node, err)
		p.mu.Unlock()
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	return p
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

// UIDs names the node's pods by UID; nil until the first list arrived,
// so a meter does not take "no pods yet" for "every pod ended".
func (p *NodePods) UIDs() map[string]podenergy.Key {
	if !p.informer.HasSynced() {
		return nil
	}
	out := map[string]podenergy.Key{}
	for _, o := range p.informer.GetStore().List() {
		m, ok := o.(*metav1.PartialObjectMetadata)
		if !ok {
			continue
		}
		out[string(m.UID)] = podenergy.Key{Namespace: m.Namespace, Name: m.Name}
	}
	return out
}
