package enforce

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	"joulie.io/joulie/agentd/internal/backend"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Package is one CPU package as the RAPL backend found it.
type Package struct {
	// ID is the physical package number.
	ID int
	// MaxWatts is the zone's maximum long-term limit; 0 when the kernel
	// gives none.
	MaxWatts float64
	// Writable is false when the zone's limits are read-only.
	Writable bool
	// Reason says why the limits are not writable, in the backend's words.
	Reason string
}

// PackageCapper sets RAPL package limits (implemented by package rapl).
type PackageCapper interface {
	// SetPackageCap clamps, journals the original, writes and reads back
	// the package's long-term limit, returning the limit in force.
	SetPackageCap(id int, watts float64) (float64, error)
}

// Throttler is the DVFS fallback (implemented by package dvfs).
type Throttler interface {
	// Regulate runs one control step toward capW from the observed
	// package power and returns the throttle percentage in force.
	Regulate(now time.Time, observedW, capW float64) (throttlePct float64, err error)
	// SetThrottlePct holds a fixed throttle percentage (the percent path).
	SetThrottlePct(pct float64) error
	// Reset lifts the throttle and puts every CPU's ceiling back.
	Reset() error
}

// PowerMeter measures the CPUs' power, summed over packages.
type PowerMeter interface {
	// CPUPowerWatts returns the power since the previous call; ok is false
	// while no reading is available (the first call, a counter reset).
	CPUPowerWatts(now time.Time) (watts float64, ok bool)
}

// CPUConfig wires a CPUEnforcer to the host's backends; a nil backend is
// one the host does not have.
type CPUConfig struct {
	// Packages are the packages the package capper controls; empty
	// without one.
	Packages []Package
	// RAPL caps packages directly: the powercap RAPL backend, or on AMD
	// EPYC, whose RAPL limits are read-only, the amd-smi socket power cap.
	RAPL PackageCapper
	// RAPLBackend names RAPL in status and metrics (default rapl; amdsmi
	// for the socket cap).
	RAPLBackend joulie.ControlBackend
	DVFS        Throttler
	Meter       PowerMeter
	// FallbackMaxWatts is the per-package maximum used when the kernel
	// gives none: the catalog TDP of the CPU model (SPEC.md).
	FallbackMaxWatts float64
	// RetryMin and RetryMax bound the backoff between attempts to return
	// to RAPL after it failed (defaults 30s and 5m).
	RetryMin, RetryMax time.Duration
	// Restore puts the journaled CPU originals (RAPL and cpufreq) back; it
	// runs when the target stops asking for a CPU cap.
	Restore func() error
}

// CPUEnforcer applies CPU targets tick after tick and remembers which
// backend is in force. It is not safe for concurrent use: the agent's
// reconcile loop owns it.
type CPUEnforcer struct {
	cfg        CPUConfig
	mode       joulie.ControlBackend
	raplErr    error     // why the last RAPL attempt failed
	retryAt    time.Time // next RAPL attempt while on DVFS after a failure
	retryDelay time.Duration
	restored   bool // originals restored since the last cap
}

// NewCPUEnforcer returns an enforcer in mode none.
func NewCPUEnforcer(cfg CPUConfig) *CPUEnforcer {
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = 30 * time.Second
	}
	if cfg.RetryMax < cfg.RetryMin {
		cfg.RetryMax = 5 * time.Minute
	}
	if cfg.RAPLBackend == "" {
		cfg.RAPLBackend = joulie.BackendRAPL
	}
	return &CPUEnforcer{cfg: cfg, mode: joulie.BackendNone, restored: true}
}

// Mode is the backend in force: none, rapl (or amdsmi) or dvfs (metric
// joulie_backend_mode).
func (e *CPUEnforcer) Mode() joulie.ControlBackend { return e.mode }

// maxWatts is package p's maximum, from the zone or the catalog.
func (e *CPUEnforcer) maxWatts(p Package) float64 {
	if p.MaxWatts > 0 {
		return p.MaxWatts
	}
	return e.cfg.FallbackMaxWatts
}

// raplUsable reports whether any package limit could be written.
func (e *CPUEnforcer) raplUsable() bool {
	if e.cfg.RAPL == nil {
		return false
	}
	for _, p := range e.cfg.Packages {
		if p.Writable {
			return true
		}
	}
	return false
}

// Enforce applies target t and returns the status to report.
func (e *CPUEnforcer) Enforce(now time.Time, t *joulie.CPUPowerTarget) joulie.ControlStatus {
	if ResolveCPU(t, e.cfg.FallbackMaxWatts).None {
		return e.lift()
	}
	e.restored = false

	// Per-package watts; a percentage resolves against each package's own
	// maximum. When neither the zone nor the catalog knows a maximum, the
	// percent path is all that is left.
	watts := make([]float64, len(e.cfg.Packages))
	resolved := len(e.cfg.Packages) > 0
	var pct float64
	for i, p := range e.cfg.Packages {
		in := ResolveCPU(t, e.maxWatts(p))
		pct = in.Pct
		if !in.HasWatts {
			resolved = false
			break
		}
		watts[i] = in.Watts
	}
	if len(e.cfg.Packages) == 0 {
		// No RAPL zones at all: absolute watts can still drive DVFS on
		// measured power, per socket count unknown, so treat the target
		// as a whole-host cap only when the catalog gave a maximum.
		in := ResolveCPU(t, e.cfg.FallbackMaxWatts)
		pct = in.Pct
		if in.HasWatts {
			watts, resolved = []float64{in.Watts}, true
		}
	}
	if !resolved {
		return e.percentPath(pct)
	}

	if e.raplUsable() && (e.mode != joulie.BackendDVFS || e.raplErr == nil || !now.Before(e.retryAt)) {
		status, err := e.applyRAPL(watts)
		if err == nil {
			if e.mode == joulie.BackendDVFS && e.cfg.DVFS != nil {
				if rerr := e.cfg.DVFS.Reset(); rerr != nil {
					status.Message = "RAPL restored, but lifting the DVFS throttle failed: " + rerr.Error()
				}
			}
			e.mode, e.raplErr, e.retryDelay = e.cfg.RAPLBackend, nil, 0
			return status
		}
		e.raplErr = err
		e.backoff(now)
	} else if !e.raplUsable() && e.raplErr == nil {
		e.raplErr = fmt.Errorf("%w: %s", backend.ErrBlocked, e.unusableReason())
	}
	return e.dvfs(now, watts)
}

// unusableReason says why no package limit can be written.
func (e *CPUEnforcer) unusableReason() string {
	for _, p := range e.cfg.Packages {
		if p.Reason != "" {
			return p.Reason
		}
	}
	if len(e.cfg.Packages) == 0 {
		return fmt.Sprintf("no %s package zones on this host", e.cfg.RAPLBackend)
	}
	return fmt.Sprintf("no writable %s package limit on this host", e.cfg.RAPLBackend)
}

// applyRAPL writes every package's limit. It returns an error when any
// package failed, so the enforcer falls back to DVFS for the whole host:
// half a host on RAPL and half on nothing would hold no cap at all.
func (e *CPUEnforcer) applyRAPL(watts []float64) (joulie.ControlStatus, error) {
	devices := make([]joulie.DeviceControlStatus, 0, len(e.cfg.Packages))
	var errs []error
	for i, p := range e.cfg.Packages {
		d := joulie.DeviceControlStatus{ID: fmt.Sprintf("package-%d", p.ID)}
		applied, err := e.cfg.RAPL.SetPackageCap(p.ID, watts[i])
		switch {
		case err == nil:
			d.Result, d.AppliedCapWatts = joulie.ResultApplied, ptr.To(applied)
		case backend.IsBlocked(err):
			d.Result, d.Message = joulie.ResultBlocked, err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", d.ID, err))
		default:
			d.Result, d.Message = joulie.ResultError, err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", d.ID, err))
		}
		devices = append(devices, d)
	}
	result, msg := aggregate(devices)
	status := joulie.ControlStatus{Backend: e.cfg.RAPLBackend, Result: result, Message: msg,
		AppliedCapWatts: commonCap(devices), Devices: devices}
	return status, errors.Join(errs...)
}

// dvfs holds the measured package power near the cap with the cpufreq
// fallback.
func (e *CPUEnforcer) dvfs(now time.Time, watts []float64) joulie.ControlStatus {
	why := string(e.cfg.RAPLBackend) + " unavailable"
	if e.raplErr != nil {
		why += " (" + e.raplErr.Error() + ")"
	}
	status := joulie.ControlStatus{Backend: joulie.BackendDVFS, AppliedCapWatts: ptr.To(watts[0])}
	if e.cfg.DVFS == nil {
		status.Backend = joulie.BackendNone
		status.Result = joulie.ResultBlocked
		if e.raplErr != nil && !backend.IsBlocked(e.raplErr) {
			status.Result = joulie.ResultError
		}
		status.Message = why + "; no cpufreq control for the DVFS fallback"
		status.AppliedCapWatts = nil
		e.mode = joulie.BackendNone
		return status
	}
	if e.cfg.Meter == nil {
		status.Result = joulie.ResultBlocked
		status.Message = why + "; DVFS needs measured CPU power and this host has none"
		status.AppliedCapWatts = nil
		return status
	}
	var capTotal float64
	for _, w := range watts {
		capTotal += w
	}
	e.mode = joulie.BackendDVFS
	observed, ok := e.cfg.Meter.CPUPowerWatts(now)
	if !ok {
		status.Result = joulie.ResultApplied
		status.Message = why + "; DVFS fallback engaged, waiting for the first power reading"
		return status
	}
	throttle, err := e.cfg.DVFS.Regulate(now, observed, capTotal)
	status.ThrottlePct = ptr.To(throttle)
	if err != nil {
		status.Result, status.Message = joulie.ResultError, why+"; DVFS: "+err.Error()
		return status
	}
	status.Result = joulie.ResultApplied
	status.Message = fmt.Sprintf("%s; DVFS holds CPU power near %.0f W (measured %.0f W, %.0f%% of CPUs throttled)", why, capTotal, observed, throttle)
	return status
}

// percentPath throttles a fixed share of CPUs when a percentage cannot be
// turned into watts.
func (e *CPUEnforcer) percentPath(pct float64) joulie.ControlStatus {
	status := joulie.ControlStatus{Backend: joulie.BackendDVFS}
	if e.cfg.DVFS == nil {
		e.mode = joulie.BackendNone
		status.Backend, status.Result = joulie.BackendNone, joulie.ResultBlocked
		status.Message = "a percentage cap needs the package maximum, which neither RAPL nor the hardware catalog gives, and no cpufreq control exists for the DVFS percent path"
		return status
	}
	throttle := ThrottleForPct(pct)
	if err := e.cfg.DVFS.SetThrottlePct(throttle); err != nil {
		status.Result, status.Message = joulie.ResultError, "DVFS percent path: "+err.Error()
		return status
	}
	e.mode = joulie.BackendDVFS
	status.Result, status.ThrottlePct = joulie.ResultApplied, ptr.To(throttle)
	status.Message = fmt.Sprintf("package maximum unknown; DVFS percent path throttles %.0f%% of CPUs for a %.0f%% cap", throttle, pct)
	return status
}

// lift puts the originals back when no CPU cap is asked for.
func (e *CPUEnforcer) lift() joulie.ControlStatus {
	status := joulie.ControlStatus{Backend: joulie.BackendNone, Result: joulie.ResultNone, Message: "no CPU cap requested"}
	if e.restored {
		return status
	}
	var errs []string
	if e.mode == joulie.BackendDVFS && e.cfg.DVFS != nil {
		if err := e.cfg.DVFS.Reset(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if e.cfg.Restore != nil {
		if err := e.cfg.Restore(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		status.Result = joulie.ResultError
		status.Message = "no CPU cap requested, but restoring the original limits failed: " + strings.Join(errs, "; ")
		return status
	}
	e.mode, e.raplErr, e.restored = joulie.BackendNone, nil, true
	status.Message = "no CPU cap requested; original limits restored"
	return status
}

func (e *CPUEnforcer) backoff(now time.Time) {
	switch {
	case e.retryDelay == 0:
		e.retryDelay = e.cfg.RetryMin
	case e.retryDelay*2 > e.cfg.RetryMax:
		e.retryDelay = e.cfg.RetryMax
	default:
		e.retryDelay *= 2
	}
	e.retryAt = now.Add(e.retryDelay)
}
