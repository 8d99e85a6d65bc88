// Package state keeps the extender's view of the cluster: every node's
// NodeTwin, NodeHardware and Joulie labels, fed by informers (one watch
// each, never a list per request) and published as an immutable Snapshot
// through an atomic pointer. A scheduling request loads the pointer once
// and reads that snapshot to the end, so requests never lock, never wait
// for each other and never see a half-applied update.
package state

import (
	"cmp"
	"math"
	"slices"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
)

// Node is what the extender knows about one node. Snapshots share Nodes
// between readers: never modify one.
type Node struct {
	Name string
	// Twin is the node's NodeTwin status; nil without a NodeTwin.
	Twin *scoring.Twin
	// Hardware is the node's NodeHardware status; zero without one, which
	// the marginal power estimate reads as unknown.
	HasHardware bool
	Hardware    powerest.Node
	// Labels are the node's Joulie labels, from the Node object.
	Labels scoring.Labels
}

// Snapshot is the cluster at one moment. It is never modified once
// published.
type Snapshot struct {
	nodes []Node // sorted by name
	twins []scoring.Twin
	index map[string]int32
	// Synced is false until every informer has listed the cluster once:
	// before that, missing twins may only be missing from the cache.
	Synced bool
	// Built is when the snapshot was assembled.
	Built time.Time

	// cluster memoizes Cluster: the aggregates change only when a twin
	// turns stale, at a moment known in advance, so most requests reuse
	// them instead of summing every twin again.
	cluster atomic.Pointer[clusterMemo]
}

type clusterMemo struct {
	threshold   time.Duration
	from, until time.Time // valid for from <= now < until
	c           scoring.Cluster
}

var emptySnapshot = &Snapshot{index: map[string]int32{}}

// Lookup returns the node called name, or nil when Joulie knows nothing
// about it. name may point into a request body: the map lookup converts
// it without copying.
func (s *Snapshot) Lookup(name []byte) *Node {
	i, ok := s.index[string(name)]
	if !ok {
		return nil
	}
	return &s.nodes[i]
}

// Nodes returns every known node, sorted by name. Do not modify it.
func (s *Snapshot) Nodes() []Node { return s.nodes }

// Cluster sums up the aggregates a score depends on over every twin of the
// snapshot, as they stand at now.
func (s *Snapshot) Cluster(now time.Time, threshold time.Duration) scoring.Cluster {
	if m := s.cluster.Load(); m != nil && m.threshold == threshold && !now.Before(m.from) && now.Before(m.until) {
		return m.c
	}
	var sum scoring.ClusterSum
	// Until the first fresh twin turns stale, the sum stays the same.
	until := time.Unix(math.MaxInt64/2, 0)
	for i := range s.twins {
		t := &s.twins[i]
		sum.Add(t, now, threshold)
		if !t.Stale(now, threshold) {
			if expiry := t.LastUpdated.Add(threshold + time.Nanosecond); expiry.Before(until) {
				until = expiry
			}
		}
	}
	c := sum.Cluster()
	s.cluster.Store(&clusterMemo{threshold: threshold, from: now, until: until, c: c})
	return c
}

// Build assembles a snapshot from the informers' objects. Nodes without a
// twin, hardware or a Joulie label are left out: to the extender they are
// unknown either way, and a cluster's non-Joulie nodes need not cost
// memory here.
func Build(twins []*joulie.NodeTwin, hardware []*joulie.NodeHardware, nodes []*metav1.PartialObjectMetadata, synced bool, built time.Time) *Snapshot {
	byName := make(map[string]*Node, max(len(twins), len(hardware)))
	get := func(name string) *Node {
		n, ok := byName[name]
		if !ok {
			n = &Node{Name: name}
			byName[name] = n
		}
		return n
	}
	s := &Snapshot{Synced: synced, Built: built, twins: make([]scoring.Twin, 0, len(twins))}
	for _, t := range twins {
		s.twins = append(s.twins, scoring.TwinOf(&t.Status))
	}
	for i, t := range twins {
		get(t.Name).Twin = &s.twins[i]
	}
	for _, h := range hardware {
		n := get(h.Name)
		n.HasHardware = true
		n.Hardware = scoring.HardwareOf(&h.Status)
	}
	for _, m := range nodes {
		l := scoring.Labels{Profile: m.Labels[joulie.LabelPowerProfile], Draining: m.Labels[joulie.LabelDraining]}
		if l != (scoring.Labels{}) {
			get(m.Name).Labels = l
		}
	}
	s.nodes = make([]Node, 0, len(byName))
	for _, n := range byName {
		s.nodes = append(s.nodes, *n)
	}
	slices.SortFunc(s.nodes, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	s.index = make(map[string]int32, len(s.nodes))
	for i := range s.nodes {
		s.index[s.nodes[i].Name] = int32(i)
	}
	return s
}
