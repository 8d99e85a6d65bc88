// Package nvml is the agent's NVIDIA GPU backend. It lists the GPUs NVML
// sees, with their power limit ranges and readings, and sets each GPU's
// power management limit, recording the limit it found in the state
// journal before changing it so that the host can be put back.
//
// NVML is reached through go-nvml, which loads libnvidia-ml.so.1 with
// dlopen when the backend is opened: building the agent needs only a C
// compiler, and a host without the NVIDIA driver gets a backend that
// reports every control as blocked instead of an agent that will not
// start.
//
// Everything the backend asks of NVML goes through the Library and Device
// interfaces below, which hold only the calls it makes, so tests drive
// go-nvml's mock servers through the same code path as the real library.
// Units are NVML's own up to the backend.GPU boundary: limits and power in
// milliwatts, energy in millijoules. The journal keeps originals in
// milliwatts, as NVML reads and writes them.
package nvml

import (
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Library is the part of NVML's library API the backend calls.
type Library interface {
	Init() gonvml.Return
	Shutdown() gonvml.Return
	DeviceGetCount() (int, gonvml.Return)
	DeviceGetHandleByIndex(index int) (Device, gonvml.Return)
	DeviceGetHandleByUUID(uuid string) (Device, gonvml.Return)
}

// Device is the part of NVML's per-device API the backend calls.
type Device interface {
	GetUUID() (string, gonvml.Return)
	GetName() (string, gonvml.Return)
	GetPciInfo() (gonvml.PciInfo, gonvml.Return)
	// GetPowerManagementLimitConstraints returns the range the limit may
	// be set within, min then max, in milliwatts.
	GetPowerManagementLimitConstraints() (uint32, uint32, gonvml.Return)
	GetPowerManagementDefaultLimit() (uint32, gonvml.Return)
	// GetPowerManagementLimit is the limit set by software (nvidia-smi
	// -pl, or this backend); it is what SetPowerManagementLimit changes.
	GetPowerManagementLimit() (uint32, gonvml.Return)
	// GetEnforcedPowerLimit is the lowest of all limits acting on the
	// device; the backend shows it only where the management limit
	// cannot be read.
	GetEnforcedPowerLimit() (uint32, gonvml.Return)
	GetPowerUsage() (uint32, gonvml.Return)
	// GetTotalEnergyConsumption counts millijoules since the driver was
	// loaded; GPUs older than Volta return ERROR_NOT_SUPPORTED.
	GetTotalEnergyConsumption() (uint64, gonvml.Return)
	SetPowerManagementLimit(limit uint32) gonvml.Return
	// GetMigMode is MIG mode now and after the next reset (1: on);
	// ERROR_NOT_SUPPORTED on GPUs without MIG.
	GetMigMode() (int, int, gonvml.Return)
	GetMaxMigDeviceCount() (int, gonvml.Return)
	// GetMigDeviceHandleByIndex is the MIG device in slot index;
	// ERROR_NOT_FOUND for an empty slot. Only GetUUID is asked of it.
	GetMigDeviceHandleByIndex(index int) (gonvml.Device, gonvml.Return)
}

// Wrap narrows go-nvml's Interface (the real library from gonvml.New, or
// one of go-nvml's mocks) to Library.
func Wrap(lib gonvml.Interface) Library { return wrapped{lib} }

type wrapped struct{ lib gonvml.Interface }

func (w wrapped) Init() gonvml.Return     { return w.lib.Init() }
func (w wrapped) Shutdown() gonvml.Return { return w.lib.Shutdown() }

func (w wrapped) DeviceGetCount() (int, gonvml.Return) { return w.lib.DeviceGetCount() }

// The real library returns a zero handle, not nil, along with a failure;
// handing out nil instead means a caller that ignores the return code
// fails loudly in Go rather than passing a bogus handle to the driver.

func (w wrapped) DeviceGetHandleByIndex(index int) (Device, gonvml.Return) {
	d, ret := w.lib.DeviceGetHandleByIndex(index)
	if ret != gonvml.SUCCESS {
		return nil, ret
	}
	return d, ret
}

func (w wrapped) DeviceGetHandleByUUID(uuid string) (Device, gonvml.Return) {
	d, ret := w.lib.DeviceGetHandleByUUID(uuid)
	if ret != gonvml.SUCCESS {
		return nil, ret
	}
	return d, ret
}
