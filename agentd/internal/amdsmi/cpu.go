package amdsmi

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/state"
)

const milliPerWatt = 1000

// Socket is one AMD CPU socket's package power limit (EPYC's socket power
// cap, set through the SMU over HSMP). amd-smi reports no minimum: the SMU
// raises a limit below its floor by itself.
type Socket struct {
	// ID numbers the sockets in amd-smi's order, from 0.
	ID int
	// CapWatts is the limit in force; MaxWatts the highest accepted.
	CapWatts, MaxWatts float64
}

// SocketCapper caps AMD CPU sockets through amd-smi, the fallback for
// EPYC hosts whose RAPL limits are read-only. Journal entries are backend
// "amdsmi", id "cpu-socket/<n>", original in milliwatts. It is safe for
// concurrent use.
type SocketCapper struct {
	lib     *Library
	journal *state.Journal
}

// NewSocketCapper returns the CPU socket backend on an opened library,
// recording originals in journal (required: no write happens without it).
func NewSocketCapper(lib *Library, journal *state.Journal) *SocketCapper {
	return &SocketCapper{lib: lib, journal: journal}
}

// Sockets lists the CPU sockets with their limit and maximum. It is
// blocked (backend.ErrBlocked) when amd-smi has no CPU support here: no
// EPYC, no hsmp driver, or a library built without it.
func (c *SocketCapper) Sockets() ([]Socket, error) {
	c.lib.mu.Lock()
	defer c.lib.mu.Unlock()
	handles, err := c.lib.cpuSockets()
	if err != nil {
		return nil, err
	}
	out := make([]Socket, 0, len(handles))
	var errs []error
	for id, h := range handles {
		s := Socket{ID: id}
		if mw, err := c.lib.cpuSocketCap(h); err != nil {
			errs = append(errs, fmt.Errorf("CPU socket %d: %w", id, err))
		} else {
			s.CapWatts = float64(mw) / milliPerWatt
		}
		if mw, err := c.lib.cpuSocketCapMax(h); err != nil {
			errs = append(errs, fmt.Errorf("CPU socket %d: %w", id, err))
		} else {
			s.MaxWatts = float64(mw) / milliPerWatt
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// SetPackageCap sets socket id's power limit to watts, clamped to the
// maximum amd-smi reports, recording the original before the first write
// and skipping the write when the limit is in force. It returns the limit
// read back, which the SMU may have raised to its own floor. A socket is
// the CPU package the enforcer caps, so SocketCapper is its package
// capper on EPYC hosts with read-only RAPL limits.
func (c *SocketCapper) SetPackageCap(id int, watts float64) (float64, error) {
	if err := backend.CheckTarget(fmt.Sprintf("CPU socket %d", id), watts); err != nil {
		return 0, err
	}
	c.lib.mu.Lock()
	defer c.lib.mu.Unlock()
	if c.journal == nil {
		return 0, fmt.Errorf("set power cap of CPU socket %d: no journal to record the original in; refusing to write", id)
	}
	mw, err := c.lib.applySocketCap(id, func(maxMW uint32) uint32 {
		v := math.Round(watts * milliPerWatt)
		if v >= float64(maxMW) {
			return maxMW
		}
		return max(uint32(v), 1)
	}, func(cur uint32) error {
		return c.journal.Record(state.Entry{Backend: Backend, Kind: state.KindCPU, ID: "cpu-socket/" + strconv.Itoa(id), Original: strconv.FormatUint(uint64(cur), 10)})
	})
	return float64(mw) / milliPerWatt, err
}

// Restore puts a journaled original back; see Library.Restore.
func (c *SocketCapper) Restore(id, original string) error { return c.lib.Restore(id, original) }

// cpuSockets lists the AMD CPU processors of every socket, one per
// physical CPU socket. l.mu is held.
func (l *Library) cpuSockets() ([]uintptr, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if l.cpuErr != nil {
		return nil, l.cpuErr
	}
	sockets, err := l.socketHandles()
	if err != nil {
		return nil, fmt.Errorf("list AMD CPU sockets: %w", err)
	}
	var cpus []uintptr
	for _, s := range sockets {
		ps, err := l.processorsByType(s, processorAMDCPU)
		if err != nil {
			return nil, fmt.Errorf("list AMD CPU sockets: %w", err)
		}
		cpus = append(cpus, ps...)
	}
	return cpus, nil
}

// applySocketCap reads socket id's limit and maximum, and unless the
// target computed from the maximum is in force, records the original and
// writes the target. It returns the limit read back. l.mu is held.
func (l *Library) applySocketCap(id int, target func(maxMW uint32) uint32, record func(original uint32) error) (uint32, error) {
	handles, err := l.cpuSockets()
	if err != nil {
		return 0, err
	}
	if l.cpuSetErr != nil {
		return 0, l.cpuSetErr
	}
	if id < 0 || id >= len(handles) {
		return 0, fmt.Errorf("set power cap of CPU socket %d: no such socket (%d found)", id, len(handles))
	}
	h := handles[id]
	cur, err := l.cpuSocketCap(h)
	if err != nil {
		return 0, fmt.Errorf("read power cap of CPU socket %d: %w", id, err)
	}
	maxMW, err := l.cpuSocketCapMax(h)
	if err != nil {
		return cur, fmt.Errorf("read power cap range of CPU socket %d: %w", id, err)
	}
	if maxMW == 0 {
		return cur, fmt.Errorf("CPU socket %d: amd-smi reports a maximum power cap of 0; refusing to write", id)
	}
	want := target(maxMW)
	if want == cur {
		return cur, nil
	}
	if err := record(cur); err != nil {
		return cur, fmt.Errorf("set power cap of CPU socket %d: %w", id, err)
	}
	if err := l.setCPUSocketCap(h, want); err != nil {
		return cur, fmt.Errorf("set power cap of CPU socket %d: %w", id, err)
	}
	after, err := l.cpuSocketCap(h)
	if err != nil {
		return want, fmt.Errorf("read back power cap of CPU socket %d: %w", id, err)
	}
	return after, nil
}

// restoreSocket writes a journaled original (mW) back, clamped to the
// maximum reported now. l.mu is held.
func (l *Library) restoreSocket(id int, original string) error {
	mw, err := strconv.ParseUint(original, 10, 32)
	if err != nil || mw == 0 {
		return fmt.Errorf("restore CPU socket %d: original %q is not a positive number of milliwatts", id, original)
	}
	_, err = l.applySocketCap(id, func(maxMW uint32) uint32 {
		return min(uint32(mw), maxMW)
	}, func(uint32) error { return nil })
	return err
}
