package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"joulie.io/joulie/test/harness"
)

// The controller reads a node's BMC Secret by name from the BMC namespace,
// as its BMC client does: the chart's Role allows exactly that. It cannot
// list or watch them, change them, or read a Secret of another namespace,
// its own (the release namespace) included; an agent or a kubelet cannot
// read them at all.
func TestControllerGetsBMCSecretsOfTheBMCNamespaceOnly(t *testing.T) {
	const name = "joulie-bmc-rbac-node"
	const elsewhere = "default"
	admin := cp.AdminClient(t).CoreV1()
	ctx := t.Context()
	for _, ns := range []string{chartBMCNamespace, harness.ControllerNamespace, elsewhere} {
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
	own := ctrl.Secrets(chartBMCNamespace)
	got, err := own.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("controller getting a BMC Secret of namespace %s: %v", chartBMCNamespace, err)
	}
	if string(got.Data["username"]) != "joulie-wake" {
		t.Errorf("controller read username %q", got.Data["username"])
	}
	_, err = own.List(ctx, metav1.ListOptions{})
	wantRBACRefusal(t, "controller listing the BMC Secrets", err)
	_, err = own.Watch(ctx, metav1.ListOptions{})
	wantRBACRefusal(t, "controller watching the BMC Secrets", err)
	got.Data["password"] = []byte("changed")
	_, err = own.Update(ctx, got, metav1.UpdateOptions{})
	wantRBACRefusal(t, "controller changing a BMC Secret", err)
	for _, ns := range []string{harness.ControllerNamespace, elsewhere} {
		_, err = ctrl.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		wantRBACRefusal(t, "controller getting a Secret of namespace "+ns, err)
	}

	agent := kubernetes.NewForConfigOrDie(cp.AgentConfig(t, "rbac-node")).CoreV1()
	_, err = agent.Secrets(chartBMCNamespace).Get(ctx, name, metav1.GetOptions{})
	wantRBACRefusal(t, "an agent getting a BMC Secret", err)
	// The Node authorizer lets a kubelet read only Secrets its pods use.
	kubelet := kubernetes.NewForConfigOrDie(cp.UserConfig(t, "system:node:rbac-node", "system:nodes")).CoreV1()
	_, err = kubelet.Secrets(chartBMCNamespace).Get(ctx, name, metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("a kubelet getting a BMC Secret: %v, want Forbidden", err)
	}
}
