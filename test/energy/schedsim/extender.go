package schedsim

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Extender is a scheduler extender called in process: the two verbs of
// kube-scheduler's HTTP extender with nodeCacheCapable set (nodes go in and
// come back by name) and the weight from its configuration. The simulator
// plugs Joulie's pure filter and scoring in here.
type Extender interface {
	// Filter returns the nodes, among nodes, that pod may run on, and for
	// the others a reason. Returning a node that was not offered is an
	// error, as it is for kube-scheduler.
	Filter(pod *v1.Pod, nodes []*v1.Node) (feasible []*v1.Node, failed map[string]string, err error)
	// Prioritize scores nodes for pod from extenderv1.MinExtenderPriority
	// to extenderv1.MaxExtenderPriority (0..10), as an HTTP extender
	// answers /prioritize.
	Prioritize(pod *v1.Pod, nodes []*v1.Node) (extenderv1.HostPriorityList, error)
	// Weight multiplies the extender's scores, as the extender's weight
	// in KubeSchedulerConfiguration does; it must be positive.
	Weight() int64
}

// filterByExtender narrows feasible to the nodes ext keeps, and records why
// the others were dropped. It follows findNodesThatPassExtenders in
// kube-scheduler 1.37's pkg/scheduler/schedule_one.go together with
// HTTPExtender.Filter in pkg/scheduler/extender.go (nodeCacheCapable: the
// kept nodes are mapped back to the NodeInfos that were offered).
func filterByExtender(ext Extender, pod *v1.Pod, feasible []fwk.NodeInfo, statuses *framework.NodeToStatus) ([]fwk.NodeInfo, error) {
	if len(feasible) == 0 {
		return feasible, nil
	}
	byName := make(map[string]fwk.NodeInfo, len(feasible))
	offered := make([]*v1.Node, len(feasible))
	for i, ni := range feasible {
		offered[i] = ni.Node()
		byName[offered[i].Name] = ni
	}
	kept, failed, err := ext.Filter(pod, offered)
	if err != nil {
		return nil, fmt.Errorf("extender filter for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	for name, reason := range failed {
		statuses.Set(name, fwk.NewStatus(fwk.Unschedulable, reason))
	}
	out := make([]fwk.NodeInfo, len(kept))
	for i, n := range kept {
		ni, ok := byName[n.Name]
		if !ok {
			return nil, fmt.Errorf("extender filter for pod %s/%s returned node %q, which was not among the %d nodes offered", pod.Namespace, pod.Name, n.Name, len(feasible))
		}
		out[i] = ni
	}
	return out, nil
}

// addExtenderScores adds ext's scores to the plugins' totals the way
// prioritizeNodes in kube-scheduler 1.37's pkg/scheduler/schedule_one.go
// does: each score times the extender's weight times
// MaxNodeScore/MaxExtenderPriority (100/10), summed per host name. Like
// kube-scheduler it neither clamps the extender's scores nor complains
// about hosts it was not asked about; those are ignored. Unlike it, the
// per-plugin breakdown (NodePluginScores.Scores) is not extended, since
// nothing here reads it.
func addExtenderScores(ext Extender, pod *v1.Pod, nodes []fwk.NodeInfo, scores []fwk.NodePluginScores) error {
	offered := make([]*v1.Node, len(nodes))
	for i, ni := range nodes {
		offered[i] = ni.Node()
	}
	list, err := ext.Prioritize(pod, offered)
	if err != nil {
		return fmt.Errorf("extender prioritize for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	weight := ext.Weight()
	total := make(map[string]int64, len(list))
	for _, hp := range list {
		total[hp.Host] += hp.Score * weight * (fwk.MaxNodeScore / extenderv1.MaxExtenderPriority)
	}
	for i := range scores {
		scores[i].TotalScore += total[scores[i].Name]
	}
	return nil
}
