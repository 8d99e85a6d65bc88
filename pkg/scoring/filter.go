package scoring

import (
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Labels are the node labels the filter reads: the profile and draining
// labels it falls back on when a node has no twin class yet, and the warm
// reserve's; empty strings when the node does not carry them.
type Labels struct {
	// Profile is the value of joulie.io/power-profile.
	Profile string
	// Draining is the value of joulie.io/draining.
	Draining string
	// WarmReserve is the value of joulie.io/warm-reserve.
	WarmReserve string
}

// Verdict is the filter's answer for one node: Admit, or the rule that
// rejected it. It is a small value rather than a formatted string so that
// filtering thousands of nodes allocates nothing.
type Verdict uint8

const (
	// Admit lets the pod through to the node.
	Admit Verdict = iota
	// RejectTwinEco: the node's twin class is eco.
	RejectTwinEco
	// RejectTwinDraining: the node's twin class is draining.
	RejectTwinDraining
	// RejectLabelEco: no twin class, and the node is labelled eco.
	RejectLabelEco
	// RejectLabelDraining: no twin class, and the node is labelled
	// draining.
	RejectLabelDraining
	// RejectWarmReserve: a pod that is not performance-sensitive, and the
	// node is held as the warm reserve for performance pods.
	RejectWarmReserve
)

// Verdicts lists every rejection in order, for metrics that must show each
// one from the start. An array, so that a count per verdict can be sized
// by it: [1 + len(Verdicts)]int, indexed by Verdict.
var Verdicts = [...]Verdict{RejectTwinEco, RejectTwinDraining, RejectLabelEco, RejectLabelDraining, RejectWarmReserve}

// Reason is the message the scheduler records for a rejected node: it ends
// up in the pod's FailedScheduling event, so it says what the operator
// should look at.
func (v Verdict) Reason() string {
	switch v {
	case RejectTwinEco:
		return "joulie: NodeTwin class is eco; performance pods need a performance node"
	case RejectTwinDraining:
		return "joulie: NodeTwin class is draining; performance pods need a performance node"
	case RejectLabelEco:
		return "joulie: node labelled joulie.io/power-profile=eco and no NodeTwin class yet; performance pods need a performance node"
	case RejectLabelDraining:
		return "joulie: node labelled joulie.io/draining=true and no NodeTwin class yet; performance pods need a performance node"
	case RejectWarmReserve:
		return "joulie: node held idle as the warm reserve for performance pods (joulie.io/warm-reserve=true); other pods go to other nodes, or wait for a parked node to wake"
	}
	return ""
}

// String is the verdict's short name, used as a metric label.
func (v Verdict) String() string {
	switch v {
	case Admit:
		return "admit"
	case RejectTwinEco:
		return "twin_eco"
	case RejectTwinDraining:
		return "twin_draining"
	case RejectLabelEco:
		return "label_eco"
	case RejectLabelDraining:
		return "label_draining"
	case RejectWarmReserve:
		return "warm_reserve"
	}
	return "unknown"
}

// Filter decides whether a pod may go to a node. It has two hard rules:
// performance pods stay off eco and draining nodes, and every other pod
// stays off a node labelled joulie.io/warm-reserve=true, which the
// controller holds idle for performance pods (parking.reserveFor:
// performance). The caller leaves DaemonSet pods out: they belong on
// every node, the reserve's included.
//
// The twin's class decides when the node has one (twin non-nil with a
// class), stale or not: a stale twin only loses its say in the score, since
// letting a performance pod onto a node last known to be capped would
// break the pod's promise on old evidence just as much. Without a twin
// class the node's labels stand in, as the controller writes them next to
// the twin. A node with neither is unknown to Joulie and admitted.
//
// The design names only joulie.io/power-profile=eco as the label fallback;
// joulie.io/draining=true is honoured too because it is the label form of
// the draining class, written by the same controller.
func Filter(performance bool, twin *Twin, labels Labels) Verdict {
	if !performance {
		if labels.WarmReserve == "true" {
			return RejectWarmReserve
		}
		return Admit
	}
	if twin != nil && twin.Class != "" {
		switch twin.Class {
		case joulie.ClassEco:
			return RejectTwinEco
		case joulie.ClassDraining:
			return RejectTwinDraining
		}
		return Admit
	}
	if labels.Profile == string(joulie.ProfileEco) {
		return RejectLabelEco
	}
	if labels.Draining == "true" {
		return RejectLabelDraining
	}
	return Admit
}
