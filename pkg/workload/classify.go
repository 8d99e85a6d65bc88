// Package workload classifies pods by the power supply they demand. The
// controller counts performance-sensitive pods to size the performance pool
// and to guard downgrades; the scheduler extender reads a pod's class to
// filter and score nodes. Both import this package so that a pod is never
// counted one way by the controller and placed another way by the extender.
//
// A pod falls into exactly one Class (SPEC.md, "Labels and annotations"):
//
//   - Performance: its joulie.io/workload-class annotation is exactly
//     "performance", or its required constraints allow the performance
//     profile but not eco.
//   - EcoOnly: its required constraints allow eco but not performance.
//   - General: everything else, including pods that allow both profiles,
//     pods without constraints on joulie.io/power-profile, and pods whose
//     constraints allow neither profile.
//
// Only required constraints count: pod.spec.nodeSelector and
// requiredDuringSchedulingIgnoredDuringExecution node affinity. Preferred
// affinity is a wish, not a demand, and never changes the class.
//
// All functions here are allocation-free and safe on a nil pod, because the
// controller classifies every pod of the cluster on each tick and the
// extender classifies one pod on each scheduling request.
package workload

import (
	corev1 "k8s.io/api/core/v1"

	"joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Class is the kind of power supply a pod demands.
type Class string

const (
	// Performance pods must run on performance nodes; they are the pressure
	// the queue-aware policy answers and what the downgrade guard protects.
	Performance Class = "performance"
	// EcoOnly pods may run only on eco nodes.
	EcoOnly Class = "eco-only"
	// General pods can run on either profile and demand no particular
	// supply.
	General Class = "general"
)

// profileSet is the subset of {performance, eco} that a pod's constraints
// let it land on, as a bit set so that intersecting (AND) and joining (OR)
// selector terms costs nothing.
type profileSet uint8

const (
	allowPerformance profileSet = 1 << iota
	allowEco

	allowNone profileSet = 0
	allowBoth            = allowPerformance | allowEco
)

// profileOf maps a label value of joulie.io/power-profile to its bit. Any
// other value names no profile Joulie ever writes, so a node carrying it
// does not exist as far as classification is concerned.
func profileOf(value string) profileSet {
	switch v1alpha1.Profile(value) {
	case v1alpha1.ProfilePerformance:
		return allowPerformance
	case v1alpha1.ProfileEco:
		return allowEco
	}
	return allowNone
}

// Classify returns the class of pod.
//
// The annotation wins over constraints: a pod annotated "performance" is
// Performance even when its node affinity allows only eco, since the
// author said outright what it needs. The annotation is case-sensitive;
// "standard", an absent annotation and any unknown value (such as
// "Performance" or "batch") all mean standard, and the class then follows
// from the constraints alone.
//
// A pod whose constraints allow neither profile (for example
// `joulie.io/power-profile DoesNotExist`, or `In [turbo]`) can only land on
// nodes Joulie does not label. It is General: it demands no performance
// supply, so counting it as Performance would add performance nodes it can
// never use, and it excludes eco nodes only because it excludes every node
// Joulie manages.
func Classify(pod *corev1.Pod) Class {
	if pod == nil {
		return General
	}
	if WorkloadClass(pod) == v1alpha1.WorkloadClassPerformance {
		return Performance
	}
	switch allowedProfiles(pod) {
	case allowPerformance:
		return Performance
	case allowEco:
		return EcoOnly
	}
	return General
}

// WorkloadClass returns the pod's workload class from its
// joulie.io/workload-class annotation alone: v1alpha1.WorkloadClassPerformance
// when the value is exactly "performance", v1alpha1.WorkloadClassStandard
// otherwise (absent, "standard", or a value the contract does not define).
// It is one input of Classify, which also reads scheduling constraints and
// is what the controller and the extender both decide by (SPEC.md: one
// shared classification).
func WorkloadClass(pod *corev1.Pod) string {
	if pod == nil {
		return v1alpha1.WorkloadClassStandard
	}
	// The lookup is kept apart from the comparison on purpose: Go 1.26
	// compiles `m[k] == "constant"` into one map lookup per compared chunk
	// of the constant, which made this ten times slower.
	v := pod.Annotations[v1alpha1.AnnotationWorkloadClass]
	if v == v1alpha1.WorkloadClassPerformance {
		return v1alpha1.WorkloadClassPerformance
	}
	return v1alpha1.WorkloadClassStandard
}

// AllowedProfiles reports which node profiles the pod's required
// scheduling constraints admit on joulie.io/power-profile. Both are true for
// a pod without such constraints. Both false means the pod can land only on
// nodes without a profile label (or on none at all).
//
// The rules follow the scheduler's own matching:
//   - nodeSelector joulie.io/power-profile=V admits only V;
//   - required node affinity terms are ORed, the matchExpressions of a term
//     are ANDed, and the result is ANDed with the nodeSelector;
//   - on joulie.io/power-profile, In admits the listed profiles, NotIn
//     admits the unlisted ones, Exists admits both, and DoesNotExist admits
//     neither; Gt and Lt admit neither, because they compare integers and
//     no profile value parses as one;
//   - expressions on other keys and matchFields do not restrict the
//     profile, so a term without an expression on the key admits both;
//   - a term with no expressions and no fields at all matches no node in
//     Kubernetes, so it admits neither;
//   - no affinity, or an empty list of terms (which the API server refuses
//     anyway), admits both.
func AllowedProfiles(pod *corev1.Pod) (performance, eco bool) {
	if pod == nil {
		return true, true
	}
	set := allowedProfiles(pod)
	return set&allowPerformance != 0, set&allowEco != 0
}

// IsActive reports whether the pod still counts as demand: every pod that is
// not in phase Succeeded or Failed, pending and unscheduled ones included,
// since the queue-aware policy sizes the performance pool for the pods
// waiting to run too. A pod with a deletionTimestamp still counts: it keeps
// running, and drawing power, through its grace period until it is gone,
// and the downgrade guard must not cap a node under it. A pod in phase
// Unknown counts as well, because its node may still be running it.
func IsActive(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return false
	}
	return true
}

// IsPerformanceDemand reports whether a pod counts as performance demand:
// active and performance-sensitive. The controller counts it to keep a
// node from eco, the agent to refuse an eco cap under it.
func IsPerformanceDemand(pod *corev1.Pod) bool {
	return IsActive(pod) && Classify(pod) == Performance
}

// IsDaemonSet reports whether a DaemonSet controls the pod. Such a pod
// follows its node: it never keeps a node awake, never wakes one, and
// never counts as work that a node held for other pods must turn away.
func IsDaemonSet(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	for _, o := range pod.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

func allowedProfiles(pod *corev1.Pod) profileSet {
	set := allowBoth
	if v, ok := pod.Spec.NodeSelector[v1alpha1.LabelPowerProfile]; ok {
		set = profileOf(v)
	}
	if set == allowNone {
		return allowNone
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return set
	}
	return set & termsAllow(aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
}

// termsAllow joins the terms, which the scheduler ORs.
func termsAllow(terms []corev1.NodeSelectorTerm) profileSet {
	if len(terms) == 0 {
		return allowBoth
	}
	set := allowNone
	for i := range terms {
		set |= termAllows(&terms[i])
		if set == allowBoth {
			break
		}
	}
	return set
}

// termAllows intersects the requirements of one term, which the scheduler
// ANDs.
func termAllows(term *corev1.NodeSelectorTerm) profileSet {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return allowNone
	}
	set := allowBoth
	for i := range term.MatchExpressions {
		req := &term.MatchExpressions[i]
		if req.Key != v1alpha1.LabelPowerProfile {
			continue
		}
		set &= requirementAllows(req)
		if set == allowNone {
			break
		}
	}
	return set
}

func requirementAllows(req *corev1.NodeSelectorRequirement) profileSet {
	switch req.Operator {
	case corev1.NodeSelectorOpIn:
		set := allowNone
		for _, v := range req.Values {
			set |= profileOf(v)
		}
		return set
	case corev1.NodeSelectorOpNotIn:
		set := allowBoth
		for _, v := range req.Values {
			set &^= profileOf(v)
		}
		return set
	case corev1.NodeSelectorOpExists:
		return allowBoth
	}
	// DoesNotExist, Gt, Lt, and operators the API server would refuse: the
	// scheduler matches no labelled node with them.
	return allowNone
}
