package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/catalog"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/harness"
)

// controllerProcess is a joulie-controller started by runController.
type controllerProcess struct {
	cmd  *exec.Cmd
	user string // the API user its writes are audited under
	log  string
}

// runController starts joulie-controller as ServiceAccount
// joulie-system/<sa>, managing the nodes labelled selector=true, until the
// test ends. The chart's RBAC is all it may do: the chart binds its own
// ServiceAccount, and any other sa gets the same roles. Its log is printed
// if the test fails.
func runController(t *testing.T, sa, selector string, env ...string) *controllerProcess {
	t.Helper()
	bin := cp.BuildProgram(t, "joulie.io/joulie/controller/cmd/joulie-controller")
	if sa != harness.ControllerServiceAccount {
		bindChartControllerRoles(t, sa)
	}
	kubeconfig := cp.WriteKubeconfig(t, cp.ServiceAccountConfig(t, harness.ControllerNamespace, sa))
	logPath := filepath.Join(t.TempDir(), sa+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "NODE_SELECTOR="+selector+"=true",
		"RECONCILE_INTERVAL=2s", "MIN_ECO_DWELL=0", "DRAIN_DWELL=1s", "METRICS_ADDR=", "POD_NAME="+sa, "POD_NAMESPACE="+harness.ControllerNamespace,
		"LEADER_ELECTION_ID="+strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), "RECONCILE_DEBOUNCE=100ms")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	p := &controllerProcess{cmd: cmd, user: harness.ServiceAccountUser(harness.ControllerNamespace, sa), log: logPath}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", sa, b)
		}
	})
	return p
}

// clusterView reads what the controller wrote for a node.
type clusterView struct {
	t      *testing.T
	kube   kubernetes.Interface
	joulie versioned.Interface
}

func newClusterView(t *testing.T) *clusterView {
	jc, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &clusterView{t: t, kube: cp.AdminClient(t), joulie: jc}
}

// state is "profile/draining label/twin class", e.g. "eco/true/draining";
// "-" marks what is missing.
func (c *clusterView) state(node string) string {
	ctx := context.Background()
	profile, draining, class := "-", "-", "-"
	if p, err := c.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, node, metav1.GetOptions{}); err == nil {
		profile = string(p.Spec.Profile)
	}
	if n, err := c.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err == nil {
		if l, ok := n.Labels[joulie.LabelDraining]; ok {
			draining = l
		}
		if n.Labels[joulie.LabelPowerProfile] != profile {
			profile += "(label " + n.Labels[joulie.LabelPowerProfile] + ")"
		}
	}
	if tw, err := c.joulie.JoulieV1alpha1().NodeTwins().Get(ctx, node, metav1.GetOptions{}); err == nil && tw.Status.SchedulableClass != "" {
		class = string(tw.Status.SchedulableClass)
	}
	return profile + "/" + draining + "/" + class
}

// expect waits until every node is in its wanted state.
func (c *clusterView) expect(what string, timeout time.Duration, want map[string]string) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := map[string]string{}
		ok := true
		for node, w := range want {
			got[node] = c.state(node)
			ok = ok && got[node] == w
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: after %s the nodes are %v, want %v", what, timeout, got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// controllerNodes creates a mixed cluster under a test-specific selector:
// two GPU nodes (8 and 4 H100) and two CPU-only nodes. gpu-a's hardware
// comes from its NodeHardware; the others have only labels (label-only
// hardware), and gpu-b's GPUs come from allocatable nvidia.com/gpu.
func controllerNodes(t *testing.T, prefix, selector string) (gpuA, gpuB, cpuA, cpuB string) {
	t.Helper()
	jc, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	gpuA, gpuB, cpuA, cpuB = prefix+"-gpu-a", prefix+"-gpu-b", prefix+"-cpu-a", prefix+"-cpu-b"
	base := func(extra map[string]string) map[string]string {
		l := map[string]string{selector: "true", joulie.LabelHWCPUModel: "amd-epyc-9654"}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	cp.CreateReadyNode(t, gpuA, map[string]string{selector: "true"}, nil)
	cp.CreateReadyNode(t, gpuB, base(map[string]string{joulie.LabelHWGPUModel: "nvidia-h100-sxm"}),
		corev1.ResourceList{joulie.ResourceNVIDIAGPU: resource.MustParse("4")})
	cp.CreateReadyNode(t, cpuA, base(nil), nil)
	cp.CreateReadyNode(t, cpuB, base(nil), nil)
	for _, n := range []string{gpuA, gpuB, cpuA, cpuB} {
		deleteNodeObjects(t, jc, n)
		node := n
		t.Cleanup(func() { _ = jc.JoulieV1alpha1().NodeTwins().Delete(context.Background(), node, metav1.DeleteOptions{}) })
	}
	ctx := context.Background()
	hw, err := jc.JoulieV1alpha1().NodeHardwares().Create(ctx, &joulie.NodeHardware{ObjectMeta: metav1.ObjectMeta{Name: gpuA}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hw.Status = joulie.NodeHardwareStatus{
		CPU: joulie.CPUHardware{Model: "AMD EPYC 9654 96-Core Processor", CatalogModel: "amd-epyc-9654", Sockets: 2, CapRange: &joulie.PowerRange{MaxWatts: 400}},
		GPU: &joulie.GPUHardware{Model: "NVIDIA H100 80GB HBM3", CatalogModel: "nvidia-h100-sxm", Count: 8, CapRange: &joulie.PowerRange{MinWatts: 200, MaxWatts: 700}},
	}
	if _, err := jc.JoulieV1alpha1().NodeHardwares().UpdateStatus(ctx, hw, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return
}

func performancePod(name, node string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
		Annotations: map[string]string{joulie.AnnotationWorkloadClass: joulie.WorkloadClassPerformance}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "train"}}}}
	// Scheduled by hand: nodeSelector keeps the harness's scheduler, when
	// one runs, from placing it elsewhere.
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	return p
}

// TestControllerPlansAMixedCluster drives a mixed CPU/GPU cluster through
// queue pressure, a performance→draining→eco transition with a
// performance pod running and after it ends, a node becoming
// unschedulable, and a steady state that writes nothing.
func TestControllerPlansAMixedCluster(t *testing.T) {
	const selector = "joulie.io/ctl-mixed"
	gpuA, gpuB, cpuA, cpuB := controllerNodes(t, "ctl-mixed", selector)
	view := newClusterView(t)
	ctx := context.Background()
	admin := cp.AdminClient(t)

	// Queue pressure: base 0.5 of 4 nodes is 2; three pending performance
	// pods at one per node ask for 3.
	var pending []string
	for i := range 3 {
		name := fmt.Sprintf("ctl-mixed-perf-%d", i)
		p := performancePod(name, "nowhere")
		cp.CreatePod(t, p)
		pending = append(pending, name)
	}
	ctl := runController(t, "joulie-controller", selector, "POLICY_TYPE=queue_aware_v1", "QUEUE_HP_BASE_FRAC=0.5", "QUEUE_PERF_PER_HP_NODE=1")
	// Family floor first (the 8-GPU node, the first CPU node), then by
	// density: the 4-GPU node.
	view.expect("three performance nodes under pressure", 60*time.Second, map[string]string{
		gpuA: "performance/false/performance", gpuB: "performance/false/performance",
		cpuA: "performance/false/performance", cpuB: "eco/false/eco"})

	// The controller owns the spec through server-side apply.
	npp, err := view.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, gpuA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := false
	for _, mf := range npp.ManagedFields {
		owned = owned || (mf.Manager == "joulie-controller" && mf.Operation == metav1.ManagedFieldsOperationApply)
	}
	if !owned {
		t.Errorf("%s's profile is not applied by joulie-controller: %+v", gpuA, npp.ManagedFields)
	}

	// Hardware: gpu-a from NodeHardware (8 GPUs), gpu-b from labels and
	// allocatable (4 GPUs), cpu-b from labels only.
	twins := map[string]*joulie.NodeTwin{}
	for _, n := range []string{gpuA, gpuB, cpuB} {
		tw, err := view.joulie.JoulieV1alpha1().NodeTwins().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		twins[n] = tw
	}
	if d := twins[gpuA].Status.HardwareDensityScore; d != 100 {
		t.Errorf("gpu-a density %v, want 100 (2 × EPYC 9654 + 8 × H100 from NodeHardware)", d)
	}
	// No agent reports gpu-a's power and no pod runs there: the
	// utilization model gives its idle power, from the catalog's figures
	// for the models its NodeHardware names.
	epyc, _ := catalog.Default().CPUByID("amd-epyc-9654")
	h100, _ := catalog.Default().GPUByID("nvidia-h100-sxm")
	idleW := 2*epyc.IdleWatts + 8*h100.IdleWatts
	if pm := twins[gpuA].Status.PowerMeasurement; pm == nil || pm.GPUTdpW != 5600 || pm.CPUTdpW != 800 ||
		pm.Source != joulie.SourceUtilization || pm.MeasuredNodePowerW != idleW {
		t.Errorf("gpu-a power measurement %+v, want TDPs from NodeHardware's ranges (8 × 700, 2 × 400) and source utilization at the idle %v W", pm, idleW)
	}
	if d := twins[gpuB].Status.HardwareDensityScore; d <= 25 || d >= 100 {
		t.Errorf("gpu-b density %v, want between the CPU-only and the 8-GPU node", d)
	}
	// cpu-b is eco and idle: its draw (one EPYC 9654 package, as its
	// labels and no CPU capacity say, idling at 64.8 W) is under the
	// 240 W eco cap, which would not bind, so the cap that pays leaves
	// it uncapped and the profile says why.
	if pm := twins[cpuB].Status.PowerMeasurement; pm == nil || pm.GPUTdpW != 0 || pm.CPUTdpW <= 0 ||
		pm.NodeCappedPowerW != pm.CPUTdpW || twins[cpuB].Status.LastUpdated.IsZero() {
		t.Errorf("cpu-b (labels only, eco, uncapped) power measurement %+v", pm)
	}
	nppB, err := view.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, cpuB, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := nppB.Spec.CPU; c == nil || c.PackagePowerCapPctOfMax == nil || *c.PackagePowerCapPctOfMax != 100 ||
		c.Reason != "uncapped: draw under the 240 W eco cap" {
		t.Errorf("cpu-b's profile, stored by the API server: CPU %+v, want 100%% with the reason", c)
	}

	// One performance pod runs on gpu-b; the other two go away, so the
	// policy wants gpu-b eco, but the guard keeps it draining: labelled
	// eco and draining, its profile still performance (uncapped).
	cp.BindPod(t, "default", pending[0], gpuB)
	cp.SetPodPhase(t, "default", pending[0], corev1.PodRunning)
	for _, name := range pending[1:] {
		if err := admin.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	view.expect("gpu-b drains while its performance pod runs", 30*time.Second, map[string]string{
		gpuB: "performance(label eco)/true/draining", gpuA: "performance/false/performance", cpuA: "performance/false/performance"})
	// It stays draining across ticks.
	time.Sleep(5 * time.Second)
	view.expect("gpu-b still draining", time.Second, map[string]string{gpuB: "performance(label eco)/true/draining"})
	events, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + gpuB})
	if err != nil {
		t.Fatal(err)
	}
	deferred := false
	for _, e := range events.Items {
		deferred = deferred || e.Reason == "DowngradeDeferred"
	}
	if !deferred {
		t.Errorf("no DowngradeDeferred event on %s: %v", gpuB, events.Items)
	}

	// The pod ends: eco is committed.
	cp.SetPodPhase(t, "default", pending[0], corev1.PodSucceeded)
	view.expect("gpu-b eco once the pod ended", 30*time.Second, map[string]string{gpuB: "eco/false/eco"})

	// cpu-a is cordoned: it leaves the plan (released, uncapped: its twin
	// says performance), and cpu-b, now the only CPU node, supplies the
	// CPU family's performance.
	node, err := admin.CoreV1().Nodes().Get(ctx, cpuA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Spec.Unschedulable = true
	if _, err := admin.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	view.expect("cordoned cpu-a released, cpu-b performance", 30*time.Second, map[string]string{
		cpuA: "performance/false/performance", cpuB: "performance/false/performance", gpuA: "performance/false/performance", gpuB: "eco/false/eco"})

	// Steady state: several reconcile intervals without a single write
	// (the Lease renewals of leader election aside).
	time.Sleep(3 * time.Second)
	before := len(cp.Writes(t, ctl.user))
	time.Sleep(7 * time.Second)
	var writes []string
	for _, w := range cp.Writes(t, ctl.user)[before:] {
		if w.Resource != "leases" {
			writes = append(writes, w.String())
		}
	}
	if len(writes) != 0 {
		t.Fatalf("the controller made %d writes in 7 s of steady state: %v", len(writes), writes)
	}
}

// TestControllerLeaderFailover runs two replicas: only the Lease holder
// writes, and when it is killed the other takes over.
func TestControllerLeaderFailover(t *testing.T) {
	const selector = "joulie.io/ctl-failover"
	gpuA, gpuB, cpuA, cpuB := controllerNodes(t, "ctl-failover", selector)
	view := newClusterView(t)
	ctx := context.Background()
	fast := []string{"POLICY_TYPE=static_partition", "LEASE_DURATION=4s", "RENEW_DEADLINE=3s", "RETRY_PERIOD=500ms"}
	a := runController(t, "joulie-controller-a", selector, fast...)
	b := runController(t, "joulie-controller-b", selector, fast...)
	// Writes of earlier runs (-count) under the same users do not count.
	since := map[string]int{a.user: len(cp.Writes(t, a.user)), b.user: len(cp.Writes(t, b.user))}
	writesOf := func(p *controllerProcess) []harness.Write { return cp.Writes(t, p.user)[since[p.user]:] }
	view.expect("half of the nodes performance", 60*time.Second, map[string]string{
		gpuA: "performance/false/performance", cpuA: "performance/false/performance",
		gpuB: "eco/false/eco", cpuB: "eco/false/eco"})

	lease, err := view.kube.CoordinationV1().Leases(harness.ControllerNamespace).Get(ctx, "testcontrollerleaderfailover", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leader, standby := a, b
	if *lease.Spec.HolderIdentity == "joulie-controller-b" {
		leader, standby = b, a
	}
	// The standby only contends for the Lease (a create that lost the race
	// is refused with 409); it writes nothing the controller manages.
	for _, w := range writesOf(standby) {
		if w.Resource != "leases" {
			t.Fatalf("the standby replica wrote %v", w)
		}
	}
	if len(writesOf(leader)) == 0 {
		t.Fatal("the leader made no writes")
	}

	// The leader dies without releasing the Lease; the standby takes over
	// after the lease duration and picks up a change.
	if err := leader.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	node, err := view.kube.CoreV1().Nodes().Get(ctx, gpuA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Labels[joulie.LabelReserved] = "true"
	if _, err := view.kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Without gpu-a, gpu-b is the GPU family's performance node.
	view.expect("the standby replans after the failover", 60*time.Second, map[string]string{
		gpuB: "performance/false/performance", cpuA: "performance/false/performance", cpuB: "eco/false/eco"})
	t.Logf("the standby took over and replanned %s after the leader was killed", time.Since(killed).Round(100*time.Millisecond))
	if len(writesOf(standby)) == 0 {
		t.Fatal("the new leader made no writes")
	}
}
