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

// The pod alone: the streaming decoder against encoding/json into podJSON
// (what the extender did before), on the fixture's pod and on a pod as
// the API server stores it, managed fields, environment, volumes and
// status included.
func benchPod(b *testing.B, decode func([]byte) (*podJSON, error), raw []byte) {
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

var benchPods = sync.OnceValues(func() (small, stored []byte) {
	small, _ = json.Marshal(fixture.Pod("performance"))
	stored, _ = json.Marshal(fixture.StoredPod("performance"))
	return small, stored
})

func BenchmarkReadPodStreaming(b *testing.B)    { small, _ := benchPods(); benchPod(b, streamPod, small) }
func BenchmarkReadPodEncodingJSON(b *testing.B) { small, _ := benchPods(); benchPod(b, fullPod, small) }
func BenchmarkReadStoredPodStreaming(b *testing.B) {
	_, stored := benchPods()
	benchPod(b, streamPod, stored)
}
func BenchmarkReadStoredPodEncodingJSON(b *testing.B) {
	_, stored := benchPods()
	benchPod(b, fullPod, stored)
}
