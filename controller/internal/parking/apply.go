package parking

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/park"
	"joulie.io/joulie/pkg/workload"
)

// staleTaint is how old Joulie's taint on an awake node must be before a
// pass removes it as left over from a crash; younger, it may belong to a
// park whose state write the cache has not shown yet.
const staleTaint = time.Minute

// apply carries out one transition and returns the node's state after it
// as far as the writes went.
func (c *Controller) apply(ctx context.Context, v *view, t park.Transition) (joulie.PowerState, error) {
	node := v.nodes[t.Node]
	prof := v.profiles[t.Node]
	log := c.log.With("node", t.Node, "from", t.From, "to", t.To)
	switch {
	case t.To == joulie.PowerParking:
		// The taint first: once the state says parking, the grace counts
		// from a moment the scheduler could already see the taint.
		if err := c.setTaint(ctx, t.Node, true); err != nil {
			return t.From, err
		}
		if err := c.writeState(ctx, prof, t.Node, joulie.PowerParking, 0); err != nil {
			return t.From, err
		}
		log.Info("parking", "reason", t.Reason)
		c.event(node, false, "Parking", "tainted %s:NoSchedule to park it: %s", joulie.TaintParked, t.Reason)
		return t.To, nil

	case t.From == joulie.PowerParking && t.To == joulie.PowerParked:
		// The cordon as well as the taint: a scheduler or a tool that
		// ignores the taint (a pod that tolerates it, a nodeName set by
		// hand) still honours a cordon, and kubectl shows it.
		foreign, err := c.setCordon(ctx, t.Node, true)
		if err != nil {
			return t.From, err
		}
		if foreign {
			return c.abort(ctx, v, t, "park aborted: the node was cordoned by someone else")
		}
		// Only after the cordon: the cache may lag a binding the
		// scheduler made just before it saw the taint, so ask the API
		// server itself, at a moment nothing new may land.
		landed, err := c.stillEmpty(ctx, t.Node)
		if err != nil {
			return t.From, err
		}
		if landed != "" {
			return c.abort(ctx, v, t, "park aborted: "+landed)
		}
		if err := c.writeState(ctx, prof, t.Node, joulie.PowerParked, 0); err != nil {
			return t.From, err
		}
		c.opts.Metrics.Parks.Inc()
		log.Info("parked", "reason", t.Reason)
		c.event(node, false, "Parked", "%s", t.Reason)
		return t.To, nil

	case t.From == joulie.PowerParking && t.To.Awake():
		return c.abort(ctx, v, t, t.Reason)

	case t.To == joulie.PowerWaking:
		// The state first: a crash between the two leaves a waking node
		// that the next leader wakes at once (wakes.ensure), never a
		// host started while its profile still says parked (which its
		// agent would switch off).
		if err := c.writeState(ctx, prof, t.Node, joulie.PowerWaking, t.WakeAttempts); err != nil {
			return t.From, err
		}
		c.opts.Metrics.Wakes.Inc()
		log.Info("waking", "attempt", t.WakeAttempts, "reason", t.Reason)
		c.event(node, false, "Waking", "wake attempt %d: %s", t.WakeAttempts, t.Reason)
		// A retry follows an attempt the node did not come back from
		// within the resume timeout: the waker may restart a host that is
		// on but hung, never one whose kubelet renews (park.Transition's
		// Cycle). The call runs off the pass; its outcome is reported
		// when it ends.
		c.wakes.send(ctx, node, WakeRequest{Attempt: t.WakeAttempts, Cycle: t.Cycle})
		return t.To, nil

	case t.To == joulie.PowerWakeFailed:
		if err := c.writeState(ctx, prof, t.Node, joulie.PowerWakeFailed, t.WakeAttempts); err != nil {
			return t.From, err
		}
		c.opts.Metrics.WakeFailures.Inc()
		log.Warn("wake failed", "reason", t.Reason)
		c.event(node, true, "WakeFailed", "%s; the node stays tainted %s until it is Ready", t.Reason, joulie.TaintParked)
		return t.To, nil

	case t.To.Awake():
		// From waking or wake-failed: the node is back with its agent up;
		// from parked: the host stayed on or was booted, and its agent
		// says so. The state first, then the taint and the cordon go, as
		// for an abort.
		if err := c.writeState(ctx, prof, t.Node, joulie.PowerAwake, t.WakeAttempts); err != nil {
			return t.From, err
		}
		if err := c.setTaint(ctx, t.Node, false); err != nil {
			return t.To, err
		}
		if _, err := c.setCordon(ctx, t.Node, false); err != nil {
			return t.To, err
		}
		if t.From == joulie.PowerWaking && prof != nil && prof.Spec.PowerStateSince != nil {
			c.opts.Metrics.WakeLatency.Observe(v.in.Now.Sub(prof.Spec.PowerStateSince.Time).Seconds())
		}
		log.Info("awake", "reason", t.Reason)
		c.event(node, false, "Awake", "%s", t.Reason)
		return t.To, nil
	}
	return t.From, fmt.Errorf("node %s: no way to carry out %s → %s", t.Node, t.From, t.To)
}

// abort ends a park: the state goes back to awake, then the taint and
// parking's own cordon go.
func (c *Controller) abort(ctx context.Context, v *view, t park.Transition, reason string) (joulie.PowerState, error) {
	if err := c.writeState(ctx, v.profiles[t.Node], t.Node, joulie.PowerAwake, 0); err != nil {
		return t.From, err
	}
	c.opts.Metrics.ParkAborts.Inc()
	c.log.Info("park aborted", "node", t.Node, "reason", reason)
	c.event(v.nodes[t.Node], false, "ParkAborted", "%s", reason)
	if err := c.setTaint(ctx, t.Node, false); err != nil {
		return joulie.PowerAwake, err
	}
	if _, err := c.setCordon(ctx, t.Node, false); err != nil {
		return joulie.PowerAwake, err
	}
	return joulie.PowerAwake, nil
}

// setCordon cordons the node for a park (spec.unschedulable, with the
// annotation joulie.io/cordoned-for-park saying it is parking's), or
// lifts parking's own cordon. A cordon without the annotation is someone
// else's: it is never lifted, and when cordoning, foreign reports it so
// that the park is aborted like any park of a cordoned node. The write
// is from a fresh read, conditional on its resourceVersion.
func (c *Controller) setCordon(ctx context.Context, name string, want bool) (foreign bool, err error) {
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		marked := n.Annotations[joulie.AnnotationCordonedForPark] == "true"
		var patch map[string]any
		switch {
		case want && n.Spec.Unschedulable:
			foreign = !marked
			return nil
		case want:
			patch = map[string]any{"metadata": map[string]any{"resourceVersion": n.ResourceVersion,
				"annotations": map[string]any{joulie.AnnotationCordonedForPark: "true"}}, "spec": map[string]any{"unschedulable": true}}
		case !marked:
			return nil
		default:
			// An annotation without the cordon (someone uncordoned the
			// node by hand) only loses the annotation.
			patch = map[string]any{"metadata": map[string]any{"resourceVersion": n.ResourceVersion,
				"annotations": map[string]any{joulie.AnnotationCordonedForPark: nil}}, "spec": map[string]any{"unschedulable": false}}
		}
		body, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		_, err = c.kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: StateFieldManager})
		return err
	})
	if err != nil {
		if want {
			return false, fmt.Errorf("cordon Node %s to park it: %w", name, err)
		}
		return false, fmt.Errorf("lift the cordon parking put on Node %s (spec.unschedulable, annotation %s): %w", name, joulie.AnnotationCordonedForPark, err)
	}
	return foreign, nil
}

// labelWarmReserve puts joulie.io/warm-reserve=true on the nodes Decide
// holds as the warm reserve and takes the label off every other node, so
// that with reserveFor any, where Decide holds none, a label left from an
// earlier setting goes too. Only nodes whose cached label differs are
// written; each write touches that one label, so no read comes first.
func (c *Controller) labelWarmReserve(ctx context.Context, v *view, res park.Result) []error {
	family := map[string]park.Family{}
	for _, f := range res.Families {
		for _, name := range f.WarmReserve {
			family[name] = f
		}
	}
	var errs []error
	for _, pn := range v.in.Nodes {
		n := pn.Node
		cur, has := n.Labels[joulie.LabelWarmReserve]
		f, want := family[n.Name]
		if want == (cur == "true") && (want || !has) {
			continue
		}
		var value any // null in a merge patch removes the label
		if want {
			value = "true"
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{joulie.LabelWarmReserve: value}}})
		if err != nil {
			errs = append(errs, fmt.Errorf("encode the %s label of Node %s: %w", joulie.LabelWarmReserve, n.Name, err))
			continue
		}
		_, err = c.kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: StateFieldManager})
		switch {
		case isNotFound(err):
		case err != nil && want:
			errs = append(errs, fmt.Errorf("label Node %s %s=true: %w", n.Name, joulie.LabelWarmReserve, err))
		case err != nil:
			errs = append(errs, fmt.Errorf("remove the label %s from Node %s: %w", joulie.LabelWarmReserve, n.Name, err))
		case want:
			c.log.Info("holding the node as the warm reserve", "node", n.Name, "family", f.Name, "reserve", f.Reserve)
			c.event(n, false, "WarmReserve", "held idle for performance pods as one of the %d nodes of family %s's warm reserve; other pods are kept off (%s=true)",
				f.Reserve, f.Name, joulie.LabelWarmReserve)
		default:
			c.log.Info("releasing the node from the warm reserve", "node", n.Name)
			c.event(n, false, "WarmReserveReleased", "no longer held as the warm reserve; the label %s is removed", joulie.LabelWarmReserve)
		}
	}
	return errs
}

// stillEmpty reads the node and its pods from the API server and says what
// forbids switching it off now ("" when nothing does): a pod that no
// DaemonSet controls on it, or Joulie's taint gone.
func (c *Controller) stillEmpty(ctx context.Context, name string) (string, error) {
	n, err := c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read Node %s before parking it: %w", name, err)
	}
	if taintIndex(n) < 0 {
		return fmt.Sprintf("the taint %s is no longer on the node", joulie.TaintParked), nil
	}
	pods, err := c.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	if err != nil {
		return "", fmt.Errorf("list the pods of Node %s before parking it (the controller needs to list pods): %w", name, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == name && workload.IsActive(p) && !workload.IsDaemonSet(p) {
			return fmt.Sprintf("pod %s/%s landed on the node after the taint", p.Namespace, p.Name), nil
		}
	}
	return "", nil
}

// writeState records the node's power state in its NodePowerProfile spec
// by server-side apply under StateFieldManager. The cached
// resourceVersion makes the write conditional: a decision taken on an
// object that changed since is refused, and the next pass decides again.
func (c *Controller) writeState(ctx context.Context, cur *joulie.NodePowerProfile, name string, s joulie.PowerState, attempts int) error {
	meta := map[string]any{"name": name}
	if cur != nil {
		meta["resourceVersion"] = cur.ResourceVersion
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": joulie.SchemeGroupVersion.String(), "kind": "NodePowerProfile", "metadata": meta,
		"spec": map[string]any{"powerState": s, "powerStateSince": metav1.NewTime(c.opts.Now()), "wakeAttempts": attempts},
	})
	if err != nil {
		return fmt.Errorf("encode the power state of NodePowerProfile %s: %w", name, err)
	}
	force := true
	if _, err := c.joulie.JoulieV1alpha1().NodePowerProfiles().Patch(ctx, name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: StateFieldManager, Force: &force}); err != nil {
		return fmt.Errorf("set NodePowerProfile %s spec.powerState=%s: %w", name, s, err)
	}
	return nil
}

func taintIndex(n *corev1.Node) int {
	for i, t := range n.Spec.Taints {
		if t.Key == joulie.TaintParked && t.Effect == corev1.TaintEffectNoSchedule {
			return i
		}
	}
	return -1
}

// setTaint puts Joulie's taint on the node or takes it off, from a fresh
// read and conditional on its resourceVersion, so that a taint another
// party changed at the same time is not lost.
func (c *Controller) setTaint(ctx context.Context, name string, want bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		i := taintIndex(n)
		if (i >= 0) == want {
			return nil
		}
		taints := make([]corev1.Taint, 0, len(n.Spec.Taints)+1)
		if want {
			now := metav1.NewTime(c.opts.Now())
			taints = append(append(taints, n.Spec.Taints...), corev1.Taint{Key: joulie.TaintParked, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &now})
		} else {
			taints = append(append(taints, n.Spec.Taints[:i]...), n.Spec.Taints[i+1:]...)
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": n.ResourceVersion},
			"spec": map[string]any{"taints": taints}})
		if err != nil {
			return err
		}
		_, err = c.kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: StateFieldManager})
		return err
	})
	if err != nil {
		verb := "remove the taint " + joulie.TaintParked + " from"
		if want {
			verb = "taint " + joulie.TaintParked + ":NoSchedule"
		}
		return fmt.Errorf("%s Node %s: %w", verb, name, err)
	}
	return nil
}

// repairTaints makes the taint agree with the recorded state where a crash
// between the two writes of a transition left them apart: a node not
// awake gets the taint, an awake node loses a taint older than
// staleTaint. Both objects are read again from the API server before
// anything is written, since the cache may show one write and not the
// other.
func (c *Controller) repairTaints(ctx context.Context, v *view) []error {
	var errs []error
	for _, pn := range v.in.Nodes {
		n := pn.Node
		i := taintIndex(n)
		awake := pn.State.Awake()
		if awake == (i < 0) {
			continue
		}
		if awake {
			if added := n.Spec.Taints[i].TimeAdded; added != nil && v.in.Now.Sub(added.Time) < staleTaint {
				continue
			}
		}
		fresh, err := c.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, n.Name, metav1.GetOptions{})
		var state joulie.PowerState
		switch {
		case err == nil:
			state = fresh.Spec.PowerState
		case !isNotFound(err):
			errs = append(errs, fmt.Errorf("read NodePowerProfile %s to repair its taint: %w", n.Name, err))
			continue
		}
		if state.Awake() != awake {
			continue // the cache was behind; the next pass sees both
		}
		c.log.Info("repairing the parked taint left by an interrupted transition", "node", n.Name, "state", awakeIfEmpty(state))
		if err := c.setTaint(ctx, n.Name, !awake); err != nil {
			errs = append(errs, err)
		}
	}
	return append(errs, c.repairCordons(ctx, v)...)
}

// repairCordons lifts parking's own cordon from a node recorded awake,
// which a crash between the state write and the uncordon of a wake or
// an abort leaves behind. The cordon goes on only as a park finishes,
// while the state says parking, and a park interrupted there goes on or
// is aborted on the next pass; so only awake nodes need repair. The
// profile is read again first, since the cache may show the cordon and
// not the state after it.
func (c *Controller) repairCordons(ctx context.Context, v *view) []error {
	var errs []error
	for _, pn := range v.in.Nodes {
		n := pn.Node
		if !pn.State.Awake() || n.Annotations[joulie.AnnotationCordonedForPark] != "true" {
			continue
		}
		fresh, err := c.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, n.Name, metav1.GetOptions{})
		switch {
		case isNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("read NodePowerProfile %s to repair its cordon: %w", n.Name, err))
			continue
		case !fresh.Spec.PowerState.Awake():
			continue // the cache was behind
		}
		c.log.Info("lifting the cordon an interrupted wake or abort left", "node", n.Name)
		if _, err := c.setCordon(ctx, n.Name, false); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
