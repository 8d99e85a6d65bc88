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
// it reads the same names, labels and pod, and the replies it writes from
// what it read are valid JSON that reads back the same. Seeds are in
// testdata/fuzz/FuzzDecodeArgs.
func FuzzDecodeArgs(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		var a Args
		err := DecodeArgs(body, &a)
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
		var pl extenderv1.HostPriorityList
		if err := json.Unmarshal(AppendHostPriorities(nil, &a, scores), &pl); err != nil || len(pl) != a.Len() {
			t.Fatalf("prioritize reply: %d entries, %v", len(pl), err)
		}
		for i := range pl {
			if want := string(a.Name(i)); pl[i].Host != want {
				t.Fatalf("host %d reads back %q, want %q", i, pl[i].Host, want)
			}
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
