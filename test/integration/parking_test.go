package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
)

// Parking against the real API server and kube-scheduler, with
// joulie-controller as a process. The hosts are simulated by
// fakeHosts, which plays their agents' part of the contract: on
// spec.powerState=parked it reports parked and takes the node NotReady
// (switched off); a node whose MAC an awake agent is asked to send
// Wake-on-LAN to comes back Ready with its agent reporting awake, its
// Ready heartbeat and its node Lease renewed as a booting kubelet does,
// unless the test keeps it down. A host the test makes refuse its parks
// stays on instead: its agent answers the park awake, and its kubelet
// keeps renewing.

// parkingEnv is the controller's environment for the parking tests: the
// times shrunk from minutes to seconds, no reserve unless a test asks.
func parkingEnv(extra ...string) []string {
	return append([]string{"PARKING_ENABLED=true", "PARKING_SYNC_INTERVAL=500ms", "PARKING_SETTLE_TIME=1s",
		"PARKING_GRACE=4s", "PARKING_RESUME_TIMEOUT=20s", "PARKING_RESERVE_FLOOR=0", "POLICY_TYPE=static_partition",
		"LEASE_DURATION=4s", "RENEW_DEADLINE=3s", "RETRY_PERIOD=500ms"}, extra...)
}

// fakeHosts simulates the hosts of a test's nodes.
type fakeHosts struct {
	t      *testing.T
	kube   kubernetes.Interface
	joulie versioned.Interface
	nodes  []string
	macs   map[string]string // node → its MAC

	mu      sync.Mutex
	down    map[string]bool          // nodes that do not come back when woken
	stale   map[string]bool          // nodes that come back Ready without a fresh heartbeat or Lease
	refuse  map[string]time.Duration // nodes that stay on when parked, answering after the delay
	refused map[string]time.Time     // refusing node → when its park was first seen
	renewed map[string]time.Time     // refusing or real-agent node → its kubelet's last renewal
	real    map[string]bool          // nodes whose agent is a real joulie-agentd
	parked  map[string]bool          // nodes switched off
	woken   map[string][]string      // node → the senders that were asked to wake it
	history map[string][]string      // node → the spec power states seen, in order
}

// parkingNodes creates the nodes under selector, each parkable unless
// named in fixed, with allocatable cpus, a NodeHardware listing one
// Wake-on-LAN MAC, and a profile whose agent reports awake; it starts
// simulating their hosts.
func parkingNodes(t *testing.T, selector string, cpus map[string]int, fixed ...string) *fakeHosts {
	t.Helper()
	ctx := context.Background()
	jc, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHosts{t: t, kube: cp.AdminClient(t), joulie: jc, macs: map[string]string{}, down: map[string]bool{},
		parked: map[string]bool{}, woken: map[string][]string{}, history: map[string][]string{},
		stale: map[string]bool{}, refuse: map[string]time.Duration{}, refused: map[string]time.Time{}, renewed: map[string]time.Time{},
		real: map[string]bool{}}
	i := 0
	for _, name := range sortedNames(cpus) {
		i++
		labels := map[string]string{selector: "true", joulie.LabelHWCPUModel: "amd-epyc-9654", "kubernetes.io/hostname": name}
		if !slices.Contains(fixed, name) {
			labels[joulie.LabelParkable] = "true"
		}
		cp.CreateReadyNode(t, name, labels, corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(cpus[name]), resource.DecimalSI)})
		deleteNodeObjects(t, jc, name)
		node := name
		t.Cleanup(func() { _ = jc.JoulieV1alpha1().NodeTwins().Delete(context.Background(), node, metav1.DeleteOptions{}) })
		h.macs[name] = fmt.Sprintf("02:00:00:00:%02x:%02x", len(selector)%256, i)
		hw, err := jc.JoulieV1alpha1().NodeHardwares().Create(ctx, &joulie.NodeHardware{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hw.Status = joulie.NodeHardwareStatus{
			CPU:     joulie.CPUHardware{Model: "AMD EPYC 9654 96-Core Processor", CatalogModel: "amd-epyc-9654", Sockets: 2},
			Network: []joulie.NetworkInterface{{Name: "eno1", MAC: h.macs[name], WakeOnLAN: true}},
		}
		if _, err := jc.JoulieV1alpha1().NodeHardwares().UpdateStatus(ctx, hw, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		npp, err := jc.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		npp.Status.PowerState = joulie.PowerAwake
		if _, err := jc.JoulieV1alpha1().NodePowerProfiles().UpdateStatus(ctx, npp, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		h.nodes = append(h.nodes, name)
		t.Cleanup(func() {
			_ = h.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(context.Background(), node, metav1.DeleteOptions{})
		})
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for runCtx.Err() == nil {
			h.step(runCtx)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

func sortedNames(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// startParked puts node in the state a finished park leaves: profile
// parked, tainted, switched off.
func (h *fakeHosts) startParked(node string) {
	h.t.Helper()
	h.record(node, joulie.PowerParked, time.Now().Add(-time.Hour), 0)
	h.waitOff(node)
}

// record writes the controller's record of node as a pass would have
// left it: the spec power state, since when, the wake attempts, and the
// parked taint.
func (h *fakeHosts) record(node string, state joulie.PowerState, since time.Time, wakeAttempts int32) {
	h.t.Helper()
	ctx := context.Background()
	// The hosts' loop writes the same objects: retry on conflicts.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		npp, err := h.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		npp.Spec.PowerState, npp.Spec.PowerStateSince = state, &metav1.Time{Time: since}
		if wakeAttempts > 0 {
			npp.Spec.WakeAttempts = wakeAttempts
		}
		_, err = h.joulie.JoulieV1alpha1().NodePowerProfiles().Update(ctx, npp, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := h.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: joulie.TaintParked, Effect: corev1.TaintEffectNoSchedule})
		_, err = h.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *fakeHosts) waitOff(node string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		off := h.parked[node]
		h.mu.Unlock()
		if off {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the host of %s did not switch off within 10s of being parked", node)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *fakeHosts) keepDown(node string, down bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down[node] = down
}

// comeBackStale makes node, when woken, report Ready and its agent awake
// without renewing its heartbeat or Lease: what the API shows of a host
// that is still off while its last status lingers.
func (h *fakeHosts) comeBackStale(node string, stale bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stale[node] = stale
}

// refuseParks makes node's host stay on when parked: its kubelet keeps
// renewing, and after delay its agent answers the parked spec awake with
// the Parked condition's reason PowerOffNotAllowed, as an agent with
// parking.allowPowerOff false does.
func (h *fakeHosts) refuseParks(node string, delay time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refuse[node] = delay
}

// realAgent leaves node's agent part to a real joulie-agentd the test
// runs: the hosts only renew its kubelet's Lease and Ready heartbeat
// every second, as on a host that is on, and never write its profile's
// status. The test runs no wake for it: its host never switches off.
func (h *fakeHosts) realAgent(node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.real[node] = true
}

// step is one look at the profiles: what a parked node's agent and a
// waking node's BMC or neighbour would do.
func (h *fakeHosts) step(ctx context.Context) {
	wakeFrom := map[string][]string{} // MAC → senders listing it
	states := map[string]joulie.PowerState{}
	for _, name := range h.nodes {
		npp, err := h.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		states[name] = npp.Spec.PowerState
		for _, m := range npp.Spec.WakeOnLAN {
			wakeFrom[m] = append(wakeFrom[m], name)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, name := range h.nodes {
		s := states[name]
		if hist := h.history[name]; s != "" && (len(hist) == 0 || hist[len(hist)-1] != string(s)) {
			h.history[name] = append(hist, string(s))
		}
		if delay, ok := h.refuse[name]; ok {
			h.stayOn(ctx, name, s, delay)
			continue
		}
		if h.real[name] {
			h.renewEverySecond(ctx, name)
			continue
		}
		switch {
		case s == joulie.PowerParked && !h.parked[name]:
			h.parked[name] = true
			h.switchOff(ctx, name)
		case h.parked[name] && len(wakeFrom[h.macs[name]]) > 0:
			if len(h.woken[name]) == 0 || !slices.Equal(h.woken[name][len(h.woken[name])-1:], wakeFrom[h.macs[name]][:1]) {
				h.woken[name] = append(h.woken[name], wakeFrom[h.macs[name]][0])
			}
			if !h.down[name] {
				h.parked[name] = false
				h.switchOn(ctx, name)
			}
		}
	}
}

// stayOn is a refusing host's step: its kubelet renews every second, and
// once its spec has said parked for delay its agent answers awake for the
// generation it saw. h.mu is held.
func (h *fakeHosts) stayOn(ctx context.Context, node string, s joulie.PowerState, delay time.Duration) {
	h.renewEverySecond(ctx, node)
	if s != joulie.PowerParked {
		delete(h.refused, node)
		return
	}
	first, seen := h.refused[node]
	if !seen {
		h.refused[node] = time.Now()
		return
	}
	if time.Since(first) < delay || first.IsZero() {
		return
	}
	h.refused[node] = time.Time{} // answered
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		npp, err := h.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		npp.Status.PowerState, npp.Status.ObservedGeneration = joulie.PowerAwake, npp.Generation
		npp.Status.Conditions = []metav1.Condition{{Type: "Parked", Status: metav1.ConditionFalse, ObservedGeneration: npp.Generation,
			Reason: "PowerOffNotAllowed", Message: "parking.allowPowerOff is false on this host", LastTransitionTime: metav1.Now()}}
		_, err = h.joulie.JoulieV1alpha1().NodePowerProfiles().UpdateStatus(ctx, npp, metav1.UpdateOptions{})
		return err
	})
	if err != nil && ctx.Err() == nil {
		h.t.Errorf("answer %s's park awake: %v", node, err)
	}
}

// renewEverySecond is the kubelet of a host that has stayed on: it
// renews its Lease, but posts no Ready heartbeat, as a kubelet posts one
// only on a change of its status or every few minutes. h.mu is held.
func (h *fakeHosts) renewEverySecond(ctx context.Context, node string) {
	if time.Since(h.renewed[node]) >= time.Second {
		h.renewed[node] = time.Now()
		h.renew(ctx, node, false)
	}
}

// renew is node's kubelet renewing its Lease in kube-node-lease and, with
// heartbeat, posting a Ready heartbeat (a kubelet posts one on every change
// of its status, so on boot; otherwise every few minutes only).
func (h *fakeHosts) renew(ctx context.Context, node string, heartbeat bool) {
	leases := h.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now}}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		l.Spec.RenewTime = &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil && ctx.Err() == nil {
		h.t.Errorf("renew the Lease of %s: %v", node, err)
	}
	if heartbeat {
		h.setReady(ctx, node, corev1.ConditionTrue, true)
	}
}

// setReady sets node's Ready condition, with a fresh heartbeat or keeping
// the last one.
func (h *fakeHosts) setReady(ctx context.Context, node string, ready corev1.ConditionStatus, heartbeat bool) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := h.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range n.Status.Conditions {
			c := &n.Status.Conditions[i]
			if c.Type != corev1.NodeReady {
				continue
			}
			if c.Status != ready {
				c.Status, c.LastTransitionTime = ready, metav1.Now()
			}
			if heartbeat {
				c.LastHeartbeatTime = metav1.Now()
			}
		}
		_, err = h.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil && ctx.Err() == nil {
		h.t.Errorf("set node %s Ready=%s: %v", node, ready, err)
	}
}

// setHost is a host switching off or on as its node's objects show it.
// fresh is whether its kubelet renewed: a booted host's does.
func (h *fakeHosts) setHost(ctx context.Context, node string, ready corev1.ConditionStatus, agent joulie.PowerState, fresh bool) {
	if fresh {
		h.renew(ctx, node, false)
	}
	h.setReady(ctx, node, ready, fresh)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		npp, err := h.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		npp.Status.PowerState = agent
		_, err = h.joulie.JoulieV1alpha1().NodePowerProfiles().UpdateStatus(ctx, npp, metav1.UpdateOptions{})
		return err
	})
	if err != nil && ctx.Err() == nil {
		h.t.Errorf("report %s's agent %s: %v", node, agent, err)
	}
}

func (h *fakeHosts) switchOff(ctx context.Context, node string) {
	h.setHost(ctx, node, corev1.ConditionUnknown, joulie.PowerParked, false)
}

func (h *fakeHosts) switchOn(ctx context.Context, node string) {
	h.setHost(ctx, node, corev1.ConditionTrue, joulie.PowerAwake, !h.stale[node])
}

// states is the spec power states node went through, as seen.
func (h *fakeHosts) states(node string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.history[node])
}

// statesUntil is states once the last one seen is last, or after timeout:
// the hosts look at the profiles every 100 ms, behind the test's own
// reads.
func (h *fakeHosts) statesUntil(node, last string, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		got := h.states(node)
		if (len(got) > 0 && got[len(got)-1] == last) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *fakeHosts) wokenBy(node string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.woken[node])
}

// parkState is "state/tainted|untainted/wakeOnLAN listed anywhere" for node.
func (h *fakeHosts) parkState(node string) string {
	ctx := context.Background()
	state := "-"
	if npp, err := h.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, node, metav1.GetOptions{}); err == nil {
		state = string(npp.Spec.PowerState)
		if state == "" {
			state = "awake"
		}
		if npp.Spec.WakeAttempts > 0 {
			state += fmt.Sprintf("#%d", npp.Spec.WakeAttempts)
		}
	}
	taint := "untainted"
	if n, err := h.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err == nil {
		for _, t := range n.Spec.Taints {
			if t.Key == joulie.TaintParked {
				taint = "tainted"
			}
		}
	}
	listed := "unlisted"
	for _, other := range h.nodes {
		if npp, err := h.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, other, metav1.GetOptions{}); err == nil &&
			slices.Contains(npp.Spec.WakeOnLAN, h.macs[node]) {
			listed = "listed"
		}
	}
	return state + "/" + taint + "/" + listed
}

// expect waits until node's parkState matches the regular expression want.
func (h *fakeHosts) expect(what, node, want string, timeout time.Duration) {
	h.t.Helper()
	re := regexp.MustCompile("^" + want + "$")
	deadline := time.Now().Add(timeout)
	for {
		got := h.parkState(node)
		if re.MatchString(got) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: after %s %s is %s, want %s (states seen %v)", what, timeout, node, got, want, h.states(node))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// nodeEvents lists the reasons of the Events on node.
func nodeEvents(t *testing.T, node string) []string {
	t.Helper()
	events, err := cp.AdminClient(t).CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + node})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events.Items {
		out = append(out, e.Reason)
	}
	return out
}

func cpuPod(name, selector string, cpus int, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{selector: "true"},
			Containers: []corev1.Container{{Name: "main", Image: "work", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(cpus), resource.DecimalSI)}}}}}}
	for _, m := range mods {
		m(p)
	}
	return p
}

// A pending pod that fits no awake node wakes the parked node that fits
// it, through Wake-on-LAN sent by the awake node's agent; once the node is
// Ready with its agent up, the taint goes, the MAC is no longer listed,
// and the real scheduler places the pod there.
func TestParkingWakesAParkedNodeForAPendingPod(t *testing.T) {
	const selector = "joulie.io/park-wake"
	hosts := parkingNodes(t, selector, map[string]int{"park-wake-small": 4, "park-wake-big": 16}, "park-wake-small")
	hosts.startParked("park-wake-big")
	cp.StartScheduler(t, nil)
	runController(t, "joulie-controller", selector, parkingEnv()...)
	// Nothing to do while nothing waits.
	time.Sleep(3 * time.Second)
	hosts.expect("a parked node stays parked while nothing waits", "park-wake-big", "parked/tainted/unlisted", time.Second)

	pod := cp.CreatePod(t, cpuPod("park-wake-job", selector, 8))
	hosts.expect("the parked node that fits the pod is woken and back", "park-wake-big", "awake#1/untainted/unlisted", 60*time.Second)
	if got := cp.WaitForPodBound(t, pod.Namespace, pod.Name, 60*time.Second); got != "park-wake-big" {
		t.Fatalf("the scheduler bound the pod to %s, want the woken park-wake-big", got)
	}
	if by := hosts.wokenBy("park-wake-big"); !slices.Equal(by, []string{"park-wake-small"}) {
		t.Errorf("park-wake-big was woken through %v, want once through the awake park-wake-small's agent", by)
	}
	if got := hosts.statesUntil("park-wake-big", "awake", 2*time.Second); !slices.Equal(got, []string{"parked", "waking", "awake"}) {
		t.Errorf("park-wake-big went through %v, want parked, waking, awake", got)
	}
	ev := nodeEvents(t, "park-wake-big")
	if !slices.Contains(ev, "Waking") || !slices.Contains(ev, "Awake") {
		t.Errorf("events on park-wake-big %v, want Waking and Awake", ev)
	}
}

// The taint-then-empty race: a pod the real scheduler binds to the node
// between the taint and the switch-off (it tolerates the taint, as a
// scheduler that had not seen the taint yet would have ignored it) aborts
// the park: the node goes back to awake, untainted, and is never recorded
// parked.
func TestParkingAbortsWhenAPodLandsDuringThePark(t *testing.T) {
	const selector = "joulie.io/park-race"
	hosts := parkingNodes(t, selector, map[string]int{"park-race-fixed": 4, "park-race-p": 16}, "park-race-fixed")
	cp.StartScheduler(t, nil)
	runController(t, "joulie-controller", selector, parkingEnv("PARKING_GRACE=8s")...)
	hosts.expect("the empty parkable node starts parking", "park-race-p", "parking/tainted/unlisted", 30*time.Second)

	pod := cp.CreatePod(t, cpuPod("park-race-job", selector, 2, func(p *corev1.Pod) {
		p.Spec.NodeSelector["kubernetes.io/hostname"] = "park-race-p"
		p.Spec.Tolerations = []corev1.Toleration{{Key: joulie.TaintParked, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}))
	if got := cp.WaitForPodBound(t, pod.Namespace, pod.Name, 20*time.Second); got != "park-race-p" {
		t.Fatalf("the scheduler bound the pod to %s", got)
	}
	hosts.expect("the park is aborted", "park-race-p", "awake/untainted/unlisted", 20*time.Second)
	// Past the grace: it stays awake while the pod is there.
	time.Sleep(10 * time.Second)
	hosts.expect("the node stays awake under its pod", "park-race-p", "awake/untainted/unlisted", time.Second)
	if got := hosts.states("park-race-p"); slices.Contains(got, "parked") {
		t.Fatalf("park-race-p was recorded parked with a pod on it: states %v", got)
	}
	if ev := nodeEvents(t, "park-race-p"); !slices.Contains(ev, "ParkAborted") {
		t.Errorf("events on park-race-p %v, want ParkAborted", ev)
	}
}

// A controller killed in the middle of a park, and its successor killed
// in the middle of a wake: each next controller goes on from the objects.
func TestParkingResumesAfterTheControllerIsKilled(t *testing.T) {
	const selector = "joulie.io/park-resume"
	hosts := parkingNodes(t, selector, map[string]int{"park-resume-fixed": 4, "park-resume-p": 16}, "park-resume-fixed")
	cp.StartScheduler(t, nil)
	env := parkingEnv("PARKING_GRACE=6s", "PARKING_RESUME_TIMEOUT=5m")

	a := runController(t, "joulie-controller", selector, env...)
	hosts.expect("the first controller starts the park", "park-resume-p", "parking/tainted/unlisted", 30*time.Second)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = a.cmd.Process.Wait()

	b := runController(t, "joulie-controller-b", selector, env...)
	hosts.expect("the second controller finishes the park", "park-resume-p", "parked/tainted/unlisted", 30*time.Second)
	hosts.waitOff("park-resume-p")

	// A pod for the parked node; the host will not come back until told.
	hosts.keepDown("park-resume-p", true)
	pod := cp.CreatePod(t, cpuPod("park-resume-job", selector, 8))
	hosts.expect("the second controller starts the wake", "park-resume-p", "waking#1/tainted/listed", 30*time.Second)
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = b.cmd.Process.Wait()

	runController(t, "joulie-controller-c", selector, env...)
	hosts.keepDown("park-resume-p", false)
	hosts.expect("the third controller finishes the wake", "park-resume-p", "awake#1/untainted/unlisted", 60*time.Second)
	if got := cp.WaitForPodBound(t, pod.Namespace, pod.Name, 60*time.Second); got != "park-resume-p" {
		t.Fatalf("the pod went to %s", got)
	}
	if got := hosts.statesUntil("park-resume-p", "awake", 2*time.Second); !slices.Equal(got, []string{"parking", "parked", "waking", "awake"}) {
		t.Errorf("park-resume-p went through %v, want parking, parked, waking, awake once each", got)
	}
}

// A node that never comes back is woken the allowed number of times, then
// declared wake-failed: it keeps the taint, gets a Warning Event, and the
// failure is counted.
func TestParkingGivesUpOnANodeThatNeverComesBack(t *testing.T) {
	const selector = "joulie.io/park-dead"
	hosts := parkingNodes(t, selector, map[string]int{"park-dead-fixed": 4, "park-dead-p": 16}, "park-dead-fixed")
	hosts.startParked("park-dead-p")
	hosts.keepDown("park-dead-p", true)
	cp.StartScheduler(t, nil)
	ctl := runController(t, "joulie-controller", selector,
		parkingEnv("PARKING_RESUME_TIMEOUT=3s", "PARKING_MAX_WAKE_ATTEMPTS=2", "METRICS_ADDR=127.0.0.1:0")...)
	cp.CreatePod(t, cpuPod("park-dead-job", selector, 8))
	hosts.expect("the node is declared wake-failed after two attempts", "park-dead-p", "wake-failed#2/tainted/unlisted", 60*time.Second)
	if by := hosts.wokenBy("park-dead-p"); len(by) == 0 {
		t.Errorf("park-dead-p was never asked to wake")
	}
	ev := nodeEvents(t, "park-dead-p")
	if !slices.Contains(ev, "WakeFailed") {
		t.Errorf("events on park-dead-p %v, want WakeFailed", ev)
	}
	// It stays so: no third attempt.
	time.Sleep(5 * time.Second)
	hosts.expect("the node stays wake-failed", "park-dead-p", "wake-failed#2/tainted/unlisted", time.Second)
	if got := scrapeMetric(t, ctl, "joulie_controller_wake_failures_total"); got != "1" {
		t.Errorf("joulie_controller_wake_failures_total %q, want 1", got)
	}
	if got := scrapeMetric(t, ctl, `joulie_controller_power_state_nodes{state="wake-failed"}`); got != "1" {
		t.Errorf(`joulie_controller_power_state_nodes{state="wake-failed"} %q, want 1`, got)
	}
}

// scrapeMetric reads one sample from the controller's /metrics, at the
// address its log names.
func scrapeMetric(t *testing.T, p *controllerProcess, series string) string {
	t.Helper()
	log, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`serving /metrics.* address=(\S+)`).FindSubmatch(log)
	if m == nil {
		t.Fatalf("the controller's log names no metrics address:\n%s", log)
	}
	resp, err := http.Get("http://" + string(m[1]) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			return rest
		}
	}
	return ""
}
