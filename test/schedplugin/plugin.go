// Package schedplugin is Joulie's filter and score as a kube-scheduler
// framework plugin, run in the scheduler's own process: a prototype that
// measures what the in-process path would cost against the HTTP extender
// (the plugin arm of BenchmarkSchedulerThroughput in test/integration).
//
// It is not shipped. SPEC.md makes the product's scheduling path the
// joulie-extender program and keeps k8s.io/kubernetes, which a plugin
// compiles against, in this test module; whether Joulie should ship a
// scheduler build with this plugin is the owner's decision, and this
// package gives it a measurement.
//
// The decisions are the extender's: scoring.FilterPod and scoring.Batch
// from pkg/scoring, with the extender's default parameters. What differs
// is where the inputs come from: the node's labels and its fill are the
// scheduler's own (its snapshot's Node and the requests of the pods it
// has placed, assumed ones included), and the twins and hardware come
// from the plugin's watches, as the extender's do.
package schedplugin

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/pkg/generated/informers/externalversions"
	"joulie.io/joulie/pkg/scoring"
)

// Name is the plugin's name in a KubeSchedulerConfiguration profile.
const Name = "JouliePower"

// coalesce is how long the plugin gathers twin and hardware changes
// before it rebuilds its view, as the extender's cache does.
const coalesce = 250 * time.Millisecond

// Plugin filters and scores nodes as joulie-extender does.
type Plugin struct {
	params scoring.Params
	view   atomic.Pointer[view]
	dirty  chan struct{}
	// reserves are the nodes that carry joulie.io/warm-reserve=true in
	// the scheduler's own node cache: with none, a standard pod's filter
	// has nothing to turn it away from, and is skipped, as the extender
	// skips it.
	reserves warmReserves
}

// warmReserves tracks the nodes labelled as the warm reserve.
type warmReserves struct {
	mu    sync.Mutex
	names map[string]bool
	count atomic.Int64
}

// set records whether an added or updated Node is a warm reserve.
func (w *warmReserves) set(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if n.DeletionTimestamp == nil && n.Labels[joulie.LabelWarmReserve] == "true" {
		w.names[n.Name] = true
	} else {
		delete(w.names, n.Name)
	}
	w.count.Store(int64(len(w.names)))
}

// remove forgets a deleted Node.
func (w *warmReserves) remove(obj any) {
	name := ""
	switch n := obj.(type) {
	case *corev1.Node:
		name = n.Name
	case cache.DeletedFinalStateUnknown:
		name = n.Key
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.names, name)
	w.count.Store(int64(len(w.names)))
}

var (
	_ fwk.PreFilterPlugin = (*Plugin)(nil)
	_ fwk.FilterPlugin    = (*Plugin)(nil)
	_ fwk.PreScorePlugin  = (*Plugin)(nil)
	_ fwk.ScorePlugin     = (*Plugin)(nil)
)

// view is the twins and hardware by node name, published whole.
type view struct {
	list    []scoring.Node
	nodes   map[string]*scoring.Node // into list
	cluster scoring.ClusterMemo
}

// New is the plugin's factory, for app.WithPlugin. It watches NodeTwins
// and NodeHardware with the scheduler's credentials, which need list and
// watch on both (the benchmark grants them), and returns once it has
// listed them, so that no pod is scored on an empty view; the plugin has
// no arguments.
func New(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	jc, err := versioned.NewForConfig(h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: joulie.io client: %w", Name, err)
	}
	p := &Plugin{params: scoring.DefaultParams(), dirty: make(chan struct{}, 1)}
	p.view.Store(&view{nodes: map[string]*scoring.Node{}})
	p.reserves.names = map[string]bool{}
	if _, err := h.SharedInformerFactory().Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.reserves.set,
		UpdateFunc: func(_, n any) { p.reserves.set(n) },
		DeleteFunc: p.reserves.remove,
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	factory := externalversions.NewSharedInformerFactory(jc, 0)
	twins := factory.Joulie().V1alpha1().NodeTwins()
	hardware := factory.Joulie().V1alpha1().NodeHardwares()
	mark := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.markDirty() },
		UpdateFunc: func(any, any) { p.markDirty() },
		DeleteFunc: func(any) { p.markDirty() },
	}
	for _, inf := range []cache.SharedIndexInformer{twins.Informer(), hardware.Informer()} {
		if _, err := inf.AddEventHandler(mark); err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), twins.Informer().HasSynced, hardware.Informer().HasSynced) {
		factory.Shutdown()
		return nil, fmt.Errorf("%s: stopped before the NodeTwins and NodeHardware were listed", Name)
	}
	publish := func() {
		tw, err1 := twins.Lister().List(labels.Everything())
		hw, err2 := hardware.Lister().List(labels.Everything())
		if err1 == nil && err2 == nil {
			p.view.Store(build(tw, hw))
		}
	}
	publish()
	go func() {
		defer factory.Shutdown()
		for {
			select {
			case <-ctx.Done():
				return
			case <-p.dirty:
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(coalesce):
			}
			publish()
		}
	}()
	return p, nil
}

func (p *Plugin) markDirty() {
	select {
	case p.dirty <- struct{}{}:
	default:
	}
}

// build indexes the scoring view of the twins and hardware by name.
func build(twins []*joulie.NodeTwin, hardware []*joulie.NodeHardware) *view {
	v := &view{list: scoring.Nodes(twins, hardware, nil, nil)}
	v.nodes = make(map[string]*scoring.Node, len(v.list))
	for i := range v.list {
		v.nodes[v.list[i].Name] = &v.list[i]
	}
	return v
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// cycle is what the plugin reads of the pod once per scheduling cycle.
type cycle struct {
	pod   scoring.Pod
	view  *view
	batch scoring.Batch
}

// Clone copies the cycle (its view and batch are shared: neither is
// modified once made).
func (c *cycle) Clone() fwk.StateData {
	cp := *c
	return &cp
}

const stateKey fwk.StateKey = Name

// PreFilter classifies the pod once for every node's Filter, and skips
// the filter for a pod that no node can turn away: a DaemonSet's pod
// that is not performance-sensitive, or a standard pod while no node is
// the warm reserve.
func (p *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	c := &cycle{pod: scoring.PodOf(pod), view: p.view.Load()}
	state.Write(stateKey, c)
	if !c.pod.Performance && (c.pod.DaemonSet || p.reserves.count.Load() == 0) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// PreFilterExtensions: the plugin's state does not depend on other pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter turns performance pods away from eco and draining nodes and
// other pods from the warm reserve, as the extender's filter does; the
// labels are the scheduler's own copy of the node.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	c, err := read(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	node := nodeInfo.Node()
	var twin *scoring.Twin
	if n := c.view.nodes[node.Name]; n != nil {
		twin = n.Twin
	}
	if v := scoring.FilterPod(c.pod, twin, scoring.LabelsOf(node)); v != scoring.Admit {
		return fwk.NewStatus(fwk.Unschedulable, v.Reason())
	}
	return nil
}

// PreScore prepares the score of the pod for every node's Score, on the
// cluster's aggregates, which the view memoizes as the extender's
// snapshot does.
func (p *Plugin) PreScore(_ context.Context, state fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	c, err := read(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	now := time.Now()
	c.batch = p.params.Batch(c.pod, c.view.cluster.Of(c.view.list, now, p.params.StalenessThreshold), now)
	return nil
}

// Score is the extender's score, 0..100, on the scheduler's own fill.
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	c, err := read(state)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	n := c.view.nodes[nodeInfo.Node().Name]
	if n == nil {
		n = &scoring.Node{}
	}
	return scoring.ExtenderPriority(c.batch.Score(n.Twin, n.Hardware, fillOf(nodeInfo)), fwk.MaxNodeScore), nil
}

// ScoreExtensions: the scores are 0..100 already.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// fillOf is the node's fill as the scheduler counts it.
func fillOf(n fwk.NodeInfo) scoring.Fill {
	alloc, req := n.GetAllocatable(), n.GetRequested()
	gpus := func(r fwk.Resource) int64 {
		s := r.GetScalarResources()
		return s[joulie.ResourceNVIDIAGPU] + s[joulie.ResourceAMDGPU]
	}
	return scoring.Fill{
		AllocatableCPU:  float64(alloc.GetMilliCPU()) / 1000,
		RequestedCPU:    float64(req.GetMilliCPU()) / 1000,
		AllocatableGPUs: float64(gpus(alloc)),
		RequestedGPUs:   float64(gpus(req)),
	}
}

func read(state fwk.CycleState) (*cycle, error) {
	d, err := state.Read(stateKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c, ok := d.(*cycle)
	if !ok {
		return nil, fmt.Errorf("%s: cycle state of type %T", Name, d)
	}
	return c, nil
}
