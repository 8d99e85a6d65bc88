package reconcile

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// watch registers the event handlers that queue a reconcile: every add
// and delete, and the updates that change what the plan reads, each
// informer with its own check. The informers' HasSynced gate Run.
func (c *Controller) watch(nodes, pods, hardware, profiles, twins cache.SharedIndexInformer) error {
	enqueue := func() { c.queue.AddAfter(clusterKey, c.opts.Debounce) }
	handlers := []struct {
		inf     cache.SharedIndexInformer
		changed func(old, cur any) bool
	}{
		{nodes, nodeChanged},
		{pods, podChanged},
		{hardware, hardwareChanged},
		{profiles, profileChanged},
		// A twin is the controller's own output, rewritten at least every
		// TwinRefresh: replanning on its updates would replan on every
		// write the controller makes. Its adds and deletes still count (a
		// twin someone deleted is written again).
		{twins, func(_, _ any) bool { return false }},
	}
	for _, h := range handlers {
		changed := h.changed
		if _, err := h.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { enqueue() },
			UpdateFunc: func(old, cur any) {
				if changed(old, cur) {
					enqueue()
				}
			},
			DeleteFunc: func(any) { enqueue() },
		}); err != nil {
			return err
		}
		c.synced = append(c.synced, h.inf.HasSynced)
	}
	return nil
}

func nodeChanged(old, cur any) bool {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return o.Spec.Unschedulable != n.Spec.Unschedulable || !labels.Equals(o.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(o.Status.Capacity, n.Status.Capacity)
}

func podChanged(old, cur any) bool {
	o, ok1 := old.(*corev1.Pod)
	n, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return o.Status.Phase != n.Status.Phase || o.Spec.NodeName != n.Spec.NodeName
}

func hardwareChanged(old, cur any) bool {
	o, ok1 := old.(*joulie.NodeHardware)
	n, ok2 := cur.(*joulie.NodeHardware)
	if !ok1 || !ok2 {
		return true
	}
	a, b := o.Status, n.Status
	a.LastUpdated, b.LastUpdated = metav1.Time{}, metav1.Time{}
	return !equality.Semantic.DeepEqual(a, b)
}

func profileChanged(old, cur any) bool {
	o, ok1 := old.(*joulie.NodePowerProfile)
	n, ok2 := cur.(*joulie.NodePowerProfile)
	if !ok1 || !ok2 {
		return true
	}
	return o.Generation != n.Generation || !equality.Semantic.DeepEqual(o.Status.MeasuredPower, n.Status.MeasuredPower)
}
