package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"joulie.io/joulie/test/harness"
)

// The controller reads a node's BMC credentials by name from a Secret
// of its own namespace, as its BMC client does: the chart's Role allows
// exactly that. It cannot list or watch them, change them, or read a
// Secret of another namespace; an agent cannot read them at all.
func TestControllerGetsBMCSecretsOfItsNamespaceOnly(t *testing.T) {
	const name = "joulie-bmc-rbac-node"
	const elsewhere = "default"
	admin := cp.AdminClient(t).CoreV1()
	ctx := t.Context()
	for _, ns := range []string{harness.ControllerNamespace, elsewhere} {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Data:       map[string][]byte{"username": []byte("joulie-wake"), "password": []byte("right-horse-42")},
		}
		if _, err := admin.Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("admin creating Secret %s/%s: %v", ns, name, err)
		}
		t.Cleanup(func() { _ = admin.Secrets(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}

	ctrl := kubernetes.NewForConfigOrDie(cp.ControllerConfig(t)).CoreV1()
	own := ctrl.Secrets(harness.ControllerNamespace)
	got, err := own.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("controller getting BMC credentials in its namespace: %v", err)
	}
	if string(got.Data["username"]) != "joulie-wake" {
		t.Errorf("controller read username %q", got.Data["username"])
	}
	_, err = own.List(ctx, metav1.ListOptions{})
	wantRBACRefusal(t, "controller listing the Secrets of its namespace", err)
	_, err = own.Watch(ctx, metav1.ListOptions{})
	wantRBACRefusal(t, "controller watching the Secrets of its namespace", err)
	got.Data["password"] = []byte("changed")
	_, err = own.Update(ctx, got, metav1.UpdateOptions{})
	wantRBACRefusal(t, "controller changing a BMC Secret", err)
	_, err = ctrl.Secrets(elsewhere).Get(ctx, name, metav1.GetOptions{})
	wantRBACRefusal(t, "controller getting a Secret of namespace "+elsewhere, err)

	agent := kubernetes.NewForConfigOrDie(cp.AgentConfig(t, "rbac-node")).CoreV1()
	_, err = agent.Secrets(harness.ControllerNamespace).Get(ctx, name, metav1.GetOptions{})
	wantRBACRefusal(t, "an agent getting a BMC Secret", err)
}
