// Package agent is joulie-agentd's reconcile loop: it holds the node's
// desired power target (from the cluster's NodePowerProfile, from the
// standalone profile of the config file, or from an operator's local
// override), enforces it on every tick through the hardware layer, applies
// the failsafe when the desired state goes stale, and restores the host's
// original settings on start after a crash and on stop. For a park it
// restores every cap and powers the host off once (park.go); for a wake
// it sends Wake-on-LAN packets to the MACs its profile lists.
//
// Everything else (the Kubernetes sync, the local socket, metrics, systemd)
// reads the agent through Snapshot and feeds it through SetDesired; none of
// them touch the hardware.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/utils/ptr"

	"joulie.io/joulie/agentd/internal/enforce"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Hardware is the host side the agent drives: *host.Host on a real
// machine, an HTTP-backed host for simulated nodes.
type Hardware interface {
	// Enforce applies spec and measures the host in the same pass. A nil
	// spec touches no control and only measures: enforcement is paused.
	Enforce(now time.Time, spec *joulie.NodePowerProfileSpec) enforce.Result
	// Hardware is the host's NodeHardware status now.
	Hardware(now time.Time) joulie.NodeHardwareStatus
	// PendingOriginals is how many changed controls the journal records.
	PendingOriginals() int
	Restore() error
	Close() error
}

// Failsafe modes (config key failsafe).
const (
	// FailsafeKeep keeps enforcing the last target received.
	FailsafeKeep = "keep"
	// FailsafePerformance lifts the node to performance: caps at 100%.
	FailsafePerformance = "performance"
	// FailsafeRestore puts the host's original settings back.
	FailsafeRestore = "restore"
)

// Where the target in force came from.
const (
	SourceNone       = "none"       // nothing asked yet
	SourceCluster    = "cluster"    // the node's NodePowerProfile
	SourceStandalone = "standalone" // standalone.profile of the config
	SourceOverride   = "override"   // joulie-agentctl profile set
	SourceFailsafe   = "failsafe"   // the desired state went stale
	SourcePaused     = "paused"     // restored by the operator
)

// Options configure an Agent.
type Options struct {
	Node     string
	Interval time.Duration
	// Failsafe is keep, performance or restore; FailsafeTimeout is how
	// long the cluster's target may go unconfirmed before it applies.
	Failsafe        string
	FailsafeTimeout time.Duration
	// KeepCapsOnStop leaves the caps in force on stop and after a crash.
	KeepCapsOnStop bool
	// Standalone is the target of standalone mode; nil in cluster mode.
	Standalone *joulie.NodePowerProfileSpec
	// Parking says what a parked target and a Wake-on-LAN list may do.
	Parking Parking
	Version string
	Now     func() time.Time
	Logger  *slog.Logger
	// PerformancePods, when set, names the active performance pods bound
	// to the node, or says why they are not known; the eco guard
	// (ecoguard.go) reads it on every tick that enforces an eco target.
	PerformancePods func() ([]string, error)
	// Ticked, when set, is called after every tick's snapshot is taken,
	// on the tick's goroutine: it must return at once (the per-pod energy
	// meter only signals its own loop).
	Ticked func()
}

// Agent is one node's reconcile loop. Its methods are safe for concurrent
// use.
type Agent struct {
	opts Options
	hw   Hardware
	log  *slog.Logger
	kick chan struct{}

	mu            sync.Mutex
	desired       *joulie.NodePowerProfileSpec // from the cluster
	generation    int64
	desiredAt     time.Time // last time the cluster confirmed the target
	override      *joulie.NodePowerProfileSpec
	paused        bool
	syncAt        time.Time
	syncErr       string
	failsafeSince time.Time
	failsafeDone  bool // the restore failsafe ran
	snap          Snapshot
	parkState     ParkState
	wol           map[string]*WakeTarget // by MAC, every one ever listed
	// powerOffRefusals counts the parks whose last check forbade the
	// power-off, since the agent started.
	powerOffRefusals int64

	// parkMu serializes the steps of a park (restore, record, power-off),
	// which run outside mu.
	parkMu sync.Mutex
}

// Snapshot is the agent's state after its last tick.
type Snapshot struct {
	Node       string
	Version    string
	Standalone bool
	// Spec is the target in force (nil: nothing enforced), Source where
	// it came from, Generation the NodePowerProfile generation it answers.
	Spec       *joulie.NodePowerProfileSpec
	Source     string
	Generation int64
	// Result is what the last tick did and measured.
	enforce.Result
	// LastReconcile is when the last tick ran; LastSync when the cluster
	// last answered, SyncError its last error.
	LastReconcile time.Time
	LastSync      time.Time
	SyncError     string
	Failsafe      FailsafeState
	// Park is the agent's side of a park; zero unless the target says
	// parked.
	Park ParkState
	// WakeOnLAN counts the magic packets sent, per MAC ever listed.
	WakeOnLAN []WakeTarget
	// PowerOffRefusals counts the parks whose last check found work on
	// the node, or could not confirm it empty, so the host stayed on.
	PowerOffRefusals int64
	// Guard is what the eco guard did on the tick; when it refused, Spec
	// is the performance target enforced instead of the eco one.
	Guard EcoGuard
}

// PowerState is the power state the agent reports on its status:
// parked while it powers the host off, awake otherwise.
func (s Snapshot) PowerState() joulie.PowerState {
	if s.Park.Parked {
		return joulie.PowerParked
	}
	return joulie.PowerAwake
}

// FailsafeState says whether the failsafe is in force and why.
type FailsafeState struct {
	Active bool
	Mode   string
	Reason string
	Since  time.Time
}

// New returns an agent over hw.
func New(hw Hardware, opts Options) *Agent {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Second
	}
	if opts.Failsafe == "" {
		opts.Failsafe = FailsafeKeep
	}
	if opts.Parking.WakeEvery <= 0 {
		opts.Parking.WakeEvery = 10 * time.Second
	}
	a := &Agent{opts: opts, hw: hw, log: opts.Logger, kick: make(chan struct{}, 1), wol: map[string]*WakeTarget{}}
	a.snap = Snapshot{Node: opts.Node, Version: opts.Version, Standalone: opts.Standalone != nil, Source: SourceNone}
	return a
}

// Start prepares the host before the first tick: originals left by a run
// that did not stop cleanly are restored (unless caps are to be kept),
// then the first reconcile runs, so that readiness means "enforcing".
// When ctx ends first (a stop signal during start-up), the first
// reconcile is skipped, and Start returns ctx's cause whenever ctx ended
// before it returns: the caller starts nothing more, and its Stop puts
// back whatever has been written.
func (a *Agent) Start(ctx context.Context) error {
	if n := a.hw.PendingOriginals(); n > 0 {
		if a.opts.KeepCapsOnStop {
			a.log.Warn("the previous run left controls changed; keeping them (keepCapsOnStop)", "controls", n)
		} else {
			a.log.Warn("the previous run did not stop cleanly; restoring the original power settings first", "controls", n)
			if err := a.hw.Restore(); err != nil {
				a.log.Error("restoring originals after an unclean stop failed; they stay recorded for the next attempt. "+
					"A control that is gone for good can be dropped from the journal, once the daemon is stopped, with joulie-agentctl restore --forget ID", "err", err)
			}
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	a.Reconcile()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// Run ticks every interval, and at once when the target changes, until ctx
// ends. It does not restore; Stop does.
func (a *Agent) Run(ctx context.Context) {
	t := time.NewTicker(a.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.kick:
		}
		a.Reconcile()
	}
}

// Stop puts the original settings back unless caps are to be kept.
func (a *Agent) Stop() error {
	if a.opts.KeepCapsOnStop {
		a.log.Info("stopping with the caps in force (keepCapsOnStop)")
		return nil
	}
	if err := a.hw.Restore(); err != nil {
		return fmt.Errorf("restore original power settings on stop: %w\n"+
			"The originals that could not be restored stay recorded; a control that is gone for good "+
			"(a RAPL zone or GPU removed) can be dropped with joulie-agentctl restore --forget ID", err)
	}
	a.log.Info("original power settings restored")
	return nil
}

// SetDesired records the cluster's target for the node (its
// NodePowerProfile spec and generation) and confirms that the cluster is
// reachable. A changed target is applied at once.
func (a *Agent) SetDesired(spec joulie.NodePowerProfileSpec, generation int64) {
	a.mu.Lock()
	now := a.opts.Now()
	changed := a.desired == nil || generation != a.generation
	a.desired, a.generation, a.desiredAt = ptr.To(*spec.DeepCopy()), generation, now
	a.syncAt, a.syncErr = now, ""
	if changed {
		a.paused = false
	}
	a.mu.Unlock()
	if changed {
		a.Kick()
	}
}

// ClearDesired records that the node has no NodePowerProfile: nothing is
// desired, so the originals are put back on the next tick.
func (a *Agent) ClearDesired() {
	a.mu.Lock()
	now := a.opts.Now()
	changed := a.desired != nil
	a.desired, a.generation, a.desiredAt, a.syncAt, a.syncErr = nil, 0, now, now, ""
	a.mu.Unlock()
	if changed {
		a.Kick()
	}
}

// SyncSucceeded records that the cluster answered without a new target
// (a resync found the same generation): the target is still confirmed.
func (a *Agent) SyncSucceeded() {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.opts.Now()
	a.syncAt, a.syncErr = now, ""
	if a.desired != nil || !a.desiredAt.IsZero() {
		a.desiredAt = now
	}
}

// SyncFailed records that the cluster could not be reached; the last
// target stays in force until the failsafe timeout.
func (a *Agent) SyncFailed(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.syncErr = err.Error()
}

// ErrNotStandalone is returned for a local override in cluster mode.
var ErrNotStandalone = errors.New("the profile is set by the cluster (NodePowerProfile); change it with kubectl")

// SetOverride sets a local target in standalone mode; nil clears it, back
// to the config's standalone profile.
func (a *Agent) SetOverride(spec *joulie.NodePowerProfileSpec) error {
	if a.opts.Standalone == nil {
		return ErrNotStandalone
	}
	a.mu.Lock()
	if spec != nil {
		spec = spec.DeepCopy()
	}
	a.override, a.paused = spec, false
	a.mu.Unlock()
	a.Kick()
	return nil
}

// RestoreNow puts the originals back at an operator's request and pauses
// enforcement until the target changes (a new generation, an override, a
// reload), so the next tick does not cap the host again.
func (a *Agent) RestoreNow() error {
	a.mu.Lock()
	a.paused = true
	a.mu.Unlock()
	err := a.hw.Restore()
	a.Reconcile()
	return err
}

// Resume lifts a pause (on SIGHUP).
func (a *Agent) Resume() {
	a.mu.Lock()
	a.paused = false
	a.mu.Unlock()
	a.Kick()
}

// Kick asks for a tick now.
func (a *Agent) Kick() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Snapshot returns the state after the last tick.
func (a *Agent) Snapshot() Snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.snap
	s.LastSync, s.SyncError = a.syncAt, a.syncErr
	return s
}

// HardwareStatus is the host's NodeHardware status now.
func (a *Agent) HardwareStatus() joulie.NodeHardwareStatus {
	return a.hw.Hardware(a.opts.Now())
}

// target decides what to enforce now. a.mu is held.
func (a *Agent) target(now time.Time) (*joulie.NodePowerProfileSpec, string, FailsafeState) {
	if a.paused {
		return nil, SourcePaused, FailsafeState{}
	}
	if a.opts.Standalone != nil {
		if a.override != nil {
			return a.override, SourceOverride, FailsafeState{}
		}
		return a.opts.Standalone, SourceStandalone, FailsafeState{}
	}
	if a.desiredAt.IsZero() {
		return nil, SourceNone, FailsafeState{}
	}
	stale := now.Sub(a.desiredAt)
	if stale <= a.opts.FailsafeTimeout || a.opts.FailsafeTimeout <= 0 {
		a.failsafeSince, a.failsafeDone = time.Time{}, false
		if a.desired == nil {
			return nil, SourceNone, FailsafeState{}
		}
		return a.desired, SourceCluster, FailsafeState{}
	}
	if a.failsafeSince.IsZero() {
		a.failsafeSince = now
	}
	fs := FailsafeState{Active: true, Mode: a.opts.Failsafe, Since: a.failsafeSince,
		Reason: fmt.Sprintf("no desired state from the cluster for %s (failsafeTimeout %s)", stale.Round(time.Second), a.opts.FailsafeTimeout)}
	if a.syncErr != "" {
		fs.Reason += ": " + a.syncErr
	}
	switch a.opts.Failsafe {
	case FailsafePerformance:
		return &joulie.NodePowerProfileSpec{
			Profile: joulie.ProfilePerformance,
			CPU:     &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(100.0)},
			GPU:     &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(100.0)}},
		}, SourceFailsafe, fs
	case FailsafeRestore:
		return nil, SourceFailsafe, fs
	default:
		return a.desired, SourceFailsafe, fs
	}
}

// Reconcile runs one tick: decide the target, enforce it, measure.
func (a *Agent) Reconcile() {
	a.mu.Lock()
	now := a.opts.Now()
	spec, source, fs := a.target(now)
	generation := a.generation
	prev := a.snap
	restoreFailsafe := fs.Active && fs.Mode == FailsafeRestore && !a.failsafeDone
	if restoreFailsafe {
		a.failsafeDone = true
	}
	a.mu.Unlock()

	if fs.Active && !prev.Failsafe.Active {
		a.log.Warn("failsafe in force", "mode", fs.Mode, "reason", fs.Reason)
	} else if !fs.Active && prev.Failsafe.Active {
		a.log.Info("desired state is fresh again; failsafe lifted")
	}
	if restoreFailsafe {
		if err := a.hw.Restore(); err != nil {
			a.log.Error("failsafe restore failed", "err", err)
		}
	}
	var park ParkState
	parked := spec != nil && spec.PowerState == joulie.PowerParked
	if parked {
		park = a.park(spec, source, now)
	} else {
		a.mu.Lock()
		if a.parkState.Reason != "" {
			a.log.Info("the target no longer says parked; enforcing it again", "source", source)
		}
		a.parkState = ParkState{}
		a.mu.Unlock()
	}
	wol := a.wake(spec, source, now)
	spec, guard := a.guardEco(spec, source)
	if guard.Refused {
		guard.Since = now
		if prev.Guard.Refused {
			guard.Since = prev.Guard.Since
		}
	}
	a.logGuard(prev.Guard, guard)

	var res enforce.Result
	// An empty spec lifts every cap (the enforcers restore originals);
	// after a restore there is nothing left to lift, only to measure. A
	// parked host keeps its originals: the park restored them.
	if !parked && (spec != nil || source != SourcePaused && !restoreFailsafe) {
		enforced := joulie.NodePowerProfileSpec{}
		if spec != nil {
			enforced = *spec
		}
		res = a.hw.Enforce(now, &enforced)
	} else {
		res = a.hw.Enforce(now, nil)
		res.CPU = joulie.ControlStatus{Backend: joulie.BackendNone, Result: joulie.ResultNone, Message: "original settings restored; enforcement paused"}
		if parked {
			res.CPU.Message = "original settings restored for the park; nothing is enforced while the node is parked"
		}
		res.GPU = res.CPU
	}
	res.CPU.LastTransitionTime = transition(prev.CPU, res.CPU, now)
	res.GPU.LastTransitionTime = transition(prev.GPU, res.GPU, now)

	a.mu.Lock()
	a.snap = Snapshot{
		Node: a.opts.Node, Version: a.opts.Version, Standalone: a.opts.Standalone != nil,
		Spec: spec, Source: source, Generation: generation, Result: res,
		LastReconcile: now, Failsafe: fs, Park: park, WakeOnLAN: wol, Guard: guard, PowerOffRefusals: a.powerOffRefusals,
	}
	a.mu.Unlock()
	if a.opts.Ticked != nil {
		a.opts.Ticked()
	}

	if res.CPU.Result != prev.CPU.Result || res.CPU.Backend != prev.CPU.Backend {
		a.log.Info("CPU control", "result", res.CPU.Result, "backend", res.CPU.Backend, "message", res.CPU.Message)
	}
	if res.GPU.Result != prev.GPU.Result || res.GPU.Backend != prev.GPU.Backend {
		a.log.Info("GPU control", "result", res.GPU.Result, "backend", res.GPU.Backend, "message", res.GPU.Message)
	}
}

// Reconfigure applies the options a SIGHUP reload may change while the
// agent runs: failsafe, its timeout, keepCapsOnStop, the standalone
// profile and parking.allowPowerOff (for the next park). A pause by the
// operator ends: the reload is a new target. The interval takes effect
// after Run is restarted.
func (a *Agent) Reconfigure(o Options) {
	a.parkMu.Lock()
	a.opts.Parking.AllowPowerOff = o.Parking.AllowPowerOff
	a.parkMu.Unlock()
	a.mu.Lock()
	a.opts.Failsafe, a.opts.FailsafeTimeout, a.opts.KeepCapsOnStop = o.Failsafe, o.FailsafeTimeout, o.KeepCapsOnStop
	if a.opts.Failsafe == "" {
		a.opts.Failsafe = FailsafeKeep
	}
	if (a.opts.Standalone == nil) == (o.Standalone == nil) && o.Standalone != nil {
		a.opts.Standalone = o.Standalone.DeepCopy()
	}
	a.paused = false
	a.mu.Unlock()
	a.Kick()
}
