package state

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/pkg/generated/informers/externalversions"
	listers "joulie.io/joulie/pkg/generated/listers/joulie/v1alpha1"
)

// DefaultCoalesce is how long the cache gathers changes before it builds
// the next snapshot. Twins of a large cluster land a few at a time
// through a controller tick; rebuilding once per burst instead of once
// per object keeps the cost independent of the update rate, and a
// fraction of a second is nothing next to the twins' one-minute cadence.
const DefaultCoalesce = 250 * time.Millisecond

// Cache watches NodeTwins, NodeHardware and the metadata of Nodes, and
// publishes a new Snapshot after they change.
type Cache struct {
	log      *slog.Logger
	coalesce time.Duration

	current atomic.Pointer[Snapshot]
	dirty   chan struct{}

	joulieInformers externalversions.SharedInformerFactory
	nodeInformers   metadatainformer.SharedInformerFactory
	twins           listers.NodeTwinLister
	hardware        listers.NodeHardwareLister
	nodes           cache.GenericLister
	synced          []cache.InformerSynced
}

// NewForConfig returns a cache reading the cluster through cfg. It needs
// list and watch on nodetwins and nodehardwares (joulie.io) and on nodes.
func NewForConfig(cfg *rest.Config, log *slog.Logger) (*Cache, error) {
	jc, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("joulie.io client: %w", err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	return New(jc, mc, log), nil
}

// New returns a cache over the given clients; Run starts it.
func New(jc versioned.Interface, mc metadata.Interface, log *slog.Logger) *Cache {
	c := &Cache{
		log:      log,
		coalesce: DefaultCoalesce,
		dirty:    make(chan struct{}, 1),
	}
	c.current.Store(emptySnapshot)

	// No resync: the watch delivers every change, and a resync would only
	// trigger rebuilds of an unchanged cluster.
	c.joulieInformers = externalversions.NewSharedInformerFactoryWithOptions(jc, 0,
		externalversions.WithTransform(dropManagedFields))
	twins := c.joulieInformers.Joulie().V1alpha1().NodeTwins()
	hardware := c.joulieInformers.Joulie().V1alpha1().NodeHardwares()
	c.twins, c.hardware = twins.Lister(), hardware.Lister()

	// Nodes are watched as metadata only, trimmed to the two labels the
	// filter falls back on: a full Node is kilobytes of status the
	// extender never reads, and it changes with every heartbeat.
	c.nodeInformers = metadatainformer.NewSharedInformerFactoryWithOptions(mc, 0,
		metadatainformer.WithTransform(trimNode))
	nodes := c.nodeInformers.ForResource(corev1.SchemeGroupVersion.WithResource("nodes"))
	c.nodes = nodes.Lister()

	always := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.markDirty() },
		UpdateFunc: func(any, any) { c.markDirty() },
		DeleteFunc: func(any) { c.markDirty() },
	}
	for _, inf := range []cache.SharedIndexInformer{twins.Informer(), hardware.Informer()} {
		// The handlers cannot fail before the informers start.
		_, _ = inf.AddEventHandler(always)
		c.synced = append(c.synced, inf.HasSynced)
	}
	_, _ = nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.markDirty() },
		UpdateFunc: func(oldObj, newObj any) {
			if !sameLabels(oldObj, newObj) {
				c.markDirty()
			}
		},
		DeleteFunc: func(any) { c.markDirty() },
	})
	c.synced = append(c.synced, nodes.Informer().HasSynced)
	return c
}

// Snapshot returns the latest snapshot; never nil, and empty with Synced
// false before the first sync.
func (c *Cache) Snapshot() *Snapshot { return c.current.Load() }

// Run starts the informers, publishes a first snapshot once they have
// listed the cluster, then a new one after each burst of changes, until
// ctx ends.
func (c *Cache) Run(ctx context.Context) {
	c.joulieInformers.Start(ctx.Done())
	c.nodeInformers.Start(ctx.Done())
	defer c.joulieInformers.Shutdown()
	defer c.nodeInformers.Shutdown()

	start := time.Now()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	c.publish()
	snap := c.Snapshot()
	c.log.Info("cache synced", "nodes", len(snap.nodes), "twins", len(snap.twins), "took", time.Since(start).Round(time.Millisecond))

	for {
		select {
		case <-ctx.Done():
			return
		case <-c.dirty:
		}
		c.publish()
		t := time.NewTimer(c.coalesce)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (c *Cache) markDirty() {
	select {
	case c.dirty <- struct{}{}:
	default: // a rebuild is already due
	}
}

func (c *Cache) publish() {
	twins, err := c.twins.List(labels.Everything())
	if err != nil {
		c.log.Error("list cached NodeTwins", "err", err)
		return
	}
	hardware, err := c.hardware.List(labels.Everything())
	if err != nil {
		c.log.Error("list cached NodeHardware", "err", err)
		return
	}
	objs, err := c.nodes.List(labels.Everything())
	if err != nil {
		c.log.Error("list cached Nodes", "err", err)
		return
	}
	nodes := make([]*metav1.PartialObjectMetadata, 0, len(objs))
	for _, o := range objs {
		if m, ok := o.(*metav1.PartialObjectMetadata); ok {
			nodes = append(nodes, m)
		}
	}
	c.current.Store(Build(twins, hardware, nodes, true, time.Now()))
}

// dropManagedFields keeps the server-side apply bookkeeping out of the
// cache: the extender never reads it.
func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// trimNode reduces a Node's metadata to its identity and Joulie's labels.
func trimNode(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	out := &metav1.PartialObjectMetadata{
		TypeMeta:   m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion},
	}
	for _, key := range []string{joulie.LabelPowerProfile, joulie.LabelDraining} {
		if v, ok := m.Labels[key]; ok {
			if out.Labels == nil {
				out.Labels = make(map[string]string, 2)
			}
			out.Labels[key] = v
		}
	}
	return out, nil
}

// sameLabels reports whether a Node update left Joulie's labels alone, so
// that kubelet heartbeats do not trigger rebuilds.
func sameLabels(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*metav1.PartialObjectMetadata)
	n, ok2 := newObj.(*metav1.PartialObjectMetadata)
	if !ok1 || !ok2 {
		return false
	}
	return o.Labels[joulie.LabelPowerProfile] == n.Labels[joulie.LabelPowerProfile] &&
		o.Labels[joulie.LabelDraining] == n.Labels[joulie.LabelDraining] &&
		len(o.Labels) == len(n.Labels)
}
