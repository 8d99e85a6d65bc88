package nvml

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/state"
)

// BackendName is the backend's name in the API and its key in the state
// journal.
const BackendName = "nvml"

var _ backend.GPUCapper = (*Backend)(nil)

// Backend enumerates NVIDIA GPUs and sets their power limits. It is safe
// for concurrent use; NVML calls are serialised so that a device's
// read-record-write sequence is never interleaved with another.
type Backend struct {
	mu      sync.Mutex
	lib     Library
	journal *state.Journal
	// ret is what Init returned; down, when not nil, is why NVML cannot be
	// used, wrapping backend.ErrBlocked.
	ret    gonvml.Return
	down   error
	closed bool
	// known holds, per index, the facts that do not change while the
	// driver is loaded (identity, limit range) from the device's last
	// good read, to describe a GPU that has since stopped answering.
	known []backend.GPU
}

// New initialises lib and returns a backend over it that records
// originals in journal. A failing Init leaves a backend that reports
// backend.ErrBlocked, as Open does. Without a journal the backend enumerates
// but refuses to write, since it could not record what it changes.
func New(lib Library, journal *state.Journal) *Backend {
	b := newBackend(lib, journal)
	if b.ret == gonvml.ERROR_LIBRARY_NOT_FOUND {
		b.down = fmt.Errorf("%w: NVML unavailable: library not found", backend.ErrBlocked)
	}
	return b
}

func newBackend(lib Library, journal *state.Journal) *Backend {
	b := &Backend{lib: lib, journal: journal, ret: lib.Init()}
	if b.ret != gonvml.SUCCESS {
		b.down = fmt.Errorf("%w: NVML unavailable: initialise NVML: %w", backend.ErrBlocked, b.ret)
	}
	return b
}

// Name is the backend's name, "nvml".
func (b *Backend) Name() string { return BackendName }

// Unavailable returns why NVML cannot be used on this host (an error
// wrapping backend.ErrBlocked), or nil when it can.
func (b *Backend) Unavailable() error { return b.down }

// Close shuts NVML down. Later calls report an error.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.down != nil {
		// NVML was never initialised. With the real library not loaded,
		// go-nvml's Shutdown would call an unresolved symbol.
		return nil
	}
	if ret := b.lib.Shutdown(); ret != gonvml.SUCCESS {
		return fmt.Errorf("shut NVML down: %w", ret)
	}
	return nil
}

func (b *Backend) usable() error {
	if b.closed {
		return errors.New("NVML backend is closed")
	}
	return b.down
}

// GPUs lists every GPU NVML counts, with its readings. A reading a device
// does not support (energy before Volta, power on some boards) is left
// out and flagged in the Has fields. A GPU that stops answering (fallen off
// the bus) is still listed, with the facts from its last good read and no
// readings, so that a SetCap on it reports the error for that device
// instead of the GPU silently vanishing; the others are unaffected. The
// error is for enumeration as a whole: NVML unavailable or not counting.
func (b *Backend) GPUs() ([]backend.GPU, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return nil, err
	}
	n, ret := b.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return nil, fmt.Errorf("count NVIDIA GPUs: %w", ret)
	}
	if len(b.known) < n {
		b.known = append(b.known, make([]backend.GPU, n-len(b.known))...)
	}
	gpus := make([]backend.GPU, n)
	for i := range gpus {
		g, ok := b.read(i, b.known[i])
		if ok {
			b.known[i] = backend.GPU{
				Index: i, UUID: g.UUID, Name: g.Name, PCIBusID: g.PCIBusID,
				MinWatts: g.MinWatts, MaxWatts: g.MaxWatts, DefaultWatts: g.DefaultWatts,
			}
		} else {
			g = b.known[i]
			g.Index = i
		}
		gpus[i] = g
	}
	return gpus, nil
}

// read reads device index; false means the device is unreachable (no
// handle, no identity, or lost). The static facts (name, PCI address,
// limit range, default limit) are taken from known when it is the same
// device with its facts read, so a tick asks NVML only for what changes.
func (b *Backend) read(index int, known backend.GPU) (backend.GPU, bool) {
	dev, ret := b.lib.DeviceGetHandleByIndex(index)
	if ret != gonvml.SUCCESS {
		return backend.GPU{}, false
	}
	uuid, ret := dev.GetUUID()
	if ret != gonvml.SUCCESS {
		return backend.GPU{}, false
	}
	g := backend.GPU{Index: index, UUID: uuid}
	var r readings
	if known.UUID == uuid && known.Name != "" && known.MaxWatts > 0 && known.DefaultWatts > 0 {
		g.Name, g.PCIBusID = known.Name, known.PCIBusID
		g.MinWatts, g.MaxWatts, g.DefaultWatts = known.MinWatts, known.MaxWatts, known.DefaultWatts
	} else {
		if name, ret := dev.GetName(); r.ok(ret) {
			g.Name = name
		}
		if pci, ret := dev.GetPciInfo(); r.ok(ret) {
			g.PCIBusID = busID(pci)
		}
		if lo, hi, ret := dev.GetPowerManagementLimitConstraints(); r.ok(ret) {
			g.MinWatts, g.MaxWatts = toWatts(lo), toWatts(hi)
		}
		if mw, ret := dev.GetPowerManagementDefaultLimit(); r.ok(ret) {
			g.DefaultWatts = toWatts(mw)
		}
	}
	if mw, ret := dev.GetPowerManagementLimit(); r.ok(ret) {
		g.CapWatts = toWatts(mw)
	} else if mw, ret := dev.GetEnforcedPowerLimit(); r.ok(ret) {
		g.CapWatts = toWatts(mw)
	}
	if mw, ret := dev.GetPowerUsage(); r.ok(ret) {
		g.PowerWatts, g.HasPower = toWatts(mw), true
	}
	if mj, ret := dev.GetTotalEnergyConsumption(); r.ok(ret) {
		g.EnergyJoules, g.HasEnergy = float64(mj)/1000, true
	}
	g.MIGs = b.migs(dev, &r)
	return g, !r.lost
}

// migs lists the UUIDs of dev's MIG devices when MIG mode is on; nil on a
// GPU without MIG (ERROR_NOT_SUPPORTED) or with it off.
func (b *Backend) migs(dev Device, r *readings) []string {
	if cur, _, ret := dev.GetMigMode(); !r.ok(ret) || cur != gonvml.DEVICE_MIG_ENABLE {
		return nil
	}
	n, ret := dev.GetMaxMigDeviceCount()
	if !r.ok(ret) {
		return nil
	}
	out := []string{}
	for i := range n {
		mig, ret := dev.GetMigDeviceHandleByIndex(i)
		if !r.ok(ret) {
			continue // an empty slot
		}
		if uuid, ret := mig.GetUUID(); r.ok(ret) {
			out = append(out, uuid)
		}
	}
	return out
}

// readings tells optional readings that a device lacks, which are only
// left out, from a device that is gone, which makes the whole read fail.
type readings struct{ lost bool }

func (r *readings) ok(ret gonvml.Return) bool {
	if ret == gonvml.ERROR_GPU_IS_LOST {
		r.lost = true
	}
	return ret == gonvml.SUCCESS
}

// SetCap sets GPU index's power limit to watts, clamped to the device's
// range, and returns the limit read back. The original limit is recorded
// in the journal before the first write; nothing is written when the
// limit is already in place. A device that does not allow the write
// (ERROR_NOT_SUPPORTED) or refuses it to this process
// (ERROR_NO_PERMISSION) yields an error wrapping backend.ErrBlocked; any
// other failure, a lost GPU included, is a plain error. Errors wrap the
// NVML return code.
func (b *Backend) SetCap(index int, watts float64) (float64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return 0, err
	}
	if math.IsNaN(watts) {
		return 0, fmt.Errorf("set power limit of GPU %d: NaN is not a cap", index)
	}
	dev, ret := b.lib.DeviceGetHandleByIndex(index)
	if ret != gonvml.SUCCESS {
		return 0, fmt.Errorf("set power limit of %s: %w", b.describe(index, ""), noDevice(ret))
	}
	uuid, ret := dev.GetUUID()
	if ret != gonvml.SUCCESS {
		return 0, fmt.Errorf("set power limit of %s: read UUID: %w", b.describe(index, ""), ret)
	}
	lim, err := readLimits(dev)
	if err != nil {
		return 0, fmt.Errorf("set power limit of %s: %w", b.describe(index, uuid), err)
	}
	target := lim.clamp(watts * 1000)
	if lim.current == target {
		return toWatts(target), nil
	}
	if err := b.record(uuid, lim.current); err != nil {
		return 0, fmt.Errorf("set power limit of %s: not written: %w", b.describe(index, uuid), err)
	}
	got, err := write(dev, target)
	if err != nil {
		return 0, fmt.Errorf("set power limit of %s to %d mW: %w", b.describe(index, uuid), target, err)
	}
	return toWatts(got), nil
}

// Restore puts the power limit of the GPU with UUID id back to original,
// a limit in milliwatts as the journal keeps it. The GPU is found by UUID
// because indices may have moved since the original was recorded (another
// boot, a GPU added or removed).
func (b *Backend) Restore(id, original string) error {
	mw, err := strconv.ParseUint(original, 10, 32)
	if err != nil {
		return fmt.Errorf("restore power limit of %s: original %q is not a limit in milliwatts", id, original)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return err
	}
	dev, ret := b.lib.DeviceGetHandleByUUID(id)
	if ret != gonvml.SUCCESS {
		return fmt.Errorf("restore power limit of %s: %w", id, noDevice(ret))
	}
	lim, err := readLimits(dev)
	if err != nil {
		return fmt.Errorf("restore power limit of %s: %w", id, err)
	}
	// The original came from this device, so it is normally in range;
	// clamping still holds when a driver update has narrowed the range.
	target := lim.clamp(float64(mw))
	if lim.current == target {
		return nil
	}
	got, err := write(dev, target)
	if err != nil {
		return fmt.Errorf("restore power limit of %s to %d mW: %w", id, target, err)
	}
	if got != target {
		return fmt.Errorf("restore power limit of %s to %d mW: the device reads back %d mW", id, target, got)
	}
	return nil
}

// record journals a GPU's limit before the backend's first write to it.
func (b *Backend) record(uuid string, original uint32) error {
	if b.journal == nil {
		return errors.New("no state journal to record the original limit in")
	}
	if b.journal.Has(BackendName, uuid) {
		return nil // first record wins; skip building an entry that would be ignored
	}
	return b.journal.Record(state.Entry{
		Backend:  BackendName,
		Kind:     state.KindGPU,
		ID:       uuid,
		Original: strconv.FormatUint(uint64(original), 10),
	})
}

// describe names a device in messages: index and, when known, UUID.
func (b *Backend) describe(index int, uuid string) string {
	if uuid == "" && index < len(b.known) {
		uuid = b.known[index].UUID
	}
	if uuid == "" {
		return fmt.Sprintf("GPU %d", index)
	}
	return fmt.Sprintf("GPU %d (%s)", index, uuid)
}

// limits is a device's power limit range and current limit, in milliwatts.
type limits struct{ min, max, current uint32 }

func readLimits(dev Device) (limits, error) {
	lo, hi, ret := dev.GetPowerManagementLimitConstraints()
	if ret != gonvml.SUCCESS {
		return limits{}, fmt.Errorf("read power limit range: %w", refusal(ret))
	}
	if hi == 0 || lo > hi {
		return limits{}, fmt.Errorf("%w: the device reports no usable power limit range (%d..%d mW)", backend.ErrBlocked, lo, hi)
	}
	cur, ret := dev.GetPowerManagementLimit()
	if ret != gonvml.SUCCESS {
		return limits{}, fmt.Errorf("read power limit: %w", refusal(ret))
	}
	return limits{min: lo, max: hi, current: cur}, nil
}

// clamp turns a limit in milliwatts into one the device accepts. Infinite
// requests land on the bounds.
func (l limits) clamp(mw float64) uint32 {
	switch {
	case mw <= float64(l.min):
		return l.min
	case mw >= float64(l.max):
		return l.max
	}
	return uint32(math.Round(mw))
}

// write sets a limit and returns the limit the device reports afterwards,
// which is what is in force if the driver rounded the request.
func write(dev Device, mw uint32) (uint32, error) {
	if ret := dev.SetPowerManagementLimit(mw); ret != gonvml.SUCCESS {
		return 0, refusal(ret)
	}
	got, ret := dev.GetPowerManagementLimit()
	if ret != gonvml.SUCCESS {
		return 0, fmt.Errorf("read back power limit: %w", ret)
	}
	return got, nil
}

// refusal classifies an NVML failure: the codes that mean "this host
// cannot do that" become backend.ErrBlocked, the rest stay errors.
func refusal(ret gonvml.Return) error {
	switch ret {
	case gonvml.ERROR_NOT_SUPPORTED:
		return fmt.Errorf("%w: the device does not support power limit control (%w)", backend.ErrBlocked, ret)
	case gonvml.ERROR_NO_PERMISSION:
		return fmt.Errorf("%w: no permission to change the power limit; it takes root (%w)", backend.ErrBlocked, ret)
	}
	return ret
}

// noDevice explains a failed handle lookup: NVML answers an index or UUID
// it does not know with ERROR_INVALID_ARGUMENT or ERROR_NOT_FOUND.
// Present reports, without writing, whether NVML still knows the GPU with
// UUID id. Without a working NVML it cannot tell, and says why.
func (b *Backend) Present(id string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return false, err
	}
	_, ret := b.lib.DeviceGetHandleByUUID(id)
	switch ret {
	case gonvml.SUCCESS:
		return true, nil
	case gonvml.ERROR_INVALID_ARGUMENT, gonvml.ERROR_NOT_FOUND:
		return false, nil
	}
	return false, fmt.Errorf("look up GPU %s: %w", id, ret)
}

func noDevice(ret gonvml.Return) error {
	if ret == gonvml.ERROR_INVALID_ARGUMENT || ret == gonvml.ERROR_NOT_FOUND {
		return fmt.Errorf("no such GPU (%w)", ret)
	}
	return fmt.Errorf("get device handle: %w", ret)
}

func toWatts(mw uint32) float64 { return float64(mw) / 1000 }

// busID gives a GPU's PCI address in the kernel's form (0000:18:00.0),
// so it matches sysfs paths. NVML writes the domain with eight upper-case
// hex digits (00000000:18:00.0).
func busID(p gonvml.PciInfo) string {
	var buf [len(p.BusId)]byte
	n := 0
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b := byte(c)
		if 'A' <= b && b <= 'F' {
			b += 'a' - 'A'
		}
		buf[n] = b
		n++
	}
	id := buf[:n]
	if n == 0 {
		if p.Domain == 0 && p.Bus == 0 && p.Device == 0 {
			return ""
		}
		// The function number is not in PciInfo; GPUs are function 0.
		return fmt.Sprintf("%04x:%02x:%02x.0", p.Domain, p.Bus, p.Device)
	}
	if len(id) == len("00000000:18:00.0") && string(id[:4]) == "0000" {
		id = id[4:]
	}
	return string(id)
}
