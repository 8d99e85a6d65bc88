package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Parking that can never power off a host with work on it or strand a
// pod (issue 36), against the real API server and joulie-controller, with
// the hosts simulated by fakeHosts.

// cordonState is "joulie-cordoned", "cordoned" (by someone else) or
// "schedulable" for node.
func (h *fakeHosts) cordonState(node string) string {
	n, err := h.kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		return "-"
	}
	_, marked := n.Annotations[joulie.AnnotationCordonedForPark]
	switch {
	case n.Spec.Unschedulable && marked:
		return "joulie-cordoned"
	case n.Spec.Unschedulable:
		return "cordoned"
	case marked:
		return "schedulable-but-marked"
	}
	return "schedulable"
}

func (h *fakeHosts) expectCordon(what, node, want string, timeout time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := h.cordonState(node)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: after %s %s is %s, want %s (park state %s)", what, timeout, node, got, want, h.parkState(node))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stays checks that node's parkState keeps matching want for d.
func (h *fakeHosts) stays(what, node, want string, d time.Duration) {
	h.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		h.expect(what, node, want, 0)
		time.Sleep(100 * time.Millisecond)
	}
}

type eventSeen struct {
	Type, Reason, Message string
	Count                 int32
}

// eventsOn lists the Events on the object named name in namespace default.
func eventsOn(t *testing.T, name string) []eventSeen {
	t.Helper()
	events, err := cp.AdminClient(t).CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var out []eventSeen
	for _, e := range events.Items {
		out = append(out, eventSeen{e.Type, e.Reason, e.Message, e.Count})
	}
	return out
}

func boundTo(node string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeName = node }
}

// The controller cordons a node as well as tainting it when it records
// it parked, marked as its own cordon, and lifts it when the node is
// awake again; an admin's cordon on another node is left alone.
func TestParkingCordonsTheNodeItParks(t *testing.T) {
	const selector = "joulie.io/park-cordon"
	hosts := parkingNodes(t, selector, map[string]int{"park-cordon-fixed": 4, "park-cordon-p": 16, "park-cordon-admin": 16}, "park-cordon-fixed")
	kube := cp.AdminClient(t)
	patch := []byte(`{"spec":{"unschedulable":true}}`)
	if _, err := kube.CoreV1().Nodes().Patch(context.Background(), "park-cordon-admin", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	cp.StartScheduler(t, nil)
	runController(t, "joulie-controller", selector, parkingEnv()...)
	hosts.expect("the empty node is parked", "park-cordon-p", "parked/tainted/unlisted", 30*time.Second)
	hosts.expectCordon("a parked node is cordoned by Joulie", "park-cordon-p", "joulie-cordoned", 0)

	pod := cp.CreatePod(t, cpuPod("park-cordon-job", selector, 8))
	hosts.expect("the parked node is woken for the pod", "park-cordon-p", "awake#1/untainted/unlisted", 60*time.Second)
	hosts.expectCordon("the woken node is uncordoned", "park-cordon-p", "schedulable", 5*time.Second)
	if got := cp.WaitForPodBound(t, pod.Namespace, pod.Name, 60*time.Second); got != "park-cordon-p" {
		t.Fatalf("the scheduler bound the pod to %s, want the woken park-cordon-p", got)
	}
	hosts.expectCordon("the admin's cordon stays", "park-cordon-admin", "cordoned", 0)
	hosts.expect("the admin-cordoned node is never parked", "park-cordon-admin", "awake/untainted/unlisted", 0)
}

// A pod bound to a parked node by spec.nodeName, which no scheduler
// places and so never waits as unschedulable, wakes that node.
func TestParkingWakesTheNodeAPodIsBoundTo(t *testing.T) {
	const selector = "joulie.io/park-bound"
	hosts := parkingNodes(t, selector, map[string]int{"park-bound-fixed": 4, "park-bound-p": 16}, "park-bound-fixed")
	hosts.startParked("park-bound-p")
	runController(t, "joulie-controller", selector, parkingEnv()...)
	cp.CreatePod(t, cpuPod("park-bound-job", selector, 2, boundTo("park-bound-p")))
	hosts.expect("the node the pod is bound to is woken", "park-bound-p", "awake#1/untainted/unlisted", 60*time.Second)
	var waking []string
	for _, e := range eventsOn(t, "park-bound-p") {
		if e.Reason == "Waking" {
			waking = append(waking, e.Message)
		}
	}
	if len(waking) == 0 || !strings.Contains(waking[0], "default/park-bound-job") {
		t.Errorf("Waking events on park-bound-p %q, want one naming the pod default/park-bound-job", waking)
	}
}

// A pod bound to a parked node that cannot be woken gets one Warning
// Event saying why, not one per pass.
func TestParkingWarnsAPodBoundToANodeThatFailedToWake(t *testing.T) {
	const selector = "joulie.io/park-stuck"
	hosts := parkingNodes(t, selector, map[string]int{"park-stuck-fixed": 4, "park-stuck-p": 16}, "park-stuck-fixed")
	hosts.startParked("park-stuck-p")
	hosts.keepDown("park-stuck-p", true)
	runController(t, "joulie-controller", selector, parkingEnv("PARKING_RESUME_TIMEOUT=2s", "PARKING_MAX_WAKE_ATTEMPTS=1")...)
	cp.CreatePod(t, cpuPod("park-stuck-job", selector, 2, boundTo("park-stuck-p")))
	hosts.expect("the node fails to wake", "park-stuck-p", "wake-failed#1/tainted/unlisted", 60*time.Second)
	warnings := func() []eventSeen {
		var out []eventSeen
		for _, e := range eventsOn(t, "park-stuck-job") {
			if e.Type == corev1.EventTypeWarning {
				out = append(out, e)
			}
		}
		return out
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(warnings()) == 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	// Many passes later, still the one.
	time.Sleep(4 * time.Second)
	got := warnings()
	if len(got) != 1 || got[0].Count != 1 || !strings.Contains(got[0].Message, "park-stuck-p") || !strings.Contains(got[0].Message, "wake-failed") {
		t.Fatalf("Warning Events on the pod %+v, want exactly one, once, naming the node park-stuck-p and its state wake-failed", got)
	}
}

// A pending pod whose volume is a local PV wakes the parked node the
// volume lives on, not the parked node with the most room.
func TestParkingWakesTheNodeALocalVolumeLivesOn(t *testing.T) {
	const selector = "joulie.io/park-local"
	hosts := parkingNodes(t, selector, map[string]int{"park-local-fixed": 2, "park-local-a": 32, "park-local-b": 16}, "park-local-fixed")
	hosts.startParked("park-local-a")
	hosts.startParked("park-local-b")
	kube := cp.AdminClient(t)
	ctx := context.Background()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "park-local-pv"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "park-local",
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/ssd1"}},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "park-local-claim"},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"park-local-b"}}}}}}},
		}}
	if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sc := "park-local"
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "park-local-claim", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &sc,
			VolumeName: "park-local-pv", Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	created, err := kube.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = corev1.ClaimBound
	if _, err := kube.CoreV1().PersistentVolumeClaims("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// No controller-manager takes the protection finalizers off.
		unfinalize := []byte(`{"metadata":{"finalizers":null}}`)
		_ = kube.CoreV1().PersistentVolumeClaims("default").Delete(ctx, pvc.Name, metav1.DeleteOptions{})
		_, _ = kube.CoreV1().PersistentVolumeClaims("default").Patch(ctx, pvc.Name, types.MergePatchType, unfinalize, metav1.PatchOptions{})
		_ = kube.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
		_, err := kube.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, unfinalize, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("remove the finalizers of PV %s: %v", pv.Name, err)
		}
	})
	cp.StartScheduler(t, nil)
	runController(t, "joulie-controller", selector, parkingEnv()...)
	cp.CreatePod(t, cpuPod("park-local-job", selector, 8, func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "park-local-claim"}}}}
	}))
	hosts.expect("the node the local volume lives on is woken", "park-local-b", "awake#1/untainted/unlisted", 60*time.Second)
	hosts.expect("the roomier node without the volume stays parked", "park-local-a", "parked/tainted/unlisted", 0)
	if got := hosts.states("park-local-a"); !slices.Equal(got, []string{"parked"}) {
		t.Errorf("park-local-a went through %v, want only parked", got)
	}
}

// A woken node counts as back only once its Ready heartbeat and its node
// Lease are newer than the wake: a Ready condition left over from before
// the park, with the agent's status, does not.
func TestParkingConfirmsAWakeOnlyByAFreshHeartbeatAndLease(t *testing.T) {
	const selector = "joulie.io/park-lease"
	hosts := parkingNodes(t, selector, map[string]int{"park-lease-fixed": 4, "park-lease-p": 16}, "park-lease-fixed")
	hosts.startParked("park-lease-p")
	hosts.comeBackStale("park-lease-p", true)
	cp.StartScheduler(t, nil)
	runController(t, "joulie-controller", selector, parkingEnv()...)
	cp.CreatePod(t, cpuPod("park-lease-job", selector, 8))
	hosts.expect("the node is woken", "park-lease-p", "waking#1/tainted/listed", 30*time.Second)
	hosts.stays("Ready without a fresh heartbeat or Lease is not back", "park-lease-p", "waking#1/tainted/listed", 5*time.Second)
	hosts.renew(context.Background(), "park-lease-p", true)
	hosts.expect("a fresh heartbeat and Lease confirm the wake", "park-lease-p", "awake#1/untainted/unlisted", 10*time.Second)
}

// A parked node whose host stayed on (its agent answered the park awake:
// parking.allowPowerOff false) is recorded awake, untainted and
// uncordoned without a wake, once its agent has answered the parked spec;
// the status it reported before does not count. It parks again later by
// the normal rules, the settle time counted anew.
func TestParkingRecordsAHostThatStayedOnAwake(t *testing.T) {
	const selector = "joulie.io/park-on"
	hosts := parkingNodes(t, selector, map[string]int{"park-on-fixed": 4, "park-on-p": 16}, "park-on-fixed")
	hosts.refuseParks("park-on-p", 3*time.Second)
	runController(t, "joulie-controller", selector, parkingEnv("PARKING_SETTLE_TIME=8s")...)
	hosts.expect("the empty node is parked", "park-on-p", "parked/tainted/unlisted", 40*time.Second)
	hosts.stays("the agent's status from before the park does not count", "park-on-p", "parked/tainted/unlisted", 2*time.Second)
	hosts.expect("the host that stayed on is recorded awake", "park-on-p", "awake/untainted/unlisted", 5*time.Second)
	hosts.expectCordon("and uncordoned", "park-on-p", "schedulable", 2*time.Second)
	hosts.stays("the settle time counts anew", "park-on-p", "awake/untainted/unlisted", 4*time.Second)
	if got := hosts.states("park-on-p"); !slices.Equal(got, []string{"parking", "parked", "awake"}) {
		t.Errorf("park-on-p went through %v, want parking, parked, awake, never waking", got)
	}
	if by := hosts.wokenBy("park-on-p"); len(by) != 0 {
		t.Errorf("park-on-p was woken through %v; a host that is on needs no wake", by)
	}
	var awake []string
	for _, e := range eventsOn(t, "park-on-p") {
		if e.Reason == "Awake" {
			awake = append(awake, e.Message)
		}
	}
	if len(awake) != 1 || !strings.Contains(awake[0], "PowerOffNotAllowed") {
		t.Errorf("Awake events on park-on-p %q, want one naming the agent's reason PowerOffNotAllowed", awake)
	}
	hosts.expect("it parks again by the normal rules", "park-on-p", "parking/tainted/unlisted", 30*time.Second)
}

// The same with the real joulie-agentd on each host, the real controller
// parking them: one host whose owner gave no consent to power-offs
// (parking.allowPowerOff false, the packaged default), one whose kubelet
// still runs a pod that the API server no longer lists (the agent's last
// check refuses). Neither agent asks logind to power off; each answers
// its park awake, and the controller records both awake, untainted and
// uncordoned, without a wake, naming the agent's reason.
func TestParkingRecordsARealAgentsRefusalAwake(t *testing.T) {
	const selector = "joulie.io/park-real"
	const noConsent, busy = "park-real-noconsent", "park-real-busy"
	hosts := parkingNodes(t, selector, map[string]int{"park-real-fixed": 4, noConsent: 16, busy: 16}, "park-real-fixed")
	bus := startDBus(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", bus)
	var mu sync.Mutex
	offs := 0
	serveFakeLogind(t, bus, func() { mu.Lock(); offs++; mu.Unlock() })

	idle, _ := startFakeKubelet(t, nil)
	running, _ := startFakeKubelet(t, map[string][]string{"default/leftover": nil})
	for node, args := range map[string][]string{
		noConsent: {"--pod-resources-socket", idle},
		busy:      {"--pod-resources-socket", running, "--parking-allow-power-off"},
	} {
		hosts.realAgent(node)
		runAgent(t, node, cp.WriteKubeconfig(t, cp.AgentConfig(t, node)),
			append([]string{"--host-root", hostWithNIC(t, hosts.macs[node])}, args...)...)
	}
	runController(t, "joulie-controller", selector, parkingEnv("PARKING_SETTLE_TIME=4s")...)

	for node, reason := range map[string]string{noConsent: "PowerOffNotAllowed", busy: "PowerOffRefused"} {
		deadline := time.Now().Add(60 * time.Second)
		for !slices.ContainsFunc(eventsOn(t, node), func(e eventSeen) bool {
			return e.Reason == "Awake" && strings.Contains(e.Message, reason)
		}) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no Awake Event naming %s within 60 s; states %v, events %v", node, reason, hosts.states(node), eventsOn(t, node))
			}
			time.Sleep(200 * time.Millisecond)
		}
		if got := hosts.states(node); !slices.Contains(got, "parked") || slices.Contains(got, "waking") {
			t.Errorf("%s went through %v: want parked, then awake without waking", node, got)
		}
		// Recorded awake within one sync of the answer; a later park by
		// the normal rules may follow, so look at once.
		hosts.expect(node+" recorded awake", node, "(awake/untainted/unlisted|parking/tainted/unlisted)", 2*time.Second)
	}
	mu.Lock()
	defer mu.Unlock()
	if offs != 0 {
		t.Errorf("logind was asked to power off %d times; neither host may be switched off", offs)
	}
}

// hostWithNIC is minimalHost with one Ethernet port of MAC mac armed for
// Wake-on-LAN, which the agent publishes in NodeHardware: the controller
// parks only a node that something can wake.
func hostWithNIC(t *testing.T, mac string) string {
	t.Helper()
	root := minimalHost(t)
	dev := filepath.Join(root, "sys/class/net/eno1")
	for path, content := range map[string]string{"type": "1\n", "address": mac + "\n", "device/power/wakeup": "enabled\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dev, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dev, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
