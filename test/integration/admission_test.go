package integration

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	jouliev1alpha1 "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	jouliev1alpha1client "joulie.io/joulie/pkg/generated/clientset/versioned/typed/joulie/v1alpha1"
	"joulie.io/joulie/test/harness"
)

// policyMessage is part of what the chart's admission policy says when it
// refuses an agent.
const policyMessage = "may only write objects named after its own node"

// metadataMessage is part of what the policy says when an agent's create
// carries metadata.
const metadataMessage = "only without labels, annotations, finalizers or ownerReferences"

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
	gotLines := cp.WriteLines(t, userA, before)
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
	if !slices.Equal(gotLines, want) {
		t.Errorf("writes audited for %s:\n got %q\nwant %q", userA, gotLines, want)
	}
}

// The chart's agent role grants exactly the calls joulie-agentd makes
// (agentd/internal/kubesync), asked of the API server's authorizer as the
// agent itself: nothing that lists or watches hardware, nothing that writes
// an object's metadata, nothing the agent does not do.
func TestAgentRoleGrantsOnlyTheAgentsCalls(t *testing.T) {
	const node = "node-access"
	checkAccess(t, cp.AgentConfig(t, node), node, []access{
		{"get", "joulie.io", "nodehardwares", "", true},
		{"create", "joulie.io", "nodehardwares", "", true},
		{"list", "joulie.io", "nodehardwares", "", false},
		{"watch", "joulie.io", "nodehardwares", "", false},
		{"update", "joulie.io", "nodehardwares", "", false},
		{"patch", "joulie.io", "nodehardwares", "", false},
		{"delete", "joulie.io", "nodehardwares", "", false},
		{"update", "joulie.io", "nodehardwares", "status", true},
		{"patch", "joulie.io", "nodehardwares", "status", false},
		{"get", "joulie.io", "nodehardwares", "status", false},
		{"get", "joulie.io", "nodepowerprofiles", "", true},
		{"list", "joulie.io", "nodepowerprofiles", "", true},
		{"watch", "joulie.io", "nodepowerprofiles", "", true},
		{"update", "joulie.io", "nodepowerprofiles", "", false},
		{"patch", "joulie.io", "nodepowerprofiles", "", false},
		{"create", "joulie.io", "nodepowerprofiles", "", false},
		{"update", "joulie.io", "nodepowerprofiles", "status", true},
		{"patch", "joulie.io", "nodepowerprofiles", "status", false},
		{"list", "joulie.io", "telemetryprofiles", "", true},
		{"get", "joulie.io", "telemetryprofiles", "", false},
		{"watch", "joulie.io", "telemetryprofiles", "", false},
		{"get", "", "nodes", "", true},
		{"list", "", "nodes", "", false},
		// Its node's pods are read as the kubelet (agent_pods_test.go).
		{"list", "", "pods", "", false},
		{"watch", "", "pods", "", false},
		{"get", "", "pods", "", false},
		{"create", "", "pods", "", false},
		{"delete", "", "pods", "", false},
		{"create", "events.k8s.io", "events", "", true},
		{"get", "events.k8s.io", "events", "", false},
		{"update", "events.k8s.io", "events", "", false},
		{"create", "", "events", "", false},
		{"patch", "", "nodes", "", false},
		{"get", "joulie.io", "nodetwins", "", false},
	})
}

// access is one call an identity may or may not make.
type access struct {
	verb, group, resource, subresource string
	allowed                            bool
}

// checkAccess asks the API server, as the identity of cfg, whether it may
// make each call on the object name, and fails every answer that differs.
func checkAccess(t *testing.T, cfg *rest.Config, name string, calls []access) {
	t.Helper()
	kc := kubernetes.NewForConfigOrDie(cfg)
	for _, c := range calls {
		review, err := kc.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: c.verb, Group: c.group, Resource: c.resource, Subresource: c.subresource, Name: name,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("access review of %s %s/%s: %v", c.verb, c.resource, c.subresource, err)
		}
		if review.Status.Allowed != c.allowed {
			t.Errorf("may %s %s (subresource %q) of %s: %v, want %v", c.verb, c.resource, c.subresource, name, review.Status.Allowed, c.allowed)
		}
	}
}

// An agent owns its NodeHardware's status, not its metadata: labels,
// annotations, finalizers and ownerReferences are the administrator's (a
// finalizer holds up the object's deletion, an ownerReference with
// blockOwnerDeletion its owner's). The policy refuses a create that carries
// any, RBAC refuses updates and patches of the object, and a status update
// keeps the stored metadata whatever the request holds; the agent's own
// writes, a bare create and status updates, go through.
func TestAgentWritesNoMetadataOfItsOwnNodeHardware(t *testing.T) {
	const node = "node-meta"
	admin := versioned.NewForConfigOrDie(cp.AdminConfig()).JoulieV1alpha1()
	agent := versioned.NewForConfigOrDie(cp.AgentConfig(t, node)).JoulieV1alpha1()
	t.Cleanup(func() {
		_ = admin.NodeHardwares().Delete(context.Background(), node, metav1.DeleteOptions{})
		_ = admin.NodePowerProfiles().Delete(context.Background(), node, metav1.DeleteOptions{})
	})
	waitForAgentPolicy(t)
	user := harness.AgentUser(node)
	before := len(cp.Writes(t, user))
	ctx := t.Context()

	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node,
		UID: "6a1e4a5c-0000-4000-8000-000000000001", BlockOwnerDeletion: ptr.To(true)}
	metadata := []struct {
		field string
		set   func(*metav1.ObjectMeta)
	}{
		{"labels", func(m *metav1.ObjectMeta) { m.Labels = map[string]string{"example.com/rack": "r1"} }},
		{"annotations", func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{"example.com/note": "x"} }},
		{"finalizers", func(m *metav1.ObjectMeta) { m.Finalizers = []string{"example.com/hold"} }},
		{"ownerReferences", func(m *metav1.ObjectMeta) { m.OwnerReferences = []metav1.OwnerReference{owner} }},
	}
	for _, m := range metadata {
		hw := nodeHardware(node)
		m.set(&hw.ObjectMeta)
		_, err := agent.NodeHardwares().Create(ctx, hw, metav1.CreateOptions{})
		if err == nil {
			t.Errorf("agent creating its NodeHardware with %s: created, want Forbidden by ValidatingAdmissionPolicy %s", m.field, chartAgentPolicy)
			removeHardware(t, admin, node) // so the next case starts afresh
			continue
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), metadataMessage) || !strings.Contains(err.Error(), "'"+chartAgentPolicy+"'") {
			t.Errorf("agent creating its NodeHardware with %s: want Forbidden by ValidatingAdmissionPolicy %s, got %v", m.field, chartAgentPolicy, err)
		}
	}

	// The agent's own create: a name and nothing else, as kubesync sends it.
	hw, err := agent.NodeHardwares().Create(ctx, nodeHardware(node), metav1.CreateOptions{FieldManager: "joulie-agentd"})
	if err != nil {
		t.Fatalf("agent creating its bare NodeHardware: %v", err)
	}
	for _, m := range metadata {
		upd := hw.DeepCopy()
		m.set(&upd.ObjectMeta)
		_, err := agent.NodeHardwares().Update(ctx, upd, metav1.UpdateOptions{})
		wantRBACRefusal(t, "agent updating its NodeHardware's "+m.field, err)
		var patch struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		m.set(&patch.Metadata)
		body, err := json.Marshal(patch)
		if err != nil {
			t.Fatal(err)
		}
		_, err = agent.NodeHardwares().Patch(ctx, node, types.MergePatchType, body, metav1.PatchOptions{})
		wantRBACRefusal(t, "agent patching its NodeHardware's "+m.field, err)
	}

	// Status: the hardware lands, the metadata in the same request does not.
	upd := hw.DeepCopy()
	for _, m := range metadata {
		m.set(&upd.ObjectMeta)
	}
	upd.Status = hardwareStatus()
	if _, err := agent.NodeHardwares().UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: "joulie-agentd"}); err != nil {
		t.Fatalf("agent publishing its hardware: %v", err)
	}
	stored, err := admin.NodeHardwares().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status.CPU.Model != hardwareStatus().CPU.Model {
		t.Errorf("status update by the agent not stored: CPU %+v", stored.Status.CPU)
	}
	if len(stored.Labels)+len(stored.Annotations)+len(stored.Finalizers)+len(stored.OwnerReferences) != 0 {
		t.Errorf("a status update by the agent wrote metadata: labels %v, annotations %v, finalizers %v, ownerReferences %v",
			stored.Labels, stored.Annotations, stored.Finalizers, stored.OwnerReferences)
	}

	// Its profile's metadata is not the agent's either.
	if _, err := admin.NodePowerProfiles().Create(ctx, &jouliev1alpha1.NodePowerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec:       jouliev1alpha1.NodePowerProfileSpec{Profile: jouliev1alpha1.ProfileEco},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin creating NodePowerProfile %s: %v", node, err)
	}
	_, err = agent.NodePowerProfiles().Patch(ctx, node, types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`), metav1.PatchOptions{})
	wantRBACRefusal(t, "agent patching its profile's finalizers", err)

	got := cp.WriteLines(t, user, before)
	want := []string{
		"create nodehardwares " + node + " -> 403",
		"create nodehardwares " + node + " -> 403",
		"create nodehardwares " + node + " -> 403",
		"create nodehardwares " + node + " -> 403",
		"create nodehardwares " + node + " -> 201",
	}
	for range metadata {
		want = append(want, "update nodehardwares "+node+" -> 403", "patch nodehardwares "+node+" -> 403")
	}
	want = append(want, "update nodehardwares/status "+node+" -> 200", "patch nodepowerprofiles "+node+" -> 403")
	if !slices.Equal(got, want) {
		t.Errorf("writes audited for %s:\n got %q\nwant %q", user, got, want)
	}
}

// removeHardware deletes a NodeHardware as the administrator, finalizers
// and all, and waits until it is gone.
func removeHardware(t *testing.T, admin jouliev1alpha1client.JoulieV1alpha1Interface, node string) {
	t.Helper()
	ctx := t.Context()
	if _, err := admin.NodeHardwares().Patch(ctx, node, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("admin clearing the finalizers of NodeHardware %s: %v", node, err)
	}
	if err := admin.NodeHardwares().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("admin deleting NodeHardware %s: %v", node, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := admin.NodeHardwares().Get(ctx, node, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("NodeHardware %s still there 10s after its deletion", node)
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

	got := cp.WriteLines(t, user, before)
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
