// Package amdhwmon caps the power of AMD GPUs through the amdgpu driver's
// hwmon attributes (power1_cap and its range), the backend that works on
// every host running amdgpu, with or without ROCm installed.
//
// GPUs are found by PCI address, and everything about a GPU is reached
// through its PCI device directory: hwmon numbers (hwmon3, hwmon7) are
// handed out in probe order and change between boots, so a journaled
// "hwmon3/power1_cap" could point at another device after a reboot. The
// journal keys a GPU's limit by "<pci address>/power1_cap" instead.
//
// All power attributes are in microwatts. amdgpu keeps the limit in whole
// watts (it divides what is written by 10^6), so targets are rounded to
// whole watts before the write; the value read back then matches what was
// written and an unchanged target never causes a second write.
package amdhwmon

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/pci"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
)

// Backend is the backend's name in the API and in the state journal.
const Backend = "hwmon"

// capAttr is the limit attribute; a journal ID is "<pci address>/capAttr".
const capAttr = "power1_cap"

const microPerWatt = 1_000_000

// Capper is the hwmon GPU backend. It implements backend.GPUCapper and is
// safe for concurrent use.
//
// A GPU's Index is its position in the list of PCI addresses as first
// seen, sorted, and it does not move for the life of the Capper: a GPU
// that disappears leaves a hole rather than shifting the others, so a
// caller holding index 1 can never write to the GPU that used to be 2.
type Capper struct {
	fs      *sysfs.FS
	journal *state.Journal

	mu    sync.Mutex
	order []string // PCI addresses by index
}

// New returns the backend reading and writing below fs, recording
// originals in journal (required: no write happens without it).
func New(fsys *sysfs.FS, journal *state.Journal) *Capper {
	return &Capper{fs: fsys, journal: journal}
}

// Name is the backend's name, "hwmon".
func (c *Capper) Name() string { return Backend }

// GPUs lists the AMD GPUs present now with their limits and draw. A GPU
// without a hwmon directory or without power1_cap is listed with a zero
// range: that is missing data, not an error. The list is complete even
// when err is not nil; err then names the GPUs whose attributes could not
// be read (an I/O error, a value that is not a number).
func (c *Capper) GPUs() ([]backend.GPU, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	present, err := c.refresh()
	if err != nil {
		return nil, err
	}
	var out []backend.GPU
	var errs []error
	for i, addr := range c.order {
		dev, ok := present[addr]
		if !ok {
			continue
		}
		g, err := c.describe(i, addr, dev)
		out = append(out, g)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// SetCap sets GPU index's power limit to watts, clamped to the range the
// driver reports and rounded to whole watts. It records the original limit
// in the journal before the first write, skips the write when the limit is
// already in place, and returns the limit read back. A read-only
// power1_cap, or a GPU without one, is blocked (backend.ErrBlocked); a failed
// write or a GPU that has disappeared is an error.
func (c *Capper) SetCap(index int, watts float64) (float64, error) {
	if err := backend.CheckTarget(fmt.Sprintf("AMD GPU %d", index), watts); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	present, err := c.refresh()
	if err != nil {
		return 0, err
	}
	if index < 0 || index >= len(c.order) {
		return 0, fmt.Errorf("set power cap of AMD GPU %d: no such GPU (%d found)", index, len(c.order))
	}
	addr := c.order[index]
	dev, ok := present[addr]
	if !ok {
		return 0, fmt.Errorf("set power cap of AMD GPU %d (%s): the device is gone from the PCI bus", index, addr)
	}
	lim, err := c.limits(addr, dev)
	if err != nil {
		return 0, err
	}
	lo, hi := backend.WholeWattRange(lim.min, lim.max)
	uw, err := c.write(addr, lim, backend.ClampWholeWatts(watts, lo, hi))
	return float64(uw) / microPerWatt, err
}

// Present reports, without writing, whether the GPU that id names is
// still on the PCI bus with amdgpu. An ID of another form is nothing this
// backend could reach.
func (c *Capper) Present(id string) (bool, error) {
	addr, attr, _ := strings.Cut(id, "/")
	if attr != capAttr || !pci.Address(addr) {
		return false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	present, err := c.refresh()
	if err != nil {
		return false, err
	}
	_, ok := present[addr]
	return ok, nil
}

// Restore writes a journaled original back. id is "<pci address>/power1_cap"
// and original is in microwatts, as SetCap records them. The value is
// clamped to the range the driver reports now.
func (c *Capper) Restore(id, original string) error {
	addr, attr, _ := strings.Cut(id, "/")
	if attr != capAttr || !pci.Address(addr) {
		return fmt.Errorf("restore %s: not a %s control of this backend", id, Backend)
	}
	uw, err := strconv.ParseInt(original, 10, 64)
	if err != nil || uw <= 0 {
		return fmt.Errorf("restore %s: original %q is not a positive number of microwatts", id, original)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	present, err := c.refresh()
	if err != nil {
		return err
	}
	dev, ok := present[addr]
	if !ok {
		return fmt.Errorf("restore power cap of AMD GPU %s to %d µW: the device is gone from the PCI bus", addr, uw)
	}
	lim, err := c.limits(addr, dev)
	if err != nil {
		return err
	}
	_, err = c.write(addr, lim, min(max(uw, lim.min), lim.max))
	return err
}

// limits are a GPU's power1_cap attributes, in microwatts.
type limits struct {
	hwmon         string // relative path of the hwmon directory
	cur, min, max int64
}

// limits reads what a write needs: the current limit and the range. A GPU
// without a range is blocked, because a write must be clamped.
func (c *Capper) limits(addr, dev string) (limits, error) {
	hw, err := c.hwmonDir(dev)
	if err != nil {
		return limits{}, fmt.Errorf("%w: AMD GPU %s has no hwmon directory under %s", backend.ErrBlocked, addr, c.fs.Path(dev))
	}
	l := limits{hwmon: hw}
	var ok bool
	if l.cur, ok, err = c.readMicro(hw, capAttr); err != nil {
		return l, fmt.Errorf("read power cap of AMD GPU %s: %w", addr, err)
	} else if !ok {
		return l, fmt.Errorf("%w: AMD GPU %s exposes no power1_cap (the driver does not support a power limit on it)", backend.ErrBlocked, addr)
	}
	if l.max, ok, err = c.readMicro(hw, "power1_cap_max"); err != nil {
		return l, fmt.Errorf("read power cap range of AMD GPU %s: %w", addr, err)
	} else if !ok || l.max <= 0 {
		return l, fmt.Errorf("%w: AMD GPU %s reports no power1_cap_max; a limit is never written without the hardware's range", backend.ErrBlocked, addr)
	}
	if l.min, _, err = c.readMicro(hw, "power1_cap_min"); err != nil {
		return l, fmt.Errorf("read power cap range of AMD GPU %s: %w", addr, err)
	}
	if l.min < 0 || l.min > l.max {
		return l, fmt.Errorf("AMD GPU %s reports an impossible power cap range [%d, %d] µW", addr, l.min, l.max)
	}
	return l, nil
}

// write puts target (µW, already clamped) in power1_cap unless it is there
// already, journaling the original first, and returns the value read back.
func (c *Capper) write(addr string, l limits, target int64) (int64, error) {
	if target == l.cur {
		return l.cur, nil
	}
	attr := path.Join(l.hwmon, capAttr)
	if !c.fs.Writable(attr) {
		return l.cur, fmt.Errorf("%w: power1_cap of AMD GPU %s is read-only (%s)", backend.ErrBlocked, addr, c.fs.Path(attr))
	}
	if c.journal == nil {
		return l.cur, fmt.Errorf("set power cap of AMD GPU %s: no journal to record the original in; refusing to write", addr)
	}
	if err := c.journal.Record(state.Entry{Backend: Backend, Kind: state.KindGPU, ID: addr + "/" + capAttr, Original: strconv.FormatInt(l.cur, 10)}); err != nil {
		return l.cur, fmt.Errorf("set power cap of AMD GPU %s: %w", addr, err)
	}
	if err := c.fs.WriteInt(attr, target); err != nil {
		if errors.Is(err, syscall.EROFS) {
			// The file allows writes but the mount does not: the
			// shipped systemd unit keeps /sys/devices read-only.
			return l.cur, fmt.Errorf("%w: set power cap of AMD GPU %s to %d µW: %w; /sys/devices is read-only to the agent (systemd's ProtectKernelTunables): allow it with a drop-in, ReadWritePaths=-/sys/devices (systemd/README.md)", backend.ErrBlocked, addr, target, err)
		}
		if errors.Is(err, sysfs.ErrReadOnly) {
			return l.cur, fmt.Errorf("%w: set power cap of AMD GPU %s to %d µW: %w", backend.ErrBlocked, addr, target, err)
		}
		return l.cur, fmt.Errorf("set power cap of AMD GPU %s to %d µW: %w", addr, target, err)
	}
	got, ok, err := c.readMicro(l.hwmon, capAttr)
	switch {
	case err != nil:
		return target, fmt.Errorf("read back power cap of AMD GPU %s: %w", addr, err)
	case !ok:
		return target, fmt.Errorf("read back power cap of AMD GPU %s: power1_cap disappeared after the write", addr)
	case got != target:
		return got, fmt.Errorf("power cap of AMD GPU %s reads %d µW after writing %d µW", addr, got, target)
	}
	return got, nil
}

// describe reads one GPU's identity, limits and draw.
func (c *Capper) describe(index int, addr, dev string) (backend.GPU, error) {
	g := backend.GPU{Index: index, UUID: addr, PCIBusID: addr, Name: c.productName(dev)}
	hw, err := c.hwmonDir(dev)
	if err != nil {
		g.CapBlocked = "the amdgpu driver gives the GPU no hwmon directory, so no power1_cap to set"
		return g, nil
	}
	var errs []error
	read := func(attr string) (float64, bool) {
		uw, ok, err := c.readMicro(hw, attr)
		if err != nil {
			errs = append(errs, err)
		}
		return float64(uw) / microPerWatt, ok
	}
	var hasCap, hasMax bool
	g.CapWatts, hasCap = read(capAttr)
	g.MinWatts, _ = read("power1_cap_min")
	g.MaxWatts, hasMax = read("power1_cap_max")
	g.DefaultWatts, _ = read("power1_cap_default")
	// The same conditions SetCap refuses on, phrased without the device
	// so that GPUs blocked alike are reported once.
	switch {
	case len(errs) > 0:
	case !hasCap:
		g.CapBlocked = "the amdgpu driver exposes no power1_cap (no power limit on this GPU)"
	case !hasMax || g.MaxWatts <= 0:
		g.CapBlocked = "no power1_cap_max, and a limit is never written without the hardware's range"
	case !c.fs.Writable(path.Join(hw, capAttr)):
		g.CapBlocked = "hwmon power1_cap is read-only: the amdgpu driver does not allow setting this GPU's power limit (amd-smi writes the same file, so it cannot either)"
	}
	// Older amdgpu reports the average in power1_average, newer parts
	// (MI300) the instantaneous draw in power1_input; either may also
	// refuse the read (EOPNOTSUPP), which only means no draw reading.
	for _, attr := range []string{"power1_average", "power1_input"} {
		if uw, ok, err := c.readMicro(hw, attr); err == nil && ok {
			g.PowerWatts, g.HasPower = float64(uw)/microPerWatt, true
			break
		}
	}
	// The hwmon ABI's energy counter (microjoules since the driver
	// loaded), where the driver exposes one: per-pod energy then measures
	// instead of integrating the draw.
	if uj, ok, err := c.readMicro(hw, "energy1_input"); err == nil && ok && uj >= 0 {
		g.EnergyJoules, g.HasEnergy = float64(uj)/1e6, true
	}
	if err := errors.Join(errs...); err != nil {
		return g, fmt.Errorf("AMD GPU %s: %w", addr, err)
	}
	return g, nil
}

// readMicro reads a microwatt attribute of a hwmon directory. A missing
// attribute is ok=false without an error.
func (c *Capper) readMicro(hwmon, attr string) (v int64, ok bool, err error) {
	v, err = c.fs.ReadInt(path.Join(hwmon, attr))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return v, true, nil
}

// refresh scans the PCI bus and appends newly seen GPUs to the index
// table in address order. It returns the present GPUs' device directories
// by address. c.mu is held.
func (c *Capper) refresh() (map[string]string, error) {
	present, err := c.scan()
	if err != nil {
		return nil, err
	}
	var added []string
	for addr := range present {
		if !slices.Contains(c.order, addr) {
			added = append(added, addr)
		}
	}
	slices.Sort(added)
	c.order = append(c.order, added...)
	return present, nil
}
