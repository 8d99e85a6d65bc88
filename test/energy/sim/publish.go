package sim

import (
	"math"
	"time"

	"joulie.io/joulie/pkg/powerpub"
)

// How joulie-agentd publishes measured power (pkg/powerpub, the rule the
// agent itself calls): at each of its ticks it compares its reading with
// the one last published, and publishes the new one when powerpub.Interval
// (a minute) has passed since, or sooner when the reading moved by more
// than powerpub.Change (10%). The tick is the agent's reconcile interval
// (agentd's reconcileInterval, 5s; kubesync publishes on it), which the
// simulator takes as AgentDelay.

// publication is the measured power node's agent has last written to its
// NodePowerProfile status, which is all the controller can read.
//
// The agent's ticks fall on multiples of AgentDelay of the simulated clock.
// A tick at t reads the draw in force just before t (RAPL energy and NVML
// power describe the interval that ends at the tick), so a change at t is
// first seen by the next tick. Because the draw is constant between the
// simulator's events, the ticks are not simulated one by one: when the
// draw is about to change, and when the controller reads, catchUp settles
// every tick since the last settled one at once, in O(1).
type publication struct {
	live  bool          // the node has a NodePowerProfile to write status to
	ok    bool          // something has been published
	watts float64       // the published reading, rounded to 0.1 W as the agent does
	at    time.Duration // the tick that published it
	seen  time.Duration // ticks up to and including seen are settled
}

// startPublishing is the agent finding its NodePowerProfile, created by the
// reconcile at now: the ticks after now may publish.
func (s *simulation) startPublishing(n *nodeState) {
	if !n.pub.live {
		n.pub = publication{live: true, seen: s.now}
	}
}

// catchUp settles the agent's ticks in (seen, t], over which the node drew
// w.
func (s *simulation) catchUp(n *nodeState, t time.Duration, w float64) {
	p := &n.pub
	if !p.live || t <= p.seen {
		return
	}
	tick := s.opts.AgentDelay
	first, last := (p.seen/tick+1)*tick, t/tick*tick
	p.seen = t
	if first > last {
		return
	}
	w = math.Round(w*10) / 10
	switch {
	case !p.ok || powerpub.Changed(p.watts, w):
		p.watts, p.at, p.ok = w, first, true
	default:
		due := max(first, ceilTo(p.at+powerpub.Interval, tick))
		if due > last {
			return
		}
		p.watts, p.at = w, due
	}
	// The reading stays w, so from here on only the minute publishes: every
	// minute, rounded up to the tick.
	step := ceilTo(powerpub.Interval, tick)
	p.at += (last - p.at) / step * step
}

// ceilTo rounds d up to a multiple of step.
func ceilTo(d, step time.Duration) time.Duration {
	return (d + step - 1) / step * step
}
