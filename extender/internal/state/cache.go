package state

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
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

// Cache watches NodeTwins, NodeHardware, Nodes and the pods bound to
// them, and publishes a new Snapshot after they change.
type Cache struct {
	log      *slog.Logger
	coalesce time.Duration

	current atomic.Pointer[Snapshot]
	dirty   chan struct{}
	// structural is set when a twin, hardware or a Node changed: the next
	// snapshot is built from scratch. Changes of pods alone only update
	// the fills of the nodes they touched.
	structural atomic.Bool

	joulieInformers externalversions.SharedInformerFactory
	nodeInformers   informers.SharedInformerFactory
	twins           listers.NodeTwinLister
	hardware        listers.NodeHardwareLister
	nodes           corelisters.NodeLister
	pods            *podStore
	podReflector    *cache.Reflector
	synced          []cache.InformerSynced
}

// NewForConfig returns a cache reading the cluster through cfg. It needs
// list and watch on nodetwins and nodehardwares (joulie.io), and on nodes
// and pods.
func NewForConfig(cfg *rest.Config, log *slog.Logger) (*Cache, error) {
	jc, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("joulie.io client: %w", err)
	}
	// Nodes and Pods in protobuf: the watches decode every pod change in
	// the cluster, and protobuf decodes several times faster than JSON.
	// (The custom resources above have no protobuf form.)
	pb := rest.CopyConfig(cfg)
	pb.ContentType = runtime.ContentTypeProtobuf
	pb.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kc, err := kubernetes.NewForConfig(pb)
	if err != nil {
		return nil, fmt.Errorf("core client: %w", err)
	}
	return New(jc, kc, log), nil
}

// New returns a cache over the given clients; Run starts it.
func New(jc versioned.Interface, kc kubernetes.Interface, log *slog.Logger) *Cache {
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

	// Nodes are cached trimmed to the two labels the filter falls back on
	// and the allocatable the fill reads: a full Node is kilobytes of
	// status the extender never reads.
	c.nodeInformers = informers.NewSharedInformerFactoryWithOptions(kc, 0,
		informers.WithTransform(trimNode))
	nodes := c.nodeInformers.Core().V1().Nodes()
	c.nodes = nodes.Lister()

	// Pods only as sums by node (podStore), and only those bound and not
	// ended, which is all a node's fill counts.
	c.pods = newPodStore(c.markDirty)
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = boundPodSelector
			return kc.CoreV1().Pods("").List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = boundPodSelector
			return kc.CoreV1().Pods("").Watch(ctx, opts)
		},
	}, kc)
	c.podReflector = cache.NewReflectorWithOptions(lw, &corev1.Pod{}, c.pods, cache.ReflectorOptions{Name: "joulie-extender pods"})

	always := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.markStructural() },
		UpdateFunc: func(any, any) { c.markStructural() },
		DeleteFunc: func(any) { c.markStructural() },
	}
	for _, inf := range []cache.SharedIndexInformer{twins.Informer(), hardware.Informer()} {
		// The handlers cannot fail before the informers start.
		_, _ = inf.AddEventHandler(always)
		c.synced = append(c.synced, inf.HasSynced)
	}
	_, _ = nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.markStructural() },
		UpdateFunc: func(oldObj, newObj any) {
			if !sameNode(oldObj, newObj) {
				c.markStructural()
			}
		},
		DeleteFunc: func(any) { c.markStructural() },
	})
	c.synced = append(c.synced, nodes.Informer().HasSynced, c.pods.HasSynced)
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
	var reflecting sync.WaitGroup
	reflecting.Go(func() { c.podReflector.RunWithContext(ctx) })
	defer reflecting.Wait()

	start := time.Now()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	c.publish()
	snap := c.Snapshot()
	twins := 0
	for i := range snap.nodes {
		if snap.nodes[i].Twin != nil {
			twins++
		}
	}
	c.log.Info("cache synced", "nodes", len(snap.nodes), "twins", twins, "podNodes", len(c.pods.requests()), "took", time.Since(start).Round(time.Millisecond))

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

// markStructural asks for the next snapshot to be built from scratch.
func (c *Cache) markStructural() {
	c.structural.Store(true)
	c.markDirty()
}

// publish makes the cluster as the watches have it now the current
// snapshot. The flags are taken before the objects are read, so a change
// that lands while it reads is applied again by the next publish rather
// than lost.
func (c *Cache) publish() {
	prev := c.Snapshot()
	changed, relisted := c.pods.takeChanges()
	if structural := c.structural.Swap(false); !structural && !relisted && prev.Synced {
		c.current.Store(prev.withRequests(changed))
		return
	}
	next, err := c.build()
	if err != nil {
		c.log.Error("build a snapshot", "err", err)
		c.structural.Store(true) // the next change tries again
		return
	}
	c.current.Store(next)
}

// build assembles a snapshot from scratch from the watches' caches.
func (c *Cache) build() (*Snapshot, error) {
	twins, err := c.twins.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list cached NodeTwins: %w", err)
	}
	hardware, err := c.hardware.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list cached NodeHardware: %w", err)
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list cached Nodes: %w", err)
	}
	return Build(twins, hardware, nodes, c.pods.requests(), true), nil
}

// dropManagedFields keeps the server-side apply bookkeeping out of the
// cache: the extender never reads it.
func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// trimNode reduces a Node to its identity, Joulie's labels and the
// allocatable the fill reads.
func trimNode(obj any) (any, error) {
	m, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	fillResources := [...]corev1.ResourceName{corev1.ResourceCPU, joulie.ResourceNVIDIAGPU, joulie.ResourceAMDGPU}
	out := &corev1.Node{
		TypeMeta:   m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion},
	}
	for _, key := range []string{joulie.LabelPowerProfile, joulie.LabelDraining, joulie.LabelWarmReserve} {
		if v, ok := m.Labels[key]; ok {
			if out.Labels == nil {
				out.Labels = make(map[string]string, 3)
			}
			out.Labels[key] = v
		}
	}
	for _, r := range fillResources {
		if q, ok := m.Status.Allocatable[r]; ok {
			if out.Status.Allocatable == nil {
				out.Status.Allocatable = make(corev1.ResourceList, len(fillResources))
			}
			out.Status.Allocatable[r] = q
		}
	}
	return out, nil
}

// sameNode reports whether a Node update left Joulie's labels and the
// allocatable alone, so that kubelet's status updates do not trigger
// rebuilds.
func sameNode(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*corev1.Node)
	n, ok2 := newObj.(*corev1.Node)
	if !ok1 || !ok2 {
		return false
	}
	if o.Labels[joulie.LabelPowerProfile] != n.Labels[joulie.LabelPowerProfile] ||
		o.Labels[joulie.LabelDraining] != n.Labels[joulie.LabelDraining] ||
		o.Labels[joulie.LabelWarmReserve] != n.Labels[joulie.LabelWarmReserve] ||
		len(o.Labels) != len(n.Labels) || len(o.Status.Allocatable) != len(n.Status.Allocatable) {
		return false
	}
	for r, q := range o.Status.Allocatable {
		if nq, ok := n.Status.Allocatable[r]; !ok || !q.Equal(nq) {
			return false
		}
	}
	return true
}
