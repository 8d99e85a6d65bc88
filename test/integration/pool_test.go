package integration

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/harness"
)

// chartPoolAccount is the pool agent's ServiceAccount, which the chart
// creates with agents.pool.enabled (the suite installs it so).
const chartPoolAccount = "joulie-agent-pool"

// The chart's pool role is what a pool's identity needs, and no more:
// list the nodes it selects, list and watch the pods bound to nodes (its
// eco guard), and the agent's calls (less TelemetryProfile routing and
// the events, which pool mode does not use) on every one of their
// objects.
func TestPoolRoleGrantsOnlyThePoolsCalls(t *testing.T) {
	checkAccess(t, cp.ServiceAccountConfig(t, harness.ControllerNamespace, chartPoolAccount), "pool-node-a", []access{
		{"list", "", "nodes", "", true},
		{"get", "", "nodes", "", false},
		{"watch", "", "nodes", "", false},
		{"patch", "", "nodes", "", false},
		{"get", "joulie.io", "nodehardwares", "", true},
		{"create", "joulie.io", "nodehardwares", "", true},
		{"update", "joulie.io", "nodehardwares", "", false},
		{"patch", "joulie.io", "nodehardwares", "", false},
		{"delete", "joulie.io", "nodehardwares", "", false},
		{"update", "joulie.io", "nodehardwares", "status", true},
		{"patch", "joulie.io", "nodehardwares", "status", false},
		{"get", "joulie.io", "nodepowerprofiles", "", true},
		{"list", "joulie.io", "nodepowerprofiles", "", true},
		{"watch", "joulie.io", "nodepowerprofiles", "", true},
		{"update", "joulie.io", "nodepowerprofiles", "", false},
		{"create", "joulie.io", "nodepowerprofiles", "", false},
		{"update", "joulie.io", "nodepowerprofiles", "status", true},
		{"list", "joulie.io", "telemetryprofiles", "", false},
		{"list", "", "pods", "", true},
		{"watch", "", "pods", "", true},
		{"get", "", "pods", "", false},
		{"delete", "", "pods", "", false},
		{"create", "events.k8s.io", "events", "", false},
		{"get", "joulie.io", "nodetwins", "", false},
		{"get", "", "secrets", "", false},
	})
}

// runEcoPool creates Ready nodes labelled label=true, each with an eco
// profile at 60% of its 300 W, and runs a pool-mode agent over label's
// nodes as the chart's pool ServiceAccount, whose role is all it has,
// against a fake simulator, which it returns.
func runEcoPool(t *testing.T, ctx context.Context, admin versioned.Interface, label string, nodes ...string) *fakeSim {
	t.Helper()
	sim := newFakeSim()
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	for _, n := range nodes {
		cp.CreateReadyNode(t, n, map[string]string{label: "true"}, nil)
		deleteNodeObjects(t, admin, n)
		if _, err := admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco,
				CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(60.0)}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := cp.WriteKubeconfig(t, cp.ServiceAccountConfig(t, harness.ControllerNamespace, chartPoolAccount))
	runAgent(t, "pool", kubeconfig, "--pool-enabled", "--pool-node-selector", label+"=true",
		"--backend", "http", "--http-telemetry-url", srv.URL+"/sim/{node}", "--http-control-url", srv.URL+"/sim/{node}")
	return sim
}

func TestPoolModeDrivesEverySelectedNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	// A node outside the selector stays untouched.
	cp.CreateReadyNode(t, "pool-node-other", nil, nil)
	deleteNodeObjects(t, admin, "pool-node-other")
	nodes := []string{"pool-node-a", "pool-node-b"}
	sim := runEcoPool(t, ctx, admin, "joulie.io/pool-test", nodes...)

	deadline := time.Now().Add(45 * time.Second)
	for _, n := range nodes {
		for {
			p, err := admin.JoulieV1alpha1().NodePowerProfiles().Get(ctx, n, metav1.GetOptions{})
			_, hwErr := admin.JoulieV1alpha1().NodeHardwares().Get(ctx, n, metav1.GetOptions{})
			if err == nil && hwErr == nil && p.Status.CPU != nil && p.Status.CPU.Backend == joulie.BackendHTTP &&
				p.Status.CPU.Result == joulie.ResultApplied && sim.cap(n) == 180 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not driven by the pool: status %+v, NodeHardware %v, simulator cap %g W", n, p.Status.CPU, hwErr, sim.cap(n))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if _, err := admin.JoulieV1alpha1().NodeHardwares().Get(ctx, "pool-node-other", metav1.GetOptions{}); err == nil {
		t.Fatal("the pool published hardware for a node outside its selector")
	}
}

// In pool mode each node's agent guards eco as a real node's does: while
// a performance pod runs on a pool node, its eco target is held off (the
// simulator's cap back at the performance 100%) and EcoRefused says why;
// when the pod goes, eco applies again. One watch of the pods serves the
// whole pool, under the chart's pool role.
func TestPoolModeGuardsEco(t *testing.T) {
	const node, other = "pool-guard-a", "pool-guard-b"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	sim := runEcoPool(t, ctx, admin, "joulie.io/pool-guard-test", node, other)

	waitPool := func(what string, cond func(refused bool) bool) {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for {
			p, err := admin.JoulieV1alpha1().NodePowerProfiles().Get(ctx, node, metav1.GetOptions{})
			refused := false
			if err == nil {
				for _, c := range p.Status.Conditions {
					refused = refused || (c.Type == joulie.ConditionEcoRefused && c.Status == metav1.ConditionTrue)
				}
			}
			if err == nil && cond(refused) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: simulator caps %g W (%s) and %g W (%s), status %+v", what, sim.cap(node), node, sim.cap(other), other, p.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitPool("eco applied", func(refused bool) bool { return !refused && sim.cap(node) == 180 && sim.cap(other) == 180 })

	pod := cp.CreatePod(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pool-guard-perf", Annotations: map[string]string{joulie.AnnotationWorkloadClass: joulie.WorkloadClassPerformance}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/joulie/idle:0"}}},
	})
	waitPool("eco refused for the performance pod", func(refused bool) bool { return refused && sim.cap(node) == 300 })
	if got := sim.cap(other); got != 180 {
		t.Errorf("the other pool node's cap is %g W: the guard must hold only the pod's node", got)
	}

	if err := cp.AdminClient(t).CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatal(err)
	}
	waitPool("eco again once the pod is gone", func(refused bool) bool { return !refused && sim.cap(node) == 180 })
}
