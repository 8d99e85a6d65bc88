package agent

import (
	"context"
	"fmt"
	"slices"
	"time"

	"joulie.io/joulie/agentd/internal/state"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Parking is what the agent may do for a park and a wake.
type Parking struct {
	// PowerOff asks the host's logind to power off. Nil where the agent
	// must never switch a machine off: simulated nodes, and so pool mode.
	PowerOff func(ctx context.Context) error
	// AllowPowerOff is the host's consent (parking.allowPowerOff): false
	// refuses every park, whatever the cluster asks.
	AllowPowerOff bool
	// CheckEmpty is the last check before the power-off (the daemon's
	// is package lastcheck's): it reads what runs on the node afresh and
	// returns why the host must stay on ("" when nothing forbids the
	// power-off) and what it looked at. Nil refuses every power-off,
	// since nothing could confirm the node empty. (A plain function, so
	// that joulie-agentctl, which links this package, links no
	// Kubernetes API types.)
	CheckEmpty func(ctx context.Context) (why, checked string)
	// StateDir holds the park record (state.ParkRecord); BootID is this
	// boot's ID, which tells the next boot from a restart.
	StateDir string
	BootID   string
	// WakeOnLAN sends one magic packet to a MAC; nil sends none.
	WakeOnLAN func(mac string) error
	// WakeEvery is the least time between two packets to one MAC (10s).
	WakeEvery time.Duration
}

// ParkState is the agent's side of a park: set while the node's
// NodePowerProfile says parked, zero otherwise.
type ParkState struct {
	// Since is the park's spec.powerStateSince.
	Since time.Time
	// Parked is what status.powerState reports: true (parked) while the
	// host is powering off or about to, false (awake) when it stays on.
	Parked bool
	// Reason and Message are the Parked condition's.
	Reason  string
	Message string
	// At is when Reason last changed.
	At time.Time
}

// Reasons of the Parked condition.
const (
	// ReasonPoweringOff: every cap is restored and the park recorded; the
	// agent asks logind to power off once the cluster has this status.
	ReasonPoweringOff = "PoweringOff"
	// ReasonPowerOffRequested: logind accepted the power-off.
	ReasonPowerOffRequested = "PowerOffRequested"
	// ReasonPowerOffFailed: the power-off could not be asked for or
	// logind refused it; the host stays on with its caps restored.
	ReasonPowerOffFailed = "PowerOffFailed"
	// ReasonPowerOffNotAllowed: this agent does not power the host off
	// (parking.allowPowerOff false, a simulated node, a stale target or a
	// park without powerStateSince).
	ReasonPowerOffNotAllowed = "PowerOffNotAllowed"
	// ReasonPowerOffRefused: right before the power-off, the agent's
	// last check found a pod on the node that no DaemonSet controls (or
	// could not confirm the node empty); logind was not asked, and the
	// host stays on with its caps restored until the controller records
	// it awake again.
	ReasonPowerOffRefused = "PowerOffRefused"
	// ReasonBootedAfterPark: this park already powered the host off and
	// the host has booted since (woken while the spec still says parked);
	// it is not powered off again for the same park.
	ReasonBootedAfterPark = "BootedAfterPark"
)

// ConditionParked is the NodePowerProfile status condition of a park.
const ConditionParked = "Parked"

// WakeTarget counts the magic packets sent to one MAC.
type WakeTarget struct {
	MAC string
	// Listed is true while the node's spec.wakeOnLAN lists the MAC.
	Listed    bool
	Packets   int64
	Errors    int64
	LastSent  time.Time
	LastError string
}

// park handles a parked target on a tick: on a park this process has not
// seen yet, it restores every cap and decides whether to power off. The
// power-off itself waits for the status to reach the cluster
// (ParkReported). It returns the park's state.
func (a *Agent) park(spec *joulie.NodePowerProfileSpec, source string, now time.Time) ParkState {
	var since time.Time
	if spec.PowerStateSince != nil {
		since = spec.PowerStateSince.Time
	}
	current := func() (ParkState, bool) {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.parkState, a.parkState.Reason != "" && a.parkState.Since.Equal(since)
	}
	// A park in hand is answered without parkMu, which ParkReported holds
	// while logind answers: the tick must not wait on D-Bus.
	if cur, ok := current(); ok {
		return cur
	}
	a.parkMu.Lock()
	defer a.parkMu.Unlock()
	if cur, ok := current(); ok {
		return cur
	}

	msg := "every cap is restored to its original"
	if err := a.hw.Restore(); err != nil {
		msg = fmt.Sprintf("caps restored except some that stay journaled for the next start (%v)", err)
		a.log.Error("restoring the originals for a park failed in part", "err", err)
	}
	next := a.decidePark(since, source, now)
	next.Message = msg + "; " + next.Message
	next.Since, next.At = since, now
	a.mu.Lock()
	a.parkState = next
	a.mu.Unlock()
	level := a.log.Info
	if !next.Parked {
		level = a.log.Warn
	}
	level("NodePowerProfile says parked", "since", since, "reason", next.Reason, "message", next.Message)
	return next
}

// decidePark decides, once caps are restored, whether this park powers
// the host off. It writes the park record before saying yes.
// a.parkMu is held.
func (a *Agent) decidePark(since time.Time, source string, now time.Time) ParkState {
	p := a.opts.Parking
	refuse := func(why string) ParkState {
		return ParkState{Reason: ReasonPowerOffNotAllowed, Message: why}
	}
	switch {
	case source != SourceCluster:
		return refuse("the desired state is stale (failsafe), so the host is not powered off on it")
	case p.PowerOff == nil:
		return refuse("this node is simulated, and the agent powers off only the host it runs on")
	case !p.AllowPowerOff:
		return refuse("parking.allowPowerOff is false on this host, so the agent does not power it off: " +
			"set it to true, or remove the node's joulie.io/parkable label so the controller stops parking it")
	case since.IsZero():
		return refuse("spec.powerStateSince is not set: the agent powers off only for a dated park, " +
			"so that the next boot can tell it was done")
	}
	rec, ok, err := state.LoadPark(p.StateDir)
	if err != nil {
		return ParkState{Reason: ReasonPowerOffFailed, Message: "not powering off: " + err.Error()}
	}
	// A park is done at most once: the same powerStateSince (or an older
	// one, from a controller whose clock went back) is never acted on
	// again. In this boot, it was already asked for, or failed; in a
	// later boot, the host has been woken while the spec still says
	// parked, and powering it off again would undo the wake.
	if ok && !since.After(rec.Since) {
		switch {
		case rec.BootID != p.BootID:
			done := "powered the host off"
			if rec.Outcome != state.ParkRequested {
				done = "was begun" // and the host rebooted before logind was asked, or after it refused
			}
			return ParkState{Reason: ReasonBootedAfterPark, Message: fmt.Sprintf(
				"this park %s at %s and the host has booted since; it is not powered off again "+
					"for the same park, and enforces nothing until the controller wakes it or parks it anew",
				done, rec.At.UTC().Format(time.RFC3339))}
		case rec.Outcome == state.ParkRequested:
			return ParkState{Parked: true, Reason: ReasonPowerOffRequested, Message: fmt.Sprintf(
				"logind was asked to power off at %s (a restart during the shutdown does not ask again)", rec.At.UTC().Format(time.RFC3339))}
		case rec.Outcome == state.ParkRefused:
			return ParkState{Reason: ReasonPowerOffRefused, Message: "the host was not powered off: " + rec.Error +
				"; the controller records the node awake and may park it anew once it is empty"}
		case rec.Outcome == state.ParkFailed:
			return ParkState{Reason: ReasonPowerOffFailed, Message: "powering off failed and is not retried for this park: " + rec.Error +
				"; once fixed, the controller's next park (a new powerStateSince) powers off"}
		}
		// Pending in this boot: the previous run stopped before asking
		// logind; it was never asked, so ask now.
	}
	rec = state.ParkRecord{Since: since, BootID: p.BootID, At: now.UTC(), Outcome: state.ParkPending}
	if err := state.SavePark(p.StateDir, rec); err != nil {
		return ParkState{Reason: ReasonPowerOffFailed, Message: fmt.Sprintf(
			"not powering off, since the next boot could not tell this park was done: %v", err)}
	}
	return ParkState{Parked: true, Reason: ReasonPoweringOff,
		Message: "the host is powered off through logind once the cluster has this status"}
}

// ParkReported is called once a status saying parked has been written to
// the cluster: when a power-off is due, the agent asks logind for it now.
// It returns at once otherwise. A failure is recorded, reported on the
// next status and not retried for this park; the daemon goes on with the
// caps restored.
func (a *Agent) ParkReported(ctx context.Context) {
	a.parkMu.Lock()
	defer a.parkMu.Unlock()
	a.mu.Lock()
	cur := a.parkState
	a.mu.Unlock()
	if cur.Reason != ReasonPoweringOff {
		return
	}
	p := a.opts.Parking
	// The last word: what runs on the node now, from the kubelet and a
	// live read of the API server. The park record still says pending,
	// so a restart during the check checks again rather than take the
	// power-off as asked.
	why, checked := "nothing is configured to confirm the node is empty", ""
	if p.CheckEmpty != nil {
		why, checked = p.CheckEmpty(ctx)
	}
	now := a.opts.Now()
	if why != "" {
		a.refusePowerOff(cur, now, why)
		return
	}
	rec := state.ParkRecord{Since: cur.Since, BootID: p.BootID, At: now.UTC(), Outcome: state.ParkRequested}
	// Recorded before the call: a restart during the shutdown that
	// follows must not ask again.
	err := state.SavePark(p.StateDir, rec)
	if err == nil {
		a.log.Info("powering the host off through logind for the park", "since", cur.Since, "checked", checked)
		err = p.PowerOff(ctx)
		if err != nil {
			rec.Outcome, rec.Error = state.ParkFailed, err.Error()
			if serr := state.SavePark(p.StateDir, rec); serr != nil {
				a.log.Error("recording the failed power-off failed", "err", serr)
			}
		}
	}
	next := ParkState{Since: cur.Since, At: now, Parked: true, Reason: ReasonPowerOffRequested,
		Message: "every cap is restored to its original; logind accepted the power-off"}
	if err != nil {
		next = ParkState{Since: cur.Since, At: now, Reason: ReasonPowerOffFailed,
			Message: "every cap is restored to its original, but powering off failed, and is not retried for this park: " + err.Error()}
		a.log.Error("the park's power-off failed; the host stays on with its caps restored", "err", err)
	}
	a.setPark(next)
}

// refusePowerOff records that the last check forbade this park's
// power-off: the host stays on, reported awake, and the refusal is not
// retried for this park (the controller parks anew once it is empty).
// a.parkMu is held.
func (a *Agent) refusePowerOff(cur ParkState, now time.Time, why string) {
	p := a.opts.Parking
	rec := state.ParkRecord{Since: cur.Since, BootID: p.BootID, At: now.UTC(), Outcome: state.ParkRefused, Error: why}
	if err := state.SavePark(p.StateDir, rec); err != nil {
		// Without the record a restart checks again, which is safe.
		a.log.Error("recording the refused power-off failed", "err", err)
	}
	a.mu.Lock()
	a.powerOffRefusals++
	a.mu.Unlock()
	a.log.Warn("not powering the host off for the park: the last check found work on the node", "since", cur.Since, "why", why)
	a.setPark(ParkState{Since: cur.Since, At: now, Reason: ReasonPowerOffRefused,
		Message: "every cap is restored to its original, but the host was not powered off: " + why})
}

// setPark makes next the park's state and reports it at once.
func (a *Agent) setPark(next ParkState) {
	a.mu.Lock()
	a.parkState = next
	if a.snap.Park.Reason != "" {
		a.snap.Park = next
	}
	a.mu.Unlock()
	a.Kick()
}

// wake sends the magic packets the spec asks for, at most one per MAC
// every WakeEvery.
func (a *Agent) wake(spec *joulie.NodePowerProfileSpec, source string, now time.Time) []WakeTarget {
	p := a.opts.Parking
	var listed []string
	if spec != nil && source == SourceCluster && p.WakeOnLAN != nil {
		listed = spec.WakeOnLAN
	}
	a.mu.Lock()
	due := make([]string, 0, len(listed))
	for _, t := range a.wol {
		t.Listed = false
	}
	for _, mac := range listed {
		t := a.wol[mac]
		if t == nil {
			t = &WakeTarget{MAC: mac}
			a.wol[mac] = t
		}
		t.Listed = true
		if t.LastSent.IsZero() || now.Sub(t.LastSent) >= p.WakeEvery {
			t.LastSent = now // also for a failure: no faster retry
			due = append(due, mac)
		}
	}
	a.mu.Unlock()

	for _, mac := range due {
		err := p.WakeOnLAN(mac)
		a.mu.Lock()
		t := a.wol[mac]
		first := t.Packets == 0 && t.Errors == 0
		prevErr := t.LastError
		if err != nil {
			t.Errors++
			t.LastError = err.Error()
		} else {
			t.Packets++
			t.LastError = ""
		}
		a.mu.Unlock()
		switch {
		case err != nil && err.Error() != prevErr:
			a.log.Warn("sending a Wake-on-LAN packet failed; retrying while the MAC is listed", "mac", mac, "err", err)
		case err == nil && (first || prevErr != ""):
			a.log.Info("sending Wake-on-LAN packets while the NodePowerProfile lists the MAC", "mac", mac, "every", p.WakeEvery)
		}
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]WakeTarget, 0, len(a.wol))
	for _, t := range a.wol {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(x, y WakeTarget) int {
		if x.MAC < y.MAC {
			return -1
		}
		if x.MAC > y.MAC {
			return 1
		}
		return 0
	})
	return out
}
