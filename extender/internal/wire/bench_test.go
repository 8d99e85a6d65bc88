package wire

import (
	"encoding/json"
	"sync"
	"testing"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"joulie.io/joulie/extender/internal/fixture"
)

// Decoding alone, against encoding/json decoding the upstream types, for
// 5,000 nodes in both of the scheduler's forms.

var benchBodies = sync.OnceValues(func() (byName, withNodes []byte) {
	p := fixture.Pod("")
	byName, _ = json.Marshal(fixture.ByName(p, 5000))
	withNodes, _ = json.Marshal(fixture.WithNodes(p, 5000))
	return byName, withNodes
})

func benchDecode(b *testing.B, body []byte) {
	var a Args
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeArgs(body, &a); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEncodingJSON(b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var a extenderv1.ExtenderArgs
		if err := json.Unmarshal(body, &a); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeArgsByName5000(b *testing.B) {
	byName, _ := benchBodies()
	benchDecode(b, byName)
}

func BenchmarkDecodeArgsFullNodes5000(b *testing.B) {
	_, withNodes := benchBodies()
	benchDecode(b, withNodes)
}

func BenchmarkEncodingJSONByName5000(b *testing.B) {
	byName, _ := benchBodies()
	benchEncodingJSON(b, byName)
}

func BenchmarkEncodingJSONFullNodes5000(b *testing.B) {
	_, withNodes := benchBodies()
	benchEncodingJSON(b, withNodes)
}
