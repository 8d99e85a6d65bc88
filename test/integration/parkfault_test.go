package integration

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/demo/fleet"
)

// The parking fault test's times. The controller's are shrunk from
// minutes to seconds; the bounds the invariants allow follow from them.
const (
	pfBoot     = 3 * time.Second        // the fleet's boot, and PARKING_BOOT_TIME
	pfResume   = 8 * time.Second        // PARKING_RESUME_TIMEOUT: a wake not back by then is tried again
	pfSync     = 500 * time.Millisecond // PARKING_SYNC_INTERVAL
	pfLease    = 4 * time.Second        // LEASE_DURATION: a killed leader's lease runs out after it
	pfSample   = 200 * time.Millisecond // the test's look at the profiles and the hosts
	pfNodes    = 6
	pfBMCNodes = 3
	pfAnchor   = "pf-l40s-2"    // never parkable: the awake neighbour that sends magic packets
	pfNS       = "jx-parkfault" // each run's namespace is pfNS-<run>
	pfSelector = fleet.LabelFleet + "=pf"

	// pfWindow: the agent's last check reads the node's pods, then
	// powers off, milliseconds later; a pod bound in between cannot be
	// seen by any check. A pod bound less than this before the
	// switch-off "landed in the window" (counted, and its node must
	// then be woken for it); one bound earlier is a failure.
	pfWindow = 250 * time.Millisecond
	// pfRestartGap: a controller killed holds its lease for pfLease; its
	// successor starts, waits it out and syncs its caches.
	pfRestartGap = pfLease + 4*time.Second
	// pfSlack: a loaded two-core machine, the informers, the agents'
	// ticks and the test's own sampling.
	pfSlack = 5 * time.Second
	// pfBindBase is how long a pod may wait for its node when nothing
	// else goes wrong: a wake that meets a host still shutting down is
	// tried again after the resume timeout, then the boot.
	pfBindBase = pfBoot + pfResume + pfSlack
	// pfAwakeOff: how long a node may be seen recorded awake while its
	// host is off (none, beyond the sampling and the informers).
	pfAwakeOff = 3 * time.Second
	// pfParkedOn: one sync after the host is on and its agent reports
	// awake, plus the agent's first tick after a park and the sampling.
	pfParkedOn = pfSync + 2*time.Second
)

// TestParkingUnderFaults parks and wakes the nodes of a simulated fleet
// many times over while pods arrive through the real scheduler (needing
// capacity that is parked) and bound by spec.nodeName to any fleet node
// (awake, parking, parked or waking), joulie-controller is killed with
// SIGKILL at random moments and restarted, and BMCs hang (ipmi_sim
// stopped) or refuse the login (a wrong password in their Secret). The
// hosts are demo/fleet's: one real pool-mode joulie-agentd over the HTTP
// simulator, three BMC nodes with ipmi_sim, the rest woken by
// Wake-on-LAN through the awake anchor node, a stand-in kubelet that runs
// bound pods only while their host is on. Checked all along:
//
//	(a) no host is switched off with a non-DaemonSet, non-terminal pod
//	    bound (a live read of the API server at the switch-off) or run
//	    there (the stand-in's running set at that instant), except one
//	    bound within pfWindow before it;
//	(b) every pod is bound and Running within pfBindBase of its
//	    creation, plus pfRestartGap per controller kill and a BMC
//	    fault's length plus one resume timeout per fault in its wait of
//	    its node's BMC (through the scheduler: of a node of its family);
//	(c) no node stays recorded awake while its host is off (pfAwakeOff),
//	    nor parked once its host is on and its agent reports awake
//	    (pfParkedOn).
//
// JOULIE_PARK_FAULT_DURATION sets how long faults are injected (40s, 20s
// in make check's short mode; make test-park-faults runs minutes,
// repeatedly); JOULIE_PARK_FAULT_SEED replays a run's random choices.
func TestParkingUnderFaults(t *testing.T) {
	d := 40 * time.Second
	if testing.Short() {
		d = 20 * time.Second
	}
	if v := os.Getenv("JOULIE_PARK_FAULT_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			t.Fatalf("JOULIE_PARK_FAULT_DURATION=%q: want a positive Go duration such as 5m (%v)", v, err)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("JOULIE_PARK_FAULT_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("JOULIE_PARK_FAULT_SEED=%q: want an unsigned integer: %v", v, err)
		}
	}
	t.Logf("fault run of %s, JOULIE_PARK_FAULT_SEED=%d", d, seed)
	r := newParkFaultRun(t, seed)
	r.run(d)
	r.report()
}

// pfPod is one pod the test created, with what it saw of it.
type pfPod struct {
	name         string
	viaScheduler bool
	family       string    // the node family it fits, for those through the scheduler
	target       string    // the node named in spec.nodeName, for the others
	created      time.Time // the create call returned
	bound        time.Time // first seen bound: the bind was at or before it
	node         string
	running      time.Time // first seen Running
	done         bool      // seen Succeeded
	deleted      bool      // deleted once done
}

// pfSpan is a controller kill or a BMC fault.
type pfSpan struct {
	from, to time.Time
	node     string // the faulty BMC's node; "" for a kill
	kind     string // "kill", "hang", "refuse"
}

type parkFaultRun struct {
	t   *testing.T
	ctx context.Context
	// ns is this run's namespace: make test-park-faults repeats the test
	// in one API server, and the pods of a run must not meet the next's.
	ns    string
	rng   *rand.Rand
	kube  kubernetes.Interface
	jc    versioned.Interface
	f     *fleet.Fleet
	dir   string
	nodes []string

	ctl      *controllerProcess
	restarts int

	mu         sync.Mutex
	pods       map[string]*pfPod
	spans      []pfSpan
	violations []string
	powerOffs  map[string]int // by PowerOff.By
	inWindow   []string       // pods that landed in the window
	after      int            // pods found bound after a switch-off

	// (c), sampled by the main loop only.
	awakeOffSince, parkedOnSince map[string]time.Time
	reported                     map[string]bool
	lastState                    map[string]string
	parks, wakes                 int
}

// pfRuns numbers the fault runs of this test process.
var pfRuns atomic.Int32

func newParkFaultRun(t *testing.T, seed uint64) *parkFaultRun {
	ctx := t.Context()
	jc, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := &parkFaultRun{t: t, ctx: ctx, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), kube: cp.AdminClient(t), jc: jc,
		dir: t.TempDir(), pods: map[string]*pfPod{}, powerOffs: map[string]int{},
		awakeOffSince: map[string]time.Time{}, parkedOnSince: map[string]time.Time{}, reported: map[string]bool{}, lastState: map[string]string{}}
	r.ns = fmt.Sprintf("%s-%d", pfNS, pfRuns.Add(1))
	if err := cp.EnsureNamespace(ctx, r.ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Nothing deletes a namespace's pods here (no namespace
		// controller runs): the run's pods would hold its nodes' names.
		zero := int64(0)
		_ = r.kube.CoreV1().Pods(r.ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	})
	logPath := filepath.Join(r.dir, "fleet.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	cfg := fleet.Config{
		Nodes: pfNodes, DaemonNodes: -1, NodePrefix: "pf", Kube: cp.AdminConfig(),
		AgentBinary: cp.BuildProgram(t, "joulie.io/joulie/agentd/cmd/joulie-agentd"),
		Dir:         filepath.Join(r.dir, "fleet"), Tick: 100 * time.Millisecond, AgentInterval: time.Second,
		Log: logf, ParkablePool: true, BootTime: pfBoot, BMCNodes: pfBMCNodes,
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.f, err = fleet.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A hung BMC is killed with the rest; its port is freed.
		if err := r.f.Stop(context.Background()); err != nil {
			t.Errorf("stop the fleet: %v", err)
		}
		if t.Failed() {
			t.Logf("the fleet's log, last lines:\n%s", lastLines(logPath, 80))
			t.Logf("the pool agent's log, last lines:\n%s", lastLines(filepath.Join(cfg.Dir, "logs", "agentd-pool.log"), 80))
		}
	})
	r.nodes = r.f.Nodes()
	if !slices.Contains(r.nodes, pfAnchor) {
		t.Fatalf("the fleet's nodes %v have no %s", r.nodes, pfAnchor)
	}
	// The anchor stays awake, so that some awake agent sends the magic
	// packets of the nodes without a BMC.
	if _, err := r.kube.CoreV1().Nodes().Patch(ctx, pfAnchor, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+joulie.LabelParkable+`":null}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Wake-on-LAN needs the MACs the agent publishes.
	pollFor(t, "every fleet node's NodeHardware with its NIC", 60*time.Second, func() bool {
		for _, n := range r.nodes {
			hw, err := jc.JoulieV1alpha1().NodeHardwares().Get(ctx, n, metav1.GetOptions{})
			if err != nil || len(hw.Status.Network) == 0 {
				return false
			}
		}
		return true
	})
	r.watchPods()
	r.f.OnPowerOff(r.checkPowerOff)
	t.Cleanup(func() { r.f.OnPowerOff(nil) })
	cp.StartScheduler(t, nil)
	r.startController()
	return r
}

func pollFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func lastLines(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

func (r *parkFaultRun) startController() {
	r.restarts++
	env := parkingEnv("NODE_SELECTOR="+pfSelector, "POD_NAME=pf-controller-"+strconv.Itoa(r.restarts),
		"PARKING_SYNC_INTERVAL="+pfSync.String(), "PARKING_SETTLE_TIME=2s", "PARKING_GRACE=1s",
		"PARKING_BOOT_TIME="+pfBoot.String(), "PARKING_RESUME_TIMEOUT="+pfResume.String(),
		"PARKING_MAX_WAKE_ATTEMPTS=50", "PARKING_PARKS_PER_MINUTE=600", "PARKING_WAKES_PER_MINUTE=600",
		"PARKING_IPMI_TIMEOUT=500ms", "PARKING_IPMI_RETRIES=1", "PARKING_IPMI_CALL_TIMEOUT=3s",
		"LEASE_DURATION="+pfLease.String())
	r.ctl = runController(r.t, "joulie-controller", "unused", env...)
}

func (r *parkFaultRun) killController() {
	_ = r.ctl.cmd.Process.Signal(syscall.SIGKILL)
	_ = r.ctl.cmd.Wait()
}

// watchPods records when each of the test's pods was first seen bound
// and Running.
func (r *parkFaultRun) watchPods() {
	factory := informers.NewSharedInformerFactoryWithOptions(r.kube, 0, informers.WithNamespace(r.ns))
	seen := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		r.mu.Lock()
		defer r.mu.Unlock()
		p := r.pods[pod.Name]
		if p == nil {
			// Seen before its create call returned.
			p = &pfPod{name: pod.Name}
			r.pods[pod.Name] = p
		}
		if pod.Spec.NodeName != "" && p.bound.IsZero() {
			p.bound, p.node = now, pod.Spec.NodeName
		}
		if pod.Status.Phase == corev1.PodRunning && p.running.IsZero() {
			p.running = now
		}
		if pod.Status.Phase == corev1.PodSucceeded {
			if p.running.IsZero() {
				p.running = now
			}
			p.done = true
		}
	}
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }}); err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	r.t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !cache.WaitForCacheSync(r.ctx.Done(), inf.HasSynced) {
		r.t.Fatal("the test's pod watch did not sync")
	}
}

// createPod creates one pod: through the scheduler, a CPU pod only an
// epyc node takes or a GPU pod only an h100 node takes, or one bound by
// name to any fleet node.
func (r *parkFaultRun) createPod(i int) {
	name := fmt.Sprintf("pf-%04d", i)
	work := time.Duration(2000+r.rng.IntN(4000)) * time.Millisecond
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns,
		Annotations: map[string]string{fleet.AnnotationWork: work.String()}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "work"}}}}
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	p := &pfPod{name: name}
	switch k := r.rng.IntN(4); {
	case k == 0:
		req[corev1.ResourceCPU] = resource.MustParse("300") // more than the anchor has (224)
		p.viaScheduler, p.family = true, "epyc"
	case k == 1:
		req[corev1.ResourceCPU] = resource.MustParse("16")
		req[fleet.ResourceNVIDIAGPU] = resource.MustParse("6")
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{fleet.ResourceNVIDIAGPU: resource.MustParse("6")}
		p.viaScheduler, p.family = true, "h100"
	default:
		p.target = r.pickTarget()
		pod.Spec.NodeName = p.target
	}
	if p.viaScheduler {
		pod.Spec.NodeSelector = map[string]string{fleet.LabelFleet: "pf"}
	}
	pod.Spec.Containers[0].Resources.Requests = req
	if _, err := r.kube.CoreV1().Pods(r.ns).Create(r.ctx, pod, metav1.CreateOptions{}); err != nil {
		r.t.Fatalf("create pod %s: %v", name, err)
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if seen := r.pods[name]; seen != nil {
		p.bound, p.node, p.running, p.done = seen.bound, seen.node, seen.running, seen.done
	}
	p.created = now
	if !p.viaScheduler && (p.bound.IsZero() || now.Before(p.bound)) {
		// Bound by its create: at the latest when the call returned.
		p.bound, p.node = now, p.target
	}
	r.pods[name] = p
}

// pickTarget is the node a pod bound by name goes to: a random power
// state among those the nodes are in (as last sampled), then a random
// node in it, so the rarer states (parking, parked, waking) get their
// share.
func (r *parkFaultRun) pickTarget() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	byState := map[string][]string{}
	var states []string
	for _, n := range r.nodes {
		st, _, _ := strings.Cut(r.lastState[n], "#")
		if byState[st] == nil {
			states = append(states, st)
		}
		byState[st] = append(byState[st], n)
	}
	in := byState[states[r.rng.IntN(len(states))]]
	return in[r.rng.IntN(len(in))]
}

// checkPowerOff holds invariant (a) at one switch-off: what the API
// server says is bound to the node now, and what the stand-in ran there
// at the instant.
func (r *parkFaultRun) checkPowerOff(ev fleet.PowerOff) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := r.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + ev.Node})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.powerOffs[ev.By]++
	if err != nil {
		r.violations = append(r.violations, fmt.Sprintf("(a) the host of %s was switched off by %s at %s, and the pods bound there could not be read: %v",
			ev.Node, ev.By, ev.At.Format("15:04:05.000"), err))
		return
	}
	type found struct {
		bound   time.Time // at or after the true bind
		ran     bool
		inAPI   bool
		created time.Time
	}
	pods := map[string]*found{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || controlledByDaemonSet(p) {
			continue
		}
		key := p.Namespace + "/" + p.Name
		// A pod the test did not create: bound at its creation at the
		// latest, which the API gives to the second.
		fd := &found{inAPI: true, bound: p.CreationTimestamp.Add(time.Second)}
		if rec := r.pods[p.Name]; p.Namespace == r.ns && rec != nil && !rec.bound.IsZero() {
			fd.bound, fd.created = rec.bound, rec.created
		}
		pods[key] = fd
	}
	for _, rp := range ev.Running {
		key := rp.Namespace + "/" + rp.Name
		fd := pods[key]
		if fd == nil {
			fd = &found{bound: rp.Started}
			if rec := r.pods[rp.Name]; rp.Namespace == r.ns && rec != nil {
				fd.created = rec.created
			}
			pods[key] = fd
		}
		fd.ran = true
		if rp.Started.Before(fd.bound) {
			fd.bound = rp.Started
		}
	}
	for key, fd := range pods {
		// A BMC's switch-off (a power cycle) of a host that ran
		// nothing destroys nothing; pods merely bound there wait for
		// its boot, as (b) checks.
		if ev.By == fleet.PowerOffByBMC && !fd.ran {
			continue
		}
		gap := ev.At.Sub(fd.bound)
		switch {
		case gap > pfWindow:
			r.violations = append(r.violations, fmt.Sprintf(
				"(a) the host of %s (%s) was switched off by %s at %s with pod %s on it: bound at %s or earlier (created %s), %s before the switch-off; bound in the API server: %v, run by the stand-in kubelet: %v",
				ev.Node, ev.Host, ev.By, ev.At.Format("15:04:05.000"), key, fd.bound.Format("15:04:05.000"), stamp(fd.created),
				gap.Round(time.Millisecond), fd.inAPI, fd.ran))
		case gap > 0 || fd.ran:
			r.inWindow = append(r.inWindow, fmt.Sprintf("%s on %s, bound %s before the switch-off", key, ev.Node, gap.Round(time.Millisecond)))
		default:
			r.after++ // bound to a host already off: (b) holds it
		}
	}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.Format("15:04:05.000")
}

func controlledByDaemonSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// sample holds invariant (c) at one look, and counts parks and wakes.
func (r *parkFaultRun) sample(now time.Time) {
	profiles, err := r.jc.JoulieV1alpha1().NodePowerProfiles().List(r.ctx, metav1.ListOptions{})
	if err != nil {
		if r.ctx.Err() == nil {
			r.t.Logf("list NodePowerProfiles (next look retries): %v", err)
		}
		return
	}
	byName := map[string]*joulie.NodePowerProfile{}
	for i := range profiles.Items {
		byName[profiles.Items[i].Name] = &profiles.Items[i]
	}
	hosts := map[string]string{}
	for _, n := range r.f.Snapshot().Nodes {
		hosts[n.Name] = n.Host
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, node := range r.nodes {
		p := byName[node]
		if p == nil {
			continue
		}
		spec, agent, host := p.Spec.PowerState, p.Status.PowerState, hosts[node]
		state := fmt.Sprintf("%s#%d", spec, p.Spec.WakeAttempts)
		if prev, ok := r.lastState[node]; ok && prev != state {
			switch {
			case spec == joulie.PowerParked && !strings.HasPrefix(prev, string(joulie.PowerParked)+"#"):
				r.parks++
			case spec == joulie.PowerWaking:
				r.wakes++
			}
		}
		r.lastState[node] = state
		desc := fmt.Sprintf("spec.powerState %q (wake attempts %d, since %s), agent reports %q, host %s",
			spec, p.Spec.WakeAttempts, sinceOf(p), agent, host)
		r.hold(now, "awake-off/"+node, spec == joulie.PowerAwake || spec == "", host == fleet.HostOff, r.awakeOffSince, pfAwakeOff,
			func(d time.Duration) string {
				return fmt.Sprintf("(c) %s has been recorded awake for %s while its host is off: %s", node, d.Round(time.Millisecond), desc)
			})
		r.hold(now, "parked-on/"+node, spec == joulie.PowerParked, host == fleet.HostOn && agent == joulie.PowerAwake, r.parkedOnSince, pfParkedOn,
			func(d time.Duration) string {
				return fmt.Sprintf("(c) %s has stayed recorded parked for %s after its host was on and its agent reported awake: %s", node, d.Round(time.Millisecond), desc)
			})
	}
}

func sinceOf(p *joulie.NodePowerProfile) string {
	if p.Spec.PowerStateSince == nil {
		return "-"
	}
	return p.Spec.PowerStateSince.Format("15:04:05")
}

// hold tracks one condition of (c): it may last tolerance, plus the gap
// of every controller kill within it. r.mu is held.
func (r *parkFaultRun) hold(now time.Time, key string, a, b bool, since map[string]time.Time, tolerance time.Duration, msg func(time.Duration) string) {
	if !a || !b {
		delete(since, key)
		delete(r.reported, key)
		return
	}
	from, ok := since[key]
	if !ok {
		since[key] = now
		return
	}
	allowed := tolerance
	for _, s := range r.spans {
		if s.kind == "kill" && s.from.Before(now) && s.from.Add(pfRestartGap).After(from) {
			allowed += pfRestartGap
		}
	}
	if now.Sub(from) > allowed && !r.reported[key] {
		r.reported[key] = true // once per episode
		r.violations = append(r.violations, msg(now.Sub(from)))
	}
}

// deadline is when pod p must be Running by (b), and why.
func (r *parkFaultRun) deadline(p *pfPod) (time.Time, string) {
	d := p.created.Add(pfBindBase)
	why := []string{fmt.Sprintf("created %s + %s", p.created.Format("15:04:05.000"), pfBindBase)}
	counted := map[int]bool{}
	for changed := true; changed; {
		changed = false
		for i, s := range r.spans {
			if counted[i] || !s.from.Before(d) || !s.to.Add(pfRestartGap).After(p.created) {
				continue
			}
			switch {
			case s.kind == "kill":
				d = d.Add(pfRestartGap)
				why = append(why, fmt.Sprintf("+ %s for the kill at %s", pfRestartGap, s.from.Format("15:04:05.000")))
			case s.node == p.target || p.viaScheduler && strings.HasPrefix(s.node, "pf-"+p.family+"-"):
				// The wake tried during the fault is tried again a
				// resume timeout after the fault's end at the latest.
				extra := s.to.Sub(maxTime(s.from, p.created)) + pfResume
				d = d.Add(extra)
				why = append(why, fmt.Sprintf("+ %s for the %s BMC of %s at %s", extra.Round(time.Millisecond), s.kind, s.node, s.from.Format("15:04:05.000")))
			default:
				continue
			}
			counted[i], changed = true, true
		}
	}
	return d, strings.Join(why, " ")
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (r *parkFaultRun) run(d time.Duration) {
	start := time.Now()
	end := start.Add(d)
	gap := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.rng.Int64N(int64(hi-lo))) }
	nextPod := start
	nextKill := start.Add(gap(6*time.Second, 14*time.Second))
	var restartAt time.Time // while the controller is down
	nextFault := start.Add(gap(3*time.Second, 8*time.Second))
	type fault struct {
		span int
		end  time.Time
	}
	active := map[string]fault{} // BMC node → its fault
	endFault := func(node string, fl fault) {
		s := r.spans[fl.span]
		var err error
		if s.kind == "hang" {
			err = r.f.HangBMC(node, false)
		} else {
			err = r.f.RefuseBMC(r.ctx, node, false)
		}
		if err != nil {
			r.t.Fatal(err)
		}
		r.mu.Lock()
		r.spans[fl.span].to = time.Now()
		r.mu.Unlock()
		delete(active, node)
	}
	created := 0
	for now := time.Now(); now.Before(end); now = time.Now() {
		if !now.Before(nextPod) {
			r.createPod(created)
			created++
			// Bursts and lulls: a lull lets nodes empty and park
			// (settle and grace, 3 s), the next burst needs them back.
			nextPod = now.Add(gap(200*time.Millisecond, 800*time.Millisecond))
			if r.rng.IntN(4) == 0 {
				nextPod = now.Add(gap(5*time.Second, 9*time.Second))
			}
		}
		switch {
		case restartAt.IsZero() && !now.Before(nextKill):
			r.killController()
			r.mu.Lock()
			r.spans = append(r.spans, pfSpan{from: now, to: now, kind: "kill"})
			r.mu.Unlock()
			restartAt = now.Add(gap(10*time.Millisecond, 1500*time.Millisecond))
		case !restartAt.IsZero() && !now.Before(restartAt):
			r.startController()
			restartAt = time.Time{}
			nextKill = now.Add(gap(8*time.Second, 16*time.Second))
		}
		for node, fl := range active {
			if !now.Before(fl.end) {
				endFault(node, fl)
			}
		}
		if !now.Before(nextFault) && len(active) < 2 {
			var free []string
			for _, n := range r.f.BMCNodes() {
				if _, busy := active[n]; !busy {
					free = append(free, n)
				}
			}
			node := free[r.rng.IntN(len(free))]
			kind := "hang"
			var err error
			if r.rng.IntN(2) == 0 {
				err = r.f.HangBMC(node, true)
			} else {
				kind = "refuse"
				err = r.f.RefuseBMC(r.ctx, node, true)
			}
			if err != nil {
				r.t.Fatal(err)
			}
			r.mu.Lock()
			r.spans = append(r.spans, pfSpan{from: now, to: now, node: node, kind: kind})
			active[node] = fault{span: len(r.spans) - 1, end: now.Add(gap(2*time.Second, 6*time.Second))}
			r.mu.Unlock()
			nextFault = now.Add(gap(3*time.Second, 8*time.Second))
		}
		r.sample(now)
		r.deleteFinished()
		time.Sleep(pfSample)
	}
	// The faults end, the controller runs; every pod gets until its
	// deadline, while (a) and (c) are still held.
	for node, fl := range active {
		endFault(node, fl)
	}
	if !restartAt.IsZero() {
		r.startController()
	}
	for {
		now := time.Now()
		r.sample(now)
		r.deleteFinished()
		waiting, latest := 0, time.Time{}
		r.mu.Lock()
		for _, p := range r.pods {
			if p.running.IsZero() && !p.created.IsZero() {
				dl, _ := r.deadline(p)
				waiting++
				latest = maxTime(latest, dl)
			}
		}
		r.mu.Unlock()
		if waiting == 0 || now.After(latest) {
			break
		}
		time.Sleep(pfSample)
	}
}

// deleteFinished deletes the pods that have succeeded, as a Job
// controller's cleanup would, so the nodes empty and park again.
func (r *parkFaultRun) deleteFinished() {
	r.mu.Lock()
	var names []string
	for _, p := range r.pods {
		if p.done && !p.deleted && !p.created.IsZero() {
			names = append(names, p.name)
		}
	}
	r.mu.Unlock()
	zero := int64(0)
	for _, n := range names {
		err := r.kube.CoreV1().Pods(r.ns).Delete(r.ctx, n, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) && r.ctx.Err() == nil {
			r.t.Logf("delete finished pod %s (retried): %v", n, err)
			continue
		}
		r.mu.Lock()
		r.pods[n].deleted = true
		r.mu.Unlock()
	}
}

func (r *parkFaultRun) report() {
	t := r.t
	r.mu.Lock()
	defer r.mu.Unlock()
	var worstBind, worstRun time.Duration
	var lateOrStranded []string
	viaScheduler, byName := 0, 0
	for _, p := range r.pods {
		created := p.created
		if created.IsZero() {
			continue // its create call did not return
		}
		if p.viaScheduler {
			viaScheduler++
		} else {
			byName++
		}
		dl, why := r.deadline(p)
		how := "through the scheduler"
		if !p.viaScheduler {
			how = "by spec.nodeName to " + p.target
		}
		switch {
		case p.running.IsZero():
			lateOrStranded = append(lateOrStranded, fmt.Sprintf("(b) pod %s (%s) not Running by its deadline %s (%s): bound %s to %q",
				p.name, how, dl.Format("15:04:05.000"), why, stamp(p.bound), p.node))
		case p.running.After(dl):
			lateOrStranded = append(lateOrStranded, fmt.Sprintf("(b) pod %s (%s) Running only at %s, %s after its deadline %s (%s), bound %s to %s",
				p.name, how, p.running.Format("15:04:05.000"), p.running.Sub(dl).Round(time.Millisecond), dl.Format("15:04:05.000"), why, stamp(p.bound), p.node))
		}
		if !p.bound.IsZero() {
			worstBind = max(worstBind, p.bound.Sub(created))
		}
		if !p.running.IsZero() {
			worstRun = max(worstRun, p.running.Sub(created))
		}
	}
	kills, hangs, refusals := 0, 0, 0
	for _, s := range r.spans {
		switch s.kind {
		case "kill":
			kills++
		case "hang":
			hangs++
		case "refuse":
			refusals++
		}
	}
	t.Logf("summary: %d parks, %d wakes (retries included), %d host switch-offs by the agent and %d by a BMC, %d controller kills, "+
		"%d BMC hangs and %d BMC refusals, %d pods (%d through the scheduler, %d by nodeName), worst bind latency %s, worst time to Running %s, "+
		"%d pods landed in the last check's window (%s), %d bound to a host already off",
		r.parks, r.wakes, r.powerOffs[fleet.PowerOffByAgent], r.powerOffs[fleet.PowerOffByBMC], kills, hangs, refusals,
		viaScheduler+byName, viaScheduler, byName, worstBind.Round(time.Millisecond), worstRun.Round(time.Millisecond),
		len(r.inWindow), pfWindow, r.after)
	for _, w := range r.inWindow {
		t.Logf("landed in the window: %s", w)
	}
	all := append(slices.Clone(r.violations), lateOrStranded...)
	const most = 30
	for i, v := range all {
		if i == most {
			t.Errorf("... and %d more", len(all)-most)
			break
		}
		t.Error(v)
	}
	if r.parks == 0 || r.powerOffs[fleet.PowerOffByAgent] == 0 {
		t.Errorf("no park switched a host off (%d parks): the run exercised nothing", r.parks)
	}
}
