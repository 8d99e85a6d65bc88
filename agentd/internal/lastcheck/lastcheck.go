// Package lastcheck is the agent's last word before a park switches its
// host off: a fresh look at what runs on the node, from the two places
// that can say so, and a verdict. The controller checked the node's pods
// before it recorded the park, but a pod bound by spec.nodeName (which no
// scheduler and no NoSchedule taint stops), one that tolerates every
// taint, or one that lands between the controller's read and the agent's
// action would be switched off with the host. So right before it asks
// logind to power off, the agent asks again:
//
//   - the kubelet (its pod-resources List): the pods it has admitted,
//     which run or are about to, whatever the API server's state;
//   - the API server, by a live read (not a cache) of the pods bound to
//     the node, through an identity the Node authorizer confines to the
//     node: pods bound that the kubelet has not seen yet.
//
// Any pod either names that is not terminal and that no DaemonSet
// controls forbids the power-off. A source that cannot be read forbids
// it too: the agent switches a host off only when it has confirmed it
// empty. Check is a pure function over what the two sources answered, so
// tables test it; the daemon does the reading.
package lastcheck

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"joulie.io/joulie/pkg/workload"
)

// Kubelet is the kubelet's answer: the pods it has admitted, by
// namespace/name. Off is true when the agent is configured not to ask
// the kubelet (podResources.socket none); Err is why it could not.
type Kubelet struct {
	Pods []string
	Off  bool
	Err  error
}

// API is the API server's answer: the pods bound to the node, read live.
// Err is why it could not be read.
type API struct {
	Pods []*corev1.Pod
	Err  error
}

// Verdict is the outcome: Blockers empty means the host may be powered
// off now.
type Verdict struct {
	// Blockers say, each in a line an operator can act on, what forbids
	// the power-off: a pod and where it was seen, or a source that could
	// not be read.
	Blockers []string
	// Checked says what was looked at, for the status message.
	Checked string
}

// Answer is the verdict as the agent's Parking.CheckEmpty gives it: why
// the host must stay on ("" when it may go off) and what was looked at.
func (v Verdict) Answer() (why, checked string) {
	if v.OK() {
		return "", v.Checked
	}
	return v.Message(), v.Checked
}

// OK reports whether nothing forbids the power-off.
func (v Verdict) OK() bool { return len(v.Blockers) == 0 }

// Message is the verdict in one sentence.
func (v Verdict) Message() string {
	if v.OK() {
		return "no pod that a DaemonSet does not control is bound to or admitted on the node (" + v.Checked + ")"
	}
	more := ""
	if len(v.Blockers) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(v.Blockers)-1)
	}
	return v.Blockers[0] + more
}

// Check decides from the two answers.
func Check(k Kubelet, a API) Verdict {
	var v Verdict
	var checked []string
	// What the API server says of each pod, to tell a DaemonSet's pod the
	// kubelet runs from a workload.
	daemonSet := map[string]bool{}
	terminal := map[string]bool{}
	if a.Err != nil {
		v.Blockers = append(v.Blockers, fmt.Sprintf("the node's pods could not be read from the API server, so the node is not known to be empty: %v", a.Err))
	} else {
		checked = append(checked, fmt.Sprintf("%d pods bound in the API server", len(a.Pods)))
		for _, p := range a.Pods {
			key := p.Namespace + "/" + p.Name
			switch {
			case workload.IsDaemonSet(p):
				daemonSet[key] = true
			case !workload.IsActive(p):
				terminal[key] = true
			default:
				v.Blockers = append(v.Blockers, fmt.Sprintf("pod %s is bound to the node (phase %s) and no DaemonSet controls it", key, phase(p)))
			}
		}
	}
	switch {
	case k.Off:
		checked = append(checked, "the kubelet not asked: podResources.socket is none")
	case k.Err != nil:
		v.Blockers = append(v.Blockers, fmt.Sprintf("the kubelet could not say which pods it admitted, so the node is not known to be empty: %v", k.Err))
	default:
		checked = append(checked, fmt.Sprintf("%d pods admitted by the kubelet", len(k.Pods)))
		bound := map[string]bool{}
		if a.Err == nil {
			for _, p := range a.Pods {
				bound[p.Namespace+"/"+p.Name] = true
			}
		}
		for _, key := range k.Pods {
			switch {
			case daemonSet[key]:
			case a.Err != nil:
				// Without the API server's answer the pod cannot be told
				// from a DaemonSet's: already refused above.
			case terminal[key]:
				// Its containers may still be stopping; the kubelet still
				// lists it, so the pod is not gone yet.
				v.Blockers = append(v.Blockers, fmt.Sprintf("pod %s has ended in the API server but the kubelet still runs it", key))
			case !bound[key]:
				v.Blockers = append(v.Blockers, fmt.Sprintf("pod %s is admitted by the kubelet but not bound to the node in the API server (a static pod, or one deleted while it stops)", key))
			default:
				// Bound and active: already a blocker from the API side.
			}
		}
	}
	slices.Sort(v.Blockers)
	v.Blockers = slices.Compact(v.Blockers)
	v.Checked = strings.Join(checked, ", ")
	return v
}

func phase(p *corev1.Pod) string {
	if p.Status.Phase == "" {
		return "not yet reported"
	}
	return string(p.Status.Phase)
}
