package plan

import (
	"math"
	"sync"
	"time"
)

// Trends keeps each node's recent measured power and reports its trend in
// W/min: the least-squares slope over a rolling window. Samples arrive
// when the agent publishes (about once a minute), so a window of a few
// minutes holds a handful of points.
type Trends struct {
	Window time.Duration

	mu    sync.Mutex
	nodes map[string][]sample
}

type sample struct {
	t time.Time
	w float64
}

// NewTrends returns a tracker over window (5m when 0).
func NewTrends(window time.Duration) *Trends {
	if window <= 0 {
		window = 5 * time.Minute
	}
	return &Trends{Window: window, nodes: map[string][]sample{}}
}

// Observe records node's power at t; a repeated or older timestamp is
// ignored, so replaying the same published reading changes nothing.
func (tr *Trends) Observe(node string, t time.Time, watts float64) {
	if math.IsNaN(watts) || math.IsInf(watts, 0) || watts < 0 {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s := tr.nodes[node]
	if len(s) > 0 && !t.After(s[len(s)-1].t) {
		return
	}
	tr.nodes[node] = append(s, sample{t, watts})
}

// Forget drops a node.
func (tr *Trends) Forget(node string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	delete(tr.nodes, node)
}

// Slopes returns every node's trend at now, dropping samples older than the
// window. A node needs two samples at least 30 s apart; otherwise its trend
// is 0 (no evidence of change).
func (tr *Trends) Slopes(now time.Time) map[string]float64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := make(map[string]float64, len(tr.nodes))
	for node, s := range tr.nodes {
		i := 0
		for i < len(s) && now.Sub(s[i].t) > tr.Window {
			i++
		}
		s = s[i:]
		if len(s) == 0 {
			delete(tr.nodes, node)
			continue
		}
		tr.nodes[node] = s
		out[node] = slope(s)
	}
	return out
}

// slope is the least-squares slope of the samples in W/min.
func slope(s []sample) float64 {
	if len(s) < 2 || s[len(s)-1].t.Sub(s[0].t) < 30*time.Second {
		return 0
	}
	t0 := s[0].t
	var n, sx, sy, sxx, sxy float64
	for _, p := range s {
		x := p.t.Sub(t0).Minutes()
		n++
		sx += x
		sy += p.w
		sxx += x * x
		sxy += x * p.w
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}
