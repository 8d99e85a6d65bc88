package integration

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
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/harness"
)

// The agent's cluster sync is tested through the real joulie-agentd
// binary, authenticated as its node's own identity, against the real API
// server with the chart's agent RBAC and admission policy installed.

// buildAgent builds joulie-agentd in the product module, where its go.sum
// lives, once per suite.
func buildAgent(t *testing.T) string {
	t.Helper()
	return cp.BuildProgram(t, "joulie.io/joulie/agentd/cmd/joulie-agentd")
}

// minimalHost is a host root with a CPU and nothing to control, like a VM:
// the agent publishes its hardware and reports its controls blocked.
func minimalHost(t *testing.T) string {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	cpuinfo := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: 0\ncore id\t\t: 0\ncpu cores\t: 1\n\n"
	if err := os.WriteFile(filepath.Join(root, "proc", "cpuinfo"), []byte(cpuinfo), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc", "meminfo"), []byte("MemTotal:       16384000 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestAgentSyncsWithTheAPIServer(t *testing.T) {
	const node = "agent-sync-node"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	cp.CreateReadyNode(t, node, map[string]string{joulie.LabelManaged: "true"}, nil)
	profile, err := admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco,
			CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(60.0)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteNodeObjects(t, admin, node)

	agentd := runAgent(t, node, cp.WriteKubeconfig(t, cp.AgentConfig(t, node)))

	// The agent publishes its hardware under its own node's name.
	pollUntil(t, "NodeHardware", 30*time.Second, func() bool {
		hw, err := admin.JoulieV1alpha1().NodeHardwares().Get(ctx, node, metav1.GetOptions{})
		return err == nil && hw.Status.CPU.CatalogModel == "intel-xeon-8480plus"
	})
	// It reports on the profile's generation; with nothing to control the
	// CPU cap is blocked, with the reason.
	pollUntil(t, "status for generation 1", 30*time.Second, func() bool {
		p, err := admin.JoulieV1alpha1().NodePowerProfiles().Get(ctx, node, metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == profile.Generation && p.Status.CPU != nil && p.Status.CPU.Result == joulie.ResultBlocked
	})

	// A new target is picked up through the watch, well within one
	// reconcile interval of it landing.
	p, _ := admin.JoulieV1alpha1().NodePowerProfiles().Get(ctx, node, metav1.GetOptions{})
	p.Spec = joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance}
	updated, err := admin.JoulieV1alpha1().NodePowerProfiles().Update(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	landed := time.Now()
	pollUntil(t, "status for the new generation", 10*time.Second, func() bool {
		p, err := admin.JoulieV1alpha1().NodePowerProfiles().Get(ctx, node, metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == updated.Generation && p.Status.CPU != nil && p.Status.CPU.Result == joulie.ResultNone
	})
	t.Logf("new generation reported %s after it landed", time.Since(landed).Round(time.Millisecond))

	// The per-pod meter's pod list comes from the API server with the
	// agent's own identity: list and watch of its node's pods, metadata
	// only. Once it has arrived, the CPU estimate stops waiting for it
	// (and, on this host without pod cgroups, says that instead).
	pollUntil(t, "the node's pods listed for the per-pod meter", 30*time.Second, func() bool {
		cpu := podsReportCPU(t, agentd.socket)
		return cpu != "" && !strings.Contains(cpu, "waiting for the node's pod list")
	})
	if cpu := podsReportCPU(t, agentd.socket); !strings.Contains(cpu, "no pod cgroups") {
		t.Errorf("per-pod CPU status %q, want it to say the host has no pod cgroups", cpu)
	}

	// Steady state: nothing changes, so the agent writes nothing. The
	// same window measures the daemon's idle cost with its informer and
	// probe running (targets: under 0.5% of a core, under 30 MiB); it is
	// logged, not asserted, since shared machines are noisy.
	time.Sleep(2 * time.Second)
	user := harness.AgentUser(node)
	before := cp.WriteCount(t, user)
	cpu, mem := idleCost(t, agentd.pid, 10*time.Second)
	if n := cp.WriteCount(t, user) - before; n != 0 {
		t.Fatalf("the agent made %d writes in 10 s of steady state", n)
	}
	t.Logf("joulie-agentd idle with Kubernetes sync at a 1 s tick: CPU %.2f%% of one core, RSS %s (anonymous %s, file-backed %s)",
		cpu, mem["VmRSS"], mem["RssAnon"], mem["RssFile"])
}

// pollUntil waits up to timeout for cond, failing the test with what it
// waited for.
var pollUntil = harness.PollUntil

// podsReportCPU asks the agent's local socket for its per-pod report
// (GET /v1/pods, what joulie-agentctl pods shows) and returns what it says
// of the per-pod CPU estimate; "" when the agent does not answer yet.
func podsReportCPU(t *testing.T, socket string) string {
	t.Helper()
	var r struct {
		CPU string `json:"cpu"`
	}
	if !getJSON(socket, "/v1/pods", &r) {
		return ""
	}
	return r.CPU
}

// getJSON reads path of the agent's local socket into v; false when the
// agent does not answer with JSON.
func getJSON(socket, path string, v any) bool {
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}}}
	resp, err := c.Get("http://agentd" + path)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

// deleteNodeObjects removes a test node and its Joulie objects when the
// test ends: cluster-scoped objects outlive a test, and -count reruns it
// in the same control plane.
func deleteNodeObjects(t *testing.T, admin versioned.Interface, node string) {
	t.Cleanup(func() {
		bg := context.Background()
		_ = admin.JoulieV1alpha1().NodePowerProfiles().Delete(bg, node, metav1.DeleteOptions{})
		_ = admin.JoulieV1alpha1().NodeHardwares().Delete(bg, node, metav1.DeleteOptions{})
		// A controller the test ran leaves the node's twin; the
		// extender's cluster-wide figures would count it in later tests.
		_ = admin.JoulieV1alpha1().NodeTwins().Delete(bg, node, metav1.DeleteOptions{})
		_ = cp.AdminClient(t).CoreV1().Nodes().Delete(bg, node, metav1.DeleteOptions{})
	})
}

// agentProcess is a joulie-agentd started by runAgent.
type agentProcess struct {
	socket string
	pid    int
}

// runAgent runs joulie-agentd for node with kubeconfig on a minimal host
// until the test ends, with a 1 s tick and no GPU libraries. Its log is
// printed if the test fails.
func runAgent(t *testing.T, node, kubeconfig string, args ...string) agentProcess {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "jsock")
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(sockDir, "a.sock")
	logPath := filepath.Join(t.TempDir(), "agentd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// The node's pods are read as its kubelet, as on a host; a later
	// --pods-kubeconfig in args goes over it.
	cmd := exec.Command(buildAgent(t), append([]string{"--config", "", "--node-name", node, "--kubeconfig", kubeconfig,
		"--pods-kubeconfig", cp.WriteKubeconfig(t, cp.KubeletConfig(t, node)),
		"--host-root", minimalHost(t), "--state-dir", t.TempDir(), "--socket", socket,
		"--metrics-address", "", "--reconcile-interval", "1s", "--nvml-library-path", "none", "--amdsmi-library-path", "none"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("joulie-agentd log:\n%s", b)
		}
		os.RemoveAll(sockDir)
	})
	return agentProcess{socket: socket, pid: cmd.Process.Pid}
}

// idleCost measures a process over d: its CPU use in percent of one core
// and its memory lines from /proc/PID/status (VmRSS, RssAnon, RssFile).
func idleCost(t *testing.T, pid int, d time.Duration) (cpuPct float64, mem map[string]string) {
	t.Helper()
	ticks := func() int64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// Fields after the command name, which may hold spaces.
		f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		return u + s
	}
	t0, c0 := time.Now(), ticks()
	time.Sleep(d)
	cpuPct = float64(ticks()-c0) / 100 / time.Since(t0).Seconds() * 100 // USER_HZ is 100 on Linux
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	mem = map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "VmRSS" || k == "RssAnon" || k == "RssFile") {
			mem[k] = strings.TrimSpace(v)
		}
	}
	return cpuPct, mem
}
