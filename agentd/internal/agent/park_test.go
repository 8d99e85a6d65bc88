package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// powerOffs records the agent's calls to logind, and answers the last
// check before them with blockers (none: the node is empty).
type powerOffs struct {
	calls    int
	err      error
	checks   int
	blockers []string
}

func (p *powerOffs) powerOff(context.Context) error { p.calls++; return p.err }

func (p *powerOffs) checkEmpty(context.Context) (string, string) {
	p.checks++
	if len(p.blockers) == 0 {
		return "", "test"
	}
	return strings.Join(p.blockers, "; "), "test"
}

func parkedAt(t time.Time) joulie.NodePowerProfileSpec {
	s := eco(60)
	s.PowerState, s.PowerStateSince = joulie.PowerParked, &metav1.Time{Time: t}
	return s
}

// parkingAgent is a cluster-mode agent on a host that may power off, with
// the park record in dir, in boot bootID.
func parkingAgent(hw *fakeHW, c *clock, off *powerOffs, dir, bootID string) *Agent {
	return newAgent(hw, c, func(o *Options) {
		o.Parking = Parking{PowerOff: off.powerOff, CheckEmpty: off.checkEmpty, AllowPowerOff: true, StateDir: dir, BootID: bootID}
	})
}

func wantPark(t *testing.T, a *Agent, reason string, parked bool) ParkState {
	t.Helper()
	s := a.Snapshot()
	st := s.ProfileStatus(nil)
	wantState := joulie.PowerAwake
	if parked {
		wantState = joulie.PowerParked
	}
	if s.Park.Reason != reason || st.PowerState != wantState {
		t.Fatalf("park %+v, status powerState %q; want reason %s, %s", s.Park, st.PowerState, reason, wantState)
	}
	if len(st.Conditions) != 1 || st.Conditions[0].Type != ConditionParked || st.Conditions[0].Reason != reason ||
		(st.Conditions[0].Status == metav1.ConditionTrue) != parked {
		t.Fatalf("conditions %+v", st.Conditions)
	}
	return s.Park
}

func TestParkRestoresReportsThenPowersOffOnce(t *testing.T) {
	hw, c, off, dir := &fakeHW{pending: 4}, &clock{t0}, &powerOffs{}, t.TempDir()
	a := parkingAgent(hw, c, off, dir, "boot-1")
	a.SetDesired(eco(60), 1)
	a.Reconcile()
	enforced := len(hw.enforced)

	a.SetDesired(parkedAt(t0), 2)
	a.Reconcile()
	if hw.restores != 1 || len(hw.enforced) != enforced {
		t.Fatalf("a park restores every cap once and enforces nothing: %d restores, %d enforcements", hw.restores, len(hw.enforced)-enforced)
	}
	wantPark(t, a, ReasonPoweringOff, true)
	if off.calls != 0 {
		t.Fatal("powered off before the status saying parked reached the cluster")
	}
	a.ParkReported(context.Background())
	if off.calls != 1 {
		t.Fatalf("%d power-offs once the status was written", off.calls)
	}
	wantPark(t, a, ReasonPowerOffRequested, true)

	c.t = c.t.Add(time.Minute)
	a.Reconcile()
	a.ParkReported(context.Background())
	if off.calls != 1 || hw.restores != 1 || len(hw.enforced) != enforced {
		t.Fatalf("later ticks of the same park: %d power-offs, %d restores", off.calls, hw.restores)
	}
	if s := a.Snapshot(); s.CPU.Result != joulie.ResultNone || !strings.Contains(s.CPU.Message, "park") {
		t.Fatalf("CPU status while parked: %+v", s.CPU)
	}
}

// The daemon restarted during the shutdown it asked for (same boot): the
// park is not asked for again, and the status still says parked.
func TestRestartDuringShutdownDoesNotPowerOffAgain(t *testing.T) {
	c, off, dir := &clock{t0}, &powerOffs{}, t.TempDir()
	first := parkingAgent(&fakeHW{}, c, off, dir, "boot-1")
	first.SetDesired(parkedAt(t0), 2)
	first.Reconcile()
	first.ParkReported(context.Background())

	again := parkingAgent(&fakeHW{}, c, off, dir, "boot-1")
	again.Start(context.Background())
	again.SetDesired(parkedAt(t0), 2)
	again.Reconcile()
	again.ParkReported(context.Background())
	if off.calls != 1 {
		t.Fatalf("%d power-offs for one park", off.calls)
	}
	wantPark(t, again, ReasonPowerOffRequested, true)
}

// The host was woken (next boot) before the controller moved the spec on
// from parked: the agent stays on and says so; a new park powers off.
func TestNextBootWithTheSameParkStaysOn(t *testing.T) {
	c, off, dir := &clock{t0}, &powerOffs{}, t.TempDir()
	first := parkingAgent(&fakeHW{}, c, off, dir, "boot-1")
	first.SetDesired(parkedAt(t0), 2)
	first.Reconcile()
	first.ParkReported(context.Background())

	c.t = t0.Add(10 * time.Minute)
	hw := &fakeHW{}
	woken := parkingAgent(hw, c, off, dir, "boot-2")
	woken.Start(context.Background())
	hw.enforced = nil // the start-up tick, before any profile, lifts the caps
	woken.SetDesired(parkedAt(t0), 2)
	woken.Reconcile()
	woken.ParkReported(context.Background())
	if off.calls != 1 {
		t.Fatalf("the next boot powered off again for the same park: %d power-offs", off.calls)
	}
	p := wantPark(t, woken, ReasonBootedAfterPark, false)
	if !strings.Contains(p.Message, "not powered off again") {
		t.Fatalf("message %q", p.Message)
	}
	if len(hw.enforced) != 0 {
		t.Fatalf("a host woken under a parked spec enforces nothing: %+v", hw.enforced)
	}

	// The controller wakes it: the target is enforced again.
	waking := eco(60)
	waking.PowerState = joulie.PowerWaking
	woken.SetDesired(waking, 3)
	woken.Reconcile()
	if s := woken.Snapshot(); s.Park.Reason != "" || s.ProfileStatus(nil).Conditions != nil || len(hw.enforced) != 1 {
		t.Fatalf("after the wake: park %+v, enforced %d", s.Park, len(hw.enforced))
	}

	// A later park, dated after the first, powers off.
	woken.SetDesired(parkedAt(t0.Add(time.Hour)), 4)
	woken.Reconcile()
	woken.ParkReported(context.Background())
	if off.calls != 2 {
		t.Fatalf("a new park did not power off: %d power-offs", off.calls)
	}
}

func TestRefusedPowerOffIsReportedAndNotRetried(t *testing.T) {
	hw, c, dir := &fakeHW{}, &clock{t0}, t.TempDir()
	off := &powerOffs{err: errors.New("logind PowerOff refused: Interactive authentication required.")}
	a := parkingAgent(hw, c, off, dir, "boot-1")
	a.SetDesired(parkedAt(t0), 2)
	a.Reconcile()
	a.ParkReported(context.Background())
	p := wantPark(t, a, ReasonPowerOffFailed, false)
	if !strings.Contains(p.Message, "Interactive authentication required") || !strings.Contains(p.Message, "every cap is restored") {
		t.Fatalf("message %q", p.Message)
	}
	a.Reconcile()
	a.ParkReported(context.Background())
	restarted := parkingAgent(hw, c, off, dir, "boot-1")
	restarted.SetDesired(parkedAt(t0), 2)
	restarted.Reconcile()
	restarted.ParkReported(context.Background())
	if off.calls != 1 {
		t.Fatalf("%d power-off attempts for one park", off.calls)
	}
	wantPark(t, restarted, ReasonPowerOffFailed, false)
}

// The last check right before the power-off: a pod on the node (or a
// node that cannot be confirmed empty) keeps the host on, reported awake
// with the reason, counted, and not retried for the same park, neither
// by this process nor after a restart in the same boot.
func TestLastCheckRefusesThePowerOffWhileWorkIsOnTheNode(t *testing.T) {
	hw, c, dir := &fakeHW{}, &clock{t0}, t.TempDir()
	off := &powerOffs{blockers: []string{"pod ns/pinned is bound to the node (phase Pending) and no DaemonSet controls it"}}
	a := parkingAgent(hw, c, off, dir, "boot-1")
	a.SetDesired(parkedAt(t0), 2)
	a.Reconcile()
	wantPark(t, a, ReasonPoweringOff, true)
	a.ParkReported(context.Background())
	if off.calls != 0 || off.checks != 1 {
		t.Fatalf("%d power-offs after %d checks; want none after one", off.calls, off.checks)
	}
	a.Reconcile()
	p := wantPark(t, a, ReasonPowerOffRefused, false)
	if !strings.Contains(p.Message, "pod ns/pinned is bound") || !strings.Contains(p.Message, "every cap is restored") {
		t.Fatalf("message %q", p.Message)
	}
	if got := a.Snapshot().PowerOffRefusals; got != 1 {
		t.Fatalf("%d refusals counted, want 1", got)
	}
	// The pod leaves: the same park still does not power off.
	off.blockers = nil
	a.ParkReported(context.Background())
	restarted := parkingAgent(hw, c, off, dir, "boot-1")
	restarted.SetDesired(parkedAt(t0), 2)
	restarted.Reconcile()
	restarted.ParkReported(context.Background())
	if off.calls != 0 {
		t.Fatalf("the refused park powered off later: %d power-offs", off.calls)
	}
	wantPark(t, restarted, ReasonPowerOffRefused, false)
	// A new park, once the node is empty, powers off.
	restarted.SetDesired(parkedAt(t0.Add(time.Hour)), 3)
	restarted.Reconcile()
	restarted.ParkReported(context.Background())
	if off.calls != 1 {
		t.Fatalf("a new park of the empty node: %d power-offs, want 1", off.calls)
	}
}

// Without a way to check the node, nothing is powered off.
func TestNoLastCheckNoPowerOff(t *testing.T) {
	hw, c, off := &fakeHW{}, &clock{t0}, &powerOffs{}
	a := newAgent(hw, c, func(o *Options) {
		o.Parking = Parking{PowerOff: off.powerOff, AllowPowerOff: true, StateDir: t.TempDir(), BootID: "b"}
	})
	a.SetDesired(parkedAt(t0), 2)
	a.Reconcile()
	a.ParkReported(context.Background())
	a.Reconcile()
	p := wantPark(t, a, ReasonPowerOffRefused, false)
	if off.calls != 0 || !strings.Contains(p.Message, "nothing is configured to confirm the node is empty") {
		t.Fatalf("%d power-offs, message %q", off.calls, p.Message)
	}
}

// A restart between the park record and the last check checks again.
func TestARestartBeforeTheLastCheckChecksAgain(t *testing.T) {
	hw, c, dir := &fakeHW{}, &clock{t0}, t.TempDir()
	off := &powerOffs{}
	first := parkingAgent(hw, c, off, dir, "boot-1")
	first.SetDesired(parkedAt(t0), 2)
	first.Reconcile() // the record says pending; the process dies here
	off.blockers = []string{"pod ns/late is bound to the node"}
	restarted := parkingAgent(hw, c, off, dir, "boot-1")
	restarted.SetDesired(parkedAt(t0), 2)
	restarted.Reconcile()
	restarted.ParkReported(context.Background())
	if off.calls != 0 || off.checks != 1 {
		t.Fatalf("%d power-offs after %d checks", off.calls, off.checks)
	}
	restarted.Reconcile()
	wantPark(t, restarted, ReasonPowerOffRefused, false)
}

func TestParksThatDoNotPowerOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Parking, *joulie.NodePowerProfileSpec)
		says string
	}{
		{"allowPowerOff false", func(p *Parking, _ *joulie.NodePowerProfileSpec) { p.AllowPowerOff = false }, "parking.allowPowerOff is false"},
		{"simulated node", func(p *Parking, _ *joulie.NodePowerProfileSpec) { p.PowerOff = nil }, "simulated"},
		{"no powerStateSince", func(_ *Parking, s *joulie.NodePowerProfileSpec) { s.PowerStateSince = nil }, "powerStateSince is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hw, off := &fakeHW{}, &powerOffs{}
			spec := parkedAt(t0)
			p := Parking{PowerOff: off.powerOff, CheckEmpty: off.checkEmpty, AllowPowerOff: true, StateDir: t.TempDir(), BootID: "b"}
			tc.mod(&p, &spec)
			a := newAgent(hw, &clock{t0}, func(o *Options) { o.Parking = p })
			a.SetDesired(spec, 2)
			a.Reconcile()
			a.ParkReported(context.Background())
			ps := wantPark(t, a, ReasonPowerOffNotAllowed, false)
			if off.calls != 0 || hw.restores != 1 || !strings.Contains(ps.Message, tc.says) {
				t.Fatalf("%d power-offs, %d restores, message %q", off.calls, hw.restores, ps.Message)
			}
		})
	}
}

// A park called off before its status reached the cluster never powers
// off, and the target is enforced again.
func TestParkCalledOffBeforeReported(t *testing.T) {
	hw, c, off := &fakeHW{}, &clock{t0}, &powerOffs{}
	a := parkingAgent(hw, c, off, t.TempDir(), "boot-1")
	a.SetDesired(parkedAt(t0), 2)
	a.Reconcile()
	a.SetDesired(eco(60), 3)
	a.Reconcile()
	a.ParkReported(context.Background())
	if off.calls != 0 || len(hw.enforced) != 1 || a.Snapshot().ProfileStatus(nil).PowerState != joulie.PowerAwake {
		t.Fatalf("%d power-offs, %d enforcements", off.calls, len(hw.enforced))
	}
}

func TestWakeOnLANIsRateLimitedPerMAC(t *testing.T) {
	c := &clock{t0}
	var sent []string
	a := newAgent(&fakeHW{}, c, func(o *Options) {
		o.Parking.WakeOnLAN = func(mac string) error {
			sent = append(sent, mac)
			if mac == "bad" {
				return errors.New("not a MAC address")
			}
			return nil
		}
	})
	spec := eco(60)
	spec.WakeOnLAN = []string{"0c:c4:7a:12:34:56", "bad"}
	a.SetDesired(spec, 1)
	for range 5 { // 20 s of 5-second ticks: packets at 0, 10 and 20 s
		a.Reconcile()
		c.t = c.t.Add(5 * time.Second)
	}
	s := a.Snapshot()
	if len(sent) != 6 || len(s.WakeOnLAN) != 2 {
		t.Fatalf("sent %q, targets %+v", sent, s.WakeOnLAN)
	}
	if w := s.WakeOnLAN[0]; w.MAC != "0c:c4:7a:12:34:56" || w.Packets != 3 || !w.Listed {
		t.Fatalf("%+v", w)
	}
	if w := s.WakeOnLAN[1]; w.Errors != 3 || w.Packets != 0 || w.LastError == "" {
		t.Fatalf("%+v", w)
	}

	// No longer listed: no more packets; the counts stay for the metric.
	spec.WakeOnLAN = nil
	a.SetDesired(spec, 2)
	c.t = c.t.Add(time.Minute)
	a.Reconcile()
	if s := a.Snapshot(); len(sent) != 6 || s.WakeOnLAN[0].Listed || s.WakeOnLAN[0].Packets != 3 {
		t.Fatalf("sent %d, %+v", len(sent), s.WakeOnLAN)
	}
}
