// Package state keeps the extender's view of the cluster: every node's
// NodeTwin, NodeHardware, Joulie labels and fill (its allocatable CPU and
// GPUs against what its pods request), fed by watches (one each, never a
// list per request) and published as an immutable Snapshot through an
// atomic pointer. A scheduling request loads the pointer once
// and reads that snapshot to the end, so requests never lock, never wait
// for each other and never see a half-applied update.
package state

import (
	"cmp"
	"math"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

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
	// Fill is the node's allocatable, from the Node object, and what the
	// pods bound to it request; zero without the Node object.
	Fill scoring.Fill
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
	// warmReserve is whether any node is labelled joulie.io/warm-reserve,
	// so that filtering a standard pod by name looks no node up when none
	// is.
	warmReserve bool

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

// AnyWarmReserve reports whether a node of the snapshot is labelled
// joulie.io/warm-reserve=true.
func (s *Snapshot) AnyWarmReserve() bool { return s.warmReserve }

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

// Build assembles a snapshot from the watches' objects: twins, hardware,
// Nodes (trimmed to Joulie's labels and the allocatable the fill reads)
// and the requests of the pods bound to each node. Nodes without a twin,
// hardware or a Joulie label are left out: to the extender they are
// unknown either way, and a cluster's non-Joulie nodes need not cost
// memory here.
func Build(twins []*joulie.NodeTwin, hardware []*joulie.NodeHardware, nodes []*corev1.Node, requests map[string]Requests, synced bool, built time.Time) *Snapshot {
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
	// Twins and hardware are in byName already: a Node adds a node only
	// for its Joulie labels, and the fill only to a known node.
	for _, m := range nodes {
		l := scoring.Labels{Profile: m.Labels[joulie.LabelPowerProfile], Draining: m.Labels[joulie.LabelDraining],
			WarmReserve: m.Labels[joulie.LabelWarmReserve]}
		n, known := byName[m.Name]
		if !known {
			if l == (scoring.Labels{}) {
				continue
			}
			n = get(m.Name)
		}
		n.Labels = l
		n.Fill = fillOf(m, requests[m.Name])
		s.warmReserve = s.warmReserve || l.WarmReserve == "true"
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

// fillOf is a node's fill: its allocatable CPU and GPUs (NVIDIA and AMD
// together, as powerest.PodDemand counts a pod's) and what its pods
// request.
func fillOf(n *corev1.Node, r Requests) scoring.Fill {
	a := n.Status.Allocatable
	cpu := a[corev1.ResourceCPU]
	nvidia, amd := a[joulie.ResourceNVIDIAGPU], a[joulie.ResourceAMDGPU]
	return scoring.Fill{
		AllocatableCPU:  float64(cpu.MilliValue()) / 1000,
		RequestedCPU:    float64(r.CPUMilli) / 1000,
		AllocatableGPUs: float64(nvidia.MilliValue()+amd.MilliValue()) / 1000,
		RequestedGPUs:   float64(r.GPUMilli) / 1000,
	}
}
