// Package powerpub is the rule by which joulie-agentd decides when a new
// measured power reading replaces the one it has published in its
// NodePowerProfile status: at most once a minute, or sooner when the
// reading moved by more than 10% (SPEC.md). Publishing every tick would
// write the API server once per node every few seconds; publishing less
// would leave the controller planning on stale power.
//
// The agent applies it at each tick; the energy simulator in test/ applies
// the same functions, so that it sees power as late as the controller
// does.
package powerpub

import (
	"math"
	"time"
)

const (
	// Interval is the longest a published reading stands: a reading
	// taken Interval or more after it replaces it whatever its value.
	Interval = time.Minute
	// Change is the relative change beyond which a reading replaces the
	// published one before Interval has passed (0.10: more than 10%).
	Change = 0.10
)

// Changed reports whether current differs from published by more than
// Change, relative to published. Any current other than zero counts as a
// change from a published zero.
func Changed(published, current float64) bool {
	if published == 0 {
		return current != 0
	}
	return math.Abs(current-published)/published > Change
}

// Due reports whether a reading of current watts taken at now replaces
// one of published watts taken at lastAt: Interval has passed since, or
// the power Changed.
func Due(lastAt, now time.Time, published, current float64) bool {
	return now.Sub(lastAt) >= Interval || Changed(published, current)
}
