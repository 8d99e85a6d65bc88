package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	jfake "joulie.io/joulie/pkg/generated/clientset/versioned/fake"
	"joulie.io/joulie/pkg/generated/informers/externalversions"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/plan/plantest"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/powerest"
)

// fixture is a controller over fake clientsets whose informer caches are
// filled directly, the way a synced informer holds them.
type fixture struct {
	ctrl *Controller
	kube *kubefake.Clientset
	jc   *jfake.Clientset
	kf   informers.SharedInformerFactory
	jf   externalversions.SharedInformerFactory
}

func newFixture(tb testing.TB, s plan.Params, now time.Time) *fixture {
	f := &fixture{kube: kubefake.NewSimpleClientset(), jc: jfake.NewSimpleClientset()}
	// The simple fake cannot server-side apply; the tests read the applied
	// bodies from the recorded actions instead.
	f.jc.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		return a.(k8stesting.PatchAction).GetPatchType() == types.ApplyPatchType, nil, nil
	})
	f.kf = informers.NewSharedInformerFactory(f.kube, 0)
	f.jf = externalversions.NewSharedInformerFactory(f.jc, 0)
	c, err := New(f.kube, f.jc, f.kf, f.jf, Options{Plan: s, Now: func() time.Time { return now }})
	if err != nil {
		tb.Fatal(err)
	}
	f.ctrl = c
	return f
}

func (f *fixture) add(tb testing.TB, objs ...any) {
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Node:
			err = f.kf.Core().V1().Nodes().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			slim, _ := slimPod(o)
			err = f.kf.Core().V1().Pods().Informer().GetIndexer().Add(slim)
		case *joulie.NodePowerProfile:
			err = f.jf.Joulie().V1alpha1().NodePowerProfiles().Informer().GetIndexer().Add(o)
		case *joulie.NodeTwin:
			err = f.jf.Joulie().V1alpha1().NodeTwins().Informer().GetIndexer().Add(o)
		case *joulie.NodeHardware:
			err = f.jf.Joulie().V1alpha1().NodeHardwares().Informer().GetIndexer().Add(o)
		default:
			tb.Fatalf("unexpected %T", o)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// settle writes into the caches what a reconcile would converge to, so the
// next reconcile finds the cluster steady.
func (f *fixture) settle(tb testing.TB, now time.Time) {
	in, err := f.ctrl.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	for _, p := range plan.Compute(in, f.ctrl.opts.Plan).Nodes {
		n, _ := f.ctrl.nodes.Get(p.Name)
		n = n.DeepCopy()
		n.Labels[joulie.LabelPowerProfile], n.Labels[joulie.LabelDraining] = string(p.Decision.Profile), fmt.Sprint(p.Decision.Draining)
		tw := &joulie.NodeTwin{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Status: p.Twin}
		tw.Status.LastUpdated = metav1.NewTime(now)
		f.add(tb, n, tw, &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: p.Name,
			Annotations: map[string]string{plan.AnnotationLastTransition: p.LastTransition.UTC().Format(time.RFC3339)}}, Spec: p.Spec})
	}
}

// applied decodes the server-side apply body sent for name.
func applied(t *testing.T, actions []k8stesting.Action, resource, sub, name string, into any) {
	t.Helper()
	for _, a := range actions {
		if pa, ok := a.(k8stesting.PatchAction); ok && pa.GetPatchType() == types.ApplyPatchType &&
			pa.GetResource().Resource == resource && pa.GetSubresource() == sub && pa.GetName() == name {
			if err := json.Unmarshal(pa.GetPatch(), into); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no apply of %s/%s %s", resource, sub, name)
}

func writes(actions ...[]k8stesting.Action) []string {
	var out []string
	for _, list := range actions {
		for _, a := range list {
			if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
				out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
			}
		}
	}
	return out
}

func TestSyncWritesProfilesLabelsAndTwinsThenNothing(t *testing.T) {
	s := settings(plan.PolicyStaticPartition)
	f := newFixture(t, s, t0)
	nodes := []*corev1.Node{plantest.GPUNode("gpu-a", 8, nil), plantest.GPUNode("gpu-b", 8, nil)}
	for _, n := range nodes {
		if _, err := f.kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.add(t, nodes[0], nodes[1])
	f.kube.ClearActions()
	if err := f.ctrl.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := writes(f.kube.Actions(), f.jc.Actions())
	// Per node: create profile, patch labels, create twin, update status.
	if len(got) != 8 {
		t.Fatalf("first reconcile wrote %v, want 8 writes", got)
	}
	var b joulie.NodePowerProfile
	applied(t, f.jc.Actions(), "nodepowerprofiles", "", "gpu-b", &b)
	if b.Spec.Profile != joulie.ProfileEco || b.Annotations[plan.AnnotationLastTransition] == "" || b.Kind != "NodePowerProfile" {
		t.Fatalf("gpu-b profile applied as %+v", b)
	}
	n, _ := f.kube.CoreV1().Nodes().Get(context.Background(), "gpu-b", metav1.GetOptions{})
	if n.Labels[joulie.LabelPowerProfile] != "eco" || n.Labels[joulie.LabelDraining] != "false" {
		t.Errorf("gpu-b labels %v", n.Labels)
	}
	var tw joulie.NodeTwin
	applied(t, f.jc.Actions(), "nodetwins", "status", "gpu-b", &tw)
	if tw.Status.SchedulableClass != joulie.ClassEco || tw.Status.LastUpdated.IsZero() {
		t.Errorf("gpu-b twin %+v", tw.Status)
	}

	f.kube.ClearActions()
	f.jc.ClearActions()
	f.settle(t, t0)
	if err := f.ctrl.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := writes(f.kube.Actions(), f.jc.Actions()); len(got) != 0 {
		t.Fatalf("steady reconcile wrote %v", got)
	}
}

func TestTwinHeartbeatRewritesOnlyLastUpdated(t *testing.T) {
	s := settings(plan.PolicyStaticPartition)
	f := newFixture(t, s, t0)
	f.add(t, plantest.GPUNode("g", 8, nil))
	f.settle(t, t0.Add(-3*time.Minute)) // written 3 minutes ago
	tw, _ := f.ctrl.twins.Get("g")
	if _, err := f.jc.JoulieV1alpha1().NodeTwins().Create(context.Background(), tw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.jc.ClearActions()
	if err := f.ctrl.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := writes(f.kube.Actions(), f.jc.Actions())
	if len(got) != 1 || got[0] != "patch nodetwins/status" {
		t.Fatalf("heartbeat wrote %v, want one twin status update", got)
	}
}

func TestDeletedNodeLosesItsObjects(t *testing.T) {
	f := newFixture(t, settings(plan.PolicyStaticPartition), t0)
	f.add(t, &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, &joulie.NodeTwin{ObjectMeta: metav1.ObjectMeta{Name: "gone"}})
	if err := f.ctrl.Sync(context.Background()); err != nil {
		// The fake has no such objects to delete; NotFound is ignored.
		t.Fatal(err)
	}
	got := writes(f.jc.Actions())
	if len(got) != 2 || got[0] != "delete nodepowerprofiles/" || got[1] != "delete nodetwins/" {
		t.Fatalf("wrote %v, want the profile and twin deleted", got)
	}
}

// BenchmarkReconcile5000Nodes50000Pods is one steady-state reconcile of a
// 5,000-node, 50,000-pod cluster from informer caches (target: under
// 100 ms and 300 MiB). It reports the heap the caches and one reconcile
// hold, and fails if a steady reconcile writes.
func BenchmarkReconcile5000Nodes50000Pods(b *testing.B) {
	s := settings(plan.PolicyQueueAware)
	f := newFixture(b, s, t0)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 5000 {
		var n *corev1.Node
		switch i % 3 {
		case 0:
			n = plantest.CPUNode(fmt.Sprintf("node-%04d", i), nil)
		default:
			n = plantest.GPUNode(fmt.Sprintf("node-%04d", i), 1+i%8, nil)
		}
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("380"), corev1.ResourceMemory: resource.MustParse("1536Gi")}
		f.add(b, n)
	}
	for i := range 50000 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i), Namespace: "team-" + fmt.Sprint(i%20),
			Labels: map[string]string{"app": "train", "run": fmt.Sprint(i)}},
			Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%04d", i%5000), Containers: []corev1.Container{{Name: "main", Image: "registry.example/train:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if i%10 == 0 {
			p.Annotations = map[string]string{joulie.AnnotationWorkloadClass: joulie.WorkloadClassPerformance}
		}
		f.add(b, p)
	}
	f.settle(b, t0)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	f.jc.ClearActions()
	f.kube.ClearActions()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := f.ctrl.Sync(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-caches")
	if got := writes(f.kube.Actions(), f.jc.Actions()); len(got) != 0 {
		b.Fatalf("a steady reconcile wrote %d times, first %s", len(got), got[0])
	}
}

// The pod cache keeps only a pod's effective request, and a reconcile
// reads each node's load from the load index: the same load the whole
// pods give, also after a pod finishes.
func TestSnapshotLoadsFromSlimPods(t *testing.T) {
	f := newFixture(t, settings(plan.PolicyStaticPartition), t0)
	always := corev1.ContainerRestartPolicyAlways
	amd := plantest.Requesting("amd", "g", "500m", "", joulie.WorkloadClassPerformance, corev1.PodRunning)
	amd.Spec.Containers[0].Resources.Limits = corev1.ResourceList{joulie.ResourceAMDGPU: resource.MustParse("2")}
	amd.Spec.InitContainers = []corev1.Container{
		{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}},
		{Name: "setup", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}},
	}
	amd.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	pods := []*corev1.Pod{
		plantest.Requesting("std", "g", "8", "1", "", corev1.PodRunning),
		plantest.Requesting("std-2", "g", "8", "1", "", corev1.PodRunning), // same shape: one index value
		plantest.Requesting("finishing", "g", "2", "", "", corev1.PodRunning),
		amd,
		plantest.Requesting("starting", "h", "2", "", "", corev1.PodPending),
		plantest.Requesting("done", "g", "64", "4", "", corev1.PodFailed),
		plantest.Requesting("queued", "", "64", "", "", corev1.PodPending),
		plantest.PerfPod("no-requests", "g", corev1.PodRunning),
	}
	f.add(t, plantest.GPUNode("g", 8, nil), plantest.CPUNode("h", nil), plantest.CPUNode("idle", nil))
	for _, p := range pods {
		f.add(t, p)
	}
	check := func(when string) {
		t.Helper()
		in, err := f.ctrl.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		want := plan.PodLoads(pods)
		want["idle"] = plan.NodeLoad{}
		if len(in.Loads) != len(want) {
			t.Errorf("%s: loads %+v, want %+v", when, in.Loads, want)
		}
		near := func(a, b powerest.Demand) bool {
			return math.Abs(a.CPUCores-b.CPUCores) < 1e-9 && math.Abs(a.GPUs-b.GPUs) < 1e-9
		}
		for node, w := range want {
			if got := in.Loads[node]; !near(got.Standard, w.Standard) || !near(got.Performance, w.Performance) {
				t.Errorf("%s: %s: load %+v from the cache, want %+v", when, node, got, w)
			}
		}
	}
	// amd: max(0.5 + 0.25 sidecar, 4 + 0.25 init) + 0.1 overhead.
	if g := plan.PodLoads(pods)["g"]; g.Performance != (powerest.Demand{CPUCores: 4.35, GPUs: 2}) || g.Standard != (powerest.Demand{CPUCores: 18, GPUs: 2}) {
		t.Fatalf("plan.PodLoads of g = %+v", g)
	}
	check("all running")
	pods[2].Status.Phase = corev1.PodSucceeded
	f.add(t, pods[2])
	check("one finished")
}

// Snapshot only reads the caches: the power it sees reaches the trend
// tracker when Sync observes it, so a caller that plans from a snapshot
// (settle, a dry run) does not move the trends.
func TestSnapshotLeavesTheTrendsAlone(t *testing.T) {
	f := newFixture(t, settings(plan.PolicyStaticPartition), t0)
	for _, n := range []*corev1.Node{plantest.GPUNode("g", 8, nil), plantest.CPUNode("h", nil)} {
		if _, err := f.kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.add(t, n)
	}
	f.add(t, &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: "g"},
		Status: joulie.NodePowerProfileStatus{MeasuredPower: &joulie.MeasuredPower{Time: metav1.NewTime(t0.Add(-time.Minute)), NodePowerWatts: 900}}})
	f.ctrl.opts.KeplerPower = func() map[string]plan.NodeReading {
		return map[string]plan.NodeReading{"h": {Watts: 400, Time: t0.Add(-time.Minute)}}
	}
	tr := f.ctrl.opts.Trends
	if _, err := f.ctrl.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if got := tr.Slopes(t0); len(got) != 0 {
		t.Fatalf("Snapshot fed the trend tracker: %v", got)
	}
	if err := f.ctrl.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := tr.Slopes(t0); len(got) != 2 {
		t.Fatalf("Sync observed trends %v, want g (agent) and h (Kepler)", got)
	}
}

// A failed write names the object it concerns, and the API server's
// error stays reachable for apierrors' checks.
func TestWriteErrorsNameTheirObject(t *testing.T) {
	for _, tc := range []struct {
		client, verb, resource, sub string
		want                        string
	}{
		{"joulie", "patch", "nodepowerprofiles", "", "apply NodePowerProfile gpu-a: "},
		{"kube", "patch", "nodes", "", "label Node gpu-a joulie.io/power-profile=performance joulie.io/draining=false: "},
		{"joulie", "create", "nodetwins", "", "create NodeTwin gpu-a: "},
		{"joulie", "patch", "nodetwins", "status", "apply NodeTwin gpu-a status: "},
		{"joulie", "delete", "nodepowerprofiles", "", "delete NodePowerProfile gone of a deleted node: "},
		{"joulie", "delete", "nodetwins", "", "delete NodeTwin gone of a node no longer planned: "},
	} {
		t.Run(tc.verb+" "+tc.resource+"/"+tc.sub, func(t *testing.T) {
			f := newFixture(t, settings(plan.PolicyStaticPartition), t0)
			n := plantest.GPUNode("gpu-a", 8, nil)
			if _, err := f.kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.add(t, n, &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, &joulie.NodeTwin{ObjectMeta: metav1.ObjectMeta{Name: "gone"}})
			forbid := func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
				if a.GetSubresource() != tc.sub {
					return false, nil, nil
				}
				return true, nil, apierrors.NewForbidden(joulie.Resource(tc.resource), "x", errors.New("RBAC says no"))
			}
			if tc.client == "kube" {
				f.kube.PrependReactor(tc.verb, tc.resource, forbid)
			} else {
				f.jc.PrependReactor(tc.verb, tc.resource, forbid)
			}
			err := f.ctrl.Sync(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !apierrors.IsForbidden(err) {
				t.Fatalf("Sync = %v; want a Forbidden error naming the object (%q)", err, tc.want)
			}
		})
	}
}

// Under GuardDrain the eco cap waits for a fresh read of the API server:
// a performance pod bound to a draining node before the pod cache saw it
// keeps the node draining and uncapped, and a failed read leaves the node
// as it is and fails the reconcile, to be retried.
func TestDrainedNodeIsCappedOnlyAfterAFreshRead(t *testing.T) {
	s := settings(plan.PolicyStaticPartition)
	s.Guard, s.DrainDwell = policy.GuardDrain, 15*time.Second
	draining := func() *corev1.Node {
		return plantest.GPUNode("gpu-b", 8, map[string]string{joulie.LabelPowerProfile: "eco", joulie.LabelDraining: "true"})
	}
	since := &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: "gpu-b",
		Annotations: map[string]string{plan.AnnotationLastTransition: t0.Add(-time.Minute).Format(time.RFC3339)}}}
	late := plantest.PerfPod("late", "gpu-b", corev1.PodRunning)
	for _, tc := range []struct {
		name     string
		api      []k8sruntime.Object // what the API server holds and the cache has not seen
		listErr  error
		wantSpec joulie.Profile // "" when nothing may be written for gpu-b
		wantErr  bool
		late     float64
	}{
		{"nothing bound: eco", nil, nil, joulie.ProfileEco, false, 0},
		{"a late performance pod: still draining, uncapped", []k8sruntime.Object{late}, nil, joulie.ProfilePerformance, false, 1},
		{"the read fails: nothing written", nil, errors.New("etcd unavailable"), "", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, s, t0)
			for _, o := range tc.api {
				if err := f.kube.Tracker().Add(o); err != nil {
					t.Fatal(err)
				}
			}
			if tc.listErr != nil {
				f.kube.PrependReactor("list", "pods", func(k8stesting.Action) (bool, k8sruntime.Object, error) { return true, nil, tc.listErr })
			}
			na, nb := plantest.GPUNode("gpu-a", 8, nil), draining()
			for _, n := range []*corev1.Node{na, nb} {
				if err := f.kube.Tracker().Add(n.DeepCopy()); err != nil {
					t.Fatal(err)
				}
			}
			f.add(t, na, nb, since)
			err := f.ctrl.Sync(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("Sync: %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !strings.Contains(err.Error(), "stays draining, uncapped") {
				t.Errorf("error %q does not say what became of the node", err)
			}
			if got := testutil.ToFloat64(f.ctrl.opts.Metrics.LatePerformancePods); got != tc.late {
				t.Errorf("late performance pods counted %v, want %v", got, tc.late)
			}
			if tc.wantSpec == "" {
				for _, a := range append(f.kube.Actions(), f.jc.Actions()...) {
					if pa, ok := a.(k8stesting.PatchAction); ok && pa.GetName() == "gpu-b" {
						t.Fatalf("wrote %s %s of gpu-b after a failed read", a.GetVerb(), a.GetResource().Resource)
					}
				}
				return
			}
			var b joulie.NodePowerProfile
			applied(t, f.jc.Actions(), "nodepowerprofiles", "", "gpu-b", &b)
			if b.Spec.Profile != tc.wantSpec {
				t.Fatalf("gpu-b's profile applied as %s, want %s", b.Spec.Profile, tc.wantSpec)
			}
		})
	}
}

// A transition is an Event once its writes succeed: a reconcile whose
// label write fails records nothing, and the retry that succeeds records
// it once.
func TestTransitionEventFollowsItsWrites(t *testing.T) {
	f := newFixture(t, settings(plan.PolicyStaticPartition), t0)
	rec := record.NewFakeRecorder(16)
	f.ctrl.opts.Recorder = rec
	nodes := []*corev1.Node{plantest.GPUNode("gpu-a", 8, nil), plantest.GPUNode("gpu-b", 8, nil)}
	for _, n := range nodes {
		if _, err := f.kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.add(t, nodes[0], nodes[1])
	refuse := true
	f.kube.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		if refuse {
			return true, nil, apierrors.NewServiceUnavailable("etcd is away")
		}
		return false, nil, nil
	})
	if err := f.ctrl.Sync(context.Background()); err == nil {
		t.Fatal("Sync succeeded with every label write refused")
	}
	if got := drain(rec); len(got) != 0 {
		t.Fatalf("events recorded for writes that failed: %q", got)
	}
	refuse = false
	if err := f.ctrl.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := drain(rec)
	if len(got) != 1 || !strings.Contains(got[0], "ProfileEco") {
		t.Fatalf("events after the retry: %q, want gpu-b's move to eco once", got)
	}
}

// drain returns the events a fake recorder holds.
func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// Sync's error carries every failed write, not only the first.
func TestSyncReportsEveryWriteError(t *testing.T) {
	f := newFixture(t, settings(plan.PolicyStaticPartition), t0)
	nodes := []*corev1.Node{plantest.GPUNode("gpu-a", 8, nil), plantest.GPUNode("gpu-b", 8, nil)}
	for _, n := range nodes {
		if _, err := f.kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.add(t, nodes[0], nodes[1])
	f.kube.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is away")
	})
	err := f.ctrl.Sync(context.Background())
	if err == nil {
		t.Fatal("Sync succeeded with every label write refused")
	}
	for _, want := range []string{"2 writes failed", "label Node gpu-a", "label Node gpu-b"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Sync error %q does not say %q", err, want)
		}
	}
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("Sync error %v does not unwrap to the API server's error", err)
	}
}

func TestLoadKeyReadsBackAndRefusesMalformedValues(t *testing.T) {
	for _, k := range []loadKey{
		{node: "gpu-a", performance: true, cpuMilli: 1500, gpuMilli: 2000},
		{node: "cpu.rack-1.example", cpuMilli: 250},
	} {
		got, err := parseLoadKey(k.String())
		if err != nil || got != k {
			t.Errorf("%+v reads back as %+v, %v", k, got, err)
		}
	}
	for _, v := range []string{"", "gpu-a/standard/1", "gpu-a/batch/1/0", "gpu-a/standard/x/0", "gpu-a/performance/1/2/3"} {
		if _, err := parseLoadKey(v); err == nil {
			t.Errorf("%q parsed", v)
		}
	}
}
