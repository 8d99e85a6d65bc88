package podmeter

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/podenergy"
	"joulie.io/joulie/agentd/internal/sysfs"
)

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// kubelet is a scripted pod-resources answer.
type kubelet struct {
	mu   sync.Mutex
	d    Devices
	down bool
}

func (k *kubelet) Devices(context.Context) (Devices, bool, string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.down {
		return Devices{}, false, "kubelet down"
	}
	return k.d, true, "connected"
}

// host is the agent's side: the tick's snapshot and the cgroup tree.
type host struct {
	snap agent.Snapshot
	root string
}

func (h *host) tick(at time.Time, cpuWatts float64, gpuJoules ...float64) {
	h.snap.LastReconcile = at
	h.snap.Power = backend.Reading{CPUWatts: cpuWatts, HasCPU: true}
	h.snap.GPUs = nil
	for i, j := range gpuJoules {
		h.snap.GPUs = append(h.snap.GPUs, backend.GPU{Index: i, UUID: "GPU-" + string(rune('a'+i)), EnergyJoules: j, HasEnergy: true})
	}
}

// cpuTime sets the host's busy time (USER_HZ ticks of user time) and the
// pods' cgroup counters (µs).
func (h *host) cpuTime(t *testing.T, userTicks int, pods map[string]int) {
	t.Helper()
	// Pods gone are gone from the tree too.
	if err := os.RemoveAll(filepath.Join(h.root, "sys/fs/cgroup/kubepods")); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"proc/stat": "cpu  " + itoa(userTicks) + " 0 0 1000 0 0 0 0 0 0\n"}
	for uid, usec := range pods {
		files["sys/fs/cgroup/kubepods/burstable/pod"+uid+"/cpu.stat"] = "usage_usec " + itoa(usec) + "\n"
	}
	for rel, body := range files {
		p := filepath.Join(h.root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

var (
	train = podenergy.Key{Namespace: "ml", Name: "train"}
	web   = podenergy.Key{Namespace: "web", Name: "front"}
)

func find(t *testing.T, m *Meter, k podenergy.Key) podenergy.PodEnergy {
	t.Helper()
	for _, p := range m.Pods() {
		if p.Key == k {
			return p
		}
	}
	t.Fatalf("no pod %s in %+v", k, m.Pods())
	return podenergy.PodEnergy{}
}

func TestMeterAttributesGPUAndCPUAndReportsEndedPods(t *testing.T) {
	h := &host{root: t.TempDir()}
	k := &kubelet{d: Devices{Pods: []podenergy.Key{train, web}, Holders: map[string][]podenergy.Claim{"GPU-a": {{Pod: train, Container: "trainer", Replicas: 1}}}}}
	var ended []podenergy.PodEnergy
	uids := map[string]podenergy.Key{"u-train": train, "u-web": web}
	m := New(Options{
		Snapshot: func() agent.Snapshot { return h.snap }, Kubelet: k, Cgroups: sysfs.New(h.root),
		PodUIDs: func() map[string]podenergy.Key { return uids },
		Ended:   func(e podenergy.PodEnergy) { ended = append(ended, e) },
	})
	ctx := context.Background()

	h.tick(t0, 200, 1000, 0)
	h.cpuTime(t, 1000, map[string]int{"u-train": 0, "u-web": 0})
	m.Observe(ctx)
	// 10 s: the host busy 10 CPU-seconds (1000 ticks), train 5, web 1;
	// the packages drew 200 W, 2000 J.
	h.tick(t0.Add(10*time.Second), 200, 4000, 500)
	h.cpuTime(t, 2000, map[string]int{"u-train": 5_000_000, "u-web": 1_000_000})
	m.Observe(ctx)
	m.Observe(ctx) // the same tick again: nothing counted twice

	p := find(t, m, train)
	if math.Abs(p.GPUJoules-3000) > 1e-9 || math.Abs(p.CPUJoules-1000) > 1e-9 || p.UID != "u-train" {
		t.Errorf("train %+v, want 3000 J of GPU-a and 1000 J of CPU estimate", p)
	}
	if w := find(t, m, web); math.Abs(w.CPUJoules-200) > 1e-9 || w.GPUJoules != 0 {
		t.Errorf("web %+v, want 200 J of CPU estimate and no GPU", w)
	}
	if u, _ := m.Unattributed(); u["GPU-b"] != 500 {
		t.Errorf("unattributed %v, want GPU-b's 500 J", u)
	}
	if st := m.Status(); st.Kubelet != "connected" || !strings.Contains(st.CPU, "estimated from RAPL") {
		t.Errorf("status %+v", st)
	}

	// The kubelet stops answering: nobody ends, the holder keeps its GPU.
	k.mu.Lock()
	k.down = true
	k.mu.Unlock()
	h.tick(t0.Add(20*time.Second), 200, 5000, 500)
	m.Observe(ctx)
	if p := find(t, m, train); p.Ended || math.Abs(p.GPUJoules-4000) > 1e-9 {
		t.Errorf("train %+v while the kubelet was down, want running with 4000 J", p)
	}
	if len(ended) != 0 {
		t.Errorf("ended %+v while the kubelet was down", ended)
	}

	// train goes: reported once, with its totals.
	k.mu.Lock()
	k.down, k.d = false, Devices{Pods: []podenergy.Key{web}}
	k.mu.Unlock()
	uids = map[string]podenergy.Key{"u-web": web}
	h.tick(t0.Add(30*time.Second), 200, 6000, 500)
	h.cpuTime(t, 3000, map[string]int{"u-web": 2_000_000})
	m.Observe(ctx)
	if len(ended) != 1 || ended[0].Key != train || math.Abs(ended[0].GPUJoules-4500) > 1e-9 {
		t.Errorf("ended %+v, want train with 4000 J + half of the last interval", ended)
	}
}

func TestWithoutTheAPIServerThereIsNoCPUEstimate(t *testing.T) {
	h := &host{root: t.TempDir()}
	m := New(Options{Snapshot: func() agent.Snapshot { return h.snap }, Kubelet: &kubelet{}, Cgroups: sysfs.New(h.root)})
	h.tick(t0, 100)
	m.Observe(context.Background())
	if st := m.Status(); !strings.Contains(st.CPU, "standalone") {
		t.Errorf("CPU status %q, want it to say why there is no estimate", st.CPU)
	}
}

func TestTickedNeverBlocksAndRunObserves(t *testing.T) {
	h := &host{root: t.TempDir()}
	k := &kubelet{d: Devices{Pods: []podenergy.Key{train}}}
	h.tick(t0, 0)
	m := New(Options{Snapshot: func() agent.Snapshot { return h.snap }, Kubelet: k})
	for range 5 {
		m.Ticked() // no Run yet: the signal folds into one
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(m.Pods()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if len(m.Pods()) != 1 {
		t.Errorf("pods %+v after a signalled Run, want train", m.Pods())
	}
}

// The kubelet names pods without UIDs; the API server's UIDs reach them
// whether or not their cgroups are readable (EnergyReport events need
// them).
func TestKubeletPodsTakeTheAPIServersUIDs(t *testing.T) {
	h := &host{root: t.TempDir()}
	k := &kubelet{d: Devices{Pods: []podenergy.Key{train}}}
	m := New(Options{Snapshot: func() agent.Snapshot { return h.snap }, Kubelet: k, Cgroups: sysfs.New(h.root),
		PodUIDs: func() map[string]podenergy.Key { return map[string]podenergy.Key{"u-train": train, "u-gone": web} }})
	h.tick(t0, 100)
	m.Observe(context.Background())
	if p := find(t, m, train); p.UID != "u-train" {
		t.Errorf("train's UID %q, want the API server's u-train", p.UID)
	}
	if len(m.Pods()) != 1 {
		t.Errorf("pods %+v, want only the kubelet's: a pod the API still lists may have ended on the node", m.Pods())
	}
}

// MIG devices fold onto their parent GPU, one share per MIG device held,
// merged per container; other devices stay as they are.
func TestMIGHoldersFoldOntoTheParentGPU(t *testing.T) {
	a, b := podenergy.Key{Namespace: "ml", Name: "a"}, podenergy.Key{Namespace: "ml", Name: "b"}
	gpus := []backend.GPU{{UUID: "GPU-p", MIGs: []string{"MIG-1", "MIG-2", "MIG-3"}}, {UUID: "GPU-q"}}
	ticks := []podenergy.GPU{{ID: "GPU-p"}, {ID: "GPU-q"}}
	holders := map[string][]podenergy.Claim{
		"MIG-2": {{Pod: b, Container: "c", Replicas: 1}},
		"MIG-1": {{Pod: a, Container: "c", Replicas: 1}},
		"MIG-3": {{Pod: a, Container: "c", Replicas: 1}},
		"GPU-q": {{Pod: b, Container: "d", Replicas: 1}},
		"MIG-x": {{Pod: b, Container: "e", Replicas: 1}},
	}
	got := foldMIGs(holders, gpus, ticks)
	want := map[string][]podenergy.Claim{
		"GPU-p": {{Pod: a, Container: "c", Replicas: 2}, {Pod: b, Container: "c", Replicas: 1}},
		"GPU-q": {{Pod: b, Container: "d", Replicas: 1}},
		"MIG-x": {{Pod: b, Container: "e", Replicas: 1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("folded holders\n got  %+v\n want %+v", got, want)
	}
	if ticks[0].Shares != 3 || ticks[1].Shares != 0 {
		t.Errorf("shares %d and %d, want the MIG GPU split in 3 and the other whole", ticks[0].Shares, ticks[1].Shares)
	}
	if len(holders) != 5 {
		t.Error("foldMIGs changed its argument")
	}
}

// The AMD device plugin names GPUs by PCI address; amd-smi lists them by
// UUID. The kubelet's names move onto the agent's, so the energy and the
// per-GPU caps (Holders) follow the pod; a GPU listed by its address
// (hwmon) and other IDs stay as they are.
func TestHoldersNamedByPCIAddressMoveToTheGPUsID(t *testing.T) {
	a, b := podenergy.Key{Namespace: "ml", Name: "a"}, podenergy.Key{Namespace: "ml", Name: "b"}
	gpus := []backend.GPU{
		{UUID: "6aff740f-0000-1000-8000-000000000001", PCIBusID: "0000:c1:00.0"},
		{UUID: "0001:41:00.0", PCIBusID: "0001:41:00.0"},
		{UUID: "85ff74a1-0000-1000-8000-000000000002", PCIBusID: "0002:03:00.0"},
	}
	holders := map[string][]podenergy.Claim{
		"0000:C1:00.0": {{Pod: b, Container: "c", Replicas: 1}},
		"0001:41:00.0": {{Pod: a, Container: "c", Replicas: 1}},
		// Named both ways: held once.
		"0002:03:00.0":                         {{Pod: b, Container: "d", Replicas: 1}},
		"85ff74a1-0000-1000-8000-000000000002": {{Pod: a, Container: "c", Replicas: 1}, {Pod: b, Container: "d", Replicas: 1}},
		"GPU-x":                                {{Pod: a, Container: "e", Replicas: 1}},
	}
	got := byGPUID(holders, gpus)
	want := map[string][]podenergy.Claim{
		"6aff740f-0000-1000-8000-000000000001": {{Pod: b, Container: "c", Replicas: 1}},
		"0001:41:00.0":                         {{Pod: a, Container: "c", Replicas: 1}},
		"85ff74a1-0000-1000-8000-000000000002": {{Pod: a, Container: "c", Replicas: 1}, {Pod: b, Container: "d", Replicas: 1}},
		"GPU-x":                                {{Pod: a, Container: "e", Replicas: 1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("holders by GPU ID\n got  %+v\n want %+v", got, want)
	}
	if len(holders) != 5 {
		t.Error("byGPUID changed its argument")
	}

	h := &host{root: t.TempDir()}
	k := &kubelet{d: Devices{Pods: []podenergy.Key{a}, Holders: map[string][]podenergy.Claim{"0000:c1:00.0": {{Pod: a, Container: "c", Replicas: 1}}}}}
	m := New(Options{Snapshot: func() agent.Snapshot { return h.snap }, Kubelet: k})
	for i, j := range []float64{1000, 1500} {
		h.snap.LastReconcile = t0.Add(time.Duration(i) * 5 * time.Second)
		h.snap.GPUs = []backend.GPU{{UUID: gpus[0].UUID, PCIBusID: gpus[0].PCIBusID, EnergyJoules: j, HasEnergy: true}}
		m.Observe(context.Background())
	}
	if p := find(t, m, a); p.GPUJoules != 500 {
		t.Errorf("a: %v J, want the 500 J of the GPU at its address", p.GPUJoules)
	}
	if got := m.Holders(); !reflect.DeepEqual(got, map[string][]podenergy.Key{gpus[0].UUID: {a}}) {
		t.Errorf("Holders = %v, want a on %s", got, gpus[0].UUID)
	}
}
