package integration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
)

// boundPod creates a pod bound to node by spec.nodeName, as no scheduler
// and no taint stops; owner, when set, is the kind of its controller.
func boundPod(t *testing.T, kube kubernetes.Interface, name, node, owner string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "work"}}}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: owner, Name: name + "-owner",
			UID: types.UID("uid-" + name), Controller: ptr.To(true)}}
	}
	p, err := kube.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	return p
}

// The agent's own identity reads no pod at all; the identity it reads its
// node's pods with, the kubelet's, is held by the API server's Node
// authorizer to the pods bound to its node: a list or watch across the
// cluster, or of another node's pods, is refused. (The eco guard's and the
// per-GPU tests run the agent this way and still see their node's pods.)
func TestAgentReadsOnlyItsOwnNodesPods(t *testing.T) {
	const mine, other = "pods-own-node", "pods-other-node"
	admin := cp.AdminClient(t)
	cp.CreateReadyNode(t, mine, nil, nil)
	cp.CreateReadyNode(t, other, nil, nil)
	boundPod(t, admin, "pod-on-own-node", mine, "")
	boundPod(t, admin, "pod-on-other-node", other, "")
	ctx := t.Context()

	type read struct {
		name     string
		selector string // "" lists or watches every pod
		watch    bool
		allowed  bool
	}
	try := func(t *testing.T, cfg *rest.Config, reads []read) {
		t.Helper()
		kc := kubernetes.NewForConfigOrDie(cfg)
		for _, r := range reads {
			o := metav1.ListOptions{FieldSelector: r.selector}
			var err error
			var names []string
			if r.watch {
				var w interface{ Stop() }
				w, err = kc.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
				if err == nil {
					w.Stop()
				}
			} else {
				var list *corev1.PodList
				list, err = kc.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
				if err == nil {
					for _, p := range list.Items {
						names = append(names, p.Name)
					}
				}
			}
			switch {
			case r.allowed && err != nil:
				t.Errorf("%s: refused: %v", r.name, err)
			case !r.allowed && err == nil:
				t.Errorf("%s: allowed (listed %v), want refused", r.name, names)
			case !r.allowed && !apierrors.IsForbidden(err):
				t.Errorf("%s: %v, want Forbidden", r.name, err)
			case r.allowed && !r.watch && (len(names) != 1 || names[0] != "pod-on-own-node"):
				t.Errorf("%s: listed %v, want only pod-on-own-node", r.name, names)
			}
		}
	}
	t.Run("agent", func(t *testing.T) {
		try(t, cp.AgentConfig(t, mine), []read{
			{"list every pod", "", false, false},
			{"watch every pod", "", true, false},
			{"list its node's pods", "spec.nodeName=" + mine, false, false},
			{"watch its node's pods", "spec.nodeName=" + mine, true, false},
			{"list another node's pods", "spec.nodeName=" + other, false, false},
		})
	})
	t.Run("kubelet", func(t *testing.T) {
		try(t, cp.KubeletConfig(t, mine), []read{
			{"list every pod", "", false, false},
			{"watch every pod", "", true, false},
			{"list another node's pods", "spec.nodeName=" + other, false, false},
			{"watch another node's pods", "spec.nodeName=" + other, true, false},
			{"list its node's pods", "spec.nodeName=" + mine, false, true},
			{"watch its node's pods", "spec.nodeName=" + mine, true, true},
		})
	})
}

// The agent's last word before a park switches its host off, through the
// real joulie-agentd, its node's kubelet identity against the real API
// server, a fake kubelet on the real pod-resources API and a fake logind on
// a private D-Bus bus: a pod bound by spec.nodeName (which no taint stops)
// or one the kubelet still runs keeps the host on, reported on the
// profile's status; with only a DaemonSet's pod left, the next park powers
// off.
func TestAgentDoesNotPowerOffAHostWithWorkOnIt(t *testing.T) {
	const node = "agent-lastcheck-node"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	kube := cp.AdminClient(t)
	bus := startDBus(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", bus)
	var mu sync.Mutex
	offs := 0
	serveFakeLogind(t, bus, func() { mu.Lock(); offs++; mu.Unlock() })
	powerOffs := func() int { mu.Lock(); defer mu.Unlock(); return offs }

	cp.CreateReadyNode(t, node, map[string]string{joulie.LabelManaged: "true", joulie.LabelParkable: "true"}, nil)
	if _, err := admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteNodeObjects(t, admin, node)
	boundPod(t, kube, "node-exporter", node, "DaemonSet")
	socket, podsFile := startFakeKubelet(t, map[string][]string{"default/node-exporter": nil})
	host := minimalHost(t)
	writeBootID(t, host, "boot-1")
	runAgent(t, node, cp.WriteKubeconfig(t, cp.AgentConfig(t, node)), "--host-root", host,
		"--pod-resources-socket", socket, "--parking-allow-power-off")

	an := agentNode{t: t, ctx: ctx, admin: admin, name: node, powerOffs: powerOffs}
	status, parked, poll, park := an.status, an.parked, an.poll, an.park
	refused := func(what, says string) {
		t.Helper()
		poll(what, func() bool { return parked().Reason == "PowerOffRefused" && strings.Contains(parked().Message, says) })
		if st := status(); st.PowerState != joulie.PowerAwake {
			t.Fatalf("%s: status powerState %q, want awake", what, st.PowerState)
		}
		time.Sleep(2 * time.Second) // two ticks: the refusal is not retried
		if n := powerOffs(); n != 0 {
			t.Fatalf("%s: logind was asked to power off %d times", what, n)
		}
	}
	poll("the agent to report awake", func() bool { return status().PowerState == joulie.PowerAwake })

	// A pod bound by name a moment before the park; the kubelet has not
	// admitted it yet.
	boundPod(t, kube, "pinned", node, "ReplicaSet")
	base := time.Now().Truncate(time.Second)
	park(base)
	refused("a pod bound by spec.nodeName", "pod default/pinned is bound to the node")

	// It is deleted from the API server while the kubelet still stops it.
	kubeletPods(t, podsFile, map[string][]string{"default/node-exporter": nil, "default/pinned": nil})
	if err := kube.CoreV1().Pods("default").Delete(ctx, "pinned", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	park(base.Add(time.Minute))
	refused("a pod the kubelet still runs", "pod default/pinned is admitted by the kubelet but not bound")

	// Only the DaemonSet's pod is left: the next park powers off.
	kubeletPods(t, podsFile, map[string][]string{"default/node-exporter": nil})
	park(base.Add(2 * time.Minute))
	poll("logind's PowerOff", func() bool { return powerOffs() == 1 })
	poll("the status saying logind accepted", func() bool { return parked().Reason == "PowerOffRequested" })
}
