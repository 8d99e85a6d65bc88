package nvml

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// H100 SXM5 power limits as the driver reports them, in milliwatts.
const (
	h100MinMW = 200_000
	h100MaxMW = 700_000
)

// dgxH100Buses are the PCI buses of a DGX H100's eight GPUs.
var dgxH100Buses = [8]uint32{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}

// gpuState is the power side of one mocked GPU, which go-nvml's dgxh100
// server leaves unimplemented: the test owns it and can break it.
type gpuState struct {
	mu        sync.Mutex
	minMW     uint32
	maxMW     uint32
	defaultMW uint32
	limitMW   uint32
	usageMW   uint32
	energyMJ  uint64
	noEnergy  bool
	// setFails, when not SUCCESS, is what SetPowerManagementLimit returns
	// instead of changing the limit.
	setFails gonvml.Return
	// rangeFails, when not SUCCESS, is what the limit range read returns.
	rangeFails gonvml.Return
	// lost makes every call return ERROR_GPU_IS_LOST, as NVML does for a
	// GPU that has fallen off the bus.
	lost bool
	sets int
}

func (g *gpuState) limit() uint32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limitMW
}

func (g *gpuState) setCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sets
}

func (g *gpuState) update(f func(*gpuState)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(g)
}

// dgx is a mocked DGX H100: go-nvml's eight-GPU server with power state
// wired into its devices.
type dgx struct {
	server *server.Server
	// gpus[i] belongs to the device at index i when the host is built;
	// it stays with that device if the devices are reordered.
	gpus    []*gpuState
	devices []*server.Device
}

func newDGX(t testing.TB) *dgx {
	t.Helper()
	h := &dgx{server: dgxh100.New()}
	if len(h.server.Devices) != 8 {
		t.Fatalf("dgxh100 mock has %d GPUs, want 8", len(h.server.Devices))
	}
	for i, d := range h.server.Devices {
		dev := d.(*server.Device)
		g := &gpuState{
			minMW:     h100MinMW,
			maxMW:     h100MaxMW,
			defaultMW: h100MaxMW,
			limitMW:   h100MaxMW,
			usageMW:   uint32(300_000 + 10_000*i),
			energyMJ:  uint64(1_000_000_000 * (i + 1)),
			// The last GPU's driver does not count energy, as on boards
			// where the counter is unsupported.
			noEnergy: i == 7,
		}
		wire(dev, g, dgxH100Buses[i])
		h.gpus = append(h.gpus, g)
		h.devices = append(h.devices, dev)
	}
	return h
}

func (h *dgx) library() Library { return Wrap(h.server) }

// wire replaces the mock device's identity and power functions with ones
// backed by g, so reads and writes behave like hardware: a write changes
// what the next read returns.
func wire(dev *server.Device, g *gpuState, bus uint32) {
	dev.PciBusID = fmt.Sprintf("0000:%02x:00.0", bus)
	// NVML's own spelling: eight-digit domain, upper case.
	nvmlBusID := fmt.Sprintf("%08X:%02X:00.0", 0, bus)

	// read runs f under the GPU's lock unless the GPU is lost.
	read := func(f func() gonvml.Return) gonvml.Return {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.lost {
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
			if g.rangeFails != gonvml.SUCCESS {
				return g.rangeFails
			}
			lo, hi = g.minMW, g.maxMW
			return gonvml.SUCCESS
		})
		return lo, hi, ret
	}
	dev.GetPowerManagementDefaultLimitFunc = func() (uint32, gonvml.Return) {
		var mw uint32
		ret := read(func() gonvml.Return { mw = g.defaultMW; return gonvml.SUCCESS })
		return mw, ret
	}
	dev.GetPowerManagementLimitFunc = func() (uint32, gonvml.Return) {
		var mw uint32
		ret := read(func() gonvml.Return { mw = g.limitMW; return gonvml.SUCCESS })
		return mw, ret
	}
	dev.GetEnforcedPowerLimitFunc = dev.GetPowerManagementLimitFunc
	dev.GetPowerUsageFunc = func() (uint32, gonvml.Return) {
		var mw uint32
		ret := read(func() gonvml.Return { mw = min(g.usageMW, g.limitMW); return gonvml.SUCCESS })
		return mw, ret
	}
	dev.GetTotalEnergyConsumptionFunc = func() (uint64, gonvml.Return) {
		var mj uint64
		ret := read(func() gonvml.Return {
			if g.noEnergy {
				return gonvml.ERROR_NOT_SUPPORTED
			}
			mj = g.energyMJ
			return gonvml.SUCCESS
		})
		return mj, ret
	}
	dev.SetPowerManagementLimitFunc = func(mw uint32) gonvml.Return {
		return read(func() gonvml.Return {
			g.sets++
			switch {
			case g.setFails != gonvml.SUCCESS:
				return g.setFails
			case mw < g.minMW || mw > g.maxMW:
				// The driver checks the range itself; reaching this means
				// the backend failed to clamp.
				return gonvml.ERROR_INVALID_ARGUMENT
			}
			g.limitMW = mw
			return gonvml.SUCCESS
		})
	}
}

// reorder puts the devices at new indices, as after a reboot in which
// enumeration order changed: order[i] is the old index of the device now
// at index i.
func (h *dgx) reorder(order ...int) {
	devs := slices.Clone(h.server.Devices)
	for i, old := range order {
		h.server.Devices[i] = devs[old]
		h.server.Devices[i].(*server.Device).Index = i
	}
}
