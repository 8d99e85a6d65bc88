package state

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"joulie.io/joulie/pkg/scoring"
)

// Requests is what the pods bound to a node request, in milli-units.
type Requests = scoring.Requests

// boundPodSelector is the pods that hold resources on a node, as
// kube-scheduler counts them: bound to one and not ended.
const boundPodSelector = "spec.nodeName!=,status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)

// podStore keeps, for every pod bound to a node and not ended, only what
// it requests there, and the sums by node. It is the store of a Reflector
// on Pods rather than an informer's cache: a cluster may run 150,000
// pods, and a cached Pod, even trimmed, costs a kilobyte or more where
// this keeps some 150 bytes.
//
// The Reflector hands it Pods on watch events and on a list. On a
// streamed initial list (WatchList) it first fills a temporary store
// through Transformer, so that what it holds there is podUses too.
type podStore struct {
	mu     sync.Mutex
	pods   map[podKey]podEntry
	nodes  map[string]*nodeRequests
	synced bool
	// touched names the nodes whose sums changed since takeChanges last
	// ran, and relisted says that a list replaced them all since.
	touched  map[string]struct{}
	relisted bool
	// changed is called, without the lock, when a node's sums changed.
	changed func()
}

type podKey struct{ namespace, name string }

type podEntry struct {
	node *nodeRequests
	req  Requests
}

// nodeRequests is one node's sums; pods counts the pods in them, so that
// the entry goes when the last one does. Pods point to it, and so share
// the one copy of the node's name.
type nodeRequests struct {
	Requests
	name string
	pods int
}

// podUse is what the store takes from a Pod. It is what Transformer turns
// a Pod into, so it carries its name for the Reflector's temporary store
// to key it by.
type podUse struct {
	namespace, name string
	// node is empty for a pod that holds nothing: unbound or ended.
	node string
	req  Requests
}

// GetObjectMeta gives cache key functions the pod's namespace and name.
func (u *podUse) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: u.namespace, Name: u.name}
}

func newPodStore(changed func()) *podStore {
	return &podStore{pods: map[podKey]podEntry{}, nodes: map[string]*nodeRequests{}, touched: map[string]struct{}{}, changed: changed}
}

var _ cache.TransformingStore = (*podStore)(nil)

// useOf reads what a pod holds. Objects of other types hold nothing.
func useOf(obj any) podUse {
	switch p := obj.(type) {
	case *podUse:
		return *p
	case *corev1.Pod:
		u := podUse{namespace: p.Namespace, name: p.Name}
		u.node, u.req = scoring.Holds(p)
		return u
	case cache.DeletedFinalStateUnknown:
		return useOf(p.Obj)
	}
	return podUse{}
}

// Transformer turns Pods into podUses where the Reflector keeps them
// itself.
func (s *podStore) Transformer() cache.TransformFunc {
	return func(obj any) (any, error) {
		if u, ok := obj.(*podUse); ok {
			return u, nil
		}
		u := useOf(obj)
		return &u, nil
	}
}

// Add counts a pod.
func (s *podStore) Add(obj any) error { return s.Update(obj) }

// Update counts a pod anew: where it runs now and what it requests.
func (s *podStore) Update(obj any) error {
	u := useOf(obj)
	s.mu.Lock()
	changed := s.set(u)
	s.mu.Unlock()
	if changed {
		s.changed()
	}
	return nil
}

// Delete stops counting a pod.
func (s *podStore) Delete(obj any) error {
	u := useOf(obj)
	u.node = ""
	return s.Update(&u)
}

// Replace counts exactly the pods of list.
func (s *podStore) Replace(list []any, _ string) error {
	s.mu.Lock()
	s.pods = make(map[podKey]podEntry, len(list))
	s.nodes = map[string]*nodeRequests{}
	for _, obj := range list {
		s.set(useOf(obj))
	}
	s.synced = true
	s.relisted = true
	clear(s.touched)
	s.mu.Unlock()
	s.changed()
	return nil
}

// Resync has nothing to do: there are no handlers to replay to.
func (s *podStore) Resync() error { return nil }

// set records u and reports whether a node's sums changed. s.mu is held.
func (s *podStore) set(u podUse) bool {
	key := podKey{u.namespace, u.name}
	old, had := s.pods[key]
	if had && u.node != "" && old.req == u.req && s.nodes[u.node] == old.node {
		return false // a status update: nothing the fill reads
	}
	if !had && u.node == "" {
		return false
	}
	if had {
		n := old.node
		s.touched[n.name] = struct{}{}
		n.CPUMilli -= old.req.CPUMilli
		n.GPUMilli -= old.req.GPUMilli
		if n.pods--; n.pods == 0 {
			delete(s.nodes, n.name)
		}
		delete(s.pods, key)
	}
	if u.node != "" {
		n := s.nodes[u.node]
		if n == nil {
			n = &nodeRequests{name: u.node}
			s.nodes[u.node] = n
		}
		s.touched[u.node] = struct{}{}
		n.CPUMilli += u.req.CPUMilli
		n.GPUMilli += u.req.GPUMilli
		n.pods++
		s.pods[key] = podEntry{node: n, req: u.req}
	}
	return true
}

// HasSynced reports whether the store has been filled by a first list.
func (s *podStore) HasSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

// requests returns a copy of the sums by node.
func (s *podStore) requests() map[string]Requests {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Requests, len(s.nodes))
	for name, n := range s.nodes {
		out[name] = n.Requests
	}
	return out
}

// takeChanges returns the sums, as they stand now, of the nodes whose
// sums changed since its last call (zero for a node whose last pod went),
// and whether a list replaced every sum since, when only requests will
// do; it starts the next round of changes.
func (s *podStore) takeChanges() (changed map[string]Requests, relisted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed = make(map[string]Requests, len(s.touched))
	for name := range s.touched {
		if n := s.nodes[name]; n != nil {
			changed[name] = n.Requests
		} else {
			changed[name] = Requests{}
		}
	}
	clear(s.touched)
	relisted, s.relisted = s.relisted, false
	return changed, relisted
}
