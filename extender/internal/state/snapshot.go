// Package state keeps the extender's view of the cluster: every node's
// NodeTwin, NodeHardware, Joulie labels and fill (its allocatable CPU and
// GPUs against what its pods request), fed by watches (one each, never a
// list per request) and published as an immutable Snapshot through an
// atomic pointer. A scheduling request loads the pointer once
// and reads that snapshot to the end, so requests never lock, never wait
// for each other and never see a half-applied update.
package state

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/scoring"
)

// Node is what the extender knows about one node: the scoring view that
// kubectl joulie explain builds the same way. Snapshots share Nodes
// between readers: never modify one.
type Node = scoring.Node

// Snapshot is the cluster at one moment. It is never modified once
// published.
type Snapshot struct {
	nodes []Node // sorted by name
	index map[string]int32
	// Synced is false until every informer has listed the cluster once:
	// before that, missing twins may only be missing from the cache.
	Synced bool
	// warmReserve is whether any node is labelled joulie.io/warm-reserve,
	// so that filtering a standard pod by name looks no node up when none
	// is.
	warmReserve bool
	// hasNode[i] is whether nodes[i] had a Node object, the only nodes
	// whose fill counts their pods' requests.
	hasNode []bool

	// cluster memoizes Cluster: the aggregates change only when a twin
	// turns stale, at a moment known in advance, so most requests reuse
	// them instead of summing every twin again.
	cluster scoring.ClusterMemo
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

// AnyWarmReserve reports whether a node of the snapshot is labelled
// joulie.io/warm-reserve=true.
func (s *Snapshot) AnyWarmReserve() bool { return s.warmReserve }

// Nodes returns every known node, sorted by name. Do not modify it.
func (s *Snapshot) Nodes() []Node { return s.nodes }

// Cluster sums up the aggregates a score depends on over every twin of the
// snapshot, as they stand at now; memoized until the first fresh twin
// turns stale.
func (s *Snapshot) Cluster(now time.Time, threshold time.Duration) scoring.Cluster {
	return s.cluster.Of(s.nodes, now, threshold)
}

// Build assembles a snapshot from the watches' objects: twins, hardware,
// Nodes (trimmed to Joulie's labels and the allocatable the fill reads)
// and the requests of the pods bound to each node, through
// scoring.Nodes, which leaves out the nodes Joulie knows nothing about.
func Build(twins []*joulie.NodeTwin, hardware []*joulie.NodeHardware, nodes []*corev1.Node, requests map[string]Requests, synced bool) *Snapshot {
	s := &Snapshot{Synced: synced, nodes: scoring.Nodes(twins, hardware, nodes, requests)}
	s.index = make(map[string]int32, len(s.nodes))
	for i := range s.nodes {
		s.index[s.nodes[i].Name] = int32(i)
		s.warmReserve = s.warmReserve || s.nodes[i].Labels.WarmReserve == "true"
	}
	s.hasNode = make([]bool, len(s.nodes))
	for _, m := range nodes {
		if i, ok := s.index[m.Name]; ok {
			s.hasNode[i] = true
		}
	}
	return s
}

// withRequests is s with the pods' requests on the changed nodes
// replaced: what a change of pods alone makes of a
// snapshot, the same as Build from scratch would, for the cost of a copy
// of the node views instead of assembling them again (a bind is a pod
// change, so this is the extender's most frequent update). It returns s
// itself when no node it knows changed. Twins, hardware, labels and the
// index are shared with s: pods change none of them.
func (s *Snapshot) withRequests(changed map[string]Requests) *Snapshot {
	var nodes []Node
	for name, r := range changed {
		i, ok := s.index[name]
		if !ok || !s.hasNode[i] {
			continue
		}
		if nodes == nil {
			nodes = slices.Clone(s.nodes)
		}
		nodes[i].Fill = nodes[i].Fill.WithRequests(r)
	}
	if nodes == nil {
		return s
	}
	// The cluster's aggregates are sums over twins alone; the first
	// request sums them again (a few microseconds per thousand twins).
	return &Snapshot{nodes: nodes, index: s.index, Synced: s.Synced, warmReserve: s.warmReserve, hasNode: s.hasNode}
}
