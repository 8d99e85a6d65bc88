package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"joulie.io/joulie/extender/internal/fixture"
)

// The replies decode, with the scheduler's own types and encoding/json, to
// what the extender decided.
func TestFilterResultReadsBackInBothForms(t *testing.T) {
	const reason = `joulie: "eco" \ node`
	for _, tc := range []struct {
		name string
		args extenderv1.ExtenderArgs
	}{
		{"names", fixture.ByName(fixture.Pod(""), 5)},
		{"nodes", fixture.WithNodes(fixture.Pod(""), 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a Args
			if err := DecodeArgs(marshal(t, tc.args), &a); err != nil {
				t.Fatal(err)
			}
			reasons := []string{"", reason, "", "", reason}
			out := AppendFilterResult(nil, &a, reasons)
			var res extenderv1.ExtenderFilterResult
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("reply %s: %v", out, err)
			}
			want := []string{fixture.NodeName(0), fixture.NodeName(2), fixture.NodeName(3)}
			var kept []string
			if tc.args.NodeNames != nil {
				if res.NodeNames == nil || res.Nodes != nil {
					t.Fatalf("asked by name, answered with names %v and nodes %v", res.NodeNames != nil, res.Nodes != nil)
				}
				kept = *res.NodeNames
			} else {
				if res.Nodes == nil || res.NodeNames != nil {
					t.Fatalf("asked with nodes, answered with names %v and nodes %v", res.NodeNames != nil, res.Nodes != nil)
				}
				for i, n := range res.Nodes.Items {
					kept = append(kept, n.Name)
					if orig := tc.args.Nodes.Items[[]int{0, 2, 3}[i]]; string(marshal(t, n)) != string(marshal(t, orig)) {
						t.Errorf("node %s came back changed", n.Name)
					}
				}
			}
			if !slices.Equal(kept, want) {
				t.Errorf("kept %v, want %v", kept, want)
			}
			failed := map[string]string{fixture.NodeName(1): reason, fixture.NodeName(4): reason}
			if len(res.FailedNodes) != 0 || len(res.FailedAndUnresolvableNodes) != 2 ||
				res.FailedAndUnresolvableNodes[fixture.NodeName(1)] != failed[fixture.NodeName(1)] ||
				res.FailedAndUnresolvableNodes[fixture.NodeName(4)] != failed[fixture.NodeName(4)] || res.Error != "" {
				t.Errorf("failed %v, unresolvable %v, error %q; want unresolvable %v", res.FailedNodes, res.FailedAndUnresolvableNodes, res.Error, failed)
			}
		})
	}
}

func TestFilterResultWithNothingLeft(t *testing.T) {
	a := Args{HasNodes: true}
	var res extenderv1.ExtenderFilterResult
	if err := json.Unmarshal(AppendFilterResult(nil, &a, nil), &res); err != nil {
		t.Fatal(err)
	}
	if res.Nodes == nil || len(res.Nodes.Items) != 0 {
		t.Errorf("nodes %+v, want an empty list", res.Nodes)
	}
}

func TestHostPrioritiesReadBack(t *testing.T) {
	var a Args
	if err := DecodeArgs([]byte(`{"NodeNames":["a","b\"\u0001\u00e9","c"]}`), &a); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		scores []int64
		want   extenderv1.HostPriorityList
	}{
		// A host that scores 0 is left out: kube-scheduler ranks it the
		// same either way.
		{[]int64{0, 7, 10}, extenderv1.HostPriorityList{{Host: "b\"\u0001é", Score: 7}, {Host: "c", Score: 10}}},
		{[]int64{3, 0, 10}, extenderv1.HostPriorityList{{Host: "a", Score: 3}, {Host: "c", Score: 10}}},
		{[]int64{0, 0, 0}, extenderv1.HostPriorityList{}},
	} {
		out := AppendHostPriorities(nil, &a, c.scores)
		if size := HostPrioritiesSize(&a, c.scores); size != len(out) {
			t.Errorf("%v: reply %s is %d bytes, HostPrioritiesSize says %d", c.scores, out, len(out), size)
		}
		var got extenderv1.HostPriorityList
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("reply %s: %v", out, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%v: got %v, want %v", c.scores, got, c.want)
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\x00\x1f\n\r\t", "é😀", "bad\xffutf8\xc3", "\u2028", "<&>"} {
		var back string
		if err := json.Unmarshal(appendString(nil, []byte(s)), &back); err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		var want string
		_ = json.Unmarshal(marshal(t, s), &want)
		if back != want {
			t.Errorf("%q reads back as %q, encoding/json gives %q", s, back, want)
		}
		if got := string(appendText(nil, s)); got != string(appendString(nil, []byte(s))) {
			t.Errorf("appendText(%q) = %s, appendString gives %s", s, got, appendString(nil, []byte(s)))
		}
	}
}

func TestAppendError(t *testing.T) {
	var got struct{ Error string }
	if err := json.Unmarshal(AppendError(nil, "bad \"body\"\n"), &got); err != nil || got.Error != "bad \"body\"\n" {
		t.Errorf("got %+v, %v", got, err)
	}
}

// checkKeptNodes holds a filter reply to Nodes, out, to the plain
// reference: the kept Nodes' bytes joined by commas, then the failures;
// and WriteKeptNodes, which writes runs of the body at once, to the same
// bytes and to KeptNodesSize.
func checkKeptNodes(t *testing.T, a *Args, reasons []string, out []byte) {
	t.Helper()
	var kept [][]byte
	for i, r := range reasons {
		if r == "" {
			kept = append(kept, a.Nodes[i].Raw)
		}
	}
	want := slices.Concat([]byte(keptNodesHead), bytes.Join(kept, []byte(",")), []byte(keptNodesFoot), AppendFilterFailures(nil, a, reasons))
	if !bytes.Equal(out, want) {
		t.Fatalf("filter reply\n%q\nwant\n%q", out, want)
	}
	var written bytes.Buffer
	if err := WriteKeptNodes(&written, a, reasons); err != nil || written.Len() != KeptNodesSize(a, reasons) ||
		!bytes.Equal(append(written.Bytes(), AppendFilterFailures(nil, a, reasons)...), want) {
		t.Fatalf("WriteKeptNodes wrote %q (%v, KeptNodesSize %d), want the start of %q", written.Bytes(), err, KeptNodesSize(a, reasons), want)
	}
}

// Runs of kept Nodes are written from the body at once only where a bare
// comma separates them; spaces, newlines or rejected Nodes between them
// split the run, and the reply is the same either way.
func TestKeptNodesAreTheBodysBytesWhateverItsLayout(t *testing.T) {
	args := fixture.WithNodes(fixture.Pod(""), 7)
	indented, err := json.MarshalIndent(args, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"compact": marshal(t, args), "indented": indented} {
		for _, rejected := range [][]int{nil, {0}, {6}, {1, 2}, {0, 3, 6}, {0, 1, 2, 3, 4, 5, 6}} {
			var a Args
			if err := DecodeArgs(body, &a); err != nil {
				t.Fatal(err)
			}
			reasons := make([]string, a.Len())
			for _, i := range rejected {
				reasons[i] = "eco"
			}
			t.Run(fmt.Sprint(name, rejected), func(t *testing.T) {
				checkKeptNodes(t, &a, reasons, AppendFilterResult(nil, &a, reasons))
			})
		}
	}
	// All seven kept from a compact body: the head, one run, the foot.
	var a Args
	if err := DecodeArgs(marshal(t, args), &a); err != nil {
		t.Fatal(err)
	}
	var w countingWriter
	if err := WriteKeptNodes(&w, &a, make([]string, a.Len())); err != nil || w.writes != 3 {
		t.Errorf("seven adjacent Nodes took %d writes (%v), want 3", w.writes, err)
	}
}

type countingWriter struct{ writes int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return len(p), nil
}
