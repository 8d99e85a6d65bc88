package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/test/harness"
)

// chartNodeKeysPolicy is the chart's policy keeping nodes' own
// credentials off Joulie's node labels and the old BMC annotations.
const chartNodeKeysPolicy = "joulie-node-keys"

// The keys a node's kubelet or agent may not touch on any Node.
var (
	protectedNodeLabels      = []string{joulie.LabelParkable, joulie.LabelReserved, joulie.LabelManaged}
	protectedNodeAnnotations = []string{joulie.AnnotationBMCAddress, joulie.AnnotationBMCSecret}
)

// metadataPatch is a merge patch of one label or annotation; a nil value
// removes it.
func metadataPatch(field, key string, value *string) []byte {
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{field: map[string]any{key: value}}})
	if err != nil {
		panic(err)
	}
	return b
}

func wantNodeKeysRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+chartNodeKeysPolicy+"'") {
		t.Errorf("%s: want Forbidden by ValidatingAdmissionPolicy %s, got %v", what, chartNodeKeysPolicy, err)
	}
}

// waitForNodeKeysPolicy polls, with a dry run, until the policy refuses a
// kubelet setting joulie.io/parkable on its own node.
func waitForNodeKeysPolicy(t *testing.T, kubelet kubernetes.Interface, node string) {
	t.Helper()
	v := "true"
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = kubelet.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, metadataPatch("labels", joulie.LabelParkable, &v),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), chartNodeKeysPolicy), nil
	})
	if err != nil {
		t.Fatalf("node keys policy not in force after 15s (last answer: %v)", last)
	}
}

// A kubelet (user system:node:<n>, group system:nodes) and an agent (even
// one RBAC let patch Nodes) may not set, change or remove joulie.io/
// parkable, reserved or managed, or the old BMC annotations, on their own
// Node; an administrator may, and the kubelet's other label edits pass.
func TestNodeIdentitiesCannotEditJoulieNodeKeys(t *testing.T) {
	const node = "node-keys-own"
	admin := cp.AdminClient(t)
	cp.CreateReadyNode(t, node, map[string]string{"kubernetes.io/hostname": node}, nil)
	kubelet := kubernetes.NewForConfigOrDie(cp.UserConfig(t, "system:node:"+node, "system:nodes"))

	// RBAC gives agents get on nodes only; a role that also lets this
	// agent patch them shows the policy, not RBAC, holds the keys.
	patcher := "test-node-keys-agent-patches-nodes"
	if err := cp.Apply(t.Context(), []byte(fmt.Sprintf(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s}
rules:
- {apiGroups: [""], resources: ["nodes"], verbs: ["get", "patch"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s}
subjects:
- {kind: User, apiGroup: rbac.authorization.k8s.io, name: %[2]s}
`, patcher, harness.AgentUser(node)))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), patcher, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), patcher, metav1.DeleteOptions{})
	})
	agent := kubernetes.NewForConfigOrDie(cp.AgentConfig(t, node))
	waitForNodeKeysPolicy(t, kubelet, node)

	ctx := t.Context()
	patch := func(c kubernetes.Interface, field, key string, value *string) error {
		_, err := c.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, metadataPatch(field, key, value), metav1.PatchOptions{})
		return err
	}
	// asAdmin sets the node's key (nil: removes it); it must pass.
	asAdmin := func(field, key string, value *string) {
		t.Helper()
		if err := patch(admin, field, key, value); err != nil {
			t.Fatalf("admin patching %s %s of node %s: %v", field, key, node, err)
		}
	}
	get := func(field, key string) (string, bool) {
		t.Helper()
		n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := n.Labels
		if field == "annotations" {
			m = n.Annotations
		}
		v, ok := m[key]
		return v, ok
	}
	one, other := "true", "false"
	for _, id := range []struct {
		name   string
		client kubernetes.Interface
	}{{"kubelet", kubelet}, {"agent", agent}} {
		for _, k := range append(append([]struct{ field, key string }{}, keyList("labels", protectedNodeLabels)...), keyList("annotations", protectedNodeAnnotations)...) {
			asAdmin(k.field, k.key, nil)
			wantNodeKeysRefusal(t, fmt.Sprintf("%s setting %s %s", id.name, k.field, k.key), patch(id.client, k.field, k.key, &one))
			if _, ok := get(k.field, k.key); ok {
				t.Errorf("%s %s set after the %s's refused patch", k.field, k.key, id.name)
			}
			asAdmin(k.field, k.key, &one)
			wantNodeKeysRefusal(t, fmt.Sprintf("%s changing %s %s", id.name, k.field, k.key), patch(id.client, k.field, k.key, &other))
			wantNodeKeysRefusal(t, fmt.Sprintf("%s removing %s %s", id.name, k.field, k.key), patch(id.client, k.field, k.key, nil))
			if v, ok := get(k.field, k.key); !ok || v != one {
				t.Errorf("%s %s is %q (present %v) after the %s's refused patches, want %q", k.field, k.key, v, ok, id.name, one)
			}
			// The same value again is no change, and passes.
			if err := patch(id.client, k.field, k.key, &one); err != nil {
				t.Errorf("%s writing %s %s unchanged: %v", id.name, k.field, k.key, err)
			}
		}
	}
	// The kubelet's other labels, and its status updates, still pass.
	rack := "r7"
	if err := patch(kubelet, "labels", "topology.example.com/rack", &rack); err != nil {
		t.Errorf("kubelet setting another label of its node: %v", err)
	}
	n, err := kubelet.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
	if _, err := kubelet.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Errorf("kubelet updating its node's status: %v", err)
	}
	// (A status update cannot change the labels either way: the API
	// server keeps the stored metadata, with or without the policy.)
}

// A kubelet registering its Node may not bring the keys with it
// (--node-labels): the registration is refused, and passes without them.
func TestKubeletCannotRegisterWithJoulieNodeKeys(t *testing.T) {
	const node = "node-keys-new"
	admin := cp.AdminClient(t)
	kubelet := kubernetes.NewForConfigOrDie(cp.UserConfig(t, "system:node:"+node, "system:nodes"))
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
	ctx := t.Context()
	// The policy is in force once it refuses the dry run of a create.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = kubelet.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{joulie.LabelParkable: "true"}}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), chartNodeKeysPolicy), nil
	}); err != nil {
		t.Fatalf("node keys policy not in force after 15s (last answer: %v)", last)
	}
	for _, k := range append(keyList("labels", protectedNodeLabels), keyList("annotations", protectedNodeAnnotations)...) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"kubernetes.io/hostname": node}, Annotations: map[string]string{}}}
		if k.field == "labels" {
			n.Labels[k.key] = "true"
		} else {
			n.Annotations[k.key] = "127.0.0.1:623"
		}
		_, err := kubelet.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		wantNodeKeysRefusal(t, "kubelet registering its node with "+k.field+" "+k.key, err)
	}
	if _, err := kubelet.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node,
		Labels: map[string]string{"kubernetes.io/hostname": node}}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("kubelet registering its node without Joulie's keys: %v", err)
	}
}

func keyList(field string, keys []string) []struct{ field, key string } {
	out := make([]struct{ field, key string }, len(keys))
	for i, k := range keys {
		out[i] = struct{ field, key string }{field, k}
	}
	return out
}
