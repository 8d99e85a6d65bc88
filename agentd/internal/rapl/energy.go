package rapl

import (
	"fmt"
	"io"
	"os"
	"time"

	"joulie.io/joulie/agentd/internal/sysfs"
)

// CeilingWatts is the highest package power an EnergyMeter believes when
// it knows nothing about the package. No server package sustains it;
// a counter reset or a missed wrap produces figures far above it.
const CeilingWatts = 1500

// ceilingFactor scales a package's known maximum into the highest power
// believed: turbo (PL2) runs up to about 1.25 × PL1 on servers, and
// client parts allow short excursions well beyond that.
const ceilingFactor = 3

// wrapMargin scales a package's known maximum when deciding whether the
// counter may have wrapped more than once between two readings.
const wrapMargin = 1.5

// MeterOptions tune an EnergyMeter.
type MeterOptions struct {
	// Now is the clock; nil means time.Now (whose monotonic reading makes
	// elapsed times immune to wall-clock steps).
	Now func() time.Time
	// MaxWatts is the package's maximum power when the kernel reports
	// none (the catalog's TDP or cap maximum); it sharpens the checks
	// below. 0 means unknown.
	MaxWatts float64
}

// EnergyMeter turns a package's energy counters into average power
// between successive readings. It runs every tick, so a reading reuses
// one buffer and the paths resolved at construction. It is not safe for
// concurrent use.
//
// The counter in energy_uj wraps to 0 after max_energy_range_uj (every
// 15 to 20 minutes at full load on Intel, 3 to 4 minutes on AMD), so a
// reading below the previous one is a wrap, and the energy is the rest of
// the range plus the new value. What a wrap cannot explain (no range
// known, values beyond the range), or a power no package draws, is a
// reset of the counter (driver reload, CPU hotplug) and gives no reading
// rather than a spike. So does an interval long enough for the counter to
// have wrapped twice at the package's maximum power, where the energy is
// ambiguous.
type EnergyMeter struct {
	pkg      int
	zones    []meterZone
	now      func() time.Time
	last     time.Time
	primed   bool
	ceilingW float64
	wrapSafe time.Duration // 0: cannot tell
	buf      [32]byte
}

type meterZone struct {
	path      string
	rangeUJ   uint64
	prev, cur uint64
}

// NewEnergyMeter returns a meter of package p's energy. Nothing is read
// until the first Read.
func NewEnergyMeter(fs *sysfs.FS, p Package, opts MeterOptions) *EnergyMeter {
	m := &EnergyMeter{pkg: p.ID, now: opts.Now}
	if m.now == nil {
		m.now = time.Now
	}
	expected := float64(p.MaxPowerUW) / 1e6
	if expected <= 0 {
		expected = opts.MaxWatts
	}
	m.ceilingW = CeilingWatts
	if expected > 0 {
		m.ceilingW = expected * ceilingFactor
	}
	var minRange uint64
	for _, z := range p.Zones {
		m.zones = append(m.zones, meterZone{path: fs.Path(z.Dir, "energy_uj"), rangeUJ: z.MaxEnergyRangeUJ})
		if minRange == 0 || (z.MaxEnergyRangeUJ > 0 && z.MaxEnergyRangeUJ < minRange) {
			minRange = z.MaxEnergyRangeUJ
		}
	}
	if expected > 0 && minRange > 0 {
		perZone := expected * wrapMargin / float64(len(p.Zones))
		m.wrapSafe = time.Duration(float64(minRange) / perZone * float64(time.Microsecond))
	}
	return m
}

// Package is the physical package id the meter measures.
func (m *EnergyMeter) Package() int { return m.pkg }

// Read reads the counters and returns the average power since the previous
// Read. ok is false, with no error, on the first reading, after a reset or
// an implausible delta, and when no time has passed. An unreadable counter
// is an error, and the next reading starts afresh.
func (m *EnergyMeter) Read() (watts float64, ok bool, err error) {
	now := m.now()
	for i := range m.zones {
		v, err := m.readCounter(m.zones[i].path)
		if err != nil {
			m.primed = false
			return 0, false, err
		}
		m.zones[i].cur = v
	}
	if !m.primed {
		m.commit(now)
		return 0, false, nil
	}
	elapsed := now.Sub(m.last)
	if elapsed <= 0 {
		return 0, false, nil
	}
	var energy uint64
	valid := true
	for _, z := range m.zones {
		d, ok := counterDelta(z.prev, z.cur, z.rangeUJ)
		valid = valid && ok
		energy += d
	}
	m.commit(now)
	if !valid || (m.wrapSafe > 0 && elapsed >= m.wrapSafe) {
		return 0, false, nil
	}
	watts = float64(energy) / 1e6 / elapsed.Seconds()
	if watts > m.ceilingW {
		return 0, false, nil
	}
	return watts, true, nil
}

func (m *EnergyMeter) commit(now time.Time) {
	for i := range m.zones {
		m.zones[i].prev = m.zones[i].cur
	}
	m.last = now
	m.primed = true
}

// counterDelta is the energy between two counter values that wrap after
// rangeUJ. ok is false when a wrap cannot explain cur < prev.
func counterDelta(prev, cur, rangeUJ uint64) (uint64, bool) {
	if cur >= prev {
		if rangeUJ > 0 && cur > rangeUJ {
			return 0, false
		}
		return cur - prev, true
	}
	if rangeUJ == 0 || prev > rangeUJ {
		return 0, false
	}
	return rangeUJ - prev + cur, true
}

func (m *EnergyMeter) readCounter(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read package %d energy: %w", m.pkg, err)
	}
	n, err := io.ReadFull(f, m.buf[:])
	f.Close()
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return 0, fmt.Errorf("read package %d energy from %s: %w", m.pkg, path, err)
	}
	v, ok := parseCounter(m.buf[:n])
	if !ok {
		return 0, fmt.Errorf("read package %d energy from %s: not a counter: %q", m.pkg, path, m.buf[:n])
	}
	return v, nil
}
