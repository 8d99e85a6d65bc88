package kubesync

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
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
}

// NewNodePods builds the informer of node's pods over client.
func NewNodePods(client metadata.Interface, node string) *NodePods {
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	inf := metadatainformer.NewFilteredMetadataInformer(client, Pods, metav1.NamespaceAll, 10*time.Minute, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = sel })
	return &NodePods{informer: inf.Informer()}
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
