package wire

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"joulie.io/joulie/extender/internal/fixture"
)

// repeated is prefix, n items separated by commas, and suffix.
func repeated(prefix, item string, n int, suffix string) []byte {
	return []byte(prefix + item + strings.Repeat(","+item, n-1) + suffix)
}

// Bodies whose decoded form weighs many times their bytes.
func heavyBodies(t *testing.T) map[string][]byte {
	return map[string][]byte{
		"empty nodes":         repeated(`{"Pod":{},"Nodes":{"items":[`, `{}`, 50_000, `]}}`),
		"empty names":         repeated(`{"Pod":{},"NodeNames":[`, `""`, 50_000, `]}`),
		"invalid UTF-8 names": repeated(`{"Pod":{},"NodeNames":[`, "\"\xff\xff\xff\xff\"", 20_000, `]}`),
		"escaped label keys":  repeated(`{"Pod":{},"Nodes":{"items":[{"metadata":{"labels":{`, `"\u00e9\u00e9":""`, 20_000, `}}}]}}`),
		"empty containers":    repeated(`{"NodeNames":[],"Pod":{"spec":{"containers":[`, `{}`, 50_000, `]}}}`),
		"empty init containers and affinity terms": repeated(`{"NodeNames":[],"Pod":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{}]}}},"initContainers":[`,
			`{"resources":{"requests":{"cpu":"1e99999","memory":"1Gi"}}}`, 5_000, `]}}}`),
		"annotations": []byte(`{"NodeNames":[],"Pod":{"metadata":{"annotations":{` + func() string {
			var b strings.Builder
			for i := range 30_000 {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`"` + fixture.NodeName(i) + `":""`)
			}
			return b.String()
		}() + `}}}}`),
		"scheduler's full nodes": marshal(t, fixture.WithNodes(fixture.Pod("performance"), 300)),
		"scheduler's names":      marshal(t, fixture.ByName(fixture.Pod(""), 5000)),
	}
}

// kept is what a holds that Reserve is asked for: all but the scanner's
// stack, which maxDepth bounds to 10 KB.
func kept(a *Args) int { return a.Retained() - cap(a.scan.stack) }

// Everything the decoder allocates is charged to Reserve first: what the
// Args keeps, and the pod with encoding/json's garbage. A server that
// bounds the memory of calls in flight relies on it.
func TestDecodeChargesWhatItAllocates(t *testing.T) {
	for name, body := range heavyBodies(t) {
		t.Run(name, func(t *testing.T) {
			var charged int
			a := Args{Reserve: func(n int) error { charged += n; return nil }}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			before := m.TotalAlloc
			if err := DecodeArgs(body, &a); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&m)
			allocated := int(m.TotalAlloc - before)
			if r := kept(&a); r > charged {
				t.Errorf("the Args holds %d bytes, %d charged", r, charged)
			}
			// A list that doubles leaves its earlier arrays as garbage,
			// at most as much again as its final size; the allocator
			// rounds sizes up by at most an eighth.
			if allocated > 2*charged+charged/8+4096 {
				t.Errorf("allocated %d bytes decoding %d, charged %d", allocated, len(body), charged)
			}
			t.Logf("%d-byte body: charged %d, allocated %d, %d nodes", len(body), charged, allocated, a.Len())
		})
	}
}

// A refusal from Reserve stops the decoding before the memory is taken,
// and DecodeArgs returns it as it is.
func TestDecodeStopsWhenReserveRefuses(t *testing.T) {
	refused := errors.New("no more")
	const budget = 64 << 10
	for name, body := range heavyBodies(t) {
		t.Run(name, func(t *testing.T) {
			var charged int
			a := Args{Reserve: func(n int) error {
				if charged+n > budget {
					return refused
				}
				charged += n
				return nil
			}}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			before := m.TotalAlloc
			err := DecodeArgs(body, &a)
			runtime.ReadMemStats(&m)
			if allocated := int(m.TotalAlloc - before); allocated > 2*budget+4096 {
				t.Errorf("allocated %d bytes with a budget of %d", allocated, budget)
			}
			if !errors.Is(err, refused) && a.Retained() > budget {
				t.Errorf("decoded (%v) into %d bytes with a budget of %d", err, a.Retained(), budget)
			}
		})
	}
}

// The reply sizes are exact for what the extender writes, so the server
// can charge and allocate the reply once.
func TestReplySizes(t *testing.T) {
	for name, body := range map[string][]byte{
		"names":         marshal(t, fixture.ByName(fixture.Pod(""), 50)),
		"nodes":         marshal(t, fixture.WithNodes(fixture.Pod(""), 20)),
		"escaped names": []byte(`{"Pod":{},"NodeNames":["a\u00e9","\"q\"","\ud800",null,""]}`),
		"no nodes":      []byte(`{"Pod":{},"NodeNames":[]}`),
	} {
		var a Args
		if err := DecodeArgs(body, &a); err != nil {
			t.Fatal(err)
		}
		for _, rejectEvery := range []int{0, 1, 2, 3} {
			reasons := make([]string, a.Len())
			scores := make([]int64, a.Len())
			for i := range reasons {
				if rejectEvery > 0 && i%rejectEvery == 0 {
					reasons[i] = "joulie: NodeTwin class is eco; performance pods need a performance node"
				}
				scores[i] = int64(i % 11)
			}
			if got, want := FilterResultSize(&a, reasons), len(AppendFilterResult(nil, &a, reasons)); got != want {
				t.Errorf("%s, rejecting every %d: FilterResultSize %d, reply %d bytes", name, rejectEvery, got, want)
			}
			if got, want := HostPrioritiesSize(&a, scores), len(AppendHostPriorities(nil, &a, scores)); got != want {
				t.Errorf("%s: HostPrioritiesSize %d, reply %d bytes", name, got, want)
			}
		}
		// A reason that needs escaping is bounded, not exact.
		reasons := make([]string, a.Len())
		for i := range reasons {
			reasons[i] = "tab\there \xff"
		}
		if got, want := FilterResultSize(&a, reasons), len(AppendFilterResult(nil, &a, reasons)); got < want {
			t.Errorf("%s: FilterResultSize %d below the reply's %d bytes", name, got, want)
		}
	}
}
