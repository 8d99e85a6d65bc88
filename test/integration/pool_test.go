package integration

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
)

// poolAccess is what a pool's own identity needs, and no more: list the
// nodes it selects, and the agent's calls (the chart's agent role, less
// TelemetryProfile routing, which pool mode does not read) on every one of
// their objects; the agents' one-node admission policy does not apply to
// it.
const poolAccess = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: joulie-agent-pool-test
rules:
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["list"]
- apiGroups: ["joulie.io"]
  resources: ["nodehardwares"]
  verbs: ["get", "create"]
- apiGroups: ["joulie.io"]
  resources: ["nodehardwares/status", "nodepowerprofiles/status"]
  verbs: ["update"]
- apiGroups: ["joulie.io"]
  resources: ["nodepowerprofiles"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: joulie-agent-pool-test
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: joulie-agent-pool-test
subjects:
- kind: ServiceAccount
  name: joulie-agent-pool
  namespace: joulie-system
`

func TestPoolModeDrivesEverySelectedNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Apply(ctx, []byte(poolAccess)); err != nil {
		t.Fatal(err)
	}
	sim := newFakeSim()
	srv := httptest.NewServer(sim)
	defer srv.Close()

	nodes := []string{"pool-node-a", "pool-node-b"}
	for _, n := range nodes {
		cp.CreateReadyNode(t, n, map[string]string{"joulie.io/pool-test": "true"}, nil)
		deleteNodeObjects(t, admin, n)
		if _, err := admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco,
				CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(60.0)}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A node outside the selector stays untouched.
	cp.CreateReadyNode(t, "pool-node-other", nil, nil)
	deleteNodeObjects(t, admin, "pool-node-other")

	kubeconfig := cp.WriteKubeconfig(t, cp.ServiceAccountConfig(t, "joulie-system", "joulie-agent-pool"))
	runAgent(t, "pool", kubeconfig, "--pool-enabled", "--pool-node-selector", "joulie.io/pool-test=true",
		"--backend", "http", "--http-telemetry-url", srv.URL+"/sim/{node}", "--http-control-url", srv.URL+"/sim/{node}")

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
