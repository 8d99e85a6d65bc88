package scoring

import (
	"testing"
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// The memoized aggregates change exactly when a twin turns stale, and
// are recomputed when the clock goes back.
func TestClusterMemoExpiresWithTheFirstStaleTwin(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	perf := func(measuredW float64, updated time.Time) *Twin {
		return &Twin{Class: joulie.ClassPerformance, Measured: true, MeasuredW: measuredW, CappedW: 1000, LastUpdated: updated}
	}
	// Congestion 50 for the old twin, 90 for the young one.
	nodes := []Node{{Name: "old", Twin: perf(500, base)}, {Name: "young", Twin: perf(900, base.Add(2*time.Minute))}, {Name: "no-twin"}}
	const threshold = 5 * time.Minute
	var memo ClusterMemo
	for _, tc := range []struct {
		at       time.Duration // after the old twin's update
		pressure float64
	}{
		{time.Minute, 70},                 // both fresh: (50 + 90) / 2
		{4 * time.Minute, 70},             // memoized
		{5 * time.Minute, 70},             // old twin exactly at the threshold: still fresh
		{5*time.Minute + time.Second, 90}, // old twin stale
		{7 * time.Minute, 90},
		{8 * time.Minute, 0}, // both stale
		{time.Minute, 70},    // the clock went back: recomputed
	} {
		now := base.Add(tc.at)
		if c := memo.Of(nodes, now, threshold); c.PerfPressure != tc.pressure {
			t.Errorf("at +%s: pressure %v, want %v", tc.at, c.PerfPressure, tc.pressure)
		}
		if c, _ := ClusterOf(nodes, now, threshold); c.PerfPressure != tc.pressure {
			t.Errorf("at +%s: ClusterOf gives pressure %v, want %v", tc.at, c.PerfPressure, tc.pressure)
		}
	}
	if _, until := ClusterOf(nodes, base.Add(time.Minute), threshold); !until.Equal(base.Add(threshold + time.Nanosecond)) {
		t.Errorf("until %s, want the old twin's expiry", until)
	}
}
