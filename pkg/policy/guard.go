package policy

import (
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// State is a node's state in the downgrade guard (operator seed).
type State string

const (
	// ActivePerformance: the node supplies performance.
	ActivePerformance State = "ActivePerformance"
	// DrainingPerformance: eco is planned and published, but
	// performance-sensitive pods still run; the node is labelled draining.
	DrainingPerformance State = "DrainingPerformance"
	// ActiveEco: the node runs capped.
	ActiveEco State = "ActiveEco"
)

// Transition names why the guard moved, for metrics and Events.
type Transition string

const (
	None         Transition = ""
	Defer        Transition = "defer"         // eco planned, performance pods present
	Allow        Transition = "allow"         // eco planned, no performance pods
	StillBlocked Transition = "still_blocked" // draining, pods still present
	Unblocked    Transition = "unblocked"     // draining, pods gone: eco committed
	ReplanPerf   Transition = "replan_perf"   // draining, performance planned again
	PlanPerf     Transition = "plan_perf"     // eco, performance planned
	Dwell        Transition = "dwell"         // eco planned too soon after the last change
)

// GuardInput is one node's situation on one tick.
type GuardInput struct {
	// Current is the node's state; empty for a node seen for the first
	// time, which starts as ActivePerformance (nodes start uncapped).
	Current State
	// Planned is what the policy wants.
	Planned joulie.Profile
	// PerfPods counts active performance-sensitive pods on the node.
	PerfPods int
	// LastChange is when the node last changed state; MinEcoDwell keeps a
	// node that just changed from going (back) to eco before it has
	// passed (MIN_ECO_DWELL; 0 is the seed's behaviour).
	LastChange  time.Time
	MinEcoDwell time.Duration
	Now         time.Time
}

// Decision is what the controller publishes for the node.
type Decision struct {
	Next State
	// Profile is the desired profile written to NodePowerProfile and the
	// joulie.io/power-profile label: eco as soon as eco is decided, also
	// while draining (seed).
	Profile joulie.Profile
	// Draining is the joulie.io/draining label.
	Draining bool
	// Class is the NodeTwin schedulableClass.
	Class      joulie.SchedulableClass
	Transition Transition
}

// Guard runs the downgrade guard's state machine. A move to performance
// is never delayed; a move to eco waits out the dwell, and then for the
// node's performance-sensitive pods to finish (no eviction).
func Guard(in GuardInput) Decision {
	cur := in.Current
	if cur == "" {
		cur = ActivePerformance
	}
	perf := in.Planned == joulie.ProfilePerformance
	switch cur {
	case ActiveEco:
		if perf {
			return decide(ActivePerformance, PlanPerf)
		}
		return decide(ActiveEco, None)
	case DrainingPerformance:
		switch {
		case perf:
			return decide(ActivePerformance, ReplanPerf)
		case in.PerfPods > 0:
			return decide(DrainingPerformance, StillBlocked)
		}
		return decide(ActiveEco, Unblocked)
	default: // ActivePerformance
		switch {
		case perf:
			return decide(ActivePerformance, None)
		case in.MinEcoDwell > 0 && !in.LastChange.IsZero() && in.Now.Sub(in.LastChange) < in.MinEcoDwell:
			return decide(ActivePerformance, Dwell)
		case in.PerfPods > 0:
			return decide(DrainingPerformance, Defer)
		}
		return decide(ActiveEco, Allow)
	}
}

func decide(next State, t Transition) Decision {
	d := Decision{Next: next, Transition: t}
	switch next {
	case ActivePerformance:
		d.Profile, d.Class = joulie.ProfilePerformance, joulie.ClassPerformance
	case DrainingPerformance:
		d.Profile, d.Draining, d.Class = joulie.ProfileEco, true, joulie.ClassDraining
	case ActiveEco:
		d.Profile, d.Class = joulie.ProfileEco, joulie.ClassEco
	}
	return d
}
