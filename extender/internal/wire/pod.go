package wire

import (
	"bytes"
	"encoding/json"

	"k8s.io/apimachinery/pkg/types"
)

// Keys of the pod the extender reads (podJSON's fields). The decoder
// matches them without regard to case, as encoding/json does.
var (
	keyNamespace       = []byte("namespace")
	keyUID             = []byte("uid")
	keyAnnotations     = []byte("annotations")
	keyOwnerReferences = []byte("ownerReferences")
	keySpec            = []byte("spec")
	keyNodeSelector    = []byte("nodeSelector")
	keyAffinity        = []byte("affinity")
	keyContainers      = []byte("containers")
	keyInitContainers  = []byte("initContainers")
	keyOverhead        = []byte("overhead")
	keyResources       = []byte("resources")
	keyRestartPolicy   = []byte("restartPolicy")
)

// readPod reads the pod object at s.pos into p, streaming: the scanner
// walks the pod and skips, without building anything, what the extender
// does not read (labels, managed fields, images, commands, environments,
// volumes, probes, tolerations, status: nearly all of a pod), and hands
// encoding/json only the small values it keeps (names, annotations, owner
// references, node selector and affinity, each container's resources and
// restart policy). A key it reads given twice in one object is refused,
// as at the request's top level. The result is what encoding/json gives
// for podJSON on the same input.
func (a *Args) readPod(s *scanner, p *podJSON) error {
	var seenMeta, seenSpec bool
	_, err := s.objectLoop(func(rawKey []byte, escaped bool) error {
		key, err := a.text(rawKey, escaped)
		if err != nil {
			return err
		}
		switch {
		case bytes.EqualFold(key, keyMetadata):
			if err := once(&seenMeta, s, key); err != nil {
				return err
			}
			return a.readPodMeta(s, p)
		case bytes.EqualFold(key, keySpec):
			if err := once(&seenSpec, s, key); err != nil {
				return err
			}
			return a.readPodSpec(s, p)
		}
		return s.skipValue()
	})
	return err
}

var (
	podMetaKeys      = [][]byte{keyName, keyNamespace, keyUID, keyAnnotations, keyOwnerReferences}
	podSpecKeys      = [][]byte{keyNodeSelector, keyAffinity, keyOverhead, keyResources, keyContainers, keyInitContainers}
	podContainerKeys = [][]byte{keyName, keyResources, keyRestartPolicy}
)

// member reads one member of an object whose keys the extender reads
// (keys): a key it does not read is skipped, one it reads is checked not
// to repeat (seen) and handed to read with its index in keys.
func (a *Args) member(s *scanner, rawKey []byte, escaped bool, keys [][]byte, seen *[maxKeys]bool, read func(i int) error) error {
	key, err := a.text(rawKey, escaped)
	if err != nil {
		return err
	}
	for i, k := range keys {
		if bytes.EqualFold(key, k) {
			if err := once(&seen[i], s, key); err != nil {
				return err
			}
			return read(i)
		}
	}
	return s.skipValue()
}

// maxKeys bounds the keys of one object the extender reads.
const maxKeys = 6

func (a *Args) readPodMeta(s *scanner, p *podJSON) error {
	var seen [maxKeys]bool
	m := &p.Metadata
	read := func(i int) error {
		switch i {
		case 0:
			return a.stringValue(s, "metadata.name", &m.Name)
		case 1:
			return a.stringValue(s, "metadata.namespace", &m.Namespace)
		case 2:
			var uid string
			err := a.stringValue(s, "metadata.uid", &uid)
			m.UID = types.UID(uid)
			return err
		case 3:
			return jsonValue(s, "metadata.annotations", &m.Annotations)
		}
		return jsonValue(s, "metadata.ownerReferences", &m.OwnerReferences)
	}
	_, err := s.objectLoop(func(rawKey []byte, escaped bool) error {
		return a.member(s, rawKey, escaped, podMetaKeys, &seen, read)
	})
	return err
}

func (a *Args) readPodSpec(s *scanner, p *podJSON) error {
	var seen [maxKeys]bool
	sp := &p.Spec
	read := func(i int) error {
		switch i {
		case 0:
			return jsonValue(s, "spec.nodeSelector", &sp.NodeSelector)
		case 1:
			return jsonValue(s, "spec.affinity", &sp.Affinity)
		case 2:
			return jsonValue(s, "spec.overhead", &sp.Overhead)
		case 3:
			return jsonValue(s, "spec.resources", &sp.Resources)
		case 4:
			return a.readContainers(s, &sp.Containers)
		}
		return a.readContainers(s, &sp.InitContainers)
	}
	_, err := s.objectLoop(func(rawKey []byte, escaped bool) error {
		return a.member(s, rawKey, escaped, podSpecKeys, &seen, read)
	})
	return err
}

// readContainers reads a list of containers into dst as encoding/json
// would into a nil slice: null leaves it nil, [] makes it empty, and a
// null element is a zero container.
func (a *Args) readContainers(s *scanner, dst *[]containerJSON) error {
	if s.consumeNull() {
		*dst = nil
		return nil
	}
	list := []containerJSON{}
	var c containerJSON
	read := func(i int) error {
		switch i {
		case 0:
			return a.stringValue(s, "container.name", &c.Name)
		case 1:
			return jsonValue(s, "container.resources", &c.Resources)
		}
		return jsonValue(s, "container.restartPolicy", &c.RestartPolicy)
	}
	_, err := s.arrayLoop(func() error {
		c = containerJSON{}
		var seen [maxKeys]bool
		_, err := s.objectLoop(func(rawKey []byte, escaped bool) error {
			return a.member(s, rawKey, escaped, podContainerKeys, &seen, read)
		})
		list = append(list, c)
		return err
	})
	*dst = list
	return err
}

// stringValue reads a string value into dst without encoding/json when
// it is a string (null leaves dst as it is, as encoding/json does); any
// other value goes to encoding/json, which refuses it as it would.
func (a *Args) stringValue(s *scanner, what string, dst *string) error {
	if s.peek() != '"' {
		return jsonValue(s, what, dst)
	}
	raw, escaped, err := s.readString()
	if err != nil {
		return err
	}
	text, err := a.text(raw, escaped)
	if err != nil {
		return err
	}
	*dst = string(text)
	return nil
}

// jsonValue decodes the value at s.pos into dst with encoding/json, which
// keeps its rules for the types the extender reads (quantities, affinity
// terms, maps).
func jsonValue(s *scanner, what string, dst any) error {
	s.skipSpace()
	start := s.pos
	if err := s.skipValue(); err != nil {
		return err
	}
	if err := json.Unmarshal(s.data[start:s.pos], dst); err != nil {
		return &SyntaxError{Offset: start, Msg: "pod " + what + ": " + err.Error()}
	}
	return nil
}
