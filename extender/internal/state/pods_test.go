package state

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// The store sums what bound, unended pods request, node by node, and says
// when a sum changed: not on a status update that changes nothing it
// counts.
func TestPodStoreSums(t *testing.T) {
	changes := 0
	s := newPodStore(func() { changes++ })
	step := func(what string, op func(any) error, obj any, wantChange bool, want map[string]Requests) {
		t.Helper()
		before := changes
		if err := op(obj); err != nil {
			t.Fatal(err)
		}
		if changed := changes > before; changed != wantChange {
			t.Errorf("%s: changed %v, want %v", what, changed, wantChange)
		}
		if got := s.requests(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: sums %v, want %v", what, got, want)
		}
	}
	step("a pending pod, not bound", s.Add, podObj("ns", "p1", "", corev1.PodPending, "2", ""), false, map[string]Requests{})
	step("bound", s.Update, podObj("ns", "p1", "n1", corev1.PodPending, "2", ""), true,
		map[string]Requests{"n1": {CPUMilli: 2000}})
	step("running: a status update", s.Update, podObj("ns", "p1", "n1", corev1.PodRunning, "2", ""), false,
		map[string]Requests{"n1": {CPUMilli: 2000}})
	step("a GPU pod on n1", s.Add, podObj("ns", "p2", "n1", corev1.PodRunning, "500m", "2"), true,
		map[string]Requests{"n1": {CPUMilli: 2500, GPUMilli: 2000}})
	step("the same name in another namespace, on n2", s.Add, podObj("other", "p2", "n2", corev1.PodRunning, "1", ""), true,
		map[string]Requests{"n1": {CPUMilli: 2500, GPUMilli: 2000}, "n2": {CPUMilli: 1000}})
	step("resized in place", s.Update, podObj("ns", "p1", "n1", corev1.PodRunning, "3", ""), true,
		map[string]Requests{"n1": {CPUMilli: 3500, GPUMilli: 2000}, "n2": {CPUMilli: 1000}})
	step("succeeded", s.Update, podObj("ns", "p2", "n1", corev1.PodSucceeded, "500m", "2"), true,
		map[string]Requests{"n1": {CPUMilli: 3000}, "n2": {CPUMilli: 1000}})
	step("the ended pod deleted", s.Delete, podObj("ns", "p2", "n1", corev1.PodSucceeded, "500m", "2"), false,
		map[string]Requests{"n1": {CPUMilli: 3000}, "n2": {CPUMilli: 1000}})
	step("failed", s.Update, podObj("other", "p2", "n2", corev1.PodFailed, "1", ""), true,
		map[string]Requests{"n1": {CPUMilli: 3000}})
	step("deleted, as its final state was unknown", s.Delete,
		cache.DeletedFinalStateUnknown{Key: "ns/p1", Obj: podObj("ns", "p1", "n1", corev1.PodRunning, "3", "")}, true,
		map[string]Requests{})
	step("a relist", func(any) error {
		return s.Replace([]any{podObj("ns", "a", "n3", corev1.PodRunning, "1", ""), podObj("ns", "b", "n3", corev1.PodRunning, "250m", ""),
			podObj("ns", "c", "", corev1.PodPending, "8", "")}, "7")
	}, nil, true, map[string]Requests{"n3": {CPUMilli: 1250}})
	if !s.HasSynced() {
		t.Error("not synced after a list")
	}
}

// With WatchList the Reflector keeps the initial list in a store of its
// own, through the store's Transformer, and hands that store's objects to
// Replace: they are counted the same, and the Reflector's store can key
// them.
func TestPodStoreThroughItsTransformer(t *testing.T) {
	s := newPodStore(func() {})
	tmp := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.WithTransformer(s.Transformer()))
	for _, p := range []*corev1.Pod{
		podObj("ns", "a", "n1", corev1.PodRunning, "2", "1"),
		podObj("ns", "b", "n1", corev1.PodRunning, "1", ""),
		podObj("ns", "a", "n1", corev1.PodRunning, "4", "1"), // the same pod again, resized
		podObj("ns", "gone", "n2", corev1.PodSucceeded, "1", ""),
	} {
		if err := tmp.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if keys := tmp.ListKeys(); len(keys) != 3 {
		t.Fatalf("the Reflector's store holds %v, want 3 keys", keys)
	}
	if err := s.Replace(tmp.List(), "9"); err != nil {
		t.Fatal(err)
	}
	if got := s.requests(); fmt.Sprint(got) != fmt.Sprint(map[string]Requests{"n1": {CPUMilli: 5000, GPUMilli: 1000}}) {
		t.Errorf("sums %v", got)
	}
}

// What the store keeps per pod, measured on the heap: a cluster's worth
// of pods must not cost the extender what an informer's cache would (a
// cached Pod, even trimmed, is a kilobyte or more). Each pod is built,
// counted and dropped, as a decoded watch event is, so that what stays is
// what the store holds, names included.
func TestPodStoreMemoryPerPod(t *testing.T) {
	const pods, nodes = 20000, 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := newPodStore(func() {})
	for i := range pods {
		_ = s.Add(podObj(fmt.Sprintf("team-%03d", i%300), fmt.Sprintf("job-%08d-worker-%d", i, i%4), fmt.Sprintf("node-%05d", i%nodes), corev1.PodRunning, "1500m", ""))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perPod := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / pods
	t.Logf("%.0f bytes per pod", perPod)
	if perPod > 250 {
		t.Errorf("%.0f bytes per pod, want at most 250", perPod)
	}
	if got := s.requests()["node-00007"]; got.CPUMilli != pods/nodes*1500 {
		t.Errorf("node-00007 sums %+v", got)
	}
	runtime.KeepAlive(s)
}

func BenchmarkPodStoreStatusUpdate(b *testing.B) {
	s := newPodStore(func() {})
	p := podObj("ns", "p", "n1", corev1.PodRunning, "2", "")
	_ = s.Add(p)
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Update(p)
	}
}

// BenchmarkBuild5000 is one rebuild of the snapshot of a 5,000-node
// cluster, every node with a twin, hardware, a Node and pods: what a
// burst of changes costs, at most every 250 ms.
func BenchmarkBuild5000(b *testing.B) {
	const n = 5000
	twins := make([]*joulie.NodeTwin, n)
	hw := make([]*joulie.NodeHardware, n)
	nodes := make([]*corev1.Node, n)
	requests := make(map[string]Requests, n)
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		twins[i] = twin(name, joulie.ClassPerformance, float64(i%1000))
		hw[i] = hardware(name)
		nodes[i] = nodeObj(name, map[string]string{joulie.LabelPowerProfile: "performance"}, "cpu", "190", "nvidia.com/gpu", "8")
		requests[name] = Requests{CPUMilli: int64(i%190) * 1000, GPUMilli: int64(i%8) * 1000}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Build(twins, hw, nodes, requests, true)
	}
}
