package integration

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/demo/fleet"
)

// Per-GPU caps on the real joulie-agentd, with its node's own identity,
// three GPUs of the fake libnvidia-ml and a fake kubelet on the real
// pod-resources API: on a performance node whose profile sets a standard
// GPU cap, the GPU a standard pod holds is capped, the performance pod's
// and the idle one are not, and a GPU changing hands changes its cap.
func TestAgentCapsEachGPUByTheClassOfItsPod(t *testing.T) {
	const node, ns = "per-gpu-node", "per-gpu"
	uuids := []string{"GPU-pg000000-0000-4000-8000-000000000000", "GPU-pg000000-0000-4000-8000-000000000001", "GPU-pg000000-0000-4000-8000-000000000002"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	perGPUNode(ctx, t, node)
	nodePods(t, node, ns, map[string]string{"train": joulie.WorkloadClassPerformance, "batch": "", "etl": ""})
	h := newGPUHost(ctx, t, func(dir string) { fakeGPUs(t, dir, 300, uuids...) },
		map[string][]string{ns + "/train": {uuids[0]}, ns + "/batch": {uuids[1]}})
	gpus, podsFile := h.gpus, h.podsFile
	h.agent(t, node)

	limits := func() string {
		var out []string
		for i := range uuids {
			b, err := os.ReadFile(filepath.Join(gpus, "gpu"+string(rune('0'+i)), "limit_mw"))
			if err != nil {
				return err.Error()
			}
			out = append(out, strings.TrimSpace(string(b)))
		}
		return strings.Join(out, ",")
	}
	expect := func(what, want string) {
		t.Helper()
		start := time.Now()
		pollUntil(t, what+" (limits "+want+" mW; last "+limits()+")", 30*time.Second, func() bool { return limits() == want })
		t.Logf("%s: limits %s mW after %s", what, want, time.Since(start).Round(10*time.Millisecond))
	}
	// The standard pod's GPU at 60% of 700 W; the performance pod's and
	// the idle GPU at 100%.
	expect("batch's GPU capped, train's and the idle one not", "700000,420000,700000")

	// batch ends and etl takes the idle GPU: the caps follow within the
	// tick that sees it (the agent ticks every second).
	kubeletPods(t, podsFile, map[string][]string{ns + "/train": {uuids[0]}, ns + "/etl": {uuids[2]}})
	expect("the GPUs changed hands", "700000,700000,420000")

	// A GPU shared by a performance and a standard pod stays uncapped.
	kubeletPods(t, podsFile, map[string][]string{ns + "/train": {uuids[0], uuids[2]}, ns + "/etl": {uuids[2]}})
	expect("a GPU shared with a performance pod", "700000,700000,700000")
}

// A GPU in MIG mode, on the real agent with the fake libnvidia-ml and the
// fake kubelet: the pods holding its MIG devices share its energy, one
// part per MIG device, the idle MIG device's part stays unattributed, and
// per-GPU caps treat the GPU as one device, capped while only standard
// pods hold its MIG devices.
func TestAgentSharesAMIGGPUByItsMIGDevices(t *testing.T) {
	const node, ns, uuid = "mig-node", "mig", "GPU-mg000000-0000-4000-8000-000000000000"
	migs := []string{"MIG-mg000000-0000-4000-8000-00000000000a", "MIG-mg000000-0000-4000-8000-00000000000b", "MIG-mg000000-0000-4000-8000-00000000000c"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	perGPUNode(ctx, t, node)
	nodePods(t, node, ns, map[string]string{"a": "", "b": "", "p": joulie.WorkloadClassPerformance})
	h := newGPUHost(ctx, t, func(dir string) {
		fakeGPUs(t, dir, 300, uuid)
		files := map[string]string{"gpu0/mig_mode": "1"}
		for k, m := range migs {
			files[fmt.Sprintf("gpu0/mig%d_uuid", k)] = m
		}
		for name, v := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}, map[string][]string{ns + "/a": {migs[0]}, ns + "/b": {migs[1]}})
	gpus, podsFile := h.gpus, h.podsFile
	agentd := h.agent(t, node)

	limit := func() string {
		b, _ := os.ReadFile(filepath.Join(gpus, "gpu0", "limit_mw"))
		return strings.TrimSpace(string(b))
	}
	pollUntil(t, "the MIG GPU capped while standard pods hold its MIG devices", 30*time.Second, func() bool { return limit() == "420000" })

	type report struct {
		Pods []struct {
			Name      string  `json:"name"`
			GPUJoules float64 `json:"gpuJoules"`
		} `json:"pods"`
		Unattributed map[string]float64 `json:"unattributedGpuJoules"`
	}
	var r report
	joules := func(name string) float64 {
		for _, p := range r.Pods {
			if p.Name == name {
				return p.GPUJoules
			}
		}
		return 0
	}
	pollUntil(t, "energy on both MIG holders and the idle part unattributed", 45*time.Second, func() bool {
		r = report{}
		return getJSON(agentd.socket, "/v1/pods", &r) && joules("a") > 200 && joules("b") > 200 && r.Unattributed[uuid] > 200
	})
	// One third each: the counter runs at the GPU's draw, shared by the
	// three MIG devices.
	if a, b, u := joules("a"), joules("b"), r.Unattributed[uuid]; math.Abs(a-b) > 0.2*a || math.Abs(a-u) > 0.5*a {
		t.Errorf("a %.0f J, b %.0f J, unattributed %.0f J: want about a third each", a, b, u)
	}

	// A performance pod takes the idle MIG device: the GPU is uncapped.
	kubeletPods(t, podsFile, map[string][]string{ns + "/a": {migs[0]}, ns + "/b": {migs[1]}, ns + "/p": {migs[2]}})
	pollUntil(t, "the MIG GPU uncapped once a performance pod holds a MIG device", 30*time.Second, func() bool { return limit() == "700000" })
}

// perGPUNode creates node, Ready, and its NodePowerProfile as a
// performance node with per-GPU caps: its GPUs at 100%, those only
// standard pods hold at 60%. Both go when the test ends.
func perGPUNode(ctx context.Context, t *testing.T, node string) {
	t.Helper()
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	cp.CreateReadyNode(t, node, nil, nil)
	deleteNodeObjects(t, admin, node)
	if _, err := admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance, GPU: &joulie.GPUPowerTarget{
			PowerCap:         &joulie.GPUPowerCap{CapPctOfMax: ptr.To(100.0)},
			StandardPowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(60.0)}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// nodePods creates pods bound to node, by name, with their workload class
// ("" for standard).
func nodePods(t *testing.T, node, ns string, classes map[string]string) {
	t.Helper()
	for name, class := range classes {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: node}}
		if class != "" {
			p.Annotations = map[string]string{joulie.AnnotationWorkloadClass: class}
		}
		cp.CreatePod(t, p)
	}
}

// gpuHost is a host's GPUs in the fake libnvidia-ml and a fake kubelet
// on the real pod-resources API, for a real agent to run on.
type gpuHost struct {
	lib, gpus, socket, podsFile string
}

// newGPUHost builds the fake library, points FAKE_NVML_DIR at a fresh
// state that layout fills, and starts the fake kubelet listing pods.
func newGPUHost(ctx context.Context, t *testing.T, layout func(dir string), pods map[string][]string) gpuHost {
	t.Helper()
	lib, err := fleet.BuildFakeNVML(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := gpuHost{lib: lib, gpus: t.TempDir()}
	layout(h.gpus)
	t.Setenv("FAKE_NVML_DIR", h.gpus)
	h.socket, h.podsFile = startFakeKubelet(t, pods)
	return h
}

// startFakeKubelet serves the kubelet's pod-resources API on a socket,
// listing pods (namespace/name → GPU IDs) from a file that kubeletPods
// rewrites while the test runs; it returns the socket and the file.
func startFakeKubelet(t *testing.T, pods map[string][]string) (socket, podsFile string) {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "kubelet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	socket, podsFile = filepath.Join(sockDir, "kubelet.sock"), filepath.Join(sockDir, "pods.json")
	kubeletPods(t, podsFile, pods)
	kubelet := exec.Command(cp.BuildProgram(t, "joulie.io/joulie/agentd/internal/podresources/fakekubelet/cmd/fake-kubelet"),
		"--socket", socket, "--pods", podsFile)
	kubelet.Stderr = os.Stderr
	if err := kubelet.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kubelet.Process.Signal(syscall.SIGTERM); _ = kubelet.Wait() })
	return socket, podsFile
}

// agent runs the real joulie-agentd for node on h, as the node's own
// identity.
func (h gpuHost) agent(t *testing.T, node string) agentProcess {
	return runAgent(t, node, cp.WriteKubeconfig(t, cp.AgentConfig(t, node)), "--nvml-library-path", h.lib, "--pod-resources-socket", h.socket)
}
