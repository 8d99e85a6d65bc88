package wire

import (
	"encoding/json"
	"errors"
	"testing"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// FuzzDecodeArgs holds the decoder to encoding/json on any input: it never
// panics, it accepts only valid JSON, it refuses nothing encoding/json
// reads into the upstream ExtenderArgs (except keys it reads given twice),
// it reads the same names, labels and pod, it charges Reserve for all it
// keeps, and the replies it writes from what it read are valid JSON that
// reads back the same, of the sizes announced. Seeds are in
// testdata/fuzz/FuzzDecodeArgs.
func FuzzDecodeArgs(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		var charged int
		a := Args{Reserve: func(n int) error { charged += n; return nil }}
		err := DecodeArgs(body, &a)
		if kept(&a) > charged {
			t.Fatalf("%q: the Args holds %d bytes, %d charged", body, kept(&a), charged)
		}
		var ref extenderv1.ExtenderArgs
		refErr := json.Unmarshal(body, &ref)

		if err == nil && !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if err != nil {
			if refErr == nil && !errors.Is(err, ErrDuplicateKey) {
				t.Fatalf("refused %q, which encoding/json reads: %v", body, err)
			}
			return
		}
		if refErr == nil {
			if diff := compareArgs(&a, &ref); diff != "" {
				t.Fatalf("%q decodes differently from encoding/json:%s", body, diff)
			}
		}

		// Reject every other candidate and check the replies.
		reasons := make([]string, a.Len())
		scores := make([]int64, a.Len())
		for i := range reasons {
			if i%2 == 1 {
				reasons[i] = "rejected"
			}
			scores[i] = int64(i % 11)
		}
		if !a.HasNodeNames && !a.HasNodes {
			return
		}
		out := AppendFilterResult(nil, &a, reasons)
		if !json.Valid(out) {
			t.Fatalf("filter reply %q is not valid JSON", out)
		}
		if size := FilterResultSize(&a, reasons); size != len(out) {
			t.Fatalf("filter reply %q is %d bytes, FilterResultSize says %d", out, len(out), size)
		}
		if a.HasNodes {
			checkKeptNodes(t, &a, reasons, out)
		}
		prio := AppendHostPriorities(nil, &a, scores)
		if size := HostPrioritiesSize(&a, scores); size != len(prio) {
			t.Fatalf("prioritize reply %q is %d bytes, HostPrioritiesSize says %d", prio, len(prio), size)
		}
		var pl extenderv1.HostPriorityList
		if err := json.Unmarshal(prio, &pl); err != nil {
			t.Fatalf("prioritize reply %q: %v", prio, err)
		}
		// The reply lists the hosts that score above 0, in order.
		k := 0
		for i, score := range scores {
			if score == 0 {
				continue
			}
			if k >= len(pl) || pl[k].Host != string(a.Name(i)) || pl[k].Score != score {
				t.Fatalf("prioritize reply %q: entry %d is not host %d (%q) at %d", prio, k, i, a.Name(i), score)
			}
			k++
		}
		if k != len(pl) {
			t.Fatalf("prioritize reply %q has %d entries, %d hosts score above 0", prio, len(pl), k)
		}
		if refErr != nil {
			return
		}
		var res extenderv1.ExtenderFilterResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("filter reply %q does not read back: %v", out, err)
		}
	})
}
