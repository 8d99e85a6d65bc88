package park

import (
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// PodRequests is what the scheduler counts a pod as requesting: the
// largest of its init containers and the sum of its app containers (and
// sidecars), plus its overhead, through component-helpers as the
// scheduler's own resource fit does.
func PodRequests(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
}

// NodeReady reports whether n's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Taints a switched-off node carries that say only that it is off: the
// node lifecycle controller adds them when the kubelet stops reporting,
// and they go when it is back. A parked or parking candidate is judged
// without them and without Joulie's own, or no parked node would ever fit
// a pod.
var offTaints = [...]string{joulie.TaintParked, corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}

func isOffTaint(t *corev1.Taint) bool {
	for _, k := range offTaints {
		if t.Key == k {
			return true
		}
	}
	return false
}

// resources are quantities in milli-units, summed as integers.
type resources map[corev1.ResourceName]int64

// dims are the resources the pending pods of one pass ask for, in a fixed
// order, so that free room and requests are short vectors and checking a
// pod against thousands of nodes compares integers, not map entries. A
// node's other resources cannot stop any of these pods.
type dims []corev1.ResourceName

func (d *dims) index(name corev1.ResourceName) int {
	for i, n := range *d {
		if n == name {
			return i
		}
	}
	*d = append(*d, name)
	return len(*d) - 1
}

// vector is a resource list in milli-units over dims.
type vector []int64

func (d dims) vector(l corev1.ResourceList) vector {
	v := make(vector, len(d))
	for i, name := range d {
		if q, ok := l[name]; ok {
			v[i] = q.MilliValue()
		}
	}
	return v
}

// pendingPod is a pod the scheduler could not place, prepared once for
// fitting against every node.
type pendingPod struct {
	pod      *corev1.Pod
	perf     bool
	requests corev1.ResourceList
	req      vector
	affinity nodeaffinity.RequiredNodeAffinity
	// volumes must all match a node for the pod's volumes to be there.
	volumes  []*nodeaffinity.LazyErrorNodeSelector
	gpus     int64
	cpu, mem int64
}

// nodeFree is what a node has left: its allocatable minus the requests of
// the pods on it (and of the pods a pass has already put there), and its
// pod slots.
type nodeFree struct {
	free vector
	// pods is the number of pods the node still takes when limited (its
	// allocatable states a pod count).
	pods    int64
	limited bool
}

func newNodeFree(n *Node, d dims) nodeFree {
	f := nodeFree{free: d.vector(n.Node.Status.Allocatable)}
	used := d.vector(n.Requested)
	for i := range f.free {
		f.free[i] -= used[i]
	}
	if q, ok := n.Node.Status.Allocatable[corev1.ResourcePods]; ok {
		f.pods, f.limited = q.Value()-int64(n.Pods), true
	}
	return f
}

// hasRoom reports whether req fits in what is free; a node that states no
// pod capacity is not limited by it.
func (f nodeFree) hasRoom(req vector) bool {
	if f.limited && f.pods < 1 {
		return false
	}
	for i, v := range req {
		if f.free[i] < v {
			return false
		}
	}
	return true
}

func (f *nodeFree) take(req vector) {
	for i, v := range req {
		f.free[i] -= v
	}
	f.pods--
}

// schedulable reports whether the scheduler may place p on n apart from
// resources: n is not cordoned (or p tolerates it), p's node selector and
// required node affinity match n, so do its volumes' node constraints,
// and p tolerates n's NoSchedule and NoExecute taints. With off true, n is
// judged as it will be once awake: the taints of a switched-off node
// (offTaints) do not count. Otherwise only Joulie's own taint is left out,
// which an awake node carries only until the controller removes it; so is
// Joulie's own cordon of a parked node, always.
func schedulable(p *pendingPod, n *corev1.Node, off bool) bool {
	if ok, err := p.affinity.Match(n); err != nil || !ok {
		return false
	}
	for _, v := range p.volumes {
		if ok, err := v.Match(n); err != nil || !ok {
			return false
		}
	}
	if cordoned(n) && !schedcorev1.TolerationsTolerateTaint(logr.Discard(), p.pod.Spec.Tolerations,
		&corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, false) {
		return false
	}
	if len(n.Spec.Taints) == 0 {
		return true
	}
	_, untolerated := schedcorev1.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, p.pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			if t.Key == joulie.TaintParked || (off && isOffTaint(t)) {
				return false
			}
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	return !untolerated
}

// cpu is the free CPU; CPU is always the first of the pass's dims.
func (f nodeFree) cpu() int64 { return f.free[0] }
