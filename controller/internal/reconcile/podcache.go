package reconcile

// The pod cache: what the controller keeps of each pod (slimPod) and the
// indexes a reconcile reads instead of scanning every pod.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/park"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/workload"
)

const perfIndex = "joulie.io/performance-demand"

// perfIndexFunc files an active performance-sensitive pod under its node
// ("node/" + name, "node/" while unscheduled: index values must not be
// empty); other pods are not indexed.
func perfIndexFunc(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok || !workload.IsPerformanceDemand(p) {
		return nil, nil
	}
	return []string{"node/" + p.Spec.NodeName}, nil
}

const loadIndex = "joulie.io/node-load"

// loadKey is the load index's value for a pod: its node, class and
// effective request. Pods of one shape on one node share a key, so a
// reconcile sums every node's load from the index's keys and how many
// pods each holds, without reading or classifying a single pod.
type loadKey struct {
	node        string
	performance bool
	cpuMilli    int64
	gpuMilli    int64
}

func newLoadKey(node string, performance bool, d powerest.Demand) loadKey {
	return loadKey{node: node, performance: performance,
		cpuMilli: int64(math.Round(d.CPUCores * 1000)), gpuMilli: int64(math.Round(d.GPUs * 1000))}
}

// String is the key as the index stores it (index values are strings):
// "node/class/cpuMilli/gpuMilli". Node names are DNS subdomains, which
// hold no '/'.
func (k loadKey) String() string {
	class := "standard"
	if k.performance {
		class = "performance"
	}
	return fmt.Sprintf("%s/%s/%d/%d", k.node, class, k.cpuMilli, k.gpuMilli)
}

// parseLoadKey reads back a key String wrote.
func parseLoadKey(v string) (loadKey, error) {
	parts := strings.Split(v, "/")
	if len(parts) != 4 || (parts[1] != "standard" && parts[1] != "performance") {
		return loadKey{}, fmt.Errorf("load index value %q is not node/class/cpuMilli/gpuMilli", v)
	}
	cpu, err1 := strconv.ParseInt(parts[2], 10, 64)
	gpu, err2 := strconv.ParseInt(parts[3], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return loadKey{}, fmt.Errorf("load index value %q: %w", v, err)
	}
	return loadKey{node: parts[0], performance: parts[1] == "performance", cpuMilli: cpu, gpuMilli: gpu}, nil
}

// loadIndexFunc files an active pod that requests CPU or GPUs under its
// loadKey. Unscheduled and finished pods and pods without requests are
// not indexed.
func loadIndexFunc(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" || !workload.IsActive(p) {
		return nil, nil
	}
	d := powerest.PodDemand(p)
	if d == (powerest.Demand{}) {
		return nil, nil
	}
	return []string{newLoadKey(p.Spec.NodeName, workload.Classify(p) == workload.Performance, d).String()}, nil
}

// loads sums the load index into each node's load; every node gets an
// entry, zero when nothing runs on it.
func (c *Controller) loads(nodes []*corev1.Node) (map[string]plan.NodeLoad, error) {
	out := make(map[string]plan.NodeLoad, len(nodes))
	for _, n := range nodes {
		out[n.Name] = plan.NodeLoad{}
	}
	for _, v := range c.podIndex.ListIndexFuncValues(loadIndex) {
		k, err := parseLoadKey(v)
		if err != nil {
			return nil, err
		}
		l, ok := out[k.node]
		if !ok {
			continue // a node that is gone
		}
		pods, err := c.podIndex.IndexKeys(loadIndex, v)
		if err != nil {
			return nil, fmt.Errorf("read the pods of load index value %q: %w", v, err)
		}
		sum := &l.Standard
		if k.performance {
			sum = &l.Performance
		}
		n := float64(len(pods))
		sum.CPUCores += n * float64(k.cpuMilli) / 1000
		sum.GPUs += n * float64(k.gpuMilli) / 1000
		out[k.node] = l
	}
	return out, nil
}

// slimPod keeps what the controller reads of a pod: identity, creation
// time and controlling owner, the workload-class annotation, the node, the
// scheduling constraints (node selector, node affinity, tolerations, the
// claims of its volumes), the
// phase and whether the scheduler found no node for it, and the pod's
// effective requests (park.PodRequests, with the CPU of
// powerest.PodDemand) as the requests of one container, in place of the
// whole pod spec. Planning reads the CPU and GPUs; parking fits pending
// pods with every resource and counts the pods no DaemonSet controls.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	slim := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			CreationTimestamp: p.CreationTimestamp},
		Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName, NodeSelector: p.Spec.NodeSelector, Tolerations: p.Spec.Tolerations},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		slim.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			slim.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason}}
		}
	}
	if v, ok := p.Annotations[joulie.AnnotationWorkloadClass]; ok {
		slim.Annotations = map[string]string{joulie.AnnotationWorkloadClass: v}
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		slim.Spec.Affinity = &corev1.Affinity{NodeAffinity: a.NodeAffinity}
	}
	// Parking reads a pending pod's claims to wake the node its local
	// volume lives on; only which claims, never the ephemeral template.
	for _, v := range p.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			slim.Spec.Volumes = append(slim.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}})
		case v.Ephemeral != nil:
			slim.Spec.Volumes = append(slim.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})
		}
	}
	req := park.PodRequests(p)
	// As the API server defaults them: a limit without a request is the
	// request (extended resources such as GPUs are often given so).
	for name, q := range resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{}) {
		if _, ok := req[name]; !ok {
			req[name] = q
		}
	}
	if d := powerest.PodDemand(p); d.CPUCores > 0 {
		// The planner's CPU: PodDemand also reads limits where requests
		// are missing.
		req[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(math.Round(d.CPUCores*1000)), resource.DecimalSI)
	}
	for name, q := range req {
		if q.IsZero() {
			delete(req, name)
		}
	}
	if len(req) > 0 {
		slim.Spec.Containers = []corev1.Container{{Name: "requests", Resources: corev1.ResourceRequirements{Requests: req}}}
	}
	return slim, nil
}
