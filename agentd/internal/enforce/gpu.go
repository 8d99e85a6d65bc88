package enforce

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/utils/ptr"

	"joulie.io/joulie/agentd/internal/backend"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// GPUEnforcer applies GPU targets per device through one backend.
type GPUEnforcer struct {
	capper backend.GPUCapper
	// restore puts this backend's journaled originals back.
	restore func() error
	// retryMin spaces out writes to a device that failed, so a broken GPU
	// is not hammered every tick.
	retryMin time.Duration
	failedAt map[int]time.Time
	restored bool
}

// NewGPUEnforcer returns an enforcer over capper, the GPU backend (nil when the host has
// no GPU backend). restore puts its journaled originals back.
func NewGPUEnforcer(capper backend.GPUCapper, restore func() error, retryMin time.Duration) *GPUEnforcer {
	if retryMin <= 0 {
		retryMin = 30 * time.Second
	}
	return &GPUEnforcer{capper: capper, restore: restore, retryMin: retryMin, failedAt: map[int]time.Time{}, restored: true}
}

// Enforce applies target t to every device of gpus, the backend's
// enumeration for this tick (err when it failed), and returns the status.
// The caller lists the devices once per tick and shares the list with
// whatever else reads them that tick (measured power, hardware facts).
// standard names, by UUID, the devices only standard pods hold: they take
// t.StandardPowerCap where t sets one (per-GPU caps), the others
// t.PowerCap.
func (e *GPUEnforcer) Enforce(now time.Time, t *joulie.GPUPowerTarget, gpus []backend.GPU, err error, standard map[string]bool) joulie.ControlStatus {
	if e.capper == nil {
		return joulie.ControlStatus{Backend: joulie.BackendNone, Result: joulie.ResultNone, Message: "no GPUs found on this host"}
	}
	name := joulie.ControlBackend(e.capper.Name())
	if err != nil {
		result := joulie.ResultError
		if backend.IsBlocked(err) {
			result = joulie.ResultBlocked
		}
		return joulie.ControlStatus{Backend: name, Result: result, Message: err.Error()}
	}
	if len(gpus) == 0 {
		return joulie.ControlStatus{Backend: name, Result: joulie.ResultNone, Message: "no GPUs found on this host"}
	}
	if !GPUAsksForCap(t) {
		return e.lift(name)
	}
	e.restored = false

	devices := make([]joulie.DeviceControlStatus, 0, len(gpus))
	for _, g := range gpus {
		d := joulie.DeviceControlStatus{ID: strconv.Itoa(g.Index)}
		dt := t
		if t.StandardPowerCap != nil && standard[g.UUID] {
			dt = &joulie.GPUPowerTarget{PowerCap: t.StandardPowerCap}
		}
		watts, ok := ResolveGPU(dt, g.MaxWatts)
		switch {
		case g.CapBlocked != "":
			d.Result, d.Message = joulie.ResultBlocked, g.CapBlocked
		case !ok:
			d.Result, d.Message = joulie.ResultBlocked, "the device reports no maximum power limit to take a percentage of"
		case now.Before(e.failedAt[g.Index].Add(e.retryMin)):
			d.Result, d.Message = joulie.ResultError, "last attempt failed; retrying after "+e.failedAt[g.Index].Add(e.retryMin).Format(time.RFC3339)
		default:
			applied, err := e.capper.SetCap(g.Index, watts)
			switch {
			case err == nil:
				d.Result, d.AppliedCapWatts = joulie.ResultApplied, ptr.To(applied)
				delete(e.failedAt, g.Index)
			case backend.IsBlocked(err):
				d.Result, d.Message = joulie.ResultBlocked, err.Error()
			default:
				d.Result, d.Message = joulie.ResultError, err.Error()
				e.failedAt[g.Index] = now
			}
		}
		devices = append(devices, d)
	}
	result, msg := aggregate(devices)
	if result != joulie.ResultApplied {
		if m, ok := sharedMessage(devices); ok {
			msg = m
		}
		msg = fmt.Sprintf("%d of %d GPUs not capped: %s", countNot(devices, joulie.ResultApplied), len(devices), msg)
	}
	return joulie.ControlStatus{Backend: name, Result: result, Message: msg, AppliedCapWatts: commonCap(devices), Devices: devices}
}

func (e *GPUEnforcer) lift(name joulie.ControlBackend) joulie.ControlStatus {
	status := joulie.ControlStatus{Backend: name, Result: joulie.ResultNone, Message: "no GPU cap requested"}
	if e.restored || e.restore == nil {
		e.restored = true
		return status
	}
	if err := e.restore(); err != nil {
		status.Result = joulie.ResultError
		status.Message = "no GPU cap requested, but restoring the original limits failed: " + err.Error()
		return status
	}
	e.restored = true
	status.Message = "no GPU cap requested; original limits restored"
	return status
}

func countNot(devices []joulie.DeviceControlStatus, r joulie.ControlResult) int {
	n := 0
	for _, d := range devices {
		if d.Result != r {
			n++
		}
	}
	return n
}

// sharedMessage is the one message of a class in which every device
// failed for the same reason (no driver, no library), which is then said
// once instead of once per GPU.
func sharedMessage(devices []joulie.DeviceControlStatus) (string, bool) {
	if len(devices) == 0 {
		return "", false
	}
	for _, d := range devices {
		if d.Result == joulie.ResultApplied || d.Message != devices[0].Message {
			return "", false
		}
	}
	return devices[0].Message, true
}
