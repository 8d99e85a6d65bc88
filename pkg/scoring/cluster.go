package scoring

import (
	"math"
	"sync/atomic"
	"time"
)

// ClusterOf sums up the aggregates a score depends on over the twins of
// nodes as they stand at now, and returns until when that sum holds: the
// moment the first twin fresh at now turns stale (the aggregates leave
// stale twins out, and nothing else about a fixed set of nodes changes
// with time).
func ClusterOf(nodes []Node, now time.Time, threshold time.Duration) (c Cluster, until time.Time) {
	var sum ClusterSum
	until = time.Unix(math.MaxInt64/2, 0)
	for i := range nodes {
		t := nodes[i].Twin
		if t == nil {
			continue
		}
		sum.Add(t, now, threshold)
		if !t.Stale(now, threshold) {
			if expiry := t.LastUpdated.Add(threshold + time.Nanosecond); expiry.Before(until) {
				until = expiry
			}
		}
	}
	return sum.Cluster(), until
}

// ClusterMemo keeps the aggregates of one fixed set of nodes between
// scheduling requests, so that most requests reuse them instead of
// summing every twin again; it recomputes them when the clock passes the
// moment ClusterOf gave, goes back, or the threshold changes. The zero
// value is ready; it is safe for concurrent use, and must not be copied.
type ClusterMemo struct {
	p atomic.Pointer[clusterMemo]
}

type clusterMemo struct {
	threshold   time.Duration
	from, until time.Time // valid for from <= now < until
	c           Cluster
}

// Of returns ClusterOf(nodes, now, threshold), from the memo while it
// holds. nodes must be the same set on every call.
func (m *ClusterMemo) Of(nodes []Node, now time.Time, threshold time.Duration) Cluster {
	if v := m.p.Load(); v != nil && v.threshold == threshold && !now.Before(v.from) && now.Before(v.until) {
		return v.c
	}
	c, until := ClusterOf(nodes, now, threshold)
	m.p.Store(&clusterMemo{threshold: threshold, from: now, until: until, c: c})
	return c
}
