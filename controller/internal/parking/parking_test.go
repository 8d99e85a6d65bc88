package parking

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	jfake "joulie.io/joulie/pkg/generated/clientset/versioned/fake"
	"joulie.io/joulie/pkg/generated/informers/externalversions"
	"joulie.io/joulie/pkg/park"
)

// These tests drive the shell over fake clientsets whose informer caches
// are filled by hand, so that the cache and the API server can be made to
// disagree on purpose. The behaviour against a real API server and
// scheduler is tested in test/integration (parking_test.go).

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

type fixture struct {
	ctrl     *Controller
	kube     *kubefake.Clientset
	jc       *jfake.Clientset
	kf       informers.SharedInformerFactory
	jf       externalversions.SharedInformerFactory
	recorder *record.FakeRecorder
	waker    *recordingWaker
}

type recordingWaker struct {
	mu    sync.Mutex
	woken []string
}

func (w *recordingWaker) Wake(_ context.Context, n *corev1.Node, _ WakeRequest) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.woken = append(w.woken, n.Name)
	return nil
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{kube: kubefake.NewSimpleClientset(), jc: jfake.NewSimpleClientset(), recorder: record.NewFakeRecorder(100), waker: &recordingWaker{}}
	// The simple fake cannot server-side apply: the tests read the applied
	// bodies from the recorded actions.
	f.jc.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		return a.(k8stesting.PatchAction).GetPatchType() == types.ApplyPatchType, nil, nil
	})
	f.kf = informers.NewSharedInformerFactory(f.kube, 0)
	f.jf = externalversions.NewSharedInformerFactory(f.jc, 0)
	s := park.DefaultParams()
	// No reserve, and none held: the tests that hold one say so, with a
	// floor kept whatever the gap between performance arrivals (these
	// fixtures have none; pkg/park tests the gap rule).
	s.ReserveFloor, s.ReserveFor, s.ReserveMaxGap = 0, park.ReserveForAny, 0
	c, err := New(f.kube, f.jc, f.kf, f.jf, Options{Params: s, Waker: f.waker, Recorder: f.recorder,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	// The caches are filled by hand, as a synced informer holds them.
	c.podsOK = func() bool { return true }
	f.ctrl = c
	return f
}

// cache puts objects in the informer caches only.
func (f *fixture) cache(t *testing.T, objs ...any) {
	t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Node:
			err = f.kf.Core().V1().Nodes().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			err = f.kf.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *joulie.NodePowerProfile:
			err = f.jf.Joulie().V1alpha1().NodePowerProfiles().Informer().GetIndexer().Add(o)
		case *coordinationv1.Lease:
			err = f.ctrl.leaseFactory.Coordination().V1().Leases().Informer().GetIndexer().Add(o)
		case *corev1.PersistentVolumeClaim:
			err = f.kf.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
		case *corev1.PersistentVolume:
			err = f.kf.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(o)
		case *storagev1.StorageClass:
			err = f.kf.Storage().V1().StorageClasses().Informer().GetIndexer().Add(o)
		default:
			t.Fatalf("unexpected %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func parkableNode(name string, tainted bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{joulie.LabelParkable: "true"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	if tainted {
		added := metav1.NewTime(t0.Add(-time.Minute))
		n.Spec.Taints = []corev1.Taint{{Key: joulie.TaintParked, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &added}}
	}
	return n
}

// renewed makes node n a host that is on at t: its Ready heartbeat is at
// t, and the returned Lease, for the cache, was renewed at t.
func renewed(n *corev1.Node, at time.Time) *coordinationv1.Lease {
	n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(at)
	renew := metav1.NewMicroTime(at)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{RenewTime: &renew}}
}

func profile(name string, s joulie.PowerState, since time.Time) *joulie.NodePowerProfile {
	p := &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7"},
		Spec: joulie.NodePowerProfileSpec{PowerState: s}, Status: joulie.NodePowerProfileStatus{PowerState: joulie.PowerAwake}}
	if !since.IsZero() {
		p.Spec.PowerStateSince = &metav1.Time{Time: since}
	}
	return p
}

// appliedStates lists the power states parking applied, in order, as
// "node=state".
func appliedStates(t *testing.T, actions []k8stesting.Action) []string {
	t.Helper()
	var out []string
	for _, a := range actions {
		pa, ok := a.(k8stesting.PatchAction)
		if !ok || pa.GetPatchType() != types.ApplyPatchType {
			continue
		}
		var body struct {
			Metadata struct{ ResourceVersion string }
			Spec     map[string]any
		}
		if err := json.Unmarshal(pa.GetPatch(), &body); err != nil {
			t.Fatal(err)
		}
		if s, ok := body.Spec["powerState"]; ok {
			out = append(out, pa.GetName()+"="+s.(string))
		}
	}
	return out
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A pod the scheduler bound just before it saw the taint may not be in the
// cache yet when the grace ends: the park reads the pods from the API
// server and aborts. Without that read (the cache alone) this test fails:
// the node is recorded parked with a pod on it.
func TestParkAbortsForAPodOnlyTheAPIServerShows(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	node := parkableNode("n1", true)
	landed := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	if _, err := f.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.kube.CoreV1().Pods("default").Create(ctx, landed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The cache has the node and its parking profile, but not the pod.
	f.cache(t, node, profile("n1", joulie.PowerParking, t0.Add(-time.Minute)))
	f.jc.ClearActions()
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := appliedStates(t, f.jc.Actions()); !slices.Equal(got, []string{"n1=awake"}) {
		t.Fatalf("applied states %v, want the park aborted (n1=awake)", got)
	}
	n, err := f.kube.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if taintIndex(n) >= 0 {
		t.Errorf("the aborted park left the taint: %v", n.Spec.Taints)
	}
	if ev := f.events(); len(ev) != 1 || !strings.Contains(ev[0], "ParkAborted") || !strings.Contains(ev[0], "default/late") {
		t.Errorf("events %q, want one ParkAborted naming default/late", ev)
	}
}

// With the API server empty too, the same park finishes.
func TestParkFinishesWhenTheAPIServerShowsNoPod(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	node := parkableNode("n1", true)
	ds := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system",
		OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: new(true)}}},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if _, err := f.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.kube.CoreV1().Pods("kube-system").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cache(t, node, ds, profile("n1", joulie.PowerParking, t0.Add(-time.Minute)))
	f.jc.ClearActions()
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := appliedStates(t, f.jc.Actions()); !slices.Equal(got, []string{"n1=parked"}) {
		t.Fatalf("applied states %v, want n1=parked (a DaemonSet pod does not hold a node)", got)
	}
}

// A park taints the node before it records parking, so the grace counts
// from a moment the scheduler could see the taint.
func TestParkTaintsBeforeRecordingParking(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var order []string
	f.kube.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		order = append(order, "taint")
		return false, nil, nil
	})
	f.jc.PrependReactor("patch", "nodepowerprofiles", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		order = append(order, "state")
		return true, nil, nil
	})
	for _, name := range []string{"idle", "spare"} {
		n := parkableNode(name, false)
		if _, err := f.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.cache(t, n, profile(name, "", time.Time{}))
	}
	// First pass: both are seen empty; the settle time starts.
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if len(order) != 0 {
		t.Fatalf("the first pass wrote %v before any settle time", order)
	}
	f.ctrl.opts.Now = func() time.Time { return t0.Add(11 * time.Minute) }
	f.jc.ClearActions()
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"taint", "state", "taint", "state"}) {
		t.Fatalf("writes in order %v, want the taint before the state for each node", order)
	}
	for _, name := range []string{"idle", "spare"} {
		n, _ := f.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if taintIndex(n) < 0 {
			t.Errorf("%s not tainted", name)
		}
	}
}

// A wake records waking before it calls the waker, so a crash in between
// leaves a wake the resume timeout retries rather than a host started
// while its profile still says parked.
func TestWakeRecordsWakingBeforeCallingTheWaker(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.ctrl.opts.Params.ReserveFloor = 1
	var statesAtWake []string
	f.ctrl.opts.Waker = wakerFunc(func(_ context.Context, n *corev1.Node, _ WakeRequest) error {
		statesAtWake = appliedStates(t, f.jc.Actions())
		return nil
	})
	n := parkableNode("p1", true)
	n.Status.Conditions[0].Status = corev1.ConditionUnknown
	if _, err := f.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cache(t, n, profile("p1", joulie.PowerParked, t0.Add(-time.Hour)))
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	f.ctrl.wakes.wait()
	if !slices.Equal(statesAtWake, []string{"p1=waking"}) {
		t.Fatalf("states applied when the waker was called: %v, want p1=waking", statesAtWake)
	}
}

type wakerFunc func(context.Context, *corev1.Node, WakeRequest) error

func (f wakerFunc) Wake(ctx context.Context, n *corev1.Node, r WakeRequest) error {
	return f(ctx, n, r)
}

func TestMACsPreferTheInterfacesArmedForWakeOnLAN(t *testing.T) {
	hw := &joulie.NodeHardware{Status: joulie.NodeHardwareStatus{Network: []joulie.NetworkInterface{
		{Name: "eno1", MAC: "02:00:00:00:00:01"}, {Name: "eno2", MAC: "02:00:00:00:00:02", WakeOnLAN: true}}}}
	if got := MACs(hw); !slices.Equal(got, []string{"02:00:00:00:00:02"}) {
		t.Errorf("MACs %v, want only the armed eno2", got)
	}
	hw.Status.Network[1].WakeOnLAN = false
	if got := MACs(hw); len(got) != 2 {
		t.Errorf("MACs %v, want both when none is known to be armed", got)
	}
	if got := MACs(nil); got != nil {
		t.Errorf("MACs of no NodeHardware %v", got)
	}
}

// The neighbour that sends the magic packets is awake with its agent up,
// in the parked node's zone when one is.
func TestWakeOnLANSenderIsAnAwakeNeighbourInTheSameZone(t *testing.T) {
	f := newFixture(t)
	w := NewWakeOnLAN(f.jc, f.kf, f.jf)
	zoned := func(name, zone string, ready bool) *corev1.Node {
		n := parkableNode(name, false)
		n.Labels[labelZone] = zone
		if !ready {
			n.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		return n
	}
	target := zoned("target", "z2", false)
	agentDown := profile("b-agent-down", "", time.Time{})
	agentDown.Status.PowerState = ""
	f.cache(t, target, profile("target", joulie.PowerParked, t0),
		zoned("a-other-zone", "z1", true), profile("a-other-zone", "", time.Time{}),
		zoned("b-agent-down", "z2", true), agentDown,
		zoned("c-not-ready", "z2", false), profile("c-not-ready", "", time.Time{}),
		zoned("d-parking", "z2", true), profile("d-parking", joulie.PowerParking, t0),
		zoned("e-same-zone", "z2", true), profile("e-same-zone", joulie.PowerAwake, time.Time{}),
		zoned("f-same-zone", "z2", true), profile("f-same-zone", "", time.Time{}))
	if got, err := w.sender(target); err != nil || got != "e-same-zone" {
		t.Errorf("sender %q (%v), want e-same-zone: awake, agent up, same zone, first by name", got, err)
	}
	other := zoned("other", "z9", false)
	if got, err := w.sender(other); err != nil || got != "a-other-zone" {
		t.Errorf("sender for a node of a zone without neighbours %q (%v), want the first awake node by name", got, err)
	}
}

// A crash between the two writes of a transition leaves the taint and the
// recorded state apart; the next pass puts them back together, after
// reading both again from the API server.
func TestTaintRepairAfterAnInterruptedTransition(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// stale: tainted two minutes ago, but the park was never recorded.
	stale := parkableNode("stale", true)
	old := metav1.NewTime(t0.Add(-2 * time.Minute))
	stale.Spec.Taints[0].TimeAdded = &old
	stale.Labels[joulie.LabelParkable] = "false" // keep Decide out of it
	// fresh: tainted a moment ago; its park's state write may just not be
	// in the cache yet.
	fresh := parkableNode("fresh", true)
	now := metav1.NewTime(t0.Add(-5 * time.Second))
	fresh.Spec.Taints[0].TimeAdded = &now
	fresh.Labels[joulie.LabelParkable] = "false"
	// bare: recorded parked, but the taint is missing.
	bare := parkableNode("bare", false)
	bare.Status.Conditions[0].Status = corev1.ConditionUnknown
	for _, n := range []*corev1.Node{stale, fresh, bare} {
		if _, err := f.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	profiles := []*joulie.NodePowerProfile{profile("stale", joulie.PowerAwake, t0.Add(-time.Hour)),
		profile("fresh", joulie.PowerAwake, t0.Add(-time.Hour)), profile("bare", joulie.PowerParked, t0.Add(-time.Hour))}
	for _, p := range profiles {
		if _, err := f.jc.JoulieV1alpha1().NodePowerProfiles().Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.cache(t, stale, fresh, bare, profiles[0], profiles[1], profiles[2])
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"stale": false, "fresh": true, "bare": true} {
		n, err := f.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := taintIndex(n) >= 0; got != want {
			t.Errorf("%s tainted %v after the pass, want %v", name, got, want)
		}
	}
}

// Nothing is parked, and no park finishes, while the pods cannot be read.
func TestNothingParksWhileThePodsAreUnknown(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.ctrl.podsOK = func() bool { return false }
	parking := parkableNode("parking", true)
	idle := parkableNode("idle", false)
	for _, n := range []*corev1.Node{parking, idle} {
		if _, err := f.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.cache(t, parking, idle, profile("parking", joulie.PowerParking, t0.Add(-time.Hour)), profile("idle", "", time.Time{}))
	f.ctrl.emptySince["idle"] = t0.Add(-time.Hour)
	f.jc.ClearActions()
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := appliedStates(t, f.jc.Actions()); len(got) != 0 {
		t.Fatalf("applied states %v while the pods are unknown, want none", got)
	}
}

// warmLabels reads the warm-reserve label of each node from the API
// server, "-" where there is none.
func warmLabels(t *testing.T, f *fixture, names ...string) []string {
	t.Helper()
	var out []string
	for _, name := range names {
		n, err := f.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, ok := n.Labels[joulie.LabelWarmReserve]
		if !ok {
			v = "-"
		}
		out = append(out, name+"="+v)
	}
	return out
}

// With reserveFor performance the nodes Decide holds as the warm reserve
// are labelled, and a node it no longer holds loses the label.
func TestWarmReserveLabelsFollowDecide(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.ctrl.opts.Params.ReserveFor = park.ReserveForPerformance
	f.ctrl.opts.Params.ReserveFloor = 1
	busy := parkableNode("busy", false)
	busy.Labels[joulie.LabelWarmReserve] = "true" // held while it was idle
	stale := parkableNode("stale", false)
	stale.Labels[joulie.LabelWarmReserve] = "false"
	idle := parkableNode("idle", false)
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "busy"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, n := range []*corev1.Node{busy, stale, idle} {
		if _, err := f.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.cache(t, n, profile(n.Name, "", time.Time{}))
	}
	f.cache(t, running)
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// idle and stale are both idle and just seen empty: the reserve of one
	// is the node the park would take last, the later by name, stale.
	if got, want := warmLabels(t, f, "busy", "idle", "stale"), []string{"busy=-", "idle=-", "stale=true"}; !slices.Equal(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	ev := strings.Join(f.events(), "\n")
	for _, want := range []string{"Normal WarmReserve held idle for performance pods", "Normal WarmReserveReleased"} {
		if !strings.Contains(ev, want) {
			t.Errorf("events\n%s\nlack %q", ev, want)
		}
	}
	// A second pass over a cache that has caught up writes nothing.
	for _, name := range []string{"busy", "idle", "stale"} {
		n, _ := f.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		f.cache(t, n)
	}
	f.kube.ClearActions()
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("second pass wrote %s %s", a.GetResource().Resource, a.(k8stesting.PatchAction).GetName())
		}
	}
}

// With reserveFor any no node is held, and a label left from an earlier
// setting goes.
func TestWarmReserveLabelsGoWithReserveForAny(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.ctrl.opts.Params.ReserveFloor = 1
	left := parkableNode("left", false)
	left.Labels[joulie.LabelWarmReserve] = "true"
	plain := parkableNode("plain", false)
	for _, n := range []*corev1.Node{left, plain} {
		if _, err := f.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.cache(t, n, profile(n.Name, "", time.Time{}))
	}
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := warmLabels(t, f, "left", "plain"), []string{"left=-", "plain=-"}; !slices.Equal(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
}

// While the pods are unknown the labels stay as they are: every node
// would look idle, so nothing is held, and taking the labels off would
// hand the reserve to standard pods on no evidence.
func TestWarmReserveLabelsStayWhileThePodsAreUnknown(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.ctrl.opts.Params.ReserveFor = park.ReserveForPerformance
	f.ctrl.opts.Params.ReserveFloor = 1
	f.ctrl.podsOK = func() bool { return false }
	held := parkableNode("held", false)
	held.Labels[joulie.LabelWarmReserve] = "true"
	other := parkableNode("other", false)
	for _, n := range []*corev1.Node{held, other} {
		if _, err := f.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.cache(t, n, profile(n.Name, "", time.Time{}))
	}
	f.kube.ClearActions()
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := warmLabels(t, f, "held", "other"), []string{"held=true", "other=-"}; !slices.Equal(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("a pass with the pods unknown wrote %s %s", a.GetResource().Resource, a.(k8stesting.PatchAction).GetName())
		}
	}
}

// A node back from a wake that the pass holds as the reserve gets its
// label before its taint goes, so the scheduler never sees it free of
// both and hands it to a standard pod.
func TestWarmReserveLabelBeforeTheTaintGoes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.ctrl.opts.Params.ReserveFor = park.ReserveForPerformance
	f.ctrl.opts.Params.ReserveFloor = 1
	var order []string
	f.kube.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		switch body := string(a.(k8stesting.PatchAction).GetPatch()); {
		case strings.Contains(body, joulie.LabelWarmReserve):
			order = append(order, "label")
		case strings.Contains(body, "taints"):
			order = append(order, "taint")
		}
		return false, nil, nil
	})
	back := parkableNode("back", true) // Ready: it is back
	if _, err := f.kube.CoreV1().Nodes().Create(ctx, back, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	woken := profile("back", joulie.PowerWaking, t0.Add(-2*time.Minute))
	woken.Spec.WakeAttempts = 1
	f.cache(t, back, woken, renewed(back, t0))
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"label", "taint"}) {
		t.Errorf("node writes %v, want the label before the taint goes", order)
	}
	if got := warmLabels(t, f, "back"); !slices.Equal(got, []string{"back=true"}) {
		t.Errorf("labels %v, want back held", got)
	}
}

// A park cordons the node, marked as parking's own, before it reads the
// node's pods from the API server for the last time, and records parked
// only after that read.
func TestParkCordonsBeforeTheLastPodCheck(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var order []string
	f.kube.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if body := string(a.(k8stesting.PatchAction).GetPatch()); strings.Contains(body, `"unschedulable":true`) &&
			strings.Contains(body, joulie.AnnotationCordonedForPark) {
			order = append(order, "cordon")
		}
		return false, nil, nil
	})
	f.kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		order = append(order, "pods")
		return false, nil, nil
	})
	f.jc.PrependReactor("patch", "nodepowerprofiles", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		order = append(order, "state")
		return true, nil, nil
	})
	node := parkableNode("n1", true)
	if _, err := f.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cache(t, node, profile("n1", joulie.PowerParking, t0.Add(-time.Minute)))
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"cordon", "pods", "state"}) {
		t.Fatalf("writes and reads in order %v, want the cordon, then the pods read, then the state", order)
	}
	n, _ := f.kube.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if !park.CordonedForPark(n) {
		t.Errorf("the parked node is not cordoned as parking's own: unschedulable %v, annotations %v", n.Spec.Unschedulable, n.Annotations)
	}
}

// A park of a node someone else cordoned in the meantime is aborted, and
// their cordon stays.
func TestParkOfANodeCordonedByAnAdminIsAbortedAndTheCordonStays(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cached := parkableNode("n1", true)
	server := cached.DeepCopy()
	server.Spec.Unschedulable = true // the cache has not seen it yet
	if _, err := f.kube.CoreV1().Nodes().Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cache(t, cached, profile("n1", joulie.PowerParking, t0.Add(-time.Minute)))
	f.jc.ClearActions()
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := appliedStates(t, f.jc.Actions()); !slices.Equal(got, []string{"n1=awake"}) {
		t.Fatalf("applied states %v, want the park aborted (n1=awake)", got)
	}
	n, _ := f.kube.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if !n.Spec.Unschedulable || taintIndex(n) >= 0 {
		t.Errorf("after the abort unschedulable %v, taints %v; want the admin's cordon kept and the taint gone", n.Spec.Unschedulable, n.Spec.Taints)
	}
}

// A node recorded awake that still carries parking's cordon (a crash
// between the state write and the uncordon) is uncordoned; a cordon
// without parking's annotation is an admin's and stays.
func TestCordonRepairAfterAnInterruptedWake(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	left := parkableNode("left", false)
	left.Spec.Unschedulable = true
	left.Annotations = map[string]string{joulie.AnnotationCordonedForPark: "true"}
	left.Labels[joulie.LabelParkable] = "false" // keep Decide out of it
	admin := parkableNode("admin", false)
	admin.Spec.Unschedulable = true
	admin.Labels[joulie.LabelParkable] = "false"
	parked := parkableNode("parked", true)
	parked.Spec.Unschedulable = true
	parked.Annotations = map[string]string{joulie.AnnotationCordonedForPark: "true"}
	parked.Status.Conditions[0].Status = corev1.ConditionUnknown
	profiles := []*joulie.NodePowerProfile{profile("left", joulie.PowerAwake, t0.Add(-time.Hour)),
		profile("admin", joulie.PowerAwake, t0.Add(-time.Hour)), profile("parked", joulie.PowerParked, t0.Add(-time.Hour))}
	for i, n := range []*corev1.Node{left, admin, parked} {
		if _, err := f.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.jc.JoulieV1alpha1().NodePowerProfiles().Create(ctx, profiles[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.cache(t, n, profiles[i])
	}
	if err := f.ctrl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"left": false, "admin": true, "parked": true} {
		n, _ := f.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if n.Spec.Unschedulable != want {
			t.Errorf("%s unschedulable %v after the pass, want %v", name, n.Spec.Unschedulable, want)
		}
	}
	if n, _ := f.kube.CoreV1().Nodes().Get(ctx, "left", metav1.GetOptions{}); n.Annotations[joulie.AnnotationCordonedForPark] != "" {
		t.Errorf("the repaired node keeps the annotation %s", joulie.AnnotationCordonedForPark)
	}
}

// A pod bound to a node that stays off gets one Warning Event per node
// state, not one per pass.
func TestStrandedPodIsWarnedOncePerNodeState(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.ctrl.opts.Params.WakesPerMinute = 0
	node := parkableNode("n1", true)
	node.Status.Conditions[0].Status = corev1.ConditionUnknown
	if _, err := f.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	f.cache(t, node, pod, profile("n1", joulie.PowerParked, t0.Add(-time.Hour)))
	for range 3 {
		if err := f.ctrl.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ev := f.events()
	if len(ev) != 1 || !strings.Contains(ev[0], "Warning WaitingForParkedNode") || !strings.Contains(ev[0], "wakesPerMinute") {
		t.Fatalf("events %q, want one Warning WaitingForParkedNode naming the wake rate", ev)
	}
}

func TestVolumeNodes(t *testing.T) {
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	onB := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}}}}
	class := func(name string) *string { return &name }
	claim := func(name, volume, sc string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume, StorageClassName: class(sc)}}
	}
	objs := []any{
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: onB}}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "network"}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "zoned"}, VolumeBindingMode: &wffc,
			AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"z1", "z2"}}}}}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "anywhere"}, VolumeBindingMode: &wffc},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "now"}, VolumeBindingMode: &immediate},
		claim("on-local", "local", "x"), claim("on-network", "network", "x"), claim("on-gone", "gone", "x"),
		claim("zoned", "", "zoned"), claim("anywhere", "", "anywhere"), claim("now", "", "now"), claim("job-scratch", "", "anywhere"),
	}
	node := func(labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	}
	nodeA, nodeB := node(map[string]string{"kubernetes.io/hostname": "a", "zone": "z1"}), node(map[string]string{"kubernetes.io/hostname": "b", "zone": "z3"})
	for _, c := range []struct {
		name   string
		volume corev1.VolumeSource
		// the nodes of a and b the pod's volumes allow
		want string
	}{
		{"a claim bound to a local volume: its node only", pvcSource("on-local"), "b"},
		{"a claim bound to a volume without node affinity: anywhere", pvcSource("on-network"), "ab"},
		{"a claim bound to a volume not in the cache: nowhere yet", pvcSource("on-gone"), ""},
		{"a missing claim: nowhere yet", pvcSource("missing"), ""},
		{"an unbound claim of a class waiting for its consumer: its allowed topologies", pvcSource("zoned"), "a"},
		{"… with none: anywhere", pvcSource("anywhere"), "ab"},
		{"an unbound claim of an immediate class: nowhere until it binds", pvcSource("now"), ""},
		{"a generic ephemeral volume: its claim named after pod and volume", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}, "ab"},
		{"a volume that is no claim: anywhere", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, "ab"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.cache(t, objs...)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default"},
				Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: c.volume}}}}
			sels := f.ctrl.volumeNodes(p)
			got := ""
			for _, nn := range []struct {
				name string
				n    *corev1.Node
			}{{"a", nodeA}, {"b", nodeB}} {
				name, n := nn.name, nn.n
				ok := true
				for i := range sels {
					if m, err := nodeaffinity.NewLazyErrorNodeSelector(&sels[i]).Match(n); err != nil || !m {
						ok = false
					}
				}
				if ok {
					got += name
				}
			}
			if got != c.want {
				t.Errorf("allowed nodes %q, want %q (selectors %+v)", got, c.want, sels)
			}
		})
	}
}

func pvcSource(name string) corev1.VolumeSource {
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
}
