// Package nvmltest is a mocked DGX H100 for tests: go-nvml's eight-GPU
// dgxh100 server with per-device power state wired in, so limits set through
// NVML read back like hardware and tests can break a device on purpose.
package nvmltest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// H100 SXM5 power limits as the driver reports them, in milliwatts.
const (
	// H100MinMW and H100MaxMW bound an H100 SXM5 power limit.
	H100MinMW = 200_000
	H100MaxMW = 700_000
)

// DGXH100Buses are the PCI buses of a DGX H100's eight GPUs.
var DGXH100Buses = [8]uint32{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}

// GPUState is the power side of one mocked GPU, which go-nvml's dgxh100
// server leaves unimplemented: the test owns it and can break it.
type GPUState struct {
	mu        sync.Mutex
	MinMW     uint32
	MaxMW     uint32
	DefaultMW uint32
	LimitMW   uint32
	UsageMW   uint32
	EnergyMJ  uint64
	NoEnergy  bool
	// setFails, when not SUCCESS, is what SetPowerManagementLimit returns
	// instead of changing the limit.
	SetFails gonvml.Return
	// rangeFails, when not SUCCESS, is what the limit range read returns.
	RangeFails gonvml.Return
	// lost makes every call return ERROR_GPU_IS_LOST, as NVML does for a
	// GPU that has fallen off the bus.
	Lost bool
	Sets int
	// MIGs, when set, turns MIG mode on with these MIG devices' UUIDs in
	// slots 0, 1, ...; without it MIG mode is off, as an H100 ships.
	MIGs []string
}

func (g *GPUState) Limit() uint32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.LimitMW
}

func (g *GPUState) SetCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.Sets
}

func (g *GPUState) Update(f func(*GPUState)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(g)
}

// DGX is a mocked DGX H100: go-nvml's eight-GPU server with power state
// wired into its devices.
type DGX struct {
	Server *server.Server
	// GPUs[i] belongs to the device at index i when the host is built;
	// it stays with that device if the devices are reordered.
	GPUs    []*GPUState
	Devices []*server.Device
}

// NewDGX returns the mocked host with all eight GPUs at 700 W.
func NewDGX(t testing.TB) *DGX {
	t.Helper()
	h := &DGX{Server: dgxh100.New()}
	if len(h.Server.Devices) != 8 {
		t.Fatalf("dgxh100 mock has %d GPUs, want 8", len(h.Server.Devices))
	}
	for i, d := range h.Server.Devices {
		dev := d.(*server.Device)
		g := &GPUState{
			MinMW:     H100MinMW,
			MaxMW:     H100MaxMW,
			DefaultMW: H100MaxMW,
			LimitMW:   H100MaxMW,
			UsageMW:   uint32(300_000 + 10_000*i),
			EnergyMJ:  uint64(1_000_000_000 * (i + 1)),
			// The last GPU's driver does not count energy, as on boards
			// where the counter is unsupported.
			NoEnergy: i == 7,
		}
		wire(dev, g, DGXH100Buses[i])
		h.GPUs = append(h.GPUs, g)
		h.Devices = append(h.Devices, dev)
	}
	return h
}

// wire replaces the mock device's identity and power functions with ones
// backed by g, so reads and writes behave like hardware: a write changes
// what the next read returns.
func wire(dev *server.Device, g *GPUState, bus uint32) {
	dev.PciBusID = fmt.Sprintf("0000:%02x:00.0", bus)
	// NVML's own spelling: eight-digit domain, upper case.
	nvmlBusID := fmt.Sprintf("%08X:%02X:00.0", 0, bus)

	// read runs f under the GPU's lock unless the GPU is lost.
	read := func(f func() gonvml.Return) gonvml.Return {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.Lost {
			return gonvml.ERROR_GPU_IS_LOST
		}
		return f()
	}
	dev.GetUUIDFunc = func() (string, gonvml.Return) {
		ret := read(func() gonvml.Return { return gonvml.SUCCESS })
		if ret != gonvml.SUCCESS {
			return "", ret
		}
		return dev.UUID, ret
	}
	dev.GetNameFunc = func() (string, gonvml.Return) {
		ret := read(func() gonvml.Return { return gonvml.SUCCESS })
		if ret != gonvml.SUCCESS {
			return "", ret
		}
		return dev.Config.Name, ret
	}
	dev.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
		var p gonvml.PciInfo
		ret := read(func() gonvml.Return {
			p.Bus, p.PciDeviceId = bus, dev.Config.PciDeviceId
			for i, c := range []byte(nvmlBusID) {
				p.BusId[i] = int8(c)
			}
			return gonvml.SUCCESS
		})
		return p, ret
	}
	dev.GetPowerManagementLimitConstraintsFunc = func() (uint32, uint32, gonvml.Return) {
		var lo, hi uint32
		ret := read(func() gonvml.Return {
			if g.RangeFails != gonvml.SUCCESS {
				return g.RangeFails
			}
			lo, hi = g.MinMW, g.MaxMW
			return gonvml.SUCCESS
		})
		return lo, hi, ret
	}
	dev.GetPowerManagementDefaultLimitFunc = func() (uint32, gonvml.Return) {
		var mw uint32
		ret := read(func() gonvml.Return { mw = g.DefaultMW; return gonvml.SUCCESS })
		return mw, ret
	}
	dev.GetPowerManagementLimitFunc = func() (uint32, gonvml.Return) {
		var mw uint32
		ret := read(func() gonvml.Return { mw = g.LimitMW; return gonvml.SUCCESS })
		return mw, ret
	}
	dev.GetEnforcedPowerLimitFunc = dev.GetPowerManagementLimitFunc
	dev.GetMigModeFunc = func() (int, int, gonvml.Return) {
		mode := gonvml.DEVICE_MIG_DISABLE
		ret := read(func() gonvml.Return {
			if g.MIGs != nil {
				mode = gonvml.DEVICE_MIG_ENABLE
			}
			return gonvml.SUCCESS
		})
		return mode, mode, ret
	}
	dev.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) {
		return 7, read(func() gonvml.Return { return gonvml.SUCCESS })
	}
	dev.GetMigDeviceHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		var uuid string
		ret := read(func() gonvml.Return {
			if i >= len(g.MIGs) || g.MIGs[i] == "" {
				return gonvml.ERROR_NOT_FOUND
			}
			uuid = g.MIGs[i]
			return gonvml.SUCCESS
		})
		if ret != gonvml.SUCCESS {
			return nil, ret
		}
		return &mock.Device{GetUUIDFunc: func() (string, gonvml.Return) { return uuid, gonvml.SUCCESS }}, ret
	}
	dev.GetPowerUsageFunc = func() (uint32, gonvml.Return) {
		var mw uint32
		ret := read(func() gonvml.Return { mw = min(g.UsageMW, g.LimitMW); return gonvml.SUCCESS })
		return mw, ret
	}
	dev.GetTotalEnergyConsumptionFunc = func() (uint64, gonvml.Return) {
		var mj uint64
		ret := read(func() gonvml.Return {
			if g.NoEnergy {
				return gonvml.ERROR_NOT_SUPPORTED
			}
			mj = g.EnergyMJ
			return gonvml.SUCCESS
		})
		return mj, ret
	}
	dev.SetPowerManagementLimitFunc = func(mw uint32) gonvml.Return {
		return read(func() gonvml.Return {
			g.Sets++
			switch {
			case g.SetFails != gonvml.SUCCESS:
				return g.SetFails
			case mw < g.MinMW || mw > g.MaxMW:
				// The driver checks the range itself; reaching this means
				// the backend failed to clamp.
				return gonvml.ERROR_INVALID_ARGUMENT
			}
			g.LimitMW = mw
			return gonvml.SUCCESS
		})
	}
}

// Reorder puts the devices at new indices, as after a reboot in which
// enumeration order changed: order[i] is the old index of the device now
// at index i.
func (h *DGX) Reorder(order ...int) {
	devs := slices.Clone(h.Server.Devices)
	for i, old := range order {
		h.Server.Devices[i] = devs[old]
		h.Server.Devices[i].(*server.Device).Index = i
	}
}
