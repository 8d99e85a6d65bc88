// Package backend holds what the agent's hardware backends share with the
// enforcement logic above them: the interface a GPU backend implements,
// the facts a device reports, and how a backend says a control is blocked
// (cannot be enforced on this host) rather than failing.
//
// The split between the two outcomes is the operator's: blocked means "this
// host cannot do that" (no library, read-only limit, unsupported device),
// an error means "it should have worked and did not" (EIO, a lost GPU).
// NodePowerProfile status reports them as result blocked and error.
package backend

import (
	"errors"

	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
)

// ErrBlocked marks a control the host cannot enforce. Backends wrap it:
// fmt.Errorf("%w: libnvidia-ml.so.1 not found", backend.ErrBlocked).
var ErrBlocked = errors.New("blocked")

// IsBlocked reports whether err means the control cannot be enforced on
// this host, as opposed to a failed attempt. Read-only sysfs attributes
// count as blocked.
func IsBlocked(err error) bool {
	return errors.Is(err, ErrBlocked) || errors.Is(err, sysfs.ErrReadOnly)
}

// GPU is one accelerator as a backend sees it. Watts are per device.
type GPU struct {
	// Index is the backend's device index, stable for a boot.
	Index int
	// UUID is the device's identity (NVML UUID, or the PCI address where
	// the driver has no UUID).
	UUID string
	// Name is the product name the driver reports.
	Name string
	// PCIBusID is the PCI address in domain:bus:device.function form.
	PCIBusID string
	// MinWatts and MaxWatts bound the power limit the device accepts.
	MinWatts, MaxWatts float64
	// DefaultWatts is the limit the device ships with.
	DefaultWatts float64
	// CapWatts is the power limit in force now.
	CapWatts float64
	// PowerWatts is the current draw; valid when HasPower.
	PowerWatts float64
	HasPower   bool
	// EnergyJoules is the total energy counter since driver load; valid
	// when HasEnergy.
	EnergyJoules float64
	HasEnergy    bool
	// CapBlocked, when not empty, says why the device's limit cannot be
	// set on this host (a read-only limit, no driver or library to reach
	// it) and what would fix it. The backend knows it without trying, so
	// discovery reports the control as missing and enforcement does not
	// attempt the write.
	CapBlocked string
	// MIGs are the UUIDs of the device's MIG devices, in slot order, when
	// MIG mode is on: the kubelet names the MIG devices it hands out by
	// them, and their energy is the parent device's.
	MIGs []string
}

// GPUCapper is a GPU backend: it enumerates devices and sets per-device
// power limits. Enumeration is separate from management so discovery can
// run without ever writing.
type GPUCapper interface {
	// Name is the backend's name as the API spells it (nvml, amdsmi,
	// hwmon, http) and its key in the state journal.
	Name() string
	// GPUs enumerates the devices with their current readings.
	GPUs() ([]GPU, error)
	// SetCap sets device index's power limit: it clamps watts to the
	// device's range, records the original limit in the journal before
	// the first write, skips the write when the limit is already in
	// place, and reads the limit back. It returns the limit in force.
	SetCap(index int, watts float64) (applied float64, err error)
	// Restore puts a journaled original back (state.Restorer).
	state.Restorer
}
