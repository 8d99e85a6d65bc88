package wire

import (
	"bytes"
	"unicode/utf8"
	"unsafe"
)

// Sizes the decoder charges to Args.Reserve.
const (
	sliceBytes = int(unsafe.Sizeof([]byte(nil)))
	nodeBytes  = int(unsafe.Sizeof(Node{}))
	// podValueBytes is what one JSON value of the pod may cost while it
	// is decoded and pod copies it out, garbage included: an upper bound,
	// since the streaming decoder (pod.go) builds only the values the
	// extender reads.
	// The worst value is an empty container, {}: a 64-byte containerJSON
	// in a slice that grows by doubling, then a 408-byte corev1.Container.
	// A map entry (annotations, node selector, resources) costs less,
	// its key and value bytes being charged with the pod's raw length.
	podValueBytes = 1024
	// minGrowth is the fewest entries or bytes a list or the arena grows
	// by, so that small requests call Reserve a few times only.
	minGrowth = 16
)

func (a *Args) reserve(n int) error {
	if a.Reserve == nil || n <= 0 {
		return nil
	}
	return a.Reserve(n)
}

// grow makes room for one more entry in s, at least doubling its
// capacity, and charges the growth before it allocates.
func grow[T any](a *Args, s []T) ([]T, error) {
	if len(s) < cap(s) {
		return s, nil
	}
	more := max(cap(s), minGrowth)
	if err := a.reserve(more * int(unsafe.Sizeof(*new(T)))); err != nil {
		return s, err
	}
	return extend(s, more), nil
}

// extend returns s with room for more entries. Not append or slices.Grow:
// they may round the capacity up past what was charged.
func extend[T any](s []T, more int) []T {
	grown := make([]T, len(s), cap(s)+more)
	copy(grown, s)
	return grown
}

// appendName appends a name to NodeNames and its spelling to rawNames,
// which always have the same length and capacity.
func (a *Args) appendName(name, raw []byte) error {
	if len(a.NodeNames) == cap(a.NodeNames) {
		more := max(cap(a.NodeNames), minGrowth)
		if err := a.reserve(2 * more * sliceBytes); err != nil {
			return err
		}
		a.NodeNames = extend(a.NodeNames, more)
		a.rawNames = extend(a.rawNames, more)
	}
	a.NodeNames = append(a.NodeNames, name)
	a.rawNames = append(a.rawNames, raw)
	return nil
}

// text is the text of a raw string, unescaped into the arena when it has
// to be. Unescaping makes at most three bytes of one (an invalid byte
// becomes U+FFFD), so the arena is grown to that, and charged, first.
// The whole new arena is charged: the texts already taken still point
// into the old one, which stays alive with them.
func (a *Args) text(raw []byte, special bool) ([]byte, error) {
	if !special || (bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw)) {
		return raw, nil
	}
	if need := 3 * len(raw); cap(a.arena)-len(a.arena) < need {
		more := max(cap(a.arena), need, minGrowth)
		if err := a.reserve(cap(a.arena) + more); err != nil {
			return nil, err
		}
		a.arena = extend(a.arena, more)
	}
	var text []byte
	text, a.arena = unquote(raw, true, a.arena)
	return text, nil
}

// Retained is the memory a's storage keeps from one decoding to the next,
// for a pool to bound.
func (a *Args) Retained() int {
	return (cap(a.NodeNames)+cap(a.rawNames))*sliceBytes + cap(a.Nodes)*nodeBytes + cap(a.arena) + cap(a.scan.stack)
}
