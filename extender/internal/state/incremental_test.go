package state

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	joulieclient "joulie.io/joulie/pkg/generated/clientset/versioned/fake"
)

// A snapshot updated for changes of pods alone is the one Build makes
// from scratch, through random binds, moves, resizes, ends and deletions,
// on every kind of node: with a twin, hardware and a Node; with a Node
// and no twin; with a twin and no Node (whose fill counts no pods); and
// a Node Joulie does not know (left out of the snapshot).
func TestPodChangesMatchARebuild(t *testing.T) {
	twins := []*joulie.NodeTwin{twin("a", joulie.ClassPerformance, 100), twin("b", joulie.ClassEco, 50), twin("no-node", joulie.ClassPerformance, 10)}
	hw := []*joulie.NodeHardware{hardware("a"), hardware("labelled")}
	nodes := []*corev1.Node{
		nodeObj("a", nil, "cpu", "64", "nvidia.com/gpu", "8"),
		nodeObj("b", map[string]string{joulie.LabelPowerProfile: "eco"}, "cpu", "32"),
		nodeObj("labelled", map[string]string{joulie.LabelPowerProfile: "performance"}, "cpu", "16"),
		nodeObj("unknown", nil, "cpu", "8"),
	}
	names := []string{"a", "b", "labelled", "no-node", "unknown", ""}

	rng := rand.New(rand.NewPCG(7, 25))
	store := newPodStore(func() {})
	snap := Build(twins, hw, nodes, store.requests(), true)
	store.takeChanges()
	incremental := 0
	for step := range 400 {
		name := fmt.Sprintf("p%d", rng.IntN(30))
		switch rng.IntN(10) {
		case 0:
			_ = store.Delete(podObj("ns", name, "", corev1.PodRunning, "1", ""))
		case 1:
			_ = store.Update(podObj("ns", name, names[rng.IntN(len(names))], corev1.PodSucceeded, "1", ""))
		default:
			gpus := ""
			if rng.IntN(3) == 0 {
				gpus = fmt.Sprint(1 + rng.IntN(4))
			}
			_ = store.Update(podObj("ns", name, names[rng.IntN(len(names))], corev1.PodRunning, fmt.Sprintf("%dm", 100*(1+rng.IntN(40))), gpus))
		}
		if step%7 != 0 {
			continue
		}
		changed, relisted := store.takeChanges()
		if relisted {
			t.Fatal("relisted without a list")
		}
		next := snap.withRequests(changed)
		if next != snap {
			incremental++
		}
		snap = next
		want := Build(twins, hw, nodes, store.requests(), true)
		if !reflect.DeepEqual(snap.nodes, want.nodes) || !reflect.DeepEqual(snap.index, want.index) || !reflect.DeepEqual(snap.hasNode, want.hasNode) {
			t.Fatalf("step %d: updated for %v:\n%+v\nrebuilt:\n%+v", step, changed, snap.nodes, want.nodes)
		}
	}
	if incremental < 20 {
		t.Fatalf("only %d updates changed the snapshot: the sequence does not exercise the update", incremental)
	}
}

// A list that replaces the pods says so, so that the cache rebuilds.
func TestPodStoreReportsARelist(t *testing.T) {
	store := newPodStore(func() {})
	_ = store.Add(podObj("ns", "p", "a", corev1.PodRunning, "2", ""))
	if changed, relisted := store.takeChanges(); relisted || changed["a"].CPUMilli != 2000 {
		t.Fatalf("after an add: %v, relisted %v", changed, relisted)
	}
	_ = store.Replace([]any{podObj("ns", "q", "b", corev1.PodRunning, "1", "")}, "")
	if _, relisted := store.takeChanges(); !relisted {
		t.Fatal("a list was not reported")
	}
	if changed, relisted := store.takeChanges(); relisted || len(changed) != 0 {
		t.Fatalf("changes reported twice: %v, relisted %v", changed, relisted)
	}
}

// A bind only updates the fill of its node: the new snapshot shares its
// twins with the one before, where a twin's change builds them anew.
func TestABindDoesNotRebuildTheSnapshot(t *testing.T) {
	jc := joulieclient.NewSimpleClientset(twin("a", joulie.ClassPerformance, 100), twin("b", joulie.ClassPerformance, 100))
	kc := kubefake.NewClientset(nodeObj("a", nil, "cpu", "64"), nodeObj("b", nil, "cpu", "64"))
	c, ctx := runCache(t, jc, kc, "a")

	before := c.Snapshot()
	if _, err := kc.CoreV1().Pods("ns").Create(ctx, podObj("ns", "p", "a", corev1.PodPending, "4", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "the bind", func(s *Snapshot) bool { return s.Lookup([]byte("a")).Fill.RequestedCPU == 4 })
	after := c.Snapshot()
	if after.Lookup([]byte("a")).Twin != before.Lookup([]byte("a")).Twin || after.Lookup([]byte("b")).Twin != before.Lookup([]byte("b")).Twin {
		t.Fatal("a bind rebuilt the twins' views: the snapshot was built from scratch")
	}
	if after.Lookup([]byte("b")).Fill.RequestedCPU != 0 {
		t.Fatalf("node b's fill changed: %+v", after.Lookup([]byte("b")).Fill)
	}

	if _, err := jc.JoulieV1alpha1().NodeTwins().Update(ctx, twin("b", joulie.ClassEco, 100), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "twin b eco", func(s *Snapshot) bool { return s.Lookup([]byte("b")).Twin.Class == joulie.ClassEco })
	if s := c.Snapshot(); s.Lookup([]byte("a")).Twin == after.Lookup([]byte("a")).Twin || s.Lookup([]byte("a")).Fill.RequestedCPU != 4 {
		t.Fatalf("a twin's change did not rebuild, or lost the pods: %+v", s.Lookup([]byte("a")))
	}
}

// BenchmarkPodChange5000 is what a bind costs the snapshot of a
// 5,000-node cluster: compare BenchmarkBuild5000, what it cost before.
func BenchmarkPodChange5000(b *testing.B) {
	const n = 5000
	twins := make([]*joulie.NodeTwin, n)
	hw := make([]*joulie.NodeHardware, n)
	nodes := make([]*corev1.Node, n)
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		twins[i], hw[i] = twin(name, joulie.ClassPerformance, float64(i%1000)), hardware(name)
		nodes[i] = nodeObj(name, map[string]string{joulie.LabelPowerProfile: "performance"}, "cpu", "190", "nvidia.com/gpu", "8")
	}
	s := Build(twins, hw, nodes, nil, true)
	changed := map[string]Requests{"node-02500": {CPUMilli: 4000}}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.withRequests(changed)
	}
}
