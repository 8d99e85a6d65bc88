package kubesync_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/cpuinfo/cpuinfotest"
	"joulie.io/joulie/agentd/internal/host"
	"joulie.io/joulie/agentd/internal/kubesync"
	"joulie.io/joulie/agentd/internal/logind"
	"joulie.io/joulie/agentd/internal/logind/logindtest"
	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned/fake"
	client "joulie.io/joulie/pkg/generated/clientset/versioned/typed/joulie/v1alpha1"
)

// These tests run the agent's whole side of a park: a host on a fixture
// tree (two Xeon packages, RAPL writable, TDP 350 W), the agent, the
// cluster sync against a fake API, and logind's PowerOff over a real
// D-Bus bus (a private dbus-daemon) to a fake logind that looks at the
// host and the API at the moment of the call.

const (
	node       = "gpu-07"
	originalUW = "350000000" // the fixture's long-term limit, before Joulie
	zone       = "intel-rapl:0"
	limitFile  = "constraint_0_power_limit_uw"
)

// seen is what the fake logind saw when PowerOff arrived.
type seen struct {
	limitUW string
	status  joulie.NodePowerProfileStatus
}

type rig struct {
	t        *testing.T
	root     string
	stateDir string
	bus      string
	cs       *fake.Clientset
	logind   *logindtest.Logind

	mu   sync.Mutex
	seen []seen
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, root: t.TempDir(), stateDir: t.TempDir()}
	cpuinfotest.Write(t, r.root, cpuinfotest.Xeon2S())
	rapltest.TwoSocketXeon(t, r.root, 350)
	r.setBootID("boot-1")
	r.cs = fake.NewSimpleClientset(&joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: node, Generation: 1}, Spec: eco(60)})
	// The API server's status subresource: an UpdateStatus changes the
	// status only, never the spec the controller wrote meanwhile.
	r.cs.PrependReactor("update", "nodepowerprofiles", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u, ok := a.(k8stesting.UpdateAction)
		if !ok || u.GetSubresource() != "status" {
			return false, nil, nil
		}
		in := u.GetObject().(*joulie.NodePowerProfile)
		cur, err := r.cs.Tracker().Get(joulie.SchemeGroupVersion.WithResource("nodepowerprofiles"), "", in.Name)
		if err != nil {
			return true, nil, err
		}
		out := cur.(*joulie.NodePowerProfile).DeepCopy()
		out.Status = in.Status
		return true, out, r.cs.Tracker().Update(joulie.SchemeGroupVersion.WithResource("nodepowerprofiles"), out, "")
	})
	r.bus = logindtest.StartBus(t)
	r.logind = logindtest.Serve(t, r.bus, r.look)
	return r
}

// look runs inside the fake logind's PowerOff: it reads the host's limit
// and the NodePowerProfile's status as they are when the call arrives.
func (r *rig) look() {
	b, _ := os.ReadFile(filepath.Join(r.root, rapltest.ClassDir(zone), limitFile))
	var st joulie.NodePowerProfileStatus
	if p, err := r.cs.JoulieV1alpha1().NodePowerProfiles().Get(context.Background(), node, metav1.GetOptions{}); err == nil {
		st = p.Status
	}
	r.mu.Lock()
	r.seen = append(r.seen, seen{limitUW: strings.TrimSpace(string(b)), status: st})
	r.mu.Unlock()
}

func (r *rig) setBootID(id string) {
	path := filepath.Join(r.root, host.BootIDFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o444); err != nil && !os.IsPermission(err) {
		r.t.Fatal(err)
	}
	_ = os.Chmod(path, 0o644)
	if err := os.WriteFile(path, []byte(id+"\n"), 0o444); err != nil {
		r.t.Fatal(err)
	}
}

// start runs one daemon's worth (host, agent, sync) until the test ends
// or the returned stop is called, as joulie-agentd wires them on a host.
func (r *rig) start() (stop func()) {
	t := r.t
	h, err := host.Open(host.Config{Root: r.root, StateDir: r.stateDir, NVMLLibraryPath: host.Skip, AMDSMILibraryPath: host.Skip})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	a := agent.New(h, agent.Options{Node: node, Interval: 50 * time.Millisecond, FailsafeTimeout: time.Minute, Logger: log,
		Parking: agent.Parking{PowerOff: logind.Client{Address: r.bus}.PowerOff, AllowPowerOff: true,
			// The node is empty: the last check's own tests are the agent's.
			CheckEmpty: func(context.Context) (string, string) { return "", "test" },
			StateDir:   r.stateDir, BootID: host.BootID(r.root)}})
	s := kubesync.NewWithClient(fakeGroup{r.cs.JoulieV1alpha1()}, node, a, kubesync.Options{Interval: 50 * time.Millisecond, Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.Run(ctx) }()
	go func() { defer wg.Done(); _ = s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			_ = a.Stop()
			_ = h.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

// fakeGroup is the fake API group client, which, like the fake clientset,
// cannot stream an informer's initial list as watch events.
type fakeGroup struct {
	client.JoulieV1alpha1Interface
}

func (fakeGroup) IsWatchListSemanticsUnSupported() bool { return true }

func eco(pct float64) joulie.NodePowerProfileSpec {
	return joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco, CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(pct)}}
}

func (r *rig) setSpec(spec joulie.NodePowerProfileSpec) {
	r.t.Helper()
	p, err := r.cs.JoulieV1alpha1().NodePowerProfiles().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	p.Spec, p.Generation = spec, p.Generation+1
	if _, err := r.cs.JoulieV1alpha1().NodePowerProfiles().Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) limit() string {
	b, err := os.ReadFile(filepath.Join(r.root, rapltest.ClassDir(zone), limitFile))
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func (r *rig) status() joulie.NodePowerProfileStatus {
	p, err := r.cs.JoulieV1alpha1().NodePowerProfiles().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return p.Status
}

func (r *rig) seenCalls() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.seen...)
}

func (r *rig) waitFor(what string, ok func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s; status %+v, limit %s, logind calls %d", what, r.status(), r.limit(), len(r.seenCalls()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func parkedSince(t time.Time) joulie.NodePowerProfileSpec {
	s := eco(60)
	s.PowerState, s.PowerStateSince = joulie.PowerParked, ptr.To(metav1.NewTime(t.UTC().Truncate(time.Second)))
	return s
}

func parkCondition(st joulie.NodePowerProfileStatus) metav1.Condition {
	for _, c := range st.Conditions {
		if c.Type == agent.ConditionParked {
			return c
		}
	}
	return metav1.Condition{}
}

// capped waits until the eco target holds the package at 60% of 350 W.
func (r *rig) capped() {
	r.t.Helper()
	r.waitFor("the eco cap on package 0, reported", func() bool {
		st := r.status()
		return r.limit() == "210000000" && st.CPU != nil && st.CPU.Result == joulie.ResultApplied && st.PowerState == joulie.PowerAwake
	})
}

func TestParkRestoresCapsReportsParkedThenPowersOff(t *testing.T) {
	r := newRig(t)
	r.start()
	r.capped()

	r.setSpec(parkedSince(time.Now()))
	r.waitFor("logind's PowerOff", func() bool { return len(r.seenCalls()) > 0 })
	at := r.seenCalls()[0]
	if at.limitUW != originalUW {
		t.Fatalf("package 0's limit was %s µW when PowerOff arrived, want the original %s", at.limitUW, originalUW)
	}
	if at.status.PowerState != joulie.PowerParked || parkCondition(at.status).Reason != agent.ReasonPoweringOff {
		t.Fatalf("status when PowerOff arrived: %+v", at.status)
	}
	if calls := r.logind.Calls(); len(calls) != 1 || calls[0] {
		t.Fatalf("PowerOff calls (interactive flags): %v, want one non-interactive", calls)
	}
	r.waitFor("the status saying logind accepted", func() bool {
		return parkCondition(r.status()).Reason == agent.ReasonPowerOffRequested
	})
	time.Sleep(300 * time.Millisecond) // six more ticks
	if n := len(r.logind.Calls()); n != 1 {
		t.Fatalf("%d PowerOff calls for one park", n)
	}
}

func TestRefusedPowerOffIsReportedAndTheDaemonGoesOn(t *testing.T) {
	r := newRig(t)
	r.logind.Refuse(true)
	r.start()
	r.capped()

	r.setSpec(parkedSince(time.Now()))
	r.waitFor("the refusal on the status", func() bool { return parkCondition(r.status()).Reason == agent.ReasonPowerOffFailed })
	st := r.status()
	if st.PowerState != joulie.PowerAwake || !strings.Contains(parkCondition(st).Message, "Interactive authentication required") ||
		!strings.Contains(parkCondition(st).Message, "CAP_SYS_BOOT") {
		t.Fatalf("status after a refused power-off: %+v", st)
	}
	if l := r.limit(); l != originalUW {
		t.Fatalf("the caps should stay restored after a refused power-off: %s µW", l)
	}
	// The daemon goes on: the controller calls the park off and the eco
	// target is enforced again.
	r.setSpec(eco(60))
	r.capped()
	if n := len(r.logind.Calls()); n != 1 {
		t.Fatalf("%d PowerOff calls", n)
	}
}

// The host powered off for a park and was woken (the next boot) before
// the controller moved the spec on from parked: the agent must not power
// it off again for the same park.
func TestNextBootUnderAStaleParkDoesNotPowerOffAgain(t *testing.T) {
	r := newRig(t)
	stop := r.start()
	r.capped()
	r.setSpec(parkedSince(time.Now()))
	r.waitFor("the first power-off", func() bool { return parkCondition(r.status()).Reason == agent.ReasonPowerOffRequested })
	stop()

	r.setBootID("boot-2")
	r.start()
	r.waitFor("the status of the new boot", func() bool { return parkCondition(r.status()).Reason == agent.ReasonBootedAfterPark })
	time.Sleep(300 * time.Millisecond)
	if n := len(r.logind.Calls()); n != 1 {
		t.Fatalf("the next boot powered off again for the same park: %d PowerOff calls", n)
	}
	if st := r.status(); st.PowerState != joulie.PowerAwake {
		t.Fatalf("status %+v", st)
	}
}
