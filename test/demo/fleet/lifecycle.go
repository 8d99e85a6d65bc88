package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/pkg/generated/informers/externalversions"
	"joulie.io/joulie/test/harness"
)

// lifecycle stands in for the kubelets of the fleet's nodes, as KWOK
// does: a pod bound to one of them starts running in the simulator and
// its status says Running; when the simulator has done its work, its
// status says Succeeded. It also follows the nodes' profile labels.
type lifecycle struct {
	kube kubernetes.Interface
	jc   versioned.Interface
	sim  *sim
	log  *slog.Logger

	factories []informers.SharedInformerFactory
	joulie    externalversions.SharedInformerFactory
	pods      corelisters.PodLister
	queue     workqueue.TypedRateLimitingInterface[string]
	wg        sync.WaitGroup
}

func newLifecycle(kube kubernetes.Interface, jc versioned.Interface, s *sim, log *slog.Logger) *lifecycle {
	return &lifecycle{kube: kube, jc: jc, sim: s, log: log,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
}

func (l *lifecycle) start(ctx context.Context, fleetName string) error {
	all := informers.NewSharedInformerFactory(l.kube, 0)
	mine := informers.NewSharedInformerFactoryWithOptions(l.kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = LabelFleet + "=" + fleetName
	}))
	l.factories = []informers.SharedInformerFactory{all, mine}
	podInf := all.Core().V1().Pods()
	l.pods = podInf.Lister()
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { l.podChanged(obj) },
		UpdateFunc: func(_, obj any) { l.podChanged(obj) },
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				l.sim.forget(key)
			}
		},
	}); err != nil {
		return fmt.Errorf("fleet: watch pods: %w", err)
	}
	nodeChanged := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			l.sim.setProfile(n.Name, n.Labels[joulie.LabelPowerProfile], n.Labels[joulie.LabelDraining] == "true")
		}
	}
	if _, err := mine.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: nodeChanged, UpdateFunc: func(_, obj any) { nodeChanged(obj) },
	}); err != nil {
		return fmt.Errorf("fleet: watch nodes: %w", err)
	}
	// The controller's power state of each node, for Snapshot; the
	// profiles are named after the nodes, and others are ignored.
	l.joulie = externalversions.NewSharedInformerFactory(l.jc, 0)
	profileChanged := func(obj any) {
		if p, ok := obj.(*joulie.NodePowerProfile); ok {
			l.sim.setPowerState(p.Name, string(p.Spec.PowerState))
		}
	}
	if _, err := l.joulie.Joulie().V1alpha1().NodePowerProfiles().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: profileChanged, UpdateFunc: func(_, obj any) { profileChanged(obj) },
	}); err != nil {
		return fmt.Errorf("fleet: watch NodePowerProfiles: %w", err)
	}
	for _, f := range l.factories {
		f.Start(ctx.Done())
	}
	l.joulie.Start(ctx.Done())
	for _, f := range l.factories {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("fleet: list %v: the API server did not answer", typ)
			}
		}
	}
	for typ, ok := range l.joulie.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("fleet: list %v: the API server did not answer", typ)
		}
	}
	// Status writes are few (two per pod) and ordered per pod by the
	// queue; two workers keep a burst of starts from queueing behind one
	// slow write.
	for range 2 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for l.next(ctx) {
			}
		}()
	}
	return nil
}

func (l *lifecycle) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
		return
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return
	}
	tracked, err := l.sim.start(pod, time.Now())
	if err != nil {
		l.log.Warn("pod stand-in", "err", err)
	}
	if tracked {
		l.enqueue(pod.Namespace + "/" + pod.Name)
	}
}

// admit starts the pods bound to node that the stand-in has not run
// yet: those bound while its host was off or booting.
func (l *lifecycle) admit(node string) {
	pods, err := l.pods.List(labels.Everything())
	if err != nil {
		return // a lister does not fail
	}
	for _, p := range pods {
		if p.Spec.NodeName == node {
			l.podChanged(p)
		}
	}
}

func (l *lifecycle) enqueue(key string) { l.queue.Add(key) }

func (l *lifecycle) next(ctx context.Context) bool {
	key, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(key)
	if err := l.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			l.log.Warn("pod stand-in: will retry", "pod", key, "err", err)
			l.queue.AddRateLimited(key)
		}
		return true
	}
	l.queue.Forget(key)
	return true
}

// sync writes the status the simulator says the pod has, when it
// differs.
func (l *lifecycle) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	want := l.sim.phase(key)
	pod, err := l.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) || want == "" {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.Status.Phase == want {
		return nil
	}
	pod = pod.DeepCopy()
	pod.Status = harness.KubeletPodStatus(pod, want)
	if _, err := l.kube.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set pod %s %s: %w", key, want, err)
	}
	return nil
}

// wait stops the informers and the workers; the caller has cancelled
// the context start was given.
func (l *lifecycle) wait() {
	l.queue.ShutDown()
	l.wg.Wait()
	for _, f := range l.factories {
		f.Shutdown()
	}
	if l.joulie != nil {
		l.joulie.Shutdown()
	}
}
