package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/demo/fleet"
	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/harness"
)

var cp *harness.ControlPlane

// The fleet runs against the real API server with the chart installed as
// an operator would, so its agents meet the chart's RBAC and admission
// policy.
func TestMain(m *testing.M) {
	os.Exit(harness.RunSuite(m, harness.Options{Dir: os.Getenv("JOULIE_HARNESS_DIR")}, func(c *harness.ControlPlane) error {
		cp = c
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		helm, err := harness.PinnedHelm("../../..")
		if err != nil {
			return err
		}
		return c.InstallChart(ctx, helm, "../../../packaging/helm/joulie", harness.ChartRelease)
	}))
}

var poll = harness.PollUntil

func startFleet(t *testing.T, prefix string, nodes, daemons int, kube *rest.Config) (*fleet.Fleet, fleet.Config) {
	t.Helper()
	cfg := fleetConfig(t, prefix, nodes, daemons)
	cfg.Kube = kube
	return startConfigured(t, cfg), cfg
}

func fleetConfig(t *testing.T, prefix string, nodes, daemons int) fleet.Config {
	return fleet.Config{
		Nodes: nodes, DaemonNodes: daemons, NodePrefix: prefix,
		Kube:          cp.AdminConfig(),
		AgentConfig:   func(node string) (*rest.Config, error) { return cp.AgentConfig(t, node), nil },
		KubeletConfig: func(node string) (*rest.Config, error) { return cp.KubeletConfig(t, node), nil },
		AgentBinary:   cp.BuildProgram(t, "joulie.io/joulie/agentd/cmd/joulie-agentd"),
		Dir:           t.TempDir(),
		Tick:          100 * time.Millisecond,
		Log:           &testLog{t},
	}
}

func startConfigured(t *testing.T, cfg fleet.Config) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Stop(context.Background())
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(cfg.Dir, "logs", "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", filepath.Base(l), b)
			}
		}
	})
	return f
}

type testLog struct{ t *testing.T }

func (l *testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func node(t *testing.T, f *fleet.Fleet, name string) fleet.NodeState {
	t.Helper()
	for _, n := range f.Snapshot().Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s in the snapshot", name)
	return fleet.NodeState{}
}

func gpuPod(name, node string, gpus int, work time.Duration, b physics.Boundness) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{
			fleet.AnnotationBoundness: string(b),
		}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "job", Image: "job",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("16"),
			}},
		}}},
	}
	if gpus > 0 {
		// Extended resources are not overcommitted: request = limit.
		q := *resource.NewQuantity(int64(gpus), resource.DecimalSI)
		p.Spec.Containers[0].Resources.Requests[fleet.ResourceNVIDIAGPU] = q
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{fleet.ResourceNVIDIAGPU: q}
	}
	if work > 0 {
		p.Annotations[fleet.AnnotationWork] = work.String()
	}
	return p
}

// telemetry reads a pool node's telemetry from the simulator, as the
// pool agent does.
func telemetry(t *testing.T, f *fleet.Fleet, node string) (cpuCap float64, gpuCaps []float64) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("%s/nodes/%s/telemetry?node=%s", f.SimulatorURL(), node, node), nil)
	req.Header.Set("Joulie-Api-Version", "joulie.io/http-backend/v1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		CPU struct {
			CapWatts float64 `json:"capWatts"`
		} `json:"cpu"`
		GPUs []struct {
			CapWatts float64 `json:"capWatts"`
		} `json:"gpus"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, g := range body.GPUs {
		gpuCaps = append(gpuCaps, g.CapWatts)
	}
	return body.CPU.CapWatts, gpuCaps
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// daemonCaps reads a daemon node's limits where its agent wrote them: the
// RAPL long-term limit of package 0 and GPU 0's NVML limit.
func daemonCaps(t *testing.T, dir, node string) (cpuW, gpuW float64) {
	t.Helper()
	host := filepath.Join(dir, "hosts", node)
	uw := readInt(t, filepath.Join(host, "root/sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw"))
	mw := readInt(t, filepath.Join(host, "nvml/gpu0/limit_mw"))
	return float64(uw) / 1e6, float64(mw) / 1e3
}

func TestEcoCapsBothPathsAndSlowsPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	f, cfg := startFleet(t, "eco", 4, 2, cp.AdminConfig())
	const (
		poolEPYC   = "eco-epyc-1"
		poolH100   = "eco-h100-1" // pool agent, HTTP
		daemonH100 = "eco-h100-2" // own agent, sysfs and NVML
		daemonL40S = "eco-l40s-1" // own agent, left uncapped
	)
	// Pool nodes first; a family's daemon nodes after its pool nodes.
	if got := f.Nodes(); strings.Join(got, ",") != strings.Join([]string{poolEPYC, poolH100, daemonH100, daemonL40S}, ",") {
		t.Fatalf("nodes %v", got)
	}
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	kube := cp.AdminClient(t)

	// Every agent discovers its node's hardware and publishes it.
	for _, n := range f.Nodes() {
		poll(t, "NodeHardware of "+n, 45*time.Second, func() bool {
			hw, err := admin.JoulieV1alpha1().NodeHardwares().Get(ctx, n, metav1.GetOptions{})
			return err == nil && hw.Status.CPU.Sockets == 2
		})
	}

	// Each node has a heartbeat, as a kubelet keeps one.
	for _, n := range f.Nodes() {
		if _, err := kube.CoordinationV1().Leases("kube-node-lease").Get(ctx, n, metav1.GetOptions{}); err != nil {
			t.Errorf("lease of %s: %v", n, err)
		}
	}

	// Busy pods on the two nodes to be capped, so that capping shows in
	// their power.
	for _, n := range []string{daemonH100, poolH100} {
		if _, err := kube.CoreV1().Pods("default").Create(ctx, gpuPod("busy-"+n, n, 4, 0, physics.GPUCompute), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{daemonH100, poolH100} {
		poll(t, "busy pod Running on "+n, 20*time.Second, func() bool {
			p, err := kube.CoreV1().Pods("default").Get(ctx, "busy-"+n, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning
		})
	}
	time.Sleep(2 * cfg.Tick)
	before := map[string]float64{daemonH100: node(t, f, daemonH100).Watts, poolH100: node(t, f, poolH100).Watts}

	for _, n := range []string{daemonH100, poolH100} {
		if _, err := admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco,
				CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(60.0)},
				GPU: &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(60.0)}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The pool agent caps its node through the HTTP backend...
	poll(t, "pool node capped over HTTP", 30*time.Second, func() bool {
		c, g := telemetry(t, f, poolH100)
		return c == 210 && len(g) == 8 && g[0] == 420 && g[7] == 420
	})
	// ... and the daemon through sysfs and NVML on its host tree.
	poll(t, "daemon node capped through RAPL and NVML", 30*time.Second, func() bool {
		c, g := daemonCaps(t, cfg.Dir, daemonH100)
		return c == 210 && g == 420
	})
	poll(t, "the simulator taking the caps in", 5*time.Second, func() bool {
		a, b := node(t, f, daemonH100), node(t, f, poolH100)
		return a.CPUCapPct == 60 && a.GPUCapPct == 60 && b.CPUCapPct == 60 && b.GPUCapPct == 60
	})
	time.Sleep(2 * cfg.Tick)
	for n, w := range before {
		// Four GPUs at full load drop from 700 W to 420 W each.
		if after := node(t, f, n).Watts; after > w-1000 {
			t.Errorf("%s draws %.0f W capped, %.0f W before", n, after, w)
		}
	}
	if un := node(t, f, daemonL40S); un.CPUCapPct != 100 || un.GPUCapPct != 100 {
		t.Errorf("uncapped node %s shows caps %v%%/%v%%", daemonL40S, un.CPUCapPct, un.GPUCapPct)
	}

	// The same job runs longer on a capped node than on an uncapped one.
	const work = 3 * time.Second
	jobs := map[string]string{"job-daemon": daemonH100, "job-pool": poolH100, "job-free": daemonL40S}
	for name, n := range jobs {
		if _, err := kube.CoreV1().Pods("default").Create(ctx, gpuPod(name, n, 4, work, physics.GPUCompute), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name := range jobs {
		poll(t, name+" Succeeded", 30*time.Second, func() bool {
			p, err := kube.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodSucceeded
		})
	}
	took := map[string]time.Duration{}
	for _, r := range f.Snapshot().Pods {
		if r.Phase == string(corev1.PodSucceeded) {
			took[r.Name] = r.Finished.Sub(r.Started)
		}
	}
	// At 60% a gpu-compute job stretches by 1.2: 3.6 s against 3 s, give
	// or take a tick.
	for _, capped := range []string{"job-daemon", "job-pool"} {
		if took[capped] < took["job-free"]+400*time.Millisecond {
			t.Errorf("%s took %s capped, job-free %s uncapped", capped, took[capped], took["job-free"])
		}
	}
	t.Logf("runtimes: %v", took)

	// Stop: the agents end on SIGTERM, the daemon puts the original
	// limits back, nothing listens or runs, and the nodes are gone.
	if err := f.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if c, g := daemonCaps(t, cfg.Dir, daemonH100); c != 350 || g != 700 {
		t.Errorf("after Stop the daemon node's limits are %v W and %v W, want the originals 350 W and 700 W", c, g)
	}
	if pids := processesOf(t, cfg.AgentBinary); len(pids) != 0 {
		t.Errorf("joulie-agentd processes left after Stop: %v", pids)
	}
	if _, err := http.Get(f.SimulatorURL() + "/nodes/x/telemetry?node=x"); err == nil {
		t.Error("the simulator still answers after Stop")
	}
	for _, n := range f.Nodes() {
		if _, err := kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); err == nil {
			t.Errorf("node %s left after Stop", n)
		}
		if _, err := admin.JoulieV1alpha1().NodeHardwares().Get(ctx, n, metav1.GetOptions{}); err == nil {
			t.Errorf("NodeHardware %s left after Stop", n)
		}
		if _, err := kube.CoordinationV1().Leases("kube-node-lease").Get(ctx, n, metav1.GetOptions{}); err == nil {
			t.Errorf("lease of %s left after Stop", n)
		}
	}
}

// processesOf lists the processes running bin.
func processesOf(t *testing.T, bin string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin {
			pids = append(pids, pid)
		}
	}
	return pids
}

// The demo's default fleet: 16 nodes of three families, two of them with
// their own agent, every agent publishing what it discovered.
func TestDefaultFleetComesUpAndGoes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The admin identity as a kubeconfig with file paths gives it, the
	// server's CA in a file: the agents' kubeconfigs must still carry it.
	kube := cp.AdminConfig()
	kube.CAFile = filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(kube.CAFile, kube.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	kube.CAData = nil
	// And with client-go's rate defaults, as clientcmd leaves them.
	kube.QPS, kube.Burst = 0, 0
	f, cfg := startFleet(t, "", 0, 0, kube)
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	snap := f.Snapshot()
	families, paths := map[string]int{}, map[string]int{}
	for _, n := range snap.Nodes {
		families[n.Family]++
		paths[n.Path]++
	}
	if len(snap.Nodes) != 16 || len(families) < 3 || paths[fleet.PathDaemon] != 2 {
		t.Fatalf("nodes by family %v, by path %v", families, paths)
	}
	wantGPU := map[string]string{"h100": "nvidia-h100-sxm", "l40s": "nvidia-l40s"}
	wantCPU := map[string]string{"epyc": "amd-epyc-9654", "h100": "intel-xeon-8480plus", "l40s": "intel-xeon-8480plus"}
	for _, n := range snap.Nodes {
		var last string
		poll(t, "NodeHardware of "+n.Name+" as its family", 45*time.Second, func() bool {
			hw, err := admin.JoulieV1alpha1().NodeHardwares().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false
			}
			last = fmt.Sprintf("CPU %+v, GPU %+v, warnings %q", hw.Status.CPU, hw.Status.GPU, hw.Status.Warnings)
			// Daemons discover the CPU from the host tree, the pool
			// from the node's joulie.io/hw.cpu-model label.
			if hw.Status.CPU.CatalogModel != wantCPU[n.Family] || hw.Status.CPU.Sockets != 2 {
				return false
			}
			if want := wantGPU[n.Family]; want != "" && (hw.Status.GPU == nil || hw.Status.GPU.CatalogModel != want || int(hw.Status.GPU.Count) != n.GPUs) {
				t.Logf("%s: not yet: %s", n.Name, last)
				return false
			}
			for _, w := range hw.Status.Warnings {
				if strings.Contains(w, "memory") || strings.Contains(w, "topology") || strings.Contains(w, "no CPUs") {
					t.Errorf("%s: %s", n.Name, w)
				}
			}
			return true
		})
		if t.Failed() {
			t.Fatalf("%s (%s): %s", n.Name, n.Path, last)
		}
	}
	if snap.PowerW <= 0 || snap.EnergyJ < 0 {
		t.Errorf("idle fleet: %v W, %v J", snap.PowerW, snap.EnergyJ)
	}

	// A burst of short pods, as the demo's workload sends them: every one
	// runs and ends Succeeded, in the API and in the records.
	perNode := 12
	if testing.Short() {
		perNode = 3
	}
	kc := cp.AdminClient(t)
	for i := range perNode * len(snap.Nodes) {
		p := gpuPod(fmt.Sprintf("burst-%d", i), snap.Nodes[i%len(snap.Nodes)].Name, 0, time.Second, physics.CPULow)
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
		if _, err := kc.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, "every burst pod Succeeded", 45*time.Second, func() bool {
		pods, err := kc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		var done int
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Name, "burst-") && p.Status.Phase == corev1.PodSucceeded {
				done++
			}
		}
		return done == perNode*len(snap.Nodes)
	})
	var recorded int
	for _, r := range f.Snapshot().Pods {
		if strings.HasPrefix(r.Name, "burst-") && r.Phase == string(corev1.PodSucceeded) && r.Finished.Sub(r.Started) >= time.Second {
			recorded++
		}
	}
	if recorded != perNode*len(snap.Nodes) {
		t.Errorf("%d burst pods recorded Succeeded after their work, want %d", recorded, perNode*len(snap.Nodes))
	}
	if err := f.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if pids := processesOf(t, cfg.AgentBinary); len(pids) != 0 {
		t.Errorf("joulie-agentd processes left after Stop: %v", pids)
	}
	nodes, err := cp.AdminClient(t).CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelFleet})
	if err != nil || len(nodes.Items) != 0 {
		t.Errorf("fleet nodes left after Stop: %d (%v)", len(nodes.Items), err)
	}
}

// The whole way of a park and a wake below the controller, through the
// real agents: a pool node whose profile says parked is switched off by
// the pool agent through the HTTP contract (standby draw, its heartbeat
// stops, NotReady); a daemon node's agent, told its MAC, sends a real
// magic packet to the fleet's listener, which boots the node for the
// boot time, and the node is Ready again, uncapped.
func TestParkedPoolNodeSwitchesOffAndWakesByMagicPacket(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	kube := cp.AdminClient(t)
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := fleetConfig(t, "park", 2, 1)
	cfg.ParkablePool, cfg.BootTime = true, 3*time.Second
	f := startConfigured(t, cfg)
	const (
		parked = "park-epyc-1" // pool agent, HTTP
		sender = "park-h100-1" // own agent, sends the magic packet
	)
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelFleet + "=park"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		pool := n.Labels[fleet.LabelPath] == fleet.PathPool
		if got := n.Labels[joulie.LabelParkable] == "true"; got != pool {
			t.Errorf("node %s (%s): parkable %v; want only pool nodes parkable", n.Name, n.Labels[fleet.LabelPath], got)
		}
	}
	// Both paths publish the node's NIC, as Wake-on-LAN needs.
	var mac string
	for _, n := range []string{parked, sender} {
		poll(t, "NodeHardware of "+n+" with its NIC", 45*time.Second, func() bool {
			hw, err := admin.JoulieV1alpha1().NodeHardwares().Get(ctx, n, metav1.GetOptions{})
			if err != nil || len(hw.Status.Network) != 1 || hw.Status.Network[0].MAC != node(t, f, n).MAC {
				return false
			}
			if n == parked {
				mac = hw.Status.Network[0].MAC
			}
			return true
		})
	}

	since := metav1.Now()
	if _, err := admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: parked},
		Spec:       joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance, PowerState: joulie.PowerParked, PowerStateSince: &since},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := func(name string) corev1.ConditionStatus {
		n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status
			}
		}
		return ""
	}
	poll(t, parked+" switched off and NotReady", 30*time.Second, func() bool {
		return node(t, f, parked).Host == fleet.HostOff && ready(parked) == corev1.ConditionUnknown
	})
	if w, want := node(t, f, parked).Watts, physics.Default().Power.OffWatts; w != want {
		t.Errorf("a switched-off node draws %v W, want the standby %v W", w, want)
	}
	p, err := admin.JoulieV1alpha1().NodePowerProfiles().Get(ctx, parked, metav1.GetOptions{})
	if err != nil || p.Status.PowerState != joulie.PowerParked {
		t.Errorf("the pool agent reports %q (%v), want parked", p.Status.PowerState, err)
	}
	lease := func() time.Time {
		l, err := kube.CoordinationV1().Leases("kube-node-lease").Get(ctx, parked, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Spec.RenewTime.Time
	}
	silent := lease()
	if ready(sender) != corev1.ConditionTrue || node(t, f, sender).Host != fleet.HostOn {
		t.Fatalf("the daemon node went down with the pool node")
	}

	// The controller's wake, by hand: the parked node's profile says
	// waking, and an awake neighbour's lists its MAC.
	p.Spec.PowerState, p.Spec.PowerStateSince = joulie.PowerWaking, ptr.To(metav1.Now())
	if _, err := admin.JoulieV1alpha1().NodePowerProfiles().Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: sender},
		Spec:       joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance, WakeOnLAN: []string{mac}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, parked+" booting after the magic packet", 30*time.Second, func() bool { return node(t, f, parked).Host == fleet.HostBooting })
	booted := time.Now()
	poll(t, parked+" Ready after its boot", 30*time.Second, func() bool {
		return node(t, f, parked).Host == fleet.HostOn && ready(parked) == corev1.ConditionTrue
	})
	if took := time.Since(booted); took < 2*time.Second {
		t.Errorf("the boot took %s, want about the boot time, 3s", took)
	}
	if !lease().After(silent) {
		t.Errorf("the node's heartbeat did not resume after its boot")
	}
	if n := node(t, f, parked); n.CPUCapPct != 100 || n.Watts <= physics.Default().Power.BootWatts/2 {
		t.Errorf("after the boot: %+v", n)
	}
}

// A BMC node's BMC is a real ipmi_sim, reached at the address and with
// the credentials of the node's Secret in the BMC namespace (the Node
// carries no BMC annotation): its chassis power follows the simulated
// host, and "power on" boots a parked node.
// ipmitool is the client, an implementation independent of the
// controller's.
func TestBMCNodeIsWokenThroughIPMI(t *testing.T) {
	ipmitool, err := exec.LookPath("ipmitool")
	if err != nil {
		t.Fatalf("this test drives the BMC with ipmitool: apt-get install ipmitool (or make deps): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	kube := cp.AdminClient(t)
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := fleetConfig(t, "bmc", 1, -1)
	cfg.ParkablePool, cfg.BootTime, cfg.BMCNodes = true, 2*time.Second, 1
	f := startConfigured(t, cfg)
	const name = "bmc-epyc-1"
	n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{joulie.AnnotationBMCAddress, joulie.AnnotationBMCSecret} {
		if v, ok := n.Annotations[k]; ok {
			t.Errorf("node %s carries %s=%q, which the controller ignores", name, k, v)
		}
	}
	secret, err := kube.CoreV1().Secrets(fleet.DefaultBMCNamespace).Get(ctx, "joulie-bmc-"+name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := string(secret.Data["address"])
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("the address in Secret joulie-bmc-%s is %q: %v", name, addr, err)
	}
	chassis := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, ipmitool, append([]string{"-I", "lanplus", "-C", "3", "-H", host, "-p", port,
			"-U", string(secret.Data["username"]), "-P", string(secret.Data["password"]), "chassis", "power"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ipmitool chassis power %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := chassis("status"); got != "Chassis Power is on" {
		t.Fatalf("status of a node that is on: %q", got)
	}

	since := metav1.Now()
	if _, err := admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance, PowerState: joulie.PowerParked, PowerStateSince: &since},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, name+" switched off by its agent", 30*time.Second, func() bool { return node(t, f, name).Host == fleet.HostOff })
	if got := chassis("status"); got != "Chassis Power is off" {
		t.Fatalf("status of a parked node: %q", got)
	}
	chassis("on")
	poll(t, name+" on after its BMC's power on", 30*time.Second, func() bool { return node(t, f, name).Host == fleet.HostOn })
	if got := node(t, f, name).WokenBy; got != fleet.WakeByBMC {
		t.Errorf("woken by %q, want %q", got, fleet.WakeByBMC)
	}

	// Stop takes the BMC and its Secret with it.
	if err := f.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(fleet.DefaultBMCNamespace).Get(ctx, "joulie-bmc-"+name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the BMC Secret after Stop: %v, want not found", err)
	}
	if c, err := net.ListenPacket("udp", addr); err != nil {
		t.Errorf("the BMC's port %s is still taken after Stop: %v", addr, err)
	} else {
		c.Close()
	}
}
