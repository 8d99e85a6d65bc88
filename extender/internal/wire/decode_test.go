package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"joulie.io/joulie/extender/internal/fixture"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/workload"
)

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// What the scheduler sends, as it sends it (json.Marshal of the upstream
// types), decodes to the same names, labels, pod class and demand as
// encoding/json reads from it.
func TestDecodeWhatTheSchedulerSends(t *testing.T) {
	for _, tc := range []struct {
		name string
		args extenderv1.ExtenderArgs
	}{
		{"node names", fixture.ByName(fixture.Pod("performance"), 7)},
		{"whole nodes", fixture.WithNodes(fixture.Pod(""), 7)},
		{"no candidates by name", extenderv1.ExtenderArgs{Pod: fixture.Pod(""), NodeNames: &[]string{}}},
		{"no candidates as nodes", extenderv1.ExtenderArgs{Pod: fixture.Pod(""), Nodes: &corev1.NodeList{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := marshal(t, tc.args)
			var a Args
			if err := DecodeArgs(body, &a); err != nil {
				t.Fatal(err)
			}
			var ref extenderv1.ExtenderArgs
			if err := json.Unmarshal(body, &ref); err != nil {
				t.Fatal(err)
			}
			if diff := compareArgs(&a, &ref); diff != "" {
				t.Fatal(diff)
			}
			if a.HasNodes {
				for i := range a.Nodes {
					if got, want := string(a.Nodes[i].Raw), string(marshal(t, tc.args.Nodes.Items[i])); got != want {
						t.Errorf("node %d raw bytes differ from the node sent", i)
					}
				}
			}
		})
	}
}

// compareArgs says how a differs from what encoding/json decoded, or "".
func compareArgs(a *Args, ref *extenderv1.ExtenderArgs) string {
	var b strings.Builder
	fail := func(format string, args ...any) { b.WriteString("\n" + fmt.Sprintf(format, args...)) }
	if (a.Pod == nil) != (ref.Pod == nil) {
		fail("pod present %v, encoding/json %v", a.Pod != nil, ref.Pod != nil)
	} else if a.Pod != nil {
		if !maps.Equal(a.Pod.Annotations, ref.Pod.Annotations) {
			fail("annotations %v, encoding/json %v", a.Pod.Annotations, ref.Pod.Annotations)
		}
		if g, w := workload.Classify(a.Pod), workload.Classify(ref.Pod); g != w {
			fail("pod class %v, encoding/json %v", g, w)
		}
		if g, w := powerest.PodDemand(a.Pod), powerest.PodDemand(ref.Pod); g != w {
			fail("pod demand %+v, encoding/json %+v", g, w)
		}
		if g, w := workload.IsDaemonSet(a.Pod), workload.IsDaemonSet(ref.Pod); g != w {
			fail("DaemonSet pod %v, encoding/json %v", g, w)
		}
		if a.Pod.Name != ref.Pod.Name || a.Pod.Namespace != ref.Pod.Namespace {
			fail("pod %s/%s, encoding/json %s/%s", a.Pod.Namespace, a.Pod.Name, ref.Pod.Namespace, ref.Pod.Name)
		}
	}
	if a.HasNodeNames != (ref.NodeNames != nil) {
		fail("node names present %v, encoding/json %v", a.HasNodeNames, ref.NodeNames != nil)
	} else if a.HasNodeNames {
		if len(a.NodeNames) != len(*ref.NodeNames) {
			fail("%d node names, encoding/json %d", len(a.NodeNames), len(*ref.NodeNames))
		} else {
			for i, n := range *ref.NodeNames {
				if string(a.NodeNames[i]) != n {
					fail("node name %d: %q, encoding/json %q", i, a.NodeNames[i], n)
				}
			}
		}
	}
	if a.HasNodes != (ref.Nodes != nil) {
		fail("nodes present %v, encoding/json %v", a.HasNodes, ref.Nodes != nil)
	} else if a.HasNodes {
		if len(a.Nodes) != len(ref.Nodes.Items) {
			fail("%d nodes, encoding/json %d", len(a.Nodes), len(ref.Nodes.Items))
		} else {
			for i, n := range ref.Nodes.Items {
				got := a.Nodes[i]
				if string(got.Name) != n.Name || got.Profile != n.Labels[joulie.LabelPowerProfile] || got.Draining != n.Labels[joulie.LabelDraining] ||
					got.WarmReserve != n.Labels[joulie.LabelWarmReserve] {
					fail("node %d: %q profile %q draining %q warm reserve %q, encoding/json %q %q %q %q", i, got.Name, got.Profile, got.Draining, got.WarmReserve,
						n.Name, n.Labels[joulie.LabelPowerProfile], n.Labels[joulie.LabelDraining], n.Labels[joulie.LabelWarmReserve])
				}
			}
		}
	}
	return b.String()
}

func TestDecodeEdgeCases(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		names     []string // node names expected, from either form
		profile   string   // profile label of the first node
		pod       bool
		podClass  workload.Class
		wantNames bool
	}{
		{name: "null request", body: `null`},
		{name: "empty object", body: ` { } `},
		{name: "keys in any case", body: `{"pod":{"metadata":{"annotations":{"joulie.io/workload-class":"performance"}}},"nodenames":["a"]}`,
			names: []string{"a"}, pod: true, podClass: workload.Performance, wantNames: true},
		{name: "escaped names are unescaped", body: `{"NodeNames":["n\u00f6de-\"1\"","tab\there","\ud83d\ude00","\ud800x"]}`,
			names: []string{"nöde-\"1\"", "tab\there", "😀", "\ufffdx"}, wantNames: true},
		{name: "escaped keys are matched", body: `{"N\u006fdeNames":["a"]}`, names: []string{"a"}, wantNames: true},
		{name: "null names are empty", body: `{"NodeNames":[null,"b"]}`, names: []string{"", "b"}, wantNames: true},
		{name: "null pod", body: `{"Pod":null,"NodeNames":[]}`, names: []string{}, wantNames: true},
		{name: "nodes with labels", body: `{"Nodes":{"items":[{"kind":"Node","metadata":{"labels":{"joulie.io/power-profile":"eco","x":"y"},"name":"n1"},"status":{"capacity":{"cpu":"4"}}}]}}`,
			names: []string{"n1"}, profile: "eco"},
		{name: "warm reserve label", body: `{"Nodes":{"items":[{"metadata":{"labels":{"joulie.io/warm-reserve":"true","joulie.io/power-profile":"performance"},"name":"n1"}}]}}`,
			names: []string{"n1"}, profile: "performance"},
		{name: "a DaemonSet's pod", body: `{"Pod":{"metadata":{"name":"agent-x","ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"agent","uid":"u","controller":true}]}},"NodeNames":["a"]}`,
			names: []string{"a"}, pod: true, podClass: workload.General, wantNames: true},
		{name: "null item", body: `{"Nodes":{"items":[null]}}`, names: []string{""}},
		{name: "null labels and name", body: `{"Nodes":{"items":[{"metadata":{"name":null,"labels":null}}]}}`, names: []string{""}},
		{name: "null label value", body: `{"Nodes":{"items":[{"metadata":{"name":"a","labels":{"joulie.io/power-profile":null}}}]}}`, names: []string{"a"}},
		{name: "unknown keys everywhere", body: `{"x":[1,-2.5e+3,true,false,null,{"y":{}}],"Nodes":{"kind":"NodeList","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a","uid":"u"}}]}}`,
			names: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Args
			if err := DecodeArgs([]byte(tt.body), &a); err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := range a.Len() {
				got = append(got, string(a.Name(i)))
			}
			if strings.Join(got, "|") != strings.Join(tt.names, "|") || len(got) != len(tt.names) {
				t.Errorf("names %q, want %q", got, tt.names)
			}
			if a.HasNodeNames != tt.wantNames {
				t.Errorf("HasNodeNames %v, want %v", a.HasNodeNames, tt.wantNames)
			}
			if tt.profile != "" && a.Nodes[0].Profile != tt.profile {
				t.Errorf("profile %q, want %q", a.Nodes[0].Profile, tt.profile)
			}
			if (a.Pod != nil) != tt.pod {
				t.Errorf("pod present %v, want %v", a.Pod != nil, tt.pod)
			}
			if tt.pod && workload.Classify(a.Pod) != tt.podClass {
				t.Errorf("pod class %v, want %v", workload.Classify(a.Pod), tt.podClass)
			}
			// Whatever decodes, encoding/json reads the same way.
			var ref extenderv1.ExtenderArgs
			if err := json.Unmarshal([]byte(tt.body), &ref); err != nil {
				t.Fatalf("encoding/json refuses the case: %v", err)
			}
			if diff := compareArgs(&a, &ref); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestDecodeRefusesBadRequests(t *testing.T) {
	valid := string(marshal(t, fixture.WithNodes(fixture.Pod("performance"), 2)))
	tests := []struct {
		name, body string
		dup        bool
	}{
		{name: "empty", body: ``},
		{name: "only space", body: " \n\t"},
		{name: "truncated in a node", body: valid[:len(valid)/2]},
		{name: "truncated at the end", body: valid[:len(valid)-1]},
		{name: "truncated in a string", body: `{"NodeNames":["ab`},
		{name: "truncated escape", body: `{"NodeNames":["a\`},
		{name: "truncated unicode escape", body: `{"NodeNames":["\u00`},
		{name: "trailing garbage", body: valid + "x"},
		{name: "two values", body: `{} {}`},
		{name: "array at the top", body: `[]`},
		{name: "string at the top", body: `"x"`},
		{name: "number at the top", body: `1`},
		{name: "missing colon", body: `{"NodeNames" ["a"]}`},
		{name: "missing comma", body: `{"NodeNames":["a" "b"]}`},
		{name: "trailing comma", body: `{"NodeNames":["a",]}`},
		{name: "trailing comma in object", body: `{"x":1,}`},
		{name: "single quotes", body: `{'NodeNames':[]}`},
		{name: "bad literal", body: `{"x":tru}`},
		{name: "bad number", body: `{"x":01}`},
		{name: "bad fraction", body: `{"x":1.}`},
		{name: "bad exponent", body: `{"x":1e}`},
		{name: "plus sign", body: `{"x":+1}`},
		{name: "NaN", body: `{"x":NaN}`},
		{name: "bad escape", body: `{"x":"\q"}`},
		{name: "bad unicode escape", body: `{"x":"\u12g4"}`},
		{name: "raw control character", body: "{\"x\":\"a\x01b\"}"},
		{name: "raw newline in a string", body: "{\"x\":\"a\nb\"}"},
		{name: "unclosed skipped value", body: `{"x":[[{"y":1}]`},
		{name: "mismatched brackets", body: `{"x":[}`},
		{name: "names not an array", body: `{"NodeNames":"a"}`},
		{name: "name not a string", body: `{"NodeNames":[1]}`},
		{name: "nodes not an object", body: `{"Nodes":[]}`},
		{name: "items not an array", body: `{"Nodes":{"items":{}}}`},
		{name: "item not an object", body: `{"Nodes":{"items":[1]}}`},
		{name: "metadata not an object", body: `{"Nodes":{"items":[{"metadata":"x"}]}}`},
		{name: "node name not a string", body: `{"Nodes":{"items":[{"metadata":{"name":5}}]}}`},
		{name: "label not a string", body: `{"Nodes":{"items":[{"metadata":{"labels":{"a":true}}}]}}`},
		{name: "pod not an object", body: `{"Pod":[]}`},
		{name: "pod field of the wrong type", body: `{"Pod":{"metadata":{"annotations":{"a":1}}}}`},
		{name: "pod quantity unparsable", body: `{"Pod":{"spec":{"containers":[{"resources":{"requests":{"cpu":"lots"}}}]}}}`},
		{name: "too deep", body: `{"x":` + strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2) + `}`},
		{name: "duplicate NodeNames", body: `{"NodeNames":["a"],"nodenames":["b"]}`, dup: true},
		{name: "duplicate Pod", body: `{"Pod":{},"Pod":null}`, dup: true},
		{name: "duplicate Nodes", body: `{"Nodes":{},"Nodes":{}}`, dup: true},
		{name: "duplicate items", body: `{"Nodes":{"items":[],"items":[]}}`, dup: true},
		{name: "duplicate metadata", body: `{"Nodes":{"items":[{"metadata":{},"metadata":{}}]}}`, dup: true},
		{name: "duplicate name", body: `{"Nodes":{"items":[{"metadata":{"name":"a","name":"b"}}]}}`, dup: true},
		{name: "duplicate labels", body: `{"Nodes":{"items":[{"metadata":{"labels":{},"labels":{}}}]}}`, dup: true},
		{name: "duplicate profile label", body: `{"Nodes":{"items":[{"metadata":{"labels":{"joulie.io/power-profile":"eco","joulie.io/power-profile":"performance"}}}]}}`, dup: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Args
			err := DecodeArgs([]byte(tt.body), &a)
			if err == nil {
				t.Fatal("decoded without error")
			}
			if errors.Is(err, ErrDuplicateKey) != tt.dup {
				t.Errorf("error %q: duplicate key %v, want %v", err, errors.Is(err, ErrDuplicateKey), tt.dup)
			}
			var se *SyntaxError
			if !tt.dup && !errors.As(err, &se) {
				t.Errorf("error %q (%T) is not a *SyntaxError", err, err)
			}
		})
	}
}

// Args are reused across requests: a second decode must not keep anything
// of the first.
func TestDecodeResetsReusedArgs(t *testing.T) {
	var a Args
	if err := DecodeArgs(marshal(t, fixture.WithNodes(fixture.Pod("performance"), 3)), &a); err != nil {
		t.Fatal(err)
	}
	if err := DecodeArgs([]byte(`{"NodeNames":["x"]}`), &a); err != nil {
		t.Fatal(err)
	}
	if a.Pod != nil || a.HasNodes || len(a.Nodes) != 0 || !a.HasNodeNames || a.Len() != 1 {
		t.Errorf("after reuse: pod %v, nodes %v/%d, names %v/%d", a.Pod != nil, a.HasNodes, len(a.Nodes), a.HasNodeNames, a.Len())
	}
}

// Reading node names and labels allocates nothing once the Args' slices
// have grown; only the pod, decoded by encoding/json, costs allocations.
func TestDecodeNodesDoesNotAllocate(t *testing.T) {
	for name, args := range map[string]extenderv1.ExtenderArgs{
		"by name":     fixture.ByName(nil, 200),
		"whole nodes": fixture.WithNodes(nil, 200),
	} {
		body := marshal(t, args)
		var a Args
		if err := DecodeArgs(body, &a); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(20, func() { _ = DecodeArgs(body, &a) }); n != 0 {
			t.Errorf("%s: %v allocations per decode, want 0", name, n)
		}
	}
}
