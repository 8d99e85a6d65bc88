package schedsim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// ErrUnschedulable is wrapped by the error Schedule returns when no node
// can take the pod now. The error also wraps kube-scheduler's
// *framework.FitError, whose message counts the reasons per node
// ("0/3 nodes are available: 3 Insufficient cpu.").
var ErrUnschedulable = errors.New("unschedulable")

// Options are the knobs of a Scheduler that are not part of kube-scheduler's
// configuration.
type Options struct {
	// Seed seeds the tie-break between nodes with equal total scores.
	Seed uint64
	// Parallelism is how many goroutines the framework uses to score
	// nodes (kube-scheduler's parallelism, default 16). 0 means 1: the
	// simulator runs arms and seeds side by side, and results do not
	// depend on it.
	Parallelism int
}

// Scheduler runs kube-scheduler's scheduling cycle for one pod at a time
// over an in-memory cluster. It is not safe for concurrent use.
type Scheduler struct {
	logger klog.Logger
	cancel context.CancelFunc

	fw         framework.Framework
	cache      internalcache.Cache
	snapshot   *internalcache.Snapshot
	percentage int32
	ext        Extender
	rng        *rand.Rand

	// nextStart is kube-scheduler's nextStartNodeIndex: each cycle's
	// filter pass starts where the previous one stopped, so every node
	// gets examined in turn when only a sample is scored.
	nextStart int
	nodes     map[string]*v1.Node
	bound     map[string]*v1.Pod
}

// New builds a scheduler for nodes with profile's plugins and, if ext is
// not nil, that extender. Close releases it.
func New(profile Profile, nodes []*v1.Node, ext Extender, opts Options) (*Scheduler, error) {
	cfg, err := profile.schedulerConfig()
	if err != nil {
		return nil, err
	}
	if ext != nil && ext.Weight() <= 0 {
		return nil, fmt.Errorf("extender weight is %d; kube-scheduler requires a positive weight", ext.Weight())
	}
	parallelism := opts.Parallelism
	if parallelism <= 0 {
		parallelism = 1
	}

	logger := klog.Background()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	s := &Scheduler{
		logger:     logger,
		cancel:     cancel,
		snapshot:   internalcache.NewEmptySnapshot(),
		percentage: *cfg.PercentageOfNodesToScore,
		ext:        ext,
		rng:        rand.New(rand.NewPCG(opts.Seed, 0)),
		nodes:      make(map[string]*v1.Node, len(nodes)),
		bound:      make(map[string]*v1.Pod),
	}
	if err := s.build(ctx, &cfg.Profiles[0], parallelism, nodes); err != nil {
		cancel()
		return nil, err
	}
	return s, nil
}

// build wires the framework the way kube-scheduler's scheduler.New does,
// minus the scheduling queue and the API: the plugins' informers watch an
// empty fake clientset (no volumes, no DRA claims or slices), so only the
// nodes and pods given to the Scheduler count.
func (s *Scheduler) build(ctx context.Context, profile *config.KubeSchedulerProfile, parallelism int, nodes []*v1.Node) error {
	// The framework's instrumentation writes to the scheduler's metric
	// vectors, which are nil until initialised; Register initialises them
	// once per process.
	metrics.Register()

	client := fake.NewClientset()
	informerFactory := informers.NewSharedInformerFactory(client, 0)
	draManager, err := newDRAManager(ctx, client, informerFactory)
	if err != nil {
		return err
	}
	fw, err := frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informerFactory),
		frameworkruntime.WithSnapshotSharedLister(s.snapshot),
		frameworkruntime.WithSharedDRAManager(draManager),
		frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(informerFactory.Storage().V1().CSINodes().Lister())),
		frameworkruntime.WithParallelism(parallelism),
		frameworkruntime.WithLogger(s.logger),
	)
	if err != nil {
		return fmt.Errorf("build kube-scheduler framework: %w", err)
	}
	s.fw = fw
	informerFactory.Start(ctx.Done())
	for typ, synced := range informerFactory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("informer for %v did not sync with the empty fake API", typ)
		}
	}

	s.cache = internalcache.New(ctx, nil,
		utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload),
		utilfeature.DefaultFeatureGate.Enabled(features.CompositePodGroup))
	for _, n := range nodes {
		if n.Name == "" {
			return errors.New("a node has no name")
		}
		if _, dup := s.nodes[n.Name]; dup {
			return fmt.Errorf("node %q is given twice", n.Name)
		}
		n = n.DeepCopy()
		s.nodes[n.Name] = n
		s.cache.AddNode(s.logger, n)
	}
	return nil
}

// newDRAManager builds kube-scheduler's DRA manager over the informers, as
// scheduler.New does; NodeResourcesFit and DynamicResources consult it even
// for pods that ask for no claims.
func newDRAManager(ctx context.Context, client kubernetes.Interface, informerFactory informers.SharedInformerFactory) (fwk.SharedDRAManager, error) {
	claims := assumecache.NewAssumeCache(klog.FromContext(ctx), informerFactory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	opts := resourceslicetracker.Options{
		EnableDeviceTaintRules:   utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
		EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		SliceInformer:            informerFactory.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.EnableDeviceTaintRules {
		opts.TaintInformer = informerFactory.Resource().V1().DeviceTaintRules()
	}
	slices, err := resourceslicetracker.StartTracker(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("start kube-scheduler's resource slice tracker: %w", err)
	}
	return dynamicresources.NewDRAManager(ctx, claims, slices, informerFactory), nil
}

// Close stops the informers and the framework's metric recorder.
func (s *Scheduler) Close() {
	s.cancel()
}

// Schedule runs one scheduling cycle for pod and returns the node kube-scheduler
// would pick. It changes nothing: Bind records the placement. When no node
// fits, the error wraps ErrUnschedulable; the caller queues the pod and
// tries again once something changed.
func (s *Scheduler) Schedule(ctx context.Context, pod *v1.Pod) (string, error) {
	ctx = klog.NewContext(ctx, s.logger)
	if err := s.cache.UpdateSnapshot(s.logger, s.snapshot); err != nil {
		return "", fmt.Errorf("update scheduler snapshot: %w", err)
	}
	all, err := s.snapshot.NodeInfos().List()
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return "", fmt.Errorf("schedule pod %s/%s: the cluster has no nodes", pod.Namespace, pod.Name)
	}
	state := framework.NewCycleState()
	feasible, diagnosis, err := s.findNodesThatFit(ctx, state, pod, all)
	if err != nil {
		return "", err
	}
	switch len(feasible) {
	case 0:
		fitErr := &framework.FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: diagnosis}
		return "", fmt.Errorf("pod %s/%s is %w: %w", pod.Namespace, pod.Name, ErrUnschedulable, fitErr)
	case 1:
		// kube-scheduler skips scoring when one node is left.
		return feasible[0].Node().Name, nil
	}
	scores, err := s.prioritizeNodes(ctx, state, pod, feasible)
	if err != nil {
		return "", err
	}
	// kube-scheduler 1.37 breaks ties by a random number per node: the
	// highest total score wins, then the highest Randomizer. It draws
	// them only when an extender scored; without one the order in which
	// its parallel filter found the nodes decides, which is as random but
	// not reproducible. Here every node draws from the seeded source, so
	// ties are uniform and runs repeat.
	for i := range scores {
		scores[i].Randomizer = s.rng.Int()
	}
	return framework.NewSortedScoredNodes(scores).Pop().Name, nil
}

// findNodesThatFit runs PreFilter, Filter and the extender's filter. It
// follows findNodesThatFitPod and findNodesThatPassFilters in kube-scheduler
// 1.37's pkg/scheduler/schedule_one.go, serially: nodes are examined in the
// snapshot's order from nextStart, and the search stops once
// numFeasibleNodesToFind nodes passed, so the sample is the same on every
// run (kube-scheduler's parallel search keeps whichever nodes its workers
// reach first). There are no nominated pods (no preemption), so Filter
// runs once per node.
func (s *Scheduler) findNodesThatFit(ctx context.Context, state fwk.CycleState, pod *v1.Pod, all []fwk.NodeInfo) ([]fwk.NodeInfo, framework.Diagnosis, error) {
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	preRes, status, unschedulablePlugins := s.fw.RunPreFilterPlugins(ctx, state, pod)
	diagnosis.UnschedulablePlugins = unschedulablePlugins
	if !status.IsSuccess() {
		if !status.IsRejected() {
			return nil, diagnosis, fmt.Errorf("prefilter for pod %s/%s: %w", pod.Namespace, pod.Name, status.AsError())
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(status)
		diagnosis.PreFilterMsg = status.Message()
		diagnosis.AddPluginStatus(status)
		return nil, diagnosis, nil
	}

	nodes := all
	if !preRes.AllNodes() {
		// Kept in snapshot order rather than the set's random order.
		nodes = make([]fwk.NodeInfo, 0, len(preRes.NodeNames))
		for _, ni := range all {
			if preRes.NodeNames.Has(ni.Node().Name) {
				nodes = append(nodes, ni)
			}
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(unschedulablePlugins))))
	}

	want := numFeasibleNodesToFind(s.percentageFor(), int32(len(nodes)))
	if s.ext == nil && !s.fw.HasScorePlugins() {
		want = 1
	}
	feasible := make([]fwk.NodeInfo, 0, want)
	examined := 0
	for ; examined < len(nodes) && int32(len(feasible)) < want; examined++ {
		ni := nodes[(s.nextStart+examined)%len(nodes)]
		status := s.fw.RunFilterPlugins(ctx, state, pod, ni)
		switch {
		case status.IsSuccess():
			feasible = append(feasible, ni)
		case status.IsRejected():
			diagnosis.NodeToStatus.Set(ni.Node().Name, status)
			diagnosis.AddPluginStatus(status)
		default:
			return nil, diagnosis, fmt.Errorf("filter pod %s/%s on node %s: %w", pod.Namespace, pod.Name, ni.Node().Name, status.AsError())
		}
	}
	s.nextStart = (s.nextStart + examined) % len(all)

	if s.ext == nil {
		return feasible, diagnosis, nil
	}
	kept, err := filterByExtender(s.ext, pod, feasible, diagnosis.NodeToStatus)
	if err != nil {
		return nil, diagnosis, err
	}
	if len(kept) != len(feasible) {
		if diagnosis.UnschedulablePlugins == nil {
			diagnosis.UnschedulablePlugins = sets.New[string]()
		}
		diagnosis.UnschedulablePlugins.Insert(framework.ExtenderName)
	}
	return kept, diagnosis, nil
}

// prioritizeNodes runs PreScore, Score (with NormalizeScore and the
// plugins' weights) and adds the extender's scores, as prioritizeNodes in
// kube-scheduler 1.37's pkg/scheduler/schedule_one.go does.
func (s *Scheduler) prioritizeNodes(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, error) {
	if s.ext == nil && !s.fw.HasScorePlugins() {
		scores := make([]fwk.NodePluginScores, len(nodes))
		for i, ni := range nodes {
			scores[i] = fwk.NodePluginScores{Name: ni.Node().Name, TotalScore: 1}
		}
		return scores, nil
	}
	if status := s.fw.RunPreScorePlugins(ctx, state, pod, nodes); !status.IsSuccess() {
		return nil, fmt.Errorf("prescore for pod %s/%s: %w", pod.Namespace, pod.Name, status.AsError())
	}
	scores, status := s.fw.RunScorePlugins(ctx, state, pod, nodes)
	if !status.IsSuccess() {
		return nil, fmt.Errorf("score for pod %s/%s: %w", pod.Namespace, pod.Name, status.AsError())
	}
	if s.ext != nil {
		if err := addExtenderScores(s.ext, pod, nodes, scores); err != nil {
			return nil, err
		}
	}
	return scores, nil
}

// percentageFor is the profile's percentageOfNodesToScore if it sets one,
// else the global one.
func (s *Scheduler) percentageFor() int32 {
	if p := s.fw.PercentageOfNodesToScore(); p != nil {
		return *p
	}
	return s.percentage
}

// kube-scheduler's floor on the sample, from pkg/scheduler/schedule_one.go.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// numFeasibleNodesToFind is how many feasible nodes a cycle looks for
// before it stops filtering, by kube-scheduler 1.37's rule of the same name:
// all nodes below 100; else percentage of them, where 0 means adaptive
// (50% minus 1% per 125 nodes, at least 5%), and never fewer than 100. At
// 2,500 nodes the adaptive rule scores 750.
func numFeasibleNodesToFind(percentage, numAllNodes int32) int32 {
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	if percentage == 0 {
		percentage = max(50-numAllNodes/125, minFeasibleNodesPercentageToFind)
	}
	return max(numAllNodes*percentage/100, minFeasibleNodesToFind)
}

// Bind records that pod runs on nodeName, so that the next cycles see its
// requests on that node. The scheduler keeps its own copy of pod.
func (s *Scheduler) Bind(pod *v1.Pod, nodeName string) error {
	if _, ok := s.nodes[nodeName]; !ok {
		return fmt.Errorf("bind pod %s/%s: no node %q", pod.Namespace, pod.Name, nodeName)
	}
	key := podKey(pod)
	if at, ok := s.bound[key]; ok {
		return fmt.Errorf("bind pod %s to %s: already bound to %s", key, nodeName, at.Spec.NodeName)
	}
	p := pod.DeepCopy()
	p.Spec.NodeName = nodeName
	if p.UID == "" {
		// The cache tells pods apart by UID.
		p.UID = types.UID(key)
	}
	if err := s.cache.AddPod(s.logger, p); err != nil {
		return fmt.Errorf("bind pod %s to %s: %w", key, nodeName, err)
	}
	s.bound[key] = p
	return nil
}

// Remove forgets a bound pod (it completed), freeing its requests.
func (s *Scheduler) Remove(pod *v1.Pod) error {
	key := podKey(pod)
	p, ok := s.bound[key]
	if !ok {
		return fmt.Errorf("remove pod %s: it is not bound", key)
	}
	if err := s.cache.RemovePod(s.logger, p); err != nil {
		return fmt.Errorf("remove pod %s from %s: %w", key, p.Spec.NodeName, err)
	}
	delete(s.bound, key)
	return nil
}

// SetNodeLabels replaces the labels of node name, as Joulie's controller
// relabels nodes (joulie.io/power-profile, joulie.io/draining).
func (s *Scheduler) SetNodeLabels(name string, labels map[string]string) error {
	old, ok := s.nodes[name]
	if !ok {
		return fmt.Errorf("set labels of node %q: no such node", name)
	}
	n := old.DeepCopy()
	n.Labels = maps.Clone(labels)
	s.cache.UpdateNode(s.logger, old, n)
	s.nodes[name] = n
	return nil
}

func podKey(pod *v1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}

// SetNodeUnschedulable cordons node name (true) or uncordons it, as a
// node switched off or booting is kept from pods: NodeUnschedulable's
// filter then passes it over.
func (s *Scheduler) SetNodeUnschedulable(name string, unschedulable bool) error {
	old, ok := s.nodes[name]
	if !ok {
		return fmt.Errorf("cordon node %q: no such node", name)
	}
	if old.Spec.Unschedulable == unschedulable {
		return nil
	}
	n := old.DeepCopy()
	n.Spec.Unschedulable = unschedulable
	s.cache.UpdateNode(s.logger, old, n)
	s.nodes[name] = n
	return nil
}
