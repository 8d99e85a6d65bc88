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

// policyMessage is part of what the chart's admission policy says when it
// refuses an agent.
const policyMessage = "may only write objects named after its own node"

// chartAgentPolicy is the chart's ValidatingAdmissionPolicy; the API
// server names it in a refusal.
const chartAgentPolicy = "joulie-agent-own-node"

// An agent's credentials, under the chart's RBAC and admission policy,
// write its own node's hardware and profile status and nothing else: not
// another node's objects (the policy), not a profile's spec and not a
// twin (RBAC).
func TestAgentWritesOnlyObjectsOfItsOwnNode(t *testing.T) {
	admin := versioned.NewForConfigOrDie(cp.AdminConfig())
	agentA := versioned.NewForConfigOrDie(cp.AgentConfig(t, "node-a")).JoulieV1alpha1()
	agentB := versioned.NewForConfigOrDie(cp.AgentConfig(t, "node-b")).JoulieV1alpha1()
	t.Cleanup(func() {
		for _, name := range []string{"node-a", "node-b"} {
			_ = admin.JoulieV1alpha1().NodeHardwares().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = admin.JoulieV1alpha1().NodePowerProfiles().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = admin.JoulieV1alpha1().NodeTwins().Delete(context.Background(), name, metav1.DeleteOptions{})
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
	wantRBACRefusal(t, "agent of node-a deleting NodeHardware node-b", err)

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
	wantRBACRefusal(t, "agent of node-a changing its profile's spec", err)
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
	other.Status.CPU = nil
	other.Spec.Profile = jouliev1alpha1.ProfilePerformance
	_, err = agentA.NodePowerProfiles().Update(ctx, other, metav1.UpdateOptions{})
	wantRBACRefusal(t, "agent of node-a changing profile node-b's spec", err)
	err = agentA.NodePowerProfiles().Delete(ctx, "node-a", metav1.DeleteOptions{})
	wantRBACRefusal(t, "agent of node-a deleting its profile", err)

	// Twins are the controller's alone.
	_, err = agentA.NodeTwins().Create(ctx, &jouliev1alpha1.NodeTwin{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	wantRBACRefusal(t, "agent of node-a creating its NodeTwin", err)
	twin, err := admin.JoulieV1alpha1().NodeTwins().Create(ctx, &jouliev1alpha1.NodeTwin{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("admin creating NodeTwin node-a: %v", err)
	}
	twin.Status.SchedulableClass = jouliev1alpha1.ClassPerformance
	_, err = agentA.NodeTwins().UpdateStatus(ctx, twin, metav1.UpdateOptions{})
	wantRBACRefusal(t, "agent of node-a writing its twin's status", err)

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
		"update nodepowerprofiles node-b -> 403",
		"delete nodepowerprofiles node-a -> 403",
		// RBAC refuses a create before the body is read, so the audit
		// log has no name for it.
		"create nodetwins  -> 403",
		"update nodetwins/status node-a -> 403",
	}
	var gotLines []string
	for _, w := range got {
		gotLines = append(gotLines, strings.TrimPrefix(w.String(), userA+" "))
	}
	if !slices.Equal(gotLines, want) {
		t.Errorf("writes audited for %s:\n got %q\nwant %q", userA, gotLines, want)
	}
}

// The controller's ServiceAccount, with the chart's RBAC, writes profiles
// (spec) and twins (status), and nothing of the agents': not a profile's
// status, not NodeHardware.
func TestControllerWritesProfilesAndTwins(t *testing.T) {
	const node = "chart-rbac-node"
	admin := versioned.NewForConfigOrDie(cp.AdminConfig()).JoulieV1alpha1()
	ctrl := versioned.NewForConfigOrDie(cp.ControllerConfig(t)).JoulieV1alpha1()
	t.Cleanup(func() {
		_ = admin.NodePowerProfiles().Delete(context.Background(), node, metav1.DeleteOptions{})
		_ = admin.NodeTwins().Delete(context.Background(), node, metav1.DeleteOptions{})
		_ = admin.NodeHardwares().Delete(context.Background(), node, metav1.DeleteOptions{})
	})
	user := harness.ServiceAccountUser(harness.ControllerNamespace, harness.ControllerServiceAccount)
	before := len(cp.Writes(t, user))
	ctx := t.Context()

	p, err := ctrl.NodePowerProfiles().Create(ctx, &jouliev1alpha1.NodePowerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec:       jouliev1alpha1.NodePowerProfileSpec{Profile: jouliev1alpha1.ProfileEco},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("controller creating a profile: %v", err)
	}
	p.Spec.Profile = jouliev1alpha1.ProfilePerformance
	if p, err = ctrl.NodePowerProfiles().Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("controller changing a profile's spec: %v", err)
	}
	p.Status.CPU = &jouliev1alpha1.ControlStatus{Backend: jouliev1alpha1.BackendRAPL, Result: jouliev1alpha1.ResultApplied}
	_, err = ctrl.NodePowerProfiles().UpdateStatus(ctx, p, metav1.UpdateOptions{})
	wantRBACRefusal(t, "controller reporting on a profile (the agent's part)", err)

	tw, err := ctrl.NodeTwins().Create(ctx, &jouliev1alpha1.NodeTwin{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("controller creating a twin: %v", err)
	}
	tw.Status = jouliev1alpha1.NodeTwinStatus{SchedulableClass: jouliev1alpha1.ClassPerformance, PredictedPowerHeadroomScore: 80, LastUpdated: metav1.Now()}
	if _, err := ctrl.NodeTwins().UpdateStatus(ctx, tw, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("controller writing a twin's status: %v", err)
	}

	_, err = ctrl.NodeHardwares().Create(ctx, nodeHardware(node), metav1.CreateOptions{})
	wantRBACRefusal(t, "controller creating NodeHardware (the agent's part)", err)

	if err := ctrl.NodeTwins().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Errorf("controller deleting the twin of a deleted node: %v", err)
	}
	if err := ctrl.NodePowerProfiles().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Errorf("controller deleting the profile of a deleted node: %v", err)
	}

	var got []string
	for _, w := range cp.Writes(t, user)[before:] {
		got = append(got, strings.TrimPrefix(w.String(), user+" "))
	}
	want := []string{
		"create nodepowerprofiles " + node + " -> 201",
		"update nodepowerprofiles " + node + " -> 200",
		"update nodepowerprofiles/status " + node + " -> 403",
		"create nodetwins " + node + " -> 201",
		"update nodetwins/status " + node + " -> 200",
		"create nodehardwares  -> 403", // refused before the body (and name) is read
		"delete nodetwins " + node + " -> 200",
		"delete nodepowerprofiles " + node + " -> 200",
	}
	if !slices.Equal(got, want) {
		t.Errorf("writes audited for %s:\n got %q\nwant %q", user, got, want)
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

// wantPolicyRefusal checks that the chart's admission policy refused a
// write RBAC allowed.
func wantPolicyRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), policyMessage) || !strings.Contains(err.Error(), "'"+chartAgentPolicy+"'") {
		t.Errorf("%s: want Forbidden by ValidatingAdmissionPolicy %s, got %v", what, chartAgentPolicy, err)
	}
}

// wantRBACRefusal checks that RBAC refused a write, before admission.
func wantRBACRefusal(t *testing.T, what string, err error) {
	t.Helper()
	// The authorizer's refusal says what the user "cannot" do.
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), " cannot ") || strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
		t.Errorf("%s: want Forbidden by RBAC, got %v", what, err)
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
