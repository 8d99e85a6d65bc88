// Package parking is joulie-controller's shell around pkg/park: it feeds
// the pure decision core one snapshot of the cluster from the informer
// caches, and carries out the transitions it returns through the API
// server, where the whole state of a park or a wake lives: the node's
// NodePowerProfile spec (powerState, powerStateSince, wakeAttempts) and
// the node taint joulie.io/parked:NoSchedule. A restart or a new leader
// therefore resumes a park or a wake from the objects.
//
// With parking.reserveFor: performance, every pass also labels the nodes
// Decide holds as the warm reserve joulie.io/warm-reserve=true, and takes
// the label off the others; the extender keeps pods other than
// performance ones off labelled nodes.
//
// A park taints the node first, then records parking; after the grace it
// cordons the node (marked joulie.io/cordoned-for-park), reads the node's
// pods from the API server itself (not the cache) and records parked only
// if none landed, which the node's agent acts on by restoring its caps and
// switching the host off. A wake records waking, then asks a Waker (the
// node's BMC, or an awake neighbour's agent by Wake-on-LAN) to start the
// host; once the node is Ready with a heartbeat and node Lease renewed
// since, and its agent up, the state is awake and the taint and Joulie's
// cordon go. A parked node whose agent answered the park awake (its host
// stayed on) is recorded awake the same way, without a wake.
package parking

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/catalog"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/pkg/generated/informers/externalversions"
	listers "joulie.io/joulie/pkg/generated/listers/joulie/v1alpha1"
	"joulie.io/joulie/pkg/hwview"
	"joulie.io/joulie/pkg/park"
	"joulie.io/joulie/pkg/workload"
)

// Field managers of parking's writes to NodePowerProfile spec, apart from
// the planner's (reconcile.FieldManager), so that neither removes what
// the other owns when it applies its own fields.
const (
	StateFieldManager = "joulie-controller-parking"
	WOLFieldManager   = "joulie-controller-wol"
)

// DefaultSyncInterval is how often parking runs without a change: a park's
// grace and a wake's timeout are counted in seconds to minutes.
const DefaultSyncInterval = 5 * time.Second

// Waker starts a parked host. Wake must be safe to call again for a node
// it already started (a retry, or a restart in the middle of a wake).
// Calls run off the pass, several at a time (wakes.go).
type Waker interface {
	Wake(ctx context.Context, node *corev1.Node, req WakeRequest) error
}

// Options configure a Controller.
type Options struct {
	Params  park.Params
	Catalog *catalog.Catalog
	Waker   Waker
	// SyncInterval is the longest time between two passes
	// (DefaultSyncInterval when 0); Debounce delays a pass after a change.
	SyncInterval time.Duration
	Debounce     time.Duration
	Recorder     record.EventRecorder
	Metrics      *Metrics
	Logger       *slog.Logger
	Now          func() time.Time
	// OnSync, when set, is told the outcome of every pass.
	OnSync func(error)
	// MaxConcurrentWakes bounds the Waker calls in flight
	// (DefaultMaxConcurrentWakes when 0).
	MaxConcurrentWakes int
}

// Controller parks and wakes nodes.
type Controller struct {
	kube   kubernetes.Interface
	joulie versioned.Interface
	opts   Options
	log    *slog.Logger

	nodes    corelisters.NodeLister
	pods     cache.Indexer
	podsOK   cache.InformerSynced
	hardware listers.NodeHardwareLister
	profiles listers.NodePowerProfileLister
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	leases   coordinationlisters.LeaseNamespaceLister
	synced   []cache.InformerSynced
	// leaseFactory watches kube-node-lease only: the node Leases are the
	// one thing parking reads there, and the controller may read no
	// other namespace's Leases.
	leaseFactory informers.SharedInformerFactory

	// warned is, per pod bound to a node that stays off, the node and
	// state its Warning Event named, so that it is told once per node
	// state and not on every pass.
	warned map[string]string

	// emptySince is when each node was first seen empty of non-DaemonSet
	// pods. It is an observation, not parking state: after a restart the
	// settle time starts again, which only delays a park.
	emptySince map[string]time.Time

	queue workqueue.TypedRateLimitingInterface[string]
	wakes *wakes
}

const (
	queueKey  = "parking"
	nodeIndex = "joulie.io/park-node"
)

// New wires parking to the shared informer factories the planner uses;
// start the factories after New. The pod informer must carry the fields
// parking reads (reconcile's slim pods keep them).
func New(kube kubernetes.Interface, jc versioned.Interface, kf informers.SharedInformerFactory, jf externalversions.SharedInformerFactory, o Options) (*Controller, error) {
	if o.Waker == nil {
		return nil, fmt.Errorf("parking needs a waker (BMC or Wake-on-LAN)")
	}
	if err := o.Params.Validate(); err != nil {
		return nil, err
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.Catalog == nil {
		o.Catalog = catalog.Default()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	if o.MaxConcurrentWakes <= 0 {
		o.MaxConcurrentWakes = DefaultMaxConcurrentWakes
	}
	c := &Controller{kube: kube, joulie: jc, opts: o, log: o.Logger.With("loop", "parking"), emptySince: map[string]time.Time{}, warned: map[string]string{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "joulie-parking"}),
	}
	c.wakes = newWakes(c)
	nodeInf := kf.Core().V1().Nodes()
	podInf := kf.Core().V1().Pods()
	hwInf := jf.Joulie().V1alpha1().NodeHardwares()
	nppInf := jf.Joulie().V1alpha1().NodePowerProfiles()
	c.nodes, c.hardware, c.profiles = nodeInf.Lister(), hwInf.Lister(), nppInf.Lister()
	if err := podInf.Informer().AddIndexers(cache.Indexers{nodeIndex: nodeIndexFunc}); err != nil {
		return nil, fmt.Errorf("index the pod cache by node for parking: %w", err)
	}
	c.pods, c.podsOK = podInf.Informer().GetIndexer(), podInf.Informer().HasSynced
	pvcInf := kf.Core().V1().PersistentVolumeClaims()
	pvInf := kf.Core().V1().PersistentVolumes()
	scInf := kf.Storage().V1().StorageClasses()
	c.claims, c.volumes, c.classes = pvcInf.Lister(), pvInf.Lister(), scInf.Lister()
	c.leaseFactory = informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(corev1.NamespaceNodeLease))
	leaseInf := c.leaseFactory.Coordination().V1().Leases()
	c.leases = leaseInf.Lister().Leases(corev1.NamespaceNodeLease)
	enqueue := func() { c.queue.AddAfter(queueKey, o.Debounce) }
	// Every kubelet renews its Lease every few seconds: only the renewals
	// of nodes that are not awake can change a decision.
	if _, err := leaseInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueIfNotAwake(obj, enqueue) },
		UpdateFunc: func(_, cur any) { c.enqueueIfNotAwake(cur, enqueue) },
	}); err != nil {
		return nil, err
	}
	for _, inf := range []cache.SharedIndexInformer{pvcInf.Informer(), pvInf.Informer(), scInf.Informer(), leaseInf.Informer()} {
		c.synced = append(c.synced, inf.HasSynced)
	}
	for _, inf := range []cache.SharedIndexInformer{nodeInf.Informer(), podInf.Informer(), hwInf.Informer(), nppInf.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { enqueue() },
			UpdateFunc: func(old, cur any) { enqueueIfChanged(old, cur, enqueue) },
			DeleteFunc: func(any) { enqueue() },
		}); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return c, nil
}

// enqueueIfNotAwake enqueues a pass for a node Lease renewal when its
// node is not recorded awake.
func (c *Controller) enqueueIfNotAwake(obj any, enqueue func()) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	if p, err := c.profiles.Get(m.GetName()); err == nil && !p.Spec.PowerState.Awake() {
		enqueue()
	}
}

// enqueueIfChanged ignores the updates parking does not read: node
// heartbeats and the agents' power readings.
func enqueueIfChanged(old, cur any, enqueue func()) {
	switch o := old.(type) {
	case *corev1.Node:
		n, ok := cur.(*corev1.Node)
		if ok && labels.Equals(o.Labels, n.Labels) && equality.Semantic.DeepEqual(o.Spec, n.Spec) &&
			park.NodeReady(o) == park.NodeReady(n) && equality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable) {
			return
		}
	case *joulie.NodePowerProfile:
		n, ok := cur.(*joulie.NodePowerProfile)
		if ok && o.Generation == n.Generation && o.Status.PowerState == n.Status.PowerState && o.Status.ObservedGeneration == n.Status.ObservedGeneration {
			return
		}
	}
	enqueue()
}

// nodeIndexFunc files every active pod under "node/" + its node ("node/"
// while unscheduled: index values must not be empty).
func nodeIndexFunc(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok || !workload.IsActive(p) {
		return nil, nil
	}
	return []string{"node/" + p.Spec.NodeName}, nil
}

// Run parks and wakes until ctx ends: on changes, and at least every
// SyncInterval.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	c.leaseFactory.Start(ctx.Done())
	defer c.leaseFactory.Shutdown()
	// The wakes in flight end with ctx (each BMC call within its limit).
	defer c.wakes.wait()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("parking: informer caches did not sync: %w", ctx.Err())
	}
	c.log.Info("parking and waking idle nodes", "settleTime", c.opts.Params.SettleTime, "grace", c.opts.Params.ParkGrace,
		"resumeTimeout", c.opts.Params.ResumeTimeout, "interval", c.opts.SyncInterval)
	go func() {
		t := time.NewTicker(c.opts.SyncInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				c.queue.ShutDown()
				return
			case <-t.C:
				c.queue.Add(queueKey)
			}
		}
	}()
	c.queue.Add(queueKey)
	for {
		key, quit := c.queue.Get()
		if quit {
			return nil
		}
		err := c.Sync(ctx)
		if c.opts.OnSync != nil {
			c.opts.OnSync(err)
		}
		if err != nil && ctx.Err() == nil {
			c.opts.Metrics.SyncErrors.Inc()
			c.log.Warn("parking pass failed; retrying with backoff", "err", err)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// view is what a pass knows about the cluster beside park's input.
type view struct {
	in       park.Input
	nodes    map[string]*corev1.Node
	profiles map[string]*joulie.NodePowerProfile
	hardware map[string]*joulie.NodeHardware
}

// Snapshot reads one pass's input from the caches.
func (c *Controller) Snapshot() (*view, error) {
	now := c.opts.Now()
	v := &view{in: park.Input{Now: now, PodsKnown: c.podsOK()}, nodes: map[string]*corev1.Node{},
		profiles: map[string]*joulie.NodePowerProfile{}, hardware: map[string]*joulie.NodeHardware{}}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list Nodes from the cache: %w", err)
	}
	npps, err := c.profiles.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list NodePowerProfiles from the cache: %w", err)
	}
	for _, p := range npps {
		v.profiles[p.Name] = p
	}
	hws, err := c.hardware.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list NodeHardware from the cache: %w", err)
	}
	for _, h := range hws {
		v.hardware[h.Name] = h
	}
	lookback := now.Add(-c.opts.Params.Lookback)
	v.in.Arrivals = map[string][]park.Arrival{}
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		v.nodes[n.Name] = n
		seen[n.Name] = true
		pn := park.Node{Node: n, Family: hwview.Build(n, v.hardware[n.Name], c.opts.Catalog).Family, Ready: park.NodeReady(n),
			Heartbeat: readyHeartbeat(n)}
		if l, err := c.leases.Get(n.Name); err == nil && l.Spec.RenewTime != nil {
			pn.Renewed = l.Spec.RenewTime.Time
		}
		if p := v.profiles[n.Name]; p != nil {
			pn.State, pn.WakeAttempts, pn.AgentState = p.Spec.PowerState, int(p.Spec.WakeAttempts), p.Status.PowerState
			pn.AgentAnswered = p.Status.ObservedGeneration >= p.Generation
			if cond := meta.FindStatusCondition(p.Status.Conditions, agentParkedCondition); cond != nil {
				pn.AgentReason, pn.AgentMessage = cond.Reason, cond.Message
			}
			if p.Spec.PowerStateSince != nil {
				pn.Since = p.Spec.PowerStateSince.Time
			}
		}
		pods, err := c.pods.ByIndex(nodeIndex, "node/"+n.Name)
		if err != nil {
			// Without its pods a node could look empty: park nothing.
			v.in.PodsKnown = false
			c.log.Warn("cannot read the pods of a node from the cache; parking nothing this pass", "node", n.Name, "err", err)
		}
		requested := corev1.ResourceList{}
		for _, o := range pods {
			p := o.(*corev1.Pod)
			pn.Pods++
			if !workload.IsDaemonSet(p) {
				pn.Workloads++
				if !pn.State.Awake() {
					pn.Bound = append(pn.Bound, p.Namespace+"/"+p.Name)
				}
			}
			for name, q := range park.PodRequests(p) {
				sum := requested[name]
				sum.Add(q)
				requested[name] = sum
			}
			if !p.CreationTimestamp.Time.Before(lookback) && workload.Classify(p) == workload.Performance {
				v.in.Arrivals[pn.Family] = append(v.in.Arrivals[pn.Family], park.Arrival{Time: p.CreationTimestamp.Time, Requests: park.PodRequests(p)})
			}
		}
		pn.Requested = requested
		slices.Sort(pn.Bound)
		if pn.Workloads == 0 {
			if _, ok := c.emptySince[n.Name]; !ok {
				c.emptySince[n.Name] = now
			}
			pn.EmptySince = c.emptySince[n.Name]
		} else {
			delete(c.emptySince, n.Name)
		}
		v.in.Nodes = append(v.in.Nodes, pn)
	}
	for name := range c.emptySince {
		if !seen[name] {
			delete(c.emptySince, name)
		}
	}
	pending, err := c.pods.ByIndex(nodeIndex, "node/")
	if err != nil {
		return nil, fmt.Errorf("read the unscheduled pods from the cache: %w", err)
	}
	for _, o := range pending {
		if p := o.(*corev1.Pod); unschedulable(p) {
			v.in.Pending = append(v.in.Pending, p)
			if vols := c.volumeNodes(p); len(vols) > 0 {
				if v.in.Volumes == nil {
					v.in.Volumes = map[string][]corev1.NodeSelector{}
				}
				v.in.Volumes[p.Namespace+"/"+p.Name] = vols
			}
		}
	}
	return v, nil
}

// agentParkedCondition is the type of the NodePowerProfile status
// condition the agent reports a park on (agentd's ConditionParked).
const agentParkedCondition = "Parked"

// readyHeartbeat is the last heartbeat of n's Ready condition while it is
// True; zero otherwise.
func readyHeartbeat(n *corev1.Node) time.Time {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return c.LastHeartbeatTime.Time
		}
	}
	return time.Time{}
}

// unschedulable reports whether the scheduler tried the pod and found no
// node for it.
func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// Sync runs one pass: repair what a crash may have left half done, decide,
// and carry the transitions out.
func (c *Controller) Sync(ctx context.Context) error {
	v, err := c.Snapshot()
	if err != nil {
		return err
	}
	var errs []error
	errs = append(errs, c.repairTaints(ctx, v)...)
	res := park.Decide(v.in, c.opts.Params)
	// The warm reserve's labels before the transitions: a node this pass
	// finds back from a wake and holds as the reserve is labelled before
	// its taint goes, so the scheduler never sees it free of both.
	// While the pods are unknown Decide holds nothing, and the labels stay
	// as they are rather than all come off.
	if v.in.PodsKnown {
		errs = append(errs, c.labelWarmReserve(ctx, v, res)...)
	}
	states := map[string]joulie.PowerState{}
	for _, n := range v.in.Nodes {
		if p := v.profiles[n.Node.Name]; p != nil || n.State != "" {
			states[n.Node.Name] = awakeIfEmpty(n.State)
		}
	}
	for _, t := range res.Transitions {
		to, err := c.apply(ctx, v, t)
		if err != nil {
			errs = append(errs, err)
		}
		states[t.Node] = to
		if to.Awake() && !t.From.Awake() && t.From != joulie.PowerParking {
			// The host has just come (back) on: its settle time counts
			// from now, not from before it was parked.
			c.emptySince[t.Node] = v.in.Now
		}
	}
	c.warnStranded(res.Stranded)
	c.wakes.ensure(ctx, v, res.Transitions, states)
	if err := c.pruneWakeOnLAN(ctx, v, states); err != nil {
		errs = append(errs, err)
	}
	counts := map[joulie.PowerState]int{}
	for _, s := range states {
		counts[s]++
	}
	for _, s := range States {
		c.opts.Metrics.Nodes.WithLabelValues(string(s)).Set(float64(counts[s]))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d parking writes failed, first: %w", len(errs), errs[0])
	}
	return nil
}

func awakeIfEmpty(s joulie.PowerState) joulie.PowerState {
	if s.Awake() {
		return joulie.PowerAwake
	}
	return s
}

// warnStranded puts a Warning Event on each pod bound to a node that
// stays off, once per node and state: the pod cannot run until the node
// is on, and its owner should hear why from the pod.
func (c *Controller) warnStranded(stranded []park.Stranded) {
	seen := make(map[string]bool, len(stranded))
	for _, s := range stranded {
		seen[s.Pod] = true
		key := s.Node + "/" + string(s.State)
		if c.warned[s.Pod] == key {
			continue
		}
		obj, ok, err := c.pods.GetByKey(s.Pod)
		if err != nil || !ok {
			continue
		}
		c.warned[s.Pod] = key
		c.log.Warn("a pod is bound to a node that stays off", "pod", s.Pod, "node", s.Node, "state", s.State, "reason", s.Reason)
		if c.opts.Recorder != nil {
			c.opts.Recorder.Eventf(obj.(*corev1.Pod), corev1.EventTypeWarning, "WaitingForParkedNode",
				"bound to node %s, which is %s and not being woken: %s", s.Node, s.State, s.Reason)
		}
	}
	for pod := range c.warned {
		if !seen[pod] {
			delete(c.warned, pod)
		}
	}
}

func nodeRef(n *corev1.Node) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: n.Name, UID: n.UID, APIVersion: "v1"}
}

func (c *Controller) event(n *corev1.Node, warning bool, reason, format string, args ...any) {
	if c.opts.Recorder == nil {
		return
	}
	kind := corev1.EventTypeNormal
	if warning {
		kind = corev1.EventTypeWarning
	}
	c.opts.Recorder.Eventf(nodeRef(n), kind, reason, format, args...)
}
