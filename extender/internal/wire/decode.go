package wire

import (
	"bytes"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Args is the part of an extenderv1.ExtenderArgs the extender uses. Reuse
// one across requests with Reset (DecodeArgs does it) to keep its slices.
type Args struct {
	// Pod is the pod being scheduled, holding only its name, namespace,
	// UID, annotations and the parts of its spec that classify it and give
	// its demand (see podJSON); nil when the request had none.
	Pod *corev1.Pod
	// HasNodeNames is true when the request carried NodeNames (the
	// scheduler's nodeCacheCapable mode), even an empty list.
	HasNodeNames bool
	NodeNames    [][]byte
	// rawNames are the names as the request spelled them, escapes and
	// all: valid JSON string content, which the replies copy back as is.
	rawNames [][]byte
	// HasNodes is true when the request carried Nodes, even without
	// items.
	HasNodes bool
	Nodes    []Node

	// Reserve, when set, is asked for memory before the decoder takes it:
	// for the node lists and the unescaped text as they grow, and for the
	// pod before encoding/json builds it. An error from it stops the
	// decoding, and DecodeArgs returns that error as it is. Decoded values
	// can weigh far more than the bytes that spell them ("{}," is a
	// 120-byte Node, an empty container in the pod a 408-byte
	// corev1.Container), so a server that bounds the memory of requests in
	// flight must count these too, not only the body.
	Reserve func(bytes int) error

	// arena holds the names and labels that had to be unescaped.
	arena []byte
	scan  scanner
}

// Node is what the extender keeps of one Node object.
type Node struct {
	// Name is metadata.name.
	Name []byte
	// Profile, Draining and WarmReserve are the values of the
	// joulie.io/power-profile, joulie.io/draining and
	// joulie.io/warm-reserve labels, "" when absent.
	Profile     string
	Draining    string
	WarmReserve string
	// Raw is the whole Node object as the scheduler sent it.
	Raw []byte
	// rawName is Name as the request spelled it.
	rawName []byte
}

// Reset empties a, keeping its storage.
func (a *Args) Reset() {
	a.Pod = nil
	a.HasNodeNames = false
	a.NodeNames = a.NodeNames[:0]
	a.rawNames = a.rawNames[:0]
	a.HasNodes = false
	clear(a.Nodes) // drop references into the previous body
	a.Nodes = a.Nodes[:0]
	a.arena = a.arena[:0]
	a.scan.reset(nil)
}

// Field names of the protocol. The upstream types carry no JSON tags, so
// the scheduler sends Go's field names; like encoding/json, the decoder
// matches keys without regard to case.
var (
	keyPod       = []byte("Pod")
	keyNodes     = []byte("Nodes")
	keyNodeNames = []byte("NodeNames")
	keyItems     = []byte("items")
	keyMetadata  = []byte("metadata")
	keyName      = []byte("name")
	keyLabels    = []byte("labels")
)

// DecodeArgs decodes an ExtenderArgs from data into a, which it resets
// first. The names and raw nodes in a point into data.
func DecodeArgs(data []byte, a *Args) error {
	a.Reset()
	s := &a.scan
	s.reset(data)
	if s.consumeNull() {
		return s.end()
	}
	var seenPod, seenNodes, seenNames bool
	_, err := s.objectLoop(func(rawKey []byte, escaped bool) error {
		key, err := a.text(rawKey, escaped)
		if err != nil {
			return err
		}
		switch {
		case bytes.EqualFold(key, keyPod):
			if err := once(&seenPod, s, key); err != nil {
				return err
			}
			return a.decodePod(s)
		case bytes.EqualFold(key, keyNodes):
			if err := once(&seenNodes, s, key); err != nil {
				return err
			}
			return a.decodeNodeList(s)
		case bytes.EqualFold(key, keyNodeNames):
			if err := once(&seenNames, s, key); err != nil {
				return err
			}
			return a.decodeNodeNames(s)
		}
		return s.skipValue()
	})
	if err != nil {
		return err
	}
	return s.end()
}

// end checks that nothing but space follows the value.
func (s *scanner) end() error {
	s.skipSpace()
	if s.pos != len(s.data) {
		return s.errorf("unexpected %s after the end of the request", quoteByte(s.data[s.pos]))
	}
	return nil
}

func once(seen *bool, s *scanner, key []byte) error {
	if *seen {
		return fmt.Errorf("at byte %d: key %q given twice: %w", s.pos, key, ErrDuplicateKey)
	}
	*seen = true
	return nil
}

func (a *Args) decodePod(s *scanner) error {
	start := s.pos
	values := s.values
	if err := s.skipValue(); err != nil {
		return err
	}
	raw := bytes.TrimLeft(s.data[start:s.pos], " \t\r\n")
	if bytes.Equal(raw, []byte("null")) {
		a.Pod = nil
		return nil
	}
	if err := a.reserve(len(raw) + (s.values-values)*podValueBytes); err != nil {
		return err
	}
	// A second, streaming pass reads what the extender keeps.
	end := s.pos
	s.pos = start
	var p podJSON
	if err := a.readPod(s, &p); err != nil {
		return err
	}
	s.pos = end
	a.Pod = p.pod()
	return nil
}

func (a *Args) decodeNodeNames(s *scanner) error {
	a.NodeNames = a.NodeNames[:0]
	a.rawNames = a.rawNames[:0]
	ok, err := s.arrayLoop(func() error {
		if s.consumeNull() {
			return a.appendName(nil, nil)
		}
		raw, escaped, err := s.readString()
		if err != nil {
			return err
		}
		name, err := a.text(raw, escaped)
		if err != nil {
			return err
		}
		return a.appendName(name, raw)
	})
	a.HasNodeNames = ok
	return err
}

func (a *Args) decodeNodeList(s *scanner) error {
	seenItems := false
	ok, err := s.objectLoop(func(rawKey []byte, escaped bool) error {
		key, err := a.text(rawKey, escaped)
		if err != nil {
			return err
		}
		if !bytes.EqualFold(key, keyItems) {
			return s.skipValue()
		}
		if err := once(&seenItems, s, key); err != nil {
			return err
		}
		a.Nodes = a.Nodes[:0]
		_, err = s.arrayLoop(func() error {
			s.skipSpace()
			start := s.pos
			var n Node
			if err := a.decodeNode(s, &n); err != nil {
				return err
			}
			n.Raw = s.data[start:s.pos]
			nodes, err := grow(a, a.Nodes)
			if err != nil {
				return err
			}
			a.Nodes = append(nodes, n)
			return nil
		})
		return err
	})
	a.HasNodes = ok
	return err
}

func (a *Args) decodeNode(s *scanner, n *Node) error {
	seenMeta := false
	_, err := s.objectLoop(func(rawKey []byte, escaped bool) error {
		key, err := a.text(rawKey, escaped)
		if err != nil {
			return err
		}
		if !bytes.EqualFold(key, keyMetadata) {
			// spec and status, the bulk of a Node, are skipped here.
			return s.skipValue()
		}
		if err := once(&seenMeta, s, key); err != nil {
			return err
		}
		return a.decodeNodeMeta(s, n)
	})
	return err
}

func (a *Args) decodeNodeMeta(s *scanner, n *Node) error {
	var seenName, seenLabels bool
	_, err := s.objectLoop(func(rawKey []byte, escaped bool) error {
		key, err := a.text(rawKey, escaped)
		if err != nil {
			return err
		}
		switch {
		case bytes.EqualFold(key, keyName):
			if err := once(&seenName, s, key); err != nil {
				return err
			}
			if s.consumeNull() {
				return nil
			}
			raw, escaped, err := s.readString()
			if err != nil {
				return err
			}
			n.rawName = raw
			n.Name, err = a.text(raw, escaped)
			return err
		case bytes.EqualFold(key, keyLabels):
			if err := once(&seenLabels, s, key); err != nil {
				return err
			}
			return a.decodeLabels(s, n)
		}
		return s.skipValue()
	})
	return err
}

func (a *Args) decodeLabels(s *scanner, n *Node) error {
	var seenProfile, seenDraining, seenWarm bool
	_, err := s.objectLoop(func(rawKey []byte, escaped bool) error {
		key, err := a.text(rawKey, escaped)
		if err != nil {
			return err
		}
		// Label values are strings; null is what encoding/json reads as "".
		var value []byte
		if !s.consumeNull() {
			raw, escaped, err := s.readString()
			if err != nil {
				return err
			}
			if value, err = a.text(raw, escaped); err != nil {
				return err
			}
		}
		switch string(key) {
		case joulie.LabelPowerProfile:
			if err := once(&seenProfile, s, key); err != nil {
				return err
			}
			n.Profile = intern(value)
		case joulie.LabelDraining:
			if err := once(&seenDraining, s, key); err != nil {
				return err
			}
			n.Draining = intern(value)
		case joulie.LabelWarmReserve:
			if err := once(&seenWarm, s, key); err != nil {
				return err
			}
			n.WarmReserve = intern(value)
		}
		return nil
	})
	return err
}

// intern returns the label values Joulie writes as constants, so that
// reading them allocates nothing.
func intern(b []byte) string {
	switch string(b) {
	case "":
		return ""
	case string(joulie.ProfileEco):
		return string(joulie.ProfileEco)
	case string(joulie.ProfilePerformance):
		return string(joulie.ProfilePerformance)
	case "true":
		return "true"
	case "false":
		return "false"
	}
	return string(b)
}

// podJSON is a pod trimmed to what the extender reads: encoding/json skips
// the rest (env, volumes, probes, status, ...) without building it.
type podJSON struct {
	Metadata struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		UID         types.UID         `json:"uid"`
		Annotations map[string]string `json:"annotations"`
		// OwnerReferences tell a DaemonSet's pod, which the filter lets
		// onto every node.
		OwnerReferences []ownerJSON `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		NodeSelector   map[string]string            `json:"nodeSelector"`
		Affinity       *corev1.Affinity             `json:"affinity"`
		Containers     []containerJSON              `json:"containers"`
		InitContainers []containerJSON              `json:"initContainers"`
		Overhead       corev1.ResourceList          `json:"overhead"`
		Resources      *corev1.ResourceRequirements `json:"resources"`
	} `json:"spec"`
}

type ownerJSON struct {
	Kind       string `json:"kind"`
	Controller *bool  `json:"controller"`
}

type containerJSON struct {
	Name          string                         `json:"name"`
	Resources     corev1.ResourceRequirements    `json:"resources"`
	RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy"`
}

func (p *podJSON) pod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        p.Metadata.Name,
			Namespace:   p.Metadata.Namespace,
			UID:         p.Metadata.UID,
			Annotations: p.Metadata.Annotations,
		},
		Spec: corev1.PodSpec{
			NodeSelector: p.Spec.NodeSelector,
			Affinity:     p.Spec.Affinity,
			Overhead:     p.Spec.Overhead,
			Resources:    p.Spec.Resources,
		},
	}
	if len(p.Metadata.OwnerReferences) > 0 {
		pod.OwnerReferences = make([]metav1.OwnerReference, len(p.Metadata.OwnerReferences))
		for i, o := range p.Metadata.OwnerReferences {
			pod.OwnerReferences[i] = metav1.OwnerReference{Kind: o.Kind, Controller: o.Controller}
		}
	}
	pod.Spec.Containers = containers(p.Spec.Containers)
	pod.Spec.InitContainers = containers(p.Spec.InitContainers)
	return pod
}

func containers(in []containerJSON) []corev1.Container {
	if in == nil {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return out
}
