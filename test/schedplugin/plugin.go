// Package schedplugin is Joulie's filter and score as a kube-scheduler
// framework plugin, run in the scheduler's own process: a prototype that
// measures what the in-process path would cost against the HTTP extender
// (the plugin arm of BenchmarkSchedulerThroughput in test/integration).
//
// It is not shipped. SPEC.md makes the product's scheduling path the
// joulie-extender program and keeps k8s.io/kubernetes, which a plugin
// compiles against, in this test module; whether Joulie should ship a
// scheduler build with this plugin is the owner's decision, and this
// package gives it a measurement. Shipping it would take a module of its
// own outside test/, a kube-scheduler build and image with the plugin
// registered, the extender's settings as the plugin's arguments (it runs
// on the defaults here), the chart's profile for it, and the extender's
// metrics.
//
// The decisions are the extender's: scoring.FilterPod and scoring.Batch
// from pkg/scoring, with the extender's default parameters. What differs
// is where the inputs come from: the node's labels and its fill are the
// scheduler's own (its snapshot's Node and the requests of the pods it
// has placed, assumed ones included), and the twins and hardware come
// from the plugin's watches, as the extender's do. Where the extender
// narrows the nodes the scheduler found, PreFilter hands the scheduler
// the nodes Joulie admits before it looks at any.
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
	"k8s.io/apimachinery/pkg/util/sets"
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

// view is the twins and hardware by node name, published whole, and
// what Filter and Score read of each Node object, worked out once per
// object: looking a node up by its object's address spares the name's
// hashing and comparing and the label and resource maps that Filter and
// Score would otherwise read for every node of every cycle (in the
// throughput benchmark's profiles, most of the plugin's own CPU).
type view struct {
	list    []scoring.Node
	nodes   map[string]*scoring.Node // into list
	cluster scoring.ClusterMemo
	// objects is keyed by the Node objects of the scheduler's informer,
	// which its snapshot's NodeInfos point to. A Node updated since the
	// view was built is not in it (the scheduler holds the new object),
	// and entry works it out afresh: the view can be late, never wrong.
	objects map[*corev1.Node]nodeEntry
}

// nodeEntry is what Filter and Score read of a node apart from the pods
// on it.
type nodeEntry struct {
	node   *scoring.Node // twin and hardware; nil when Joulie has neither
	labels scoring.Labels
	// alloc is the node's fill with nothing requested: its allocatable
	// cores and GPUs, as the extender reads them (scoring.FillOf).
	alloc scoring.Fill
}

// entry is n's entry, from the view when it holds this very object.
func (v *view) entry(n *corev1.Node) nodeEntry {
	if e, ok := v.objects[n]; ok {
		return e
	}
	return v.entryOf(n)
}

func (v *view) entryOf(n *corev1.Node) nodeEntry {
	return nodeEntry{node: v.nodes[n.Name], labels: scoring.LabelsOf(n), alloc: scoring.FillOf(n, scoring.Requests{})}
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
	// The scheduler starts its informers after it has made its plugins:
	// the Nodes are not listed yet, and come as events that rebuild the
	// view.
	nodes := h.SharedInformerFactory().Core().V1().Nodes()
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(n any) { p.reserves.set(n); p.markDirty() },
		UpdateFunc: func(_, n any) { p.reserves.set(n); p.markDirty() },
		DeleteFunc: func(n any) { p.reserves.remove(n); p.markDirty() },
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
		ns, err3 := nodes.Lister().List(labels.Everything())
		if err1 == nil && err2 == nil && err3 == nil {
			p.view.Store(build(tw, hw, ns))
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

// build indexes the scoring view of the twins and hardware by name, and
// the Node objects' entries by object. The Nodes do not enter the list
// the cluster's aggregates are summed over: those are the twins'.
func build(twins []*joulie.NodeTwin, hardware []*joulie.NodeHardware, nodes []*corev1.Node) *view {
	v := &view{list: scoring.Nodes(twins, hardware, nil, nil)}
	v.nodes = make(map[string]*scoring.Node, len(v.list))
	for i := range v.list {
		v.nodes[v.list[i].Name] = &v.list[i]
	}
	v.objects = make(map[*corev1.Node]nodeEntry, len(nodes))
	for _, n := range nodes {
		v.objects[n] = v.entryOf(n)
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
// the warm reserve. For any other pod it returns the nodes the filter
// admits, worked out on the scheduler's own snapshot of them: the
// scheduler then examines only those, and takes its share of nodes to
// score out of them, instead of running every filter plugin on the eco
// and draining nodes only to have Joulie's Filter turn them away. The
// price is the message: a node left out this way is "didn't satisfy
// plugin(s) [JouliePower]" in the pod's condition, without the rule
// (kubectl joulie explain shows it).
func (p *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	c := &cycle{pod: scoring.PodOf(pod), view: p.view.Load()}
	state.Write(stateKey, c)
	if !c.pod.Performance && (c.pod.DaemonSet || p.reserves.count.Load() == 0) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	admitted := make(sets.Set[string], len(nodes))
	for _, ni := range nodes {
		if n := ni.Node(); n != nil && c.verdict(n) == scoring.Admit {
			admitted.Insert(n.Name)
		}
	}
	if len(admitted) == len(nodes) {
		return nil, nil
	}
	return &fwk.PreFilterResult{NodeNames: admitted}, nil
}

// verdict is the extender's filter rule for the cycle's pod on n.
func (c *cycle) verdict(n *corev1.Node) scoring.Verdict {
	e := c.view.entry(n)
	var twin *scoring.Twin
	if e.node != nil {
		twin = e.node.Twin
	}
	return scoring.FilterPod(c.pod, twin, e.labels)
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
	// Unresolvable, as the extender's FailedAndUnresolvableNodes: evicting
	// pods does not turn an eco node into a performance one.
	if v := c.verdict(nodeInfo.Node()); v != scoring.Admit {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, v.Reason())
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
	e := c.view.entry(nodeInfo.Node())
	n := e.node
	if n == nil {
		n = &scoring.Node{}
	}
	return scoring.ExtenderPriority(c.batch.Score(n.Twin, n.Hardware, e.fill(nodeInfo)), fwk.MaxNodeScore), nil
}

// ScoreExtensions: the scores are 0..100 already.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// fill is the node's fill as the scheduler counts it: the allocatable
// from the entry, what the pods placed on it request from the NodeInfo.
// The GPUs requested are read only on a node with GPUs: the score does
// not read them elsewhere (scoring.Batch), and most nodes have none.
func (e *nodeEntry) fill(n fwk.NodeInfo) scoring.Fill {
	req := n.GetRequested()
	f := e.alloc
	f.RequestedCPU = float64(req.GetMilliCPU()) / 1000
	if f.AllocatableGPUs > 0 {
		s := req.GetScalarResources()
		f.RequestedGPUs = float64(s[joulie.ResourceNVIDIAGPU] + s[joulie.ResourceAMDGPU])
	}
	return f
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
