package amdsmi

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/state"
)

const microPerWatt = 1_000_000

// GPUCapper is the amd-smi GPU backend; it implements backend.GPUCapper.
// Journal entries are backend "amdsmi", id "gpu/<pci address>", original
// in microwatts.
//
// A GPU's Index is its position in amd-smi's enumeration as first seen,
// and it stays with that PCI address for the life of the capper.
type GPUCapper struct {
	lib     *Library
	journal *state.Journal

	// models names GPUs by PCI address (WithModels).
	models map[string]string

	mu    sync.Mutex
	order []string // PCI addresses by index
}

// genericName is what a GPU is called that nothing names better: the
// bindings read no product name from amd-smi.
const genericName = "AMD GPU"

// NewGPUCapper returns the GPU backend on an opened library, recording
// originals in journal (required: no write happens without it).
func NewGPUCapper(lib *Library, journal *state.Journal) *GPUCapper {
	return &GPUCapper{lib: lib, journal: journal}
}

// WithModels names each GPU at a PCI address of models (lower case, as
// sysfs writes them) after it, for the host to name them from the PCI
// bus as the amdhwmon backend does, so that the hardware catalog
// resolves the product rather than a generic AMD GPU. It returns c; call
// it before the first GPUs.
func (c *GPUCapper) WithModels(models map[string]string) *GPUCapper {
	c.models = models
	return c
}

// Name is the backend's name, "amdsmi".
func (c *GPUCapper) Name() string { return Backend }

// gpu is one GPU as amd-smi enumerates it.
type gpu struct {
	addr   string
	handle uintptr
}

// GPUs lists the GPUs amd-smi sees, with their cap range, their draw
// (HasPower) and their energy counter (HasEnergy). A reading amd-smi
// cannot give (an older library without the function, a GPU that does
// not report it, a failed call) is left out, never an error: the GPU is
// listed and capped without it. The list holds every GPU that could be
// enumerated even when err is not nil; err then names the GPUs whose caps
// could not be read.
func (c *GPUCapper) GPUs() ([]backend.GPU, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lib.mu.Lock()
	defer c.lib.mu.Unlock()
	found, err := c.lib.gpus()
	if found == nil && err != nil {
		return nil, err
	}
	errs := []error{err}
	c.remember(found)
	var out []backend.GPU
	for i, addr := range c.order {
		idx := slices.IndexFunc(found, func(g gpu) bool { return g.addr == addr })
		if idx < 0 {
			continue
		}
		h := found[idx].handle
		g := backend.GPU{Index: i, UUID: c.lib.gpuUUID(h), Name: genericName, PCIBusID: addr}
		if m := c.models[strings.ToLower(addr)]; m != "" {
			g.Name = m
		}
		if g.UUID == "" {
			g.UUID = addr
		}
		info, err := c.lib.powerCapInfo(h)
		if err != nil {
			errs = append(errs, fmt.Errorf("AMD GPU %s: %w", addr, err))
		} else {
			g.CapWatts = float64(info.cur) / microPerWatt
			g.DefaultWatts = float64(info.def) / microPerWatt
			g.MinWatts = float64(info.min) / microPerWatt
			g.MaxWatts = float64(info.max) / microPerWatt
		}
		g.PowerWatts, g.HasPower = c.lib.gpuPower(h)
		g.EnergyJoules, g.HasEnergy = c.lib.gpuEnergy(h)
		out = append(out, g)
	}
	return out, errors.Join(errs...)
}

// SetCap sets GPU index's power cap to watts, clamped to the range amd-smi
// reports and rounded to whole watts (amdgpu keeps whole watts). It
// records the original cap before the first write, skips the write when
// the cap is already in place and returns the cap read back.
func (c *GPUCapper) SetCap(index int, watts float64) (float64, error) {
	if err := backend.CheckTarget(fmt.Sprintf("AMD GPU %d", index), watts); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lib.mu.Lock()
	defer c.lib.mu.Unlock()
	found, err := c.lib.gpus()
	if found == nil && err != nil {
		return 0, err
	}
	c.remember(found)
	if index < 0 || index >= len(c.order) {
		return 0, fmt.Errorf("set power cap of AMD GPU %d: no such GPU (%d found)", index, len(c.order))
	}
	addr := c.order[index]
	idx := slices.IndexFunc(found, func(g gpu) bool { return g.addr == addr })
	if idx < 0 {
		return 0, fmt.Errorf("set power cap of AMD GPU %d (%s): amd-smi no longer lists it", index, addr)
	}
	if c.journal == nil {
		return 0, fmt.Errorf("set power cap of AMD GPU %s: no journal to record the original in; refusing to write", addr)
	}
	uw, err := c.lib.applyGPUCap(found[idx], func(info capInfo) uint64 {
		lo, hi := backend.WholeWattRange(info.min, info.max)
		return backend.ClampWholeWatts(watts, lo, hi)
	}, func(cur uint64) error {
		return c.journal.Record(state.Entry{Backend: Backend, Kind: state.KindGPU, ID: "gpu/" + addr, Original: strconv.FormatUint(cur, 10)})
	})
	return float64(uw) / microPerWatt, err
}

// Restore puts a journaled original back; see Library.Restore.
func (c *GPUCapper) Restore(id, original string) error { return c.lib.Restore(id, original) }

// remember appends newly seen GPUs to the index table. c.mu is held.
func (c *GPUCapper) remember(found []gpu) {
	for _, g := range found {
		if !slices.Contains(c.order, g.addr) {
			c.order = append(c.order, g.addr)
		}
	}
}

// gpus enumerates amd-smi's GPUs: the processors of every socket whose
// type is AMD GPU. A processor that cannot be identified is left out and
// named in the error; the others are still returned. l.mu is held.
func (l *Library) gpus() ([]gpu, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if l.gpuErr != nil {
		return nil, l.gpuErr
	}
	sockets, err := l.socketHandles()
	if err != nil {
		return nil, fmt.Errorf("list AMD GPUs: %w", err)
	}
	found := []gpu{}
	var errs []error
	for _, s := range sockets {
		procs, err := l.processorHandles(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("list AMD GPUs: %w", err))
			continue
		}
		for _, p := range procs {
			t, err := l.processorType(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("list AMD GPUs: %w", err))
				continue
			}
			if t != processorAMDGPU {
				continue
			}
			addr, err := l.pciAddress(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("list AMD GPUs: %w", err))
				continue
			}
			found = append(found, gpu{addr: addr, handle: p})
		}
	}
	return found, errors.Join(errs...)
}

// applyGPUCap reads the GPU's caps, computes the target from them, and
// unless the target is in force already, records the original and writes
// the target. It returns the cap read back. l.mu is held.
func (l *Library) applyGPUCap(g gpu, target func(capInfo) uint64, record func(original uint64) error) (uint64, error) {
	if l.gpuSetErr != nil {
		return 0, l.gpuSetErr
	}
	info, err := l.powerCapInfo(g.handle)
	if err != nil {
		return 0, fmt.Errorf("read power cap of AMD GPU %s: %w", g.addr, err)
	}
	if err := checkRange(info); err != nil {
		return info.cur, fmt.Errorf("AMD GPU %s: %w", g.addr, err)
	}
	want := target(info)
	if want == info.cur {
		return info.cur, nil
	}
	if err := record(info.cur); err != nil {
		return info.cur, fmt.Errorf("set power cap of AMD GPU %s: %w", g.addr, err)
	}
	if err := l.setPowerCap(g.handle, want); err != nil {
		return info.cur, fmt.Errorf("set power cap of AMD GPU %s: %w", g.addr, err)
	}
	after, err := l.powerCapInfo(g.handle)
	if err != nil {
		return want, fmt.Errorf("read back power cap of AMD GPU %s: %w", g.addr, err)
	}
	if after.cur != want {
		return after.cur, fmt.Errorf("power cap of AMD GPU %s reads %d µW after setting %d µW", g.addr, after.cur, want)
	}
	return after.cur, nil
}

// checkRange refuses cap information no write can safely be based on: no
// range (nothing to clamp to), or values that cannot be microwatts (early
// amd-smi releases reported some caps in watts), which would also make
// the journaled original wrong.
func checkRange(info capInfo) error {
	switch {
	case info.max == 0:
		return fmt.Errorf("%w: amd-smi reports no power cap range", backend.ErrBlocked)
	case info.max < microPerWatt || info.min > info.max:
		return fmt.Errorf("amd-smi reports power cap range [%d, %d], not in microwatts as expected; refusing to write", info.min, info.max)
	case info.cur < info.min || info.cur > info.max:
		return fmt.Errorf("amd-smi reports power cap %d outside its range [%d, %d]; refusing to write", info.cur, info.min, info.max)
	}
	return nil
}

// restoreGPU writes a journaled original back, clamped to the range
// reported now. l.mu is held.
func (l *Library) restoreGPU(addr, original string) error {
	uw, err := strconv.ParseUint(original, 10, 64)
	if err != nil || uw == 0 {
		return fmt.Errorf("restore AMD GPU %s: original %q is not a positive number of microwatts", addr, original)
	}
	found, err := l.gpus()
	idx := slices.IndexFunc(found, func(g gpu) bool { return g.addr == addr })
	if idx < 0 {
		if err != nil {
			return fmt.Errorf("restore power cap of AMD GPU %s to %d µW: %w", addr, uw, err)
		}
		return fmt.Errorf("restore power cap of AMD GPU %s to %d µW: amd-smi no longer lists it", addr, uw)
	}
	_, err = l.applyGPUCap(found[idx], func(info capInfo) uint64 {
		return min(max(uw, info.min), info.max)
	}, func(uint64) error { return nil })
	return err
}

// Present reports, without writing, whether amd-smi still lists the
// control id names: "gpu/<pci address>" or "cpu-socket/<n>". When amd-smi
// cannot enumerate it cannot tell, and says why. An ID of another form is
// nothing this backend could reach.
func (l *Library) Present(id string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kind, rest, _ := strings.Cut(id, "/")
	switch kind {
	case "gpu":
		found, err := l.gpus()
		if slices.ContainsFunc(found, func(g gpu) bool { return g.addr == rest }) {
			return true, nil
		}
		return false, err
	case "cpu-socket":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 {
			return false, nil
		}
		sockets, err := l.cpuSockets()
		if err != nil {
			return false, err
		}
		return n < len(sockets), nil
	}
	return false, nil
}

// Restore puts back an original journaled by either capper: id
// "gpu/<pci address>" (microwatts) or "cpu-socket/<n>" (milliwatts).
// Register the Library, or either capper, as the journal's "amdsmi"
// restorer.
func (l *Library) Restore(id, original string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	kind, rest, _ := strings.Cut(id, "/")
	switch kind {
	case "gpu":
		return l.restoreGPU(rest, original)
	case "cpu-socket":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 {
			break
		}
		return l.restoreSocket(n, original)
	}
	return fmt.Errorf("restore %s: not a control of the %s backend", id, Backend)
}
