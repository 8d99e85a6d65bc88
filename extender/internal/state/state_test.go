package state

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	joulieclient "joulie.io/joulie/pkg/generated/clientset/versioned/fake"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
)

var updated = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

func twin(name string, class joulie.SchedulableClass, measuredW float64) *joulie.NodeTwin {
	return &joulie.NodeTwin{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: joulie.NodeTwinStatus{
			SchedulableClass: class, PredictedPowerHeadroomScore: 70, PredictedCoolingStressScore: 20,
			EstimatedPUE: ptr.To(1.3),
			PowerMeasurement: &joulie.PowerMeasurement{
				Source: joulie.SourceAgent, MeasuredNodePowerW: measuredW, NodeCappedPowerW: 1000, NodeTdpW: 1400, PowerTrendWPerMin: -5,
			},
			LastUpdated: updated,
		},
	}
}

func hardware(name string) *joulie.NodeHardware {
	return &joulie.NodeHardware{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: joulie.NodeHardwareStatus{
			CPU: joulie.CPUHardware{Sockets: 2, CoresPerSocket: 64, TotalCores: 128, CapRange: &joulie.PowerRange{MaxWatts: 350}},
			GPU: &joulie.GPUHardware{Count: 8, CapRange: &joulie.PowerRange{MaxWatts: 400}},
		},
	}
}

// nodeObj is a Node with labels and allocatable resources given as
// name, quantity pairs.
func nodeObj(name string, labels map[string]string, allocatable ...string) *corev1.Node {
	n := &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}
	if len(allocatable) > 0 {
		n.Status.Allocatable = corev1.ResourceList{}
		for i := 0; i+1 < len(allocatable); i += 2 {
			n.Status.Allocatable[corev1.ResourceName(allocatable[i])] = resource.MustParse(allocatable[i+1])
		}
	}
	return n
}

func TestBuild(t *testing.T) {
	s := Build(
		[]*joulie.NodeTwin{twin("b", joulie.ClassEco, 300), twin("a", joulie.ClassPerformance, 500)},
		[]*joulie.NodeHardware{hardware("a"), hardware("c")},
		[]*corev1.Node{
			nodeObj("a", map[string]string{joulie.LabelPowerProfile: "performance"}, "cpu", "127500m", "nvidia.com/gpu", "4", "amd.com/gpu", "4"),
			nodeObj("b", nil, "cpu", "64"),
			nodeObj("d", map[string]string{joulie.LabelPowerProfile: "eco", joulie.LabelDraining: "true", joulie.LabelWarmReserve: "true"}),
			nodeObj("plain", map[string]string{"kubernetes.io/os": "linux"}, "cpu", "8"),
		},
		map[string]Requests{"a": {CPUMilli: 16500, GPUMilli: 3000}, "plain": {CPUMilli: 4000}, "gone": {CPUMilli: 1000}},
		true)

	var names []string
	for _, n := range s.Nodes() {
		names = append(names, n.Name)
	}
	if got := len(names); got != 4 || names[0] != "a" || names[1] != "b" || names[2] != "c" || names[3] != "d" {
		t.Fatalf("nodes %v, want a b c d (sorted, without the node Joulie knows nothing of)", names)
	}
	if s.Lookup([]byte("plain")) != nil || s.Lookup([]byte("zzz")) != nil {
		t.Error("lookup of unknown nodes found something")
	}
	a := s.Lookup([]byte("a"))
	if a.Twin == nil || a.Twin.Class != joulie.ClassPerformance || a.Twin.MeasuredW != 500 || !a.HasHardware || a.Labels.Profile != "performance" {
		t.Errorf("node a: %+v twin %+v", a, a.Twin)
	}
	if a.Fill != (scoring.Fill{AllocatableCPU: 127.5, RequestedCPU: 16.5, AllocatableGPUs: 8, RequestedGPUs: 3}) {
		t.Errorf("node a's fill %+v: want 16.5 of 127.5 cores and 3 of 8 GPUs, NVIDIA and AMD together", a.Fill)
	}
	if b := s.Lookup([]byte("b")); b.Twin == nil || b.Twin.Class != joulie.ClassEco || b.HasHardware || b.Fill != (scoring.Fill{AllocatableCPU: 64}) {
		t.Errorf("node b: %+v", b)
	}
	if c := s.Lookup([]byte("c")); c.Twin != nil || !c.HasHardware || c.Fill.Known() {
		t.Errorf("node c, without a Node object: %+v", c)
	}
	if d := s.Lookup([]byte("d")); d.Twin != nil || d.Labels != (scoring.Labels{Profile: "eco", Draining: "true", WarmReserve: "true"}) {
		t.Errorf("node d: %+v", d)
	}
	if !s.AnyWarmReserve() {
		t.Error("AnyWarmReserve is false with node d labelled")
	}
	if Build(nil, nil, []*corev1.Node{nodeObj("e", map[string]string{joulie.LabelWarmReserve: "false"})}, nil, true).AnyWarmReserve() {
		t.Error("AnyWarmReserve is true with the label false")
	}
	// Performance node a: headroom 50, congestion 50; trends −5 each.
	c := s.Cluster(updated.Time.Add(time.Minute), 5*time.Minute)
	if c.PerfPressure != 50 || c.TrendWPerMin != -10 {
		t.Errorf("cluster %+v, want pressure 50 and trend −10", c)
	}
	if c := s.Cluster(updated.Time.Add(time.Hour), 5*time.Minute); c != (scoring.Cluster{}) {
		t.Errorf("cluster of stale twins %+v, want zero", c)
	}
}

func TestTwinOf(t *testing.T) {
	got := scoring.TwinOf(&twin("a", joulie.ClassEco, 420).Status)
	want := scoring.Twin{
		Class: joulie.ClassEco, PredictedHeadroom: 70, CoolingStress: 20, PUE: 1.3,
		Measured: true, Source: joulie.SourceAgent, MeasuredW: 420, CappedW: 1000, TdpW: 1400, TrendWPerMin: -5, LastUpdated: updated.Time,
	}
	if got != want {
		t.Errorf("TwinOf = %+v\nwant %+v", got, want)
	}
	bare := scoring.TwinOf(&joulie.NodeTwinStatus{SchedulableClass: joulie.ClassPerformance})
	if bare.Measured || bare.PUE != 0 || !bare.LastUpdated.IsZero() {
		t.Errorf("twin without measurement, PUE or time: %+v", bare)
	}
}

func TestHardwareOf(t *testing.T) {
	tests := []struct {
		name string
		st   joulie.NodeHardwareStatus
		want powerest.Node
	}{
		{"node-wide range times sockets", hardware("x").Status,
			powerest.Node{CPUTotalCores: 128, CPUMaxWatts: 700, GPUCount: 8, GPUMaxWattsPerGPU: 400}},
		{"per-package ranges add up", joulie.NodeHardwareStatus{CPU: joulie.CPUHardware{
			Sockets: 2, CoresPerSocket: 32, CapRange: &joulie.PowerRange{MaxWatts: 200},
			Packages: []joulie.CPUPackage{{ID: 0, CapRange: &joulie.PowerRange{MaxWatts: 250}}, {ID: 1, CapRange: &joulie.PowerRange{MaxWatts: 240}}},
		}}, powerest.Node{CPUTotalCores: 64, CPUMaxWatts: 490}},
		{"GPU range from the devices", joulie.NodeHardwareStatus{GPU: &joulie.GPUHardware{
			Count: 2, Devices: []joulie.GPUDevice{{Index: 0, CapRange: &joulie.PowerRange{MaxWatts: 300}}, {Index: 1, CapRange: &joulie.PowerRange{MaxWatts: 350}}},
		}}, powerest.Node{GPUCount: 2, GPUMaxWattsPerGPU: 350}},
		{"no sockets reported counts one", joulie.NodeHardwareStatus{CPU: joulie.CPUHardware{TotalCores: 8, CapRange: &joulie.PowerRange{MaxWatts: 65}}},
			powerest.Node{CPUTotalCores: 8, CPUMaxWatts: 65}},
		{"nothing discovered", joulie.NodeHardwareStatus{}, powerest.Node{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := scoring.HardwareOf(&tt.st); got != tt.want {
				t.Errorf("HardwareOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestEmptySnapshotBeforeSync(t *testing.T) {
	c := New(joulieclient.NewSimpleClientset(), kubefake.NewClientset(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	s := c.Snapshot()
	if s == nil || s.Synced || len(s.Nodes()) != 0 || s.Lookup([]byte("a")) != nil {
		t.Errorf("snapshot before Run: %+v", s)
	}
}

// The cache follows the watches: a twin created after the first sync shows
// up in a later snapshot, and so do a changed Joulie label, a changed
// allocatable and pods bound, resized and ended, without any list per
// read.
func TestCacheFollowsTheWatch(t *testing.T) {
	jc := joulieclient.NewSimpleClientset(twin("a", joulie.ClassPerformance, 100), hardware("a"))
	kc := kubefake.NewClientset(nodeObj("a", nil, "cpu", "64"), nodeObj("b", map[string]string{joulie.LabelPowerProfile: "performance"}),
		podObj("ns", "early", "a", corev1.PodRunning, "6", ""))
	c, ctx := runCache(t, jc, kc, "a")
	if a := c.Snapshot().Lookup([]byte("a")); a.Fill != (scoring.Fill{AllocatableCPU: 64, RequestedCPU: 6}) {
		t.Fatalf("node a after sync: fill %+v, want 6 of 64 cores", a.Fill)
	}
	if b := c.Snapshot().Lookup([]byte("b")); b == nil || b.Labels.Profile != "performance" {
		t.Fatalf("node b after sync: %+v", b)
	}

	if _, err := jc.JoulieV1alpha1().NodeTwins().Create(ctx, twin("b", joulie.ClassEco, 50), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "twin b", func(s *Snapshot) bool {
		n := s.Lookup([]byte("b"))
		return n != nil && n.Twin != nil && n.Twin.Class == joulie.ClassEco
	})

	nodes := kc.CoreV1().Nodes()
	if _, err := nodes.Update(ctx, nodeObj("b", map[string]string{joulie.LabelPowerProfile: "eco"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "label change on b", func(s *Snapshot) bool { return s.Lookup([]byte("b")).Labels.Profile == "eco" })
	// The warm reserve's label comes and goes with the controller's
	// parking passes; a change of its value alone is a change.
	for _, v := range []string{"true", "false"} {
		if _, err := nodes.Update(ctx, nodeObj("b", map[string]string{joulie.LabelPowerProfile: "eco", joulie.LabelWarmReserve: v}), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, c, "warm reserve "+v+" on b", func(s *Snapshot) bool {
			return s.Lookup([]byte("b")).Labels.WarmReserve == v && s.AnyWarmReserve() == (v == "true")
		})
	}
	if _, err := nodes.Update(ctx, nodeObj("a", nil, "cpu", "32", "nvidia.com/gpu", "2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "allocatable change on a", func(s *Snapshot) bool {
		return s.Lookup([]byte("a")).Fill == scoring.Fill{AllocatableCPU: 32, RequestedCPU: 6, AllocatableGPUs: 2}
	})

	pods := kc.CoreV1().Pods("ns")
	if _, err := pods.Create(ctx, podObj("ns", "train", "a", corev1.PodPending, "4", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "a pod bound to a", func(s *Snapshot) bool { return s.Lookup([]byte("a")).Fill.RequestedCPU == 10 })
	if _, err := pods.Update(ctx, podObj("ns", "train", "a", corev1.PodRunning, "8", "1"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "the pod resized", func(s *Snapshot) bool {
		return s.Lookup([]byte("a")).Fill == scoring.Fill{AllocatableCPU: 32, RequestedCPU: 14, AllocatableGPUs: 2, RequestedGPUs: 1}
	})
	if _, err := pods.Update(ctx, podObj("ns", "train", "a", corev1.PodSucceeded, "8", "1"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "the pod ended", func(s *Snapshot) bool { return s.Lookup([]byte("a")).Fill.RequestedCPU == 6 })
	if err := pods.Delete(ctx, "early", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "the first pod deleted", func(s *Snapshot) bool {
		return s.Lookup([]byte("a")).Fill == scoring.Fill{AllocatableCPU: 32, AllocatableGPUs: 2}
	})

	if err := jc.JoulieV1alpha1().NodeTwins().Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "twin a gone", func(s *Snapshot) bool { n := s.Lookup([]byte("a")); return n != nil && n.Twin == nil && n.HasHardware })
}

// runCache runs a cache over the fake clients, gathering changes for
// 10 ms, until the test ends, and waits for its first snapshot to know
// node first. The context it returns ends with the test.
func runCache(t *testing.T, jc *joulieclient.Clientset, kc *kubefake.Clientset, first string) (*Cache, context.Context) {
	t.Helper()
	c := New(jc, kc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.coalesce = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitFor(t, c, "first sync", func(s *Snapshot) bool { return s.Synced && s.Lookup([]byte(first)) != nil })
	return c, ctx
}

func waitFor(t *testing.T, c *Cache, what string, cond func(*Snapshot) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(c.Snapshot()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// podObj is a pod in namespace ns bound to node (none when empty) in
// phase, requesting cpu and, when gpus is set, NVIDIA GPUs.
func podObj(ns, name, node string, phase corev1.PodPhase, cpu, gpus string) *corev1.Pod {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	var lim corev1.ResourceList
	if gpus != "" {
		lim = corev1.ResourceList{joulie.ResourceNVIDIAGPU: resource.MustParse(gpus)}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main",
			Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}
