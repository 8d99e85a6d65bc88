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
	// DrainingPerformance: eco is planned and the node is labelled eco and
	// draining, so no new performance pod is placed there, while it still
	// runs uncapped (GuardDrain) or already capped (GuardSeed) until its
	// performance-sensitive pods are gone.
	DrainingPerformance State = "DrainingPerformance"
	// ActiveEco: the node runs capped.
	ActiveEco State = "ActiveEco"
)

// Transition names why the guard moved, for metrics and Events.
type Transition string

const (
	None         Transition = ""
	Defer        Transition = "defer"         // eco planned, performance pods present
	Allow        Transition = "allow"         // eco planned, no performance pods (GuardSeed)
	Drain        Transition = "drain"         // eco planned, no performance pods: drain first (GuardDrain)
	StillBlocked Transition = "still_blocked" // draining, pods still present
	Unblocked    Transition = "unblocked"     // draining, pods gone: eco committed
	ReplanPerf   Transition = "replan_perf"   // draining, performance planned again
	PlanPerf     Transition = "plan_perf"     // eco, performance planned
	Dwell        Transition = "dwell"         // eco planned too soon after the last change
)

// GuardMode is how a node goes from performance to eco.
type GuardMode string

const (
	// GuardDrain: every move to eco goes through draining, the first plan
	// of a fresh node included. The node is labelled eco and draining
	// (the extender turns performance pods away) but keeps its
	// performance caps; eco is applied only after DrainDwell, once no
	// performance pod is bound to it. A scheduler whose cache has not
	// seen the label yet can still bind a performance pod in that window,
	// and the pod then holds the node in draining instead of running
	// capped. The default.
	GuardDrain GuardMode = "drain"
	// GuardSeed is the operator seed's guard: a node without performance
	// pods goes to eco at once, and a draining node already publishes
	// eco, so a performance pod bound in the instant of the change runs
	// capped.
	GuardSeed GuardMode = "seed"
)

// GuardModes lists the modes, for validation and documentation.
var GuardModes = []GuardMode{GuardDrain, GuardSeed}

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
	// Mode is GuardDrain or GuardSeed; empty is GuardSeed, so a zero
	// input is the seed's guard.
	Mode GuardMode
	// DrainDwell is how long a node stays draining, counted from
	// LastChange, before GuardDrain applies eco: longer than the time the
	// scheduler's extender takes to see the draining label.
	DrainDwell time.Duration
	Now        time.Time
}

// Decision is what the controller publishes for the node.
type Decision struct {
	Next State
	// Profile is the joulie.io/power-profile label: eco as soon as eco is
	// decided, also while draining (seed).
	Profile joulie.Profile
	// Applied is the profile whose caps the NodePowerProfile spec carries:
	// Profile, except while draining under GuardDrain, when the node
	// stays on its performance caps.
	Applied joulie.Profile
	// Draining is the joulie.io/draining label.
	Draining bool
	// Class is the NodeTwin schedulableClass.
	Class      joulie.SchedulableClass
	Transition Transition
}

// Guard runs the downgrade guard's state machine. A move to performance
// is never delayed; a move to eco waits out the dwell, and then for the
// node's performance-sensitive pods to finish (no eviction), through
// draining as in.Mode says.
func Guard(in GuardInput) Decision {
	cur := in.Current
	if cur == "" {
		cur = ActivePerformance
	}
	drain := in.Mode == GuardDrain
	perf := in.Planned == joulie.ProfilePerformance
	var d Decision
	switch cur {
	case ActiveEco:
		if perf {
			d = decide(ActivePerformance, PlanPerf)
		} else {
			d = decide(ActiveEco, None)
		}
	case DrainingPerformance:
		switch {
		case perf:
			d = decide(ActivePerformance, ReplanPerf)
		case in.PerfPods > 0:
			d = decide(DrainingPerformance, StillBlocked)
		case drain && in.Now.Sub(in.LastChange) < in.DrainDwell:
			// Not an event: the node only waits out its drain.
			d = decide(DrainingPerformance, None)
		default:
			d = decide(ActiveEco, Unblocked)
		}
	default: // ActivePerformance
		switch {
		case perf:
			d = decide(ActivePerformance, None)
		case in.MinEcoDwell > 0 && !in.LastChange.IsZero() && in.Now.Sub(in.LastChange) < in.MinEcoDwell:
			d = decide(ActivePerformance, Dwell)
		case in.PerfPods > 0:
			d = decide(DrainingPerformance, Defer)
		case drain:
			d = decide(DrainingPerformance, Drain)
		default:
			d = decide(ActiveEco, Allow)
		}
	}
	if drain && d.Next == DrainingPerformance {
		d.Applied = joulie.ProfilePerformance
	}
	return d
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
	d.Applied = d.Profile
	return d
}
