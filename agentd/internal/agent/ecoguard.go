package agent

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// EcoGuard is the agent's last line of the promise that performance work
// never runs capped: before it applies an eco target from the cluster it
// looks at the node's pods, and while a performance pod runs there it
// holds the node at its performance caps instead. The controller keeps
// such a node draining (policy.GuardDrain), so the guard acts only on a
// race it lost or a scheduler that bypassed the extender.
type EcoGuard struct {
	// Refused is true while an eco target is held off; Pods names the
	// performance pods that hold it ("namespace/name").
	Refused bool
	Pods    []string
	// Since is when the refusal began.
	Since time.Time
	// Unchecked says why the pods could not be checked (the pod list is
	// not known yet, or its watch fails): the target then applies as
	// asked, since the controller has checked before publishing it.
	Unchecked string
}

// Message says what the guard does, for status, logs and joulie-agentctl.
func (g EcoGuard) Message() string {
	switch {
	case g.Refused:
		more := ""
		if len(g.Pods) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(g.Pods)-1)
		}
		return fmt.Sprintf("eco not applied: performance pod %s%s runs on this node; it stays at its performance caps until no performance pod runs here", g.Pods[0], more)
	case g.Unchecked != "":
		return "eco applied without checking the node's pods: " + g.Unchecked
	}
	return ""
}

// guardEco returns the target to enforce in place of spec and what the
// guard did. Only eco targets from the cluster (directly or kept by the
// failsafe) are checked: an operator's override and the standalone
// profile are the operator's own choice.
func (a *Agent) guardEco(spec *joulie.NodePowerProfileSpec, source string) (*joulie.NodePowerProfileSpec, EcoGuard) {
	if spec == nil || spec.Profile != joulie.ProfileEco || a.opts.PerformancePods == nil ||
		(source != SourceCluster && source != SourceFailsafe) {
		return spec, EcoGuard{}
	}
	pods, err := a.opts.PerformancePods()
	if err != nil {
		return spec, EcoGuard{Unchecked: err.Error()}
	}
	if len(pods) == 0 {
		return spec, EcoGuard{}
	}
	lifted := spec.DeepCopy()
	lifted.Profile = joulie.ProfilePerformance
	if lifted.CPU != nil {
		lifted.CPU = &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(100.0)}
	}
	if lifted.GPU != nil {
		lifted.GPU = &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(100.0)}}
	}
	return lifted, EcoGuard{Refused: true, Pods: pods}
}

// logGuard reports a change of what the guard does.
func (a *Agent) logGuard(prev, cur EcoGuard) {
	switch {
	case cur.Refused && (!prev.Refused || !slices.Equal(prev.Pods, cur.Pods)):
		a.log.Warn("eco target refused: performance pods run on this node", "pods", cur.Pods)
	case !cur.Refused && prev.Refused:
		a.log.Info("no performance pod runs here any more; the eco target applies")
	case cur.Unchecked != "" && prev.Unchecked == "":
		a.log.Warn("eco target applied without checking the node's pods", "reason", cur.Unchecked)
	}
}

// ecoCondition is the EcoRefused condition of a snapshot; nil when the
// guard holds nothing off.
func (s Snapshot) ecoCondition() *metav1.Condition {
	if !s.Guard.Refused {
		return nil
	}
	return &metav1.Condition{Type: joulie.ConditionEcoRefused, Status: metav1.ConditionTrue, ObservedGeneration: s.Generation,
		Reason: "PerformancePodRunning", Message: s.Guard.Message(), LastTransitionTime: newTime(s.Guard.Since)}
}
