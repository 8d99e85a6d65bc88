package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/test/harness"
	"joulie.io/joulie/test/schedplugin"
)

// withSchedPlugin is cfg with the scheduler-plugin prototype enabled in
// the default profile at every extension point it implements, weighted as
// the chart weights the extender (on the plugins' 0..100 scale).
func withSchedPlugin(cfg *schedulerconfigv1.KubeSchedulerConfiguration) *schedulerconfigv1.KubeSchedulerConfiguration {
	on := schedulerconfigv1.PluginSet{Enabled: []schedulerconfigv1.Plugin{{Name: schedplugin.Name}}}
	cfg.Profiles = []schedulerconfigv1.KubeSchedulerProfile{{
		SchedulerName: ptr.To(corev1.DefaultSchedulerName),
		Plugins: &schedulerconfigv1.Plugins{
			PreFilter: on, Filter: on, PreScore: on,
			Score: schedulerconfigv1.PluginSet{Enabled: []schedulerconfigv1.Plugin{{Name: schedplugin.Name, Weight: ptr.To(int32(scoring.ChartWeight))}}},
		},
	}}
	return cfg
}

// schedPluginRegistry registers the prototype with a scheduler.
func schedPluginRegistry() []app.Option {
	return []app.Option{app.WithPlugin(schedplugin.Name, schedplugin.New)}
}

// grantSchedulerJoulieReads lets kube-scheduler's user list and watch
// NodeTwins and NodeHardware, which the plugin prototype reads; once per
// control plane.
func grantSchedulerJoulieReads(t testing.TB, admin kubernetes.Interface) {
	t.Helper()
	const name = "joulie-test-scheduler-plugin"
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{joulie.GroupName}, Resources: []string{"nodetwins", "nodehardwares"}, Verbs: []string{"list", "watch"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: harness.SchedulerUser}},
	}
	ctx := t.Context()
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// The plugin prototype that the throughput benchmark measures decides as
// the extender does, inside the real kube-scheduler: a performance pod
// goes to the performance node and never to an eco twin or a node
// labelled draining; a standard pod may go to an eco node but not to the
// warm reserve; a rejected pod's condition names the plugin.
func TestSchedulerPluginPrototype(t *testing.T) {
	const group = "sched-plugin"
	admin := cp.AdminClient(t)
	joulieAdmin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	grantSchedulerJoulieReads(t, admin)
	nodes := map[string]map[string]string{
		group + "-perf":    nil,
		group + "-eco":     nil,
		group + "-drain":   {joulie.LabelDraining: "true"},
		group + "-reserve": {joulie.LabelWarmReserve: "true"},
	}
	for name, labels := range nodes {
		l := map[string]string{"joulie.test/group": group, "joulie.test/node": name}
		for k, v := range labels {
			l[k] = v
		}
		cp.CreateReadyNode(t, name, l, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32")})
	}
	createTwin(t, joulieAdmin, group+"-perf", twinStatus(joulie.ClassPerformance, 1000, 400, 10))
	createTwin(t, joulieAdmin, group+"-eco", twinStatus(joulie.ClassEco, 1000, 100, 10))
	createTwin(t, joulieAdmin, group+"-reserve", twinStatus(joulie.ClassPerformance, 1000, 100, 10))

	cp.StartScheduler(t, withSchedPlugin(&schedulerconfigv1.KubeSchedulerConfiguration{}), schedPluginRegistry()...)

	// onto picks a node for a pod, or the whole group.
	pod := func(name, class, onto string) *corev1.Pod {
		p := groupPod(group, name, class)
		if onto != "" {
			p.Spec.NodeSelector = map[string]string{"joulie.test/node": onto}
		}
		return cp.CreatePod(t, p)
	}
	for _, name := range []string{"perf-a", "perf-b", "perf-c"} {
		p := pod(name, "performance", "")
		if got := cp.WaitForPodBound(t, p.Namespace, p.Name, 60*time.Second); got != group+"-perf" && got != group+"-reserve" {
			t.Errorf("performance pod %s bound to %s, want the performance node or the warm reserve", name, got)
		}
	}
	if p := pod("std-on-eco", "", group+"-eco"); cp.WaitForPodBound(t, p.Namespace, p.Name, 60*time.Second) != group+"-eco" {
		t.Error("standard pod not bound to the eco node it asked for")
	}
	// A pod asking for a node Joulie turns it away from is left out of
	// the nodes the scheduler examines (PreFilter narrows them), so its
	// condition names the plugin rather than the rule.
	for _, tc := range []struct{ name, class, onto string }{
		{"perf-on-eco", "performance", group + "-eco"},
		{"perf-on-drain", "performance", group + "-drain"},
		{"std-on-reserve", "", group + "-reserve"},
	} {
		p := pod(tc.name, tc.class, tc.onto)
		waitUnschedulable(t, admin, p, "node(s) didn't satisfy plugin(s) ["+schedplugin.Name+"]")
	}
}

// waitUnschedulable waits until the scheduler marks pod unschedulable with
// a message that contains reason, and fails if it binds the pod.
func waitUnschedulable(t *testing.T, admin kubernetes.Interface, pod *corev1.Pod, reason string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := admin.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("pod %s bound to %s, want it rejected with %q", pod.Name, p.Spec.NodeName, reason)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				last = c.Message
				return strings.Contains(c.Message, reason), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s: not rejected with %q (last message %q): %v", pod.Name, reason, last, err)
	}
}
