package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	jouliev1alpha1 "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/harness"
)

// policyMessage is part of what the test admission policy says when it
// refuses an agent.
const policyMessage = "may only write objects named after its own node"

func TestAgentWritesOnlyObjectsOfItsOwnNode(t *testing.T) {
	admin := versioned.NewForConfigOrDie(cp.AdminConfig())
	agentA := versioned.NewForConfigOrDie(cp.AgentConfig(t, "node-a")).JoulieV1alpha1()
	agentB := versioned.NewForConfigOrDie(cp.AgentConfig(t, "node-b")).JoulieV1alpha1()
	t.Cleanup(func() {
		for _, name := range []string{"node-a", "node-b"} {
			_ = admin.JoulieV1alpha1().NodeHardwares().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = admin.JoulieV1alpha1().NodePowerProfiles().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	waitForAgentPolicy(t)
	userA := harness.AgentUser("node-a")
	before := len(cp.Writes(t, userA))

	ctx := t.Context()
	hw, err := agentA.NodeHardwares().Create(ctx, nodeHardware("node-a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("agent of node-a creating NodeHardware node-a: %v", err)
	}
	hw.Status = hardwareStatus()
	if _, err := agentA.NodeHardwares().UpdateStatus(ctx, hw, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("agent of node-a publishing the status of node-a: %v", err)
	}

	_, err = agentA.NodeHardwares().Create(ctx, nodeHardware("node-b"), metav1.CreateOptions{})
	wantPolicyRefusal(t, "agent of node-a creating NodeHardware node-b", err)

	hwB, err := agentB.NodeHardwares().Create(ctx, nodeHardware("node-b"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("agent of node-b creating NodeHardware node-b: %v", err)
	}
	hwB.Status = hardwareStatus()
	_, err = agentA.NodeHardwares().UpdateStatus(ctx, hwB, metav1.UpdateOptions{})
	wantPolicyRefusal(t, "agent of node-a writing the status of node-b", err)
	err = agentA.NodeHardwares().Delete(ctx, "node-b", metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("agent of node-a deleting NodeHardware node-b: want Forbidden (RBAC grants no delete), got %v", err)
	}

	// Profiles: the controller writes the spec, the agent only its own status.
	for _, node := range []string{"node-a", "node-b"} {
		p := &jouliev1alpha1.NodePowerProfile{
			ObjectMeta: metav1.ObjectMeta{Name: node},
			Spec:       jouliev1alpha1.NodePowerProfileSpec{Profile: jouliev1alpha1.ProfileEco},
		}
		if _, err := admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("admin creating NodePowerProfile %s: %v", node, err)
		}
	}
	own, err := agentA.NodePowerProfiles().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("agent of node-a reading its profile: %v", err)
	}
	own.Spec.Profile = jouliev1alpha1.ProfilePerformance
	_, err = agentA.NodePowerProfiles().Update(ctx, own, metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) || strings.Contains(err.Error(), policyMessage) {
		t.Errorf("agent of node-a changing its profile's spec: want an RBAC Forbidden, got %v", err)
	}
	own.Spec.Profile = jouliev1alpha1.ProfileEco
	own.Status.CPU = &jouliev1alpha1.ControlStatus{Backend: jouliev1alpha1.BackendRAPL, Result: jouliev1alpha1.ResultApplied}
	if _, err := agentA.NodePowerProfiles().UpdateStatus(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Errorf("agent of node-a reporting on its profile: %v", err)
	}
	other, err := agentA.NodePowerProfiles().Get(ctx, "node-b", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("agent of node-a reading profile node-b: %v", err)
	}
	other.Status.CPU = &jouliev1alpha1.ControlStatus{Backend: jouliev1alpha1.BackendRAPL, Result: jouliev1alpha1.ResultApplied}
	_, err = agentA.NodePowerProfiles().UpdateStatus(ctx, other, metav1.UpdateOptions{})
	wantPolicyRefusal(t, "agent of node-a reporting on profile node-b", err)

	// The audit log saw every attempt, refused ones included.
	got := cp.Writes(t, userA)[before:]
	want := []string{
		"create nodehardwares node-a -> 201",
		"update nodehardwares/status node-a -> 200",
		"create nodehardwares node-b -> 403",
		"update nodehardwares/status node-b -> 403",
		"delete nodehardwares node-b -> 403",
		"update nodepowerprofiles node-a -> 403",
		"update nodepowerprofiles/status node-a -> 200",
		"update nodepowerprofiles/status node-b -> 403",
	}
	var gotLines []string
	for _, w := range got {
		gotLines = append(gotLines, strings.TrimPrefix(w.String(), userA+" "))
	}
	if !slices.Equal(gotLines, want) {
		t.Errorf("writes audited for %s:\n got %q\nwant %q", userA, gotLines, want)
	}
}

// waitForAgentPolicy polls until the admission policy refuses a dry-run
// write: a new ValidatingAdmissionPolicy takes up to a second to apply.
func waitForAgentPolicy(t *testing.T) {
	t.Helper()
	probe := versioned.NewForConfigOrDie(cp.AgentConfig(t, "policy-probe")).JoulieV1alpha1()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = probe.NodeHardwares().Create(ctx, nodeHardware("not-the-probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), policyMessage), nil
	})
	if err != nil {
		t.Fatalf("admission policy not in force after 15s (last answer: %v)", last)
	}
}

func wantPolicyRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), policyMessage) {
		t.Errorf("%s: want Forbidden by the admission policy, got %v", what, err)
	}
}

func nodeHardware(node string) *jouliev1alpha1.NodeHardware {
	return &jouliev1alpha1.NodeHardware{ObjectMeta: metav1.ObjectMeta{Name: node}}
}

func hardwareStatus() jouliev1alpha1.NodeHardwareStatus {
	return jouliev1alpha1.NodeHardwareStatus{
		CPU:     jouliev1alpha1.CPUHardware{Vendor: "intel", Model: "Xeon Gold 6430", Sockets: 2},
		Quality: jouliev1alpha1.DiscoveryComplete,
	}
}
