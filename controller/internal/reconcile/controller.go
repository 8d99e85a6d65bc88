// Package reconcile is joulie-controller's glue to the API server: informers
// and listers feed one snapshot of the cluster to the pure decision step,
// pkg/plan's Compute, and the Controller writes only what differs from it
// (profiles, node labels, twins), records Events and exports metrics.
package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/pkg/generated/informers/externalversions"
	listers "joulie.io/joulie/pkg/generated/listers/joulie/v1alpha1"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/workload"
)

// FieldManager names the controller's writes.
const FieldManager = "joulie-controller"

// clusterKey is the queue's only key: the policy is cluster-wide, so every
// relevant change replans the whole cluster, and the queue collapses a
// burst of changes into one pass.
const clusterKey = "cluster"

// Options configure a Controller.
type Options struct {
	Plan plan.Params
	// TwinRefresh rewrites an unchanged NodeTwin's lastUpdated this often
	// (plan.DefaultTwinRefresh when 0), below the extender's staleness
	// threshold (5m by default), so a live controller never looks stale
	// while a steady tick writes nothing.
	TwinRefresh time.Duration
	// Debounce delays a reconcile after a change so a burst is one pass.
	Debounce time.Duration
	Facility func() plan.Facility
	// KeplerPower, when set, gives the nodes' power as Kepler measured it.
	KeplerPower func() map[string]plan.NodeReading
	Trends      *plan.Trends
	Recorder    record.EventRecorder
	Metrics     *Metrics
	Logger      *slog.Logger
	Now         func() time.Time
	// OnSync, when set, is told the outcome of every reconcile (health).
	OnSync func(error)
}

// Controller reconciles the cluster's power plan.
type Controller struct {
	kube   kubernetes.Interface
	joulie versioned.Interface
	opts   Options
	log    *slog.Logger

	nodes    corelisters.NodeLister
	podIndex cache.Indexer
	hardware listers.NodeHardwareLister
	profiles listers.NodePowerProfileLister
	twins    listers.NodeTwinLister
	synced   []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
}

// New wires a controller to shared informer factories; start the factories
// after New so the handlers are registered first.
func New(kube kubernetes.Interface, jc versioned.Interface, kf informers.SharedInformerFactory, jf externalversions.SharedInformerFactory, o Options) (*Controller, error) {
	if o.TwinRefresh <= 0 {
		o.TwinRefresh = plan.DefaultTwinRefresh
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Trends == nil {
		o.Trends = plan.NewTrends(0)
	}
	if o.Facility == nil {
		o.Facility = func() plan.Facility { return plan.Facility{} }
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	c := &Controller{kube: kube, joulie: jc, opts: o, log: o.Logger,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "joulie-controller"}),
	}
	nodeInf := kf.Core().V1().Nodes()
	podInf := kf.Core().V1().Pods()
	hwInf := jf.Joulie().V1alpha1().NodeHardwares()
	nppInf := jf.Joulie().V1alpha1().NodePowerProfiles()
	twinInf := jf.Joulie().V1alpha1().NodeTwins()
	c.nodes, c.hardware, c.profiles, c.twins = nodeInf.Lister(), hwInf.Lister(), nppInf.Lister(), twinInf.Lister()

	// Pods are the bulk of the cache; keep only what classification and
	// placement read.
	if err := podInf.Informer().SetTransform(slimPod); err != nil {
		return nil, fmt.Errorf("slim the pod cache: %w", err)
	}
	// The performance demand per node, and the pods with requests on each
	// node, are kept as indexes, updated as pods change, so a reconcile
	// does not scan every pod of the cluster.
	if err := podInf.Informer().AddIndexers(cache.Indexers{perfIndex: perfIndexFunc, loadIndex: loadIndexFunc}); err != nil {
		return nil, fmt.Errorf("index the pod cache: %w", err)
	}
	c.podIndex = podInf.Informer().GetIndexer()
	if err := c.watch(nodeInf.Informer(), podInf.Informer(), hwInf.Informer(), nppInf.Informer(), twinInf.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles on changes and every interval until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("informer caches did not sync: %w", ctx.Err())
	}
	c.log.Info("caches synced; reconciling", "interval", c.opts.Plan.Interval, "policy", c.opts.Plan.Policy)
	// A pass at once, then at least every interval.
	go wait.UntilWithContext(ctx, func(context.Context) { c.queue.Add(clusterKey) }, c.opts.Plan.Interval)
	go func() { <-ctx.Done(); c.queue.ShutDown() }()
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
			c.log.Warn("reconcile failed; retrying with backoff", "err", err)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// Snapshot reads the inputs of one reconcile from the informer caches.
// It only reads: Trends is left empty, for the caller to fill from the
// tracker after observing the snapshot's power (Sync does).
func (c *Controller) Snapshot() (plan.Inputs, error) {
	in := plan.Inputs{Now: c.opts.Now(), Facility: c.opts.Facility()}
	if c.opts.KeplerPower != nil {
		in.KeplerPower = c.opts.KeplerPower()
	}
	var err error
	if in.Nodes, err = c.nodes.List(labels.Everything()); err != nil {
		return in, fmt.Errorf("list Nodes from the cache: %w", err)
	}
	in.PerfPods = map[string]int{}
	for _, node := range c.podIndex.ListIndexFuncValues(perfIndex) {
		keys, err := c.podIndex.IndexKeys(perfIndex, node)
		if err != nil {
			return in, fmt.Errorf("read the performance pods of %s from the pod index: %w", node, err)
		}
		in.PerfPods[strings.TrimPrefix(node, "node/")] = len(keys)
	}
	if in.Loads, err = c.loads(in.Nodes); err != nil {
		return in, err
	}
	hws, err := c.hardware.List(labels.Everything())
	if err != nil {
		return in, fmt.Errorf("list NodeHardware from the cache: %w", err)
	}
	in.Hardware = make(map[string]*joulie.NodeHardware, len(hws))
	for _, h := range hws {
		in.Hardware[h.Name] = h
	}
	npps, err := c.profiles.List(labels.Everything())
	if err != nil {
		return in, fmt.Errorf("list NodePowerProfiles from the cache: %w", err)
	}
	in.Profiles = make(map[string]*joulie.NodePowerProfile, len(npps))
	for _, p := range npps {
		in.Profiles[p.Name] = p
	}
	return in, nil
}

// observeTrends feeds the power measured in in to the trend tracker and
// returns every node's trend at in.Now.
func (c *Controller) observeTrends(in plan.Inputs) map[string]float64 {
	for _, p := range in.Profiles {
		if m := p.Status.MeasuredPower; m != nil {
			c.opts.Trends.Observe(p.Name, m.Time.Time, m.NodePowerWatts)
		}
	}
	// Kepler's readings feed the trend of nodes whose agent reports none.
	for name, k := range in.KeplerPower {
		if p := in.Profiles[name]; p == nil || p.Status.MeasuredPower == nil {
			c.opts.Trends.Observe(name, k.Time, k.Watts)
		}
	}
	return c.opts.Trends.Slopes(in.Now)
}

// Sync runs one reconcile: plan from the caches, then write what differs.
func (c *Controller) Sync(ctx context.Context) error {
	start := time.Now()
	in, err := c.Snapshot()
	if err != nil {
		return err
	}
	in.Trends = c.observeTrends(in)
	res := plan.Compute(in, c.opts.Plan)
	skip, errs := c.confirmDrained(ctx, &in, &res)
	c.opts.Metrics.observePlan(res)
	if res.Replan > 0 {
		// A drain dwell ends before the next interval: the node's eco cap
		// is due then.
		c.queue.AddAfter(clusterKey, res.Replan)
	}
	planned := make(map[string]bool, len(res.Nodes))
	nodes := make(map[string]*corev1.Node, len(in.Nodes))
	for _, n := range in.Nodes {
		nodes[n.Name] = n
	}
	for i := range res.Nodes {
		p := &res.Nodes[i]
		planned[p.Name] = true
		if skip[p.Name] {
			continue
		}
		if err := c.apply(ctx, nodes[p.Name], p, in); err != nil {
			errs = append(errs, err) // each names its object
		}
	}
	errs = append(errs, c.collect(ctx, in, planned)...)
	c.opts.Metrics.ReconcileDuration.Observe(time.Since(start).Seconds())
	if len(errs) > 0 {
		c.opts.Metrics.ReconcileErrors.Inc()
		return fmt.Errorf("%d writes failed: %w", len(errs), errors.Join(errs...))
	}
	return nil
}

// confirmDrained re-reads from the API server, not the cache, the pods of
// every node res would move from draining to eco under policy.GuardDrain.
// The pod cache lags the scheduler: a performance pod bound in the last
// instant, by a scheduler that had not seen the draining label yet, would
// otherwise run under the eco cap. Found there, the pods are counted and
// the plan is made again, which keeps the node draining and uncapped. A
// node whose pods cannot be read is skipped (left draining, uncapped, as
// it is) and the error returned, so the reconcile is retried.
func (c *Controller) confirmDrained(ctx context.Context, in *plan.Inputs, res *plan.Result) (skip map[string]bool, errs []error) {
	if c.opts.Plan.Guard != policy.GuardDrain {
		return nil, nil
	}
	found := false
	for _, p := range res.Nodes {
		if p.Decision.Transition != policy.Unblocked {
			continue
		}
		n, err := c.livePerformancePods(ctx, p.Name)
		if err != nil {
			if skip == nil {
				skip = map[string]bool{}
			}
			skip[p.Name] = true
			errs = append(errs, err)
			continue
		}
		if n > 0 {
			c.log.Info("a performance pod the cache had not seen runs on a draining node; it stays draining, uncapped", "node", p.Name, "performancePods", n)
			c.opts.Metrics.LatePerformancePods.Add(float64(n))
			in.PerfPods[p.Name] = n
			found = true
		}
	}
	if found {
		*res = plan.Compute(*in, c.opts.Plan)
	}
	return skip, errs
}

// livePerformancePods counts the active performance pods bound to node by
// a quorum read of the API server.
func (c *Controller) livePerformancePods(ctx context.Context, node string) (int, error) {
	pods, err := c.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return 0, fmt.Errorf("list the pods of Node %s before capping it eco (it stays draining, uncapped): %w", node, err)
	}
	n := 0
	for i := range pods.Items {
		if workload.IsPerformanceDemand(&pods.Items[i]) {
			n++
		}
	}
	return n, nil
}

// apply writes one node's profile, labels and twin where they differ.
func (c *Controller) apply(ctx context.Context, node *corev1.Node, p *plan.NodePlan, in plan.Inputs) error {
	// The profile goes first: the labels tell the scheduler what the node
	// is, so they follow the target, not precede it.
	if err := c.applyProfile(ctx, p, in.Profiles[p.Name]); err != nil {
		return err
	}
	if err := c.applyLabels(ctx, node, p); err != nil {
		return err
	}
	// The transition has happened once the labels say so, and only then
	// is it an event: the plan reads a node's profile from its labels, so
	// a write that failed brings the same transition back on the retry,
	// which records it once it succeeds.
	c.event(node, p)
	return c.applyTwin(ctx, p, in.Now)
}

// applyOptions are the options of the controller's server-side applies.
// Force takes over fields another manager set (an admin's manual edit of
// a profile the controller plans): the plan is the authority.
func applyOptions() metav1.PatchOptions {
	return metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)}
}

// applyProfile publishes the node's NodePowerProfile by server-side apply
// under the controller's field manager: the controller owns the spec and
// the transition annotation, the agent owns the status.
func (c *Controller) applyProfile(ctx context.Context, p *plan.NodePlan, cur *joulie.NodePowerProfile) error {
	if cur != nil && specEqual(cur.Spec, p.Spec) && cur.Annotations[plan.AnnotationLastTransition] != "" &&
		!plan.LastTransition(cur).Before(p.LastTransition.Truncate(time.Second)) {
		return nil
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": joulie.SchemeGroupVersion.String(), "kind": "NodePowerProfile",
		"metadata": map[string]any{"name": p.Name,
			"annotations": map[string]string{plan.AnnotationLastTransition: p.LastTransition.UTC().Format(time.RFC3339)}},
		"spec": p.Spec,
	})
	if err != nil {
		return fmt.Errorf("encode NodePowerProfile %s: %w", p.Name, err)
	}
	_, err = c.joulie.JoulieV1alpha1().NodePowerProfiles().Patch(ctx, p.Name, types.ApplyPatchType, body,
		applyOptions())
	c.opts.Metrics.wrote("nodepowerprofile", err)
	if err != nil {
		return fmt.Errorf("apply NodePowerProfile %s: %w", p.Name, err)
	}
	return nil
}

func (c *Controller) applyLabels(ctx context.Context, node *corev1.Node, p *plan.NodePlan) error {
	profile, draining := string(p.Decision.Profile), strconv.FormatBool(p.Decision.Draining)
	if node.Labels[joulie.LabelPowerProfile] == profile && node.Labels[joulie.LabelDraining] == draining {
		return nil
	}
	want := map[string]string{joulie.LabelPowerProfile: profile, joulie.LabelDraining: draining}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": want}})
	if err != nil {
		return fmt.Errorf("encode the labels of Node %s: %w", node.Name, err)
	}
	_, err = c.kube.CoreV1().Nodes().Patch(ctx, node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	c.opts.Metrics.wrote("node", err)
	if err != nil {
		return fmt.Errorf("label Node %s %s=%s %s=%s: %w", node.Name, joulie.LabelPowerProfile, profile, joulie.LabelDraining, draining, err)
	}
	return nil
}

// applyTwin publishes NodeTwin status by server-side apply on the status
// subresource, creating the (status-only) object first when it is missing.
func (c *Controller) applyTwin(ctx context.Context, p *plan.NodePlan, now time.Time) error {
	client := c.joulie.JoulieV1alpha1().NodeTwins()
	cur, err := c.twins.Get(p.Name)
	switch {
	case apierrors.IsNotFound(err):
		_, err = client.Create(ctx, &joulie.NodeTwin{ObjectMeta: metav1.ObjectMeta{Name: p.Name}}, metav1.CreateOptions{FieldManager: FieldManager})
		c.opts.Metrics.wrote("nodetwin", err)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create NodeTwin %s: %w", p.Name, err)
		}
	case err != nil:
		return fmt.Errorf("read NodeTwin %s from the cache: %w", p.Name, err)
	case twinEqual(cur.Status, p.Twin) && now.Sub(cur.Status.LastUpdated.Time) < c.opts.TwinRefresh:
		return nil
	}
	st := p.Twin
	st.LastUpdated = metav1.NewTime(now)
	body, err := json.Marshal(map[string]any{
		"apiVersion": joulie.SchemeGroupVersion.String(), "kind": "NodeTwin",
		"metadata": map[string]any{"name": p.Name}, "status": st,
	})
	if err != nil {
		return fmt.Errorf("encode NodeTwin %s status: %w", p.Name, err)
	}
	_, err = client.Patch(ctx, p.Name, types.ApplyPatchType, body, applyOptions(), "status")
	c.opts.Metrics.wrote("nodetwin/status", err)
	if err != nil {
		return fmt.Errorf("apply NodeTwin %s status: %w", p.Name, err)
	}
	return nil
}

// collect deletes the profiles and twins of nodes that are gone, and the
// twins of nodes no longer planned.
func (c *Controller) collect(ctx context.Context, in plan.Inputs, planned map[string]bool) []error {
	exists := make(map[string]bool, len(in.Nodes))
	for _, n := range in.Nodes {
		exists[n.Name] = true
	}
	var errs []error
	for name := range in.Profiles {
		if !exists[name] {
			err := c.joulie.JoulieV1alpha1().NodePowerProfiles().Delete(ctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete NodePowerProfile %s of a deleted node: %w", name, err))
			}
			c.opts.Trends.Forget(name)
		}
	}
	twins, err := c.twins.List(labels.Everything())
	if err != nil {
		return append(errs, fmt.Errorf("list NodeTwins from the cache: %w", err))
	}
	for _, t := range twins {
		if !planned[t.Name] {
			err := c.joulie.JoulieV1alpha1().NodeTwins().Delete(ctx, t.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete NodeTwin %s of a node no longer planned: %w", t.Name, err))
			}
		}
	}
	return errs
}

// event records guard transitions in metrics and as Events on the node.
// Ticks that change nothing (including a node still blocked) are not
// events, so the event stream is a history of decisions.
func (c *Controller) event(node *corev1.Node, p *plan.NodePlan) {
	t := p.Decision.Transition
	if t == policy.None {
		return
	}
	c.opts.Metrics.Transitions.WithLabelValues(string(t)).Inc()
	if t == policy.StillBlocked || t == policy.Dwell {
		return
	}
	if c.opts.Recorder == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID, APIVersion: "v1"}
	switch t {
	case policy.Defer:
		c.opts.Recorder.Eventf(ref, corev1.EventTypeNormal, "DowngradeDeferred",
			"eco planned; draining while %d performance pods run", p.PerfPods)
	case policy.Drain:
		c.opts.Recorder.Eventf(ref, corev1.EventTypeNormal, "Draining",
			"eco planned; draining, uncapped, for %s before the eco cap", c.opts.Plan.DrainDwell)
	case policy.Allow, policy.Unblocked:
		c.opts.Recorder.Eventf(ref, corev1.EventTypeNormal, "ProfileEco", "node moves to eco (%s)", t)
	case policy.PlanPerf, policy.ReplanPerf:
		c.opts.Recorder.Eventf(ref, corev1.EventTypeNormal, "ProfilePerformance", "node moves to performance (%s)", t)
	}
}
