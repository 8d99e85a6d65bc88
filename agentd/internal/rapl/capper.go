package rapl

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
)

// Backend is the backend's name in the state journal and the API.
const Backend = "rapl"

// DefaultMinFraction sets the floor of a package cap, as a fraction of the
// package's maximum, when neither the kernel nor the caller gives a
// minimum. The RAPL drivers do not expose the hardware's minimum
// (PKG_POWER_INFO), and a long-term limit far below it leaves the
// package at its lowest P-state with little work done per watt; a quarter
// of the maximum stays clear of that on server parts.
const DefaultMinFraction = 0.25

// LimitToleranceUW is how far a limit read back may be from the value
// written and still count as that value. The kernel stores limits in the
// hardware's power unit, truncating: 1/8 W on most Intel parts, 1 W at
// the coarsest.
const LimitToleranceUW = 1_000_000

// Options tune a Capper.
type Options struct {
	// MaxWatts is the ceiling of one package's cap when the kernel
	// reports no constraint_K_max_power_uw: the catalog's maximum (or TDP)
	// for the CPU model. 0 means none; the ceiling is then the long-term
	// limit the host had before the agent's first write.
	MaxWatts float64
	// MinWatts is the floor of one package's cap when the kernel reports
	// no minimum (the catalog's cap minimum). 0 means DefaultMinFraction
	// of the ceiling.
	MinWatts float64
	// Vendor is /proc/cpuinfo's vendor_id; it only words the reason given
	// when the limits are read-only.
	Vendor string
}

// Capper sets package power caps through RAPL. It is safe for concurrent
// use.
type Capper struct {
	mu      sync.Mutex
	fs      *sysfs.FS
	journal *state.Journal
	pkgs    []Package
	opts    Options
}

// NewCapper returns a Capper for the packages Discover found. The journal
// is required: no limit is written without its original on record.
func NewCapper(fs *sysfs.FS, journal *state.Journal, pkgs []Package, opts Options) (*Capper, error) {
	if fs == nil || journal == nil {
		return nil, errors.New("rapl: a sysfs handle and a state journal are required")
	}
	if opts.MaxWatts < 0 || opts.MinWatts < 0 || math.IsNaN(opts.MaxWatts) || math.IsNaN(opts.MinWatts) {
		return nil, fmt.Errorf("rapl: invalid cap range options %g..%g W", opts.MinWatts, opts.MaxWatts)
	}
	return &Capper{fs: fs, journal: journal, pkgs: slices.Clone(pkgs), opts: opts}, nil
}

// Name is the backend's name (state journal, API).
func (c *Capper) Name() string { return Backend }

// Packages returns the packages the Capper controls.
func (c *Capper) Packages() []Package { return slices.Clone(c.pkgs) }

func (c *Capper) pkg(id int) (*Package, bool) {
	for i := range c.pkgs {
		if c.pkgs[i].ID == id {
			return &c.pkgs[i], true
		}
	}
	return nil, false
}

// Range returns the range a cap of package pkgID is clamped to, in watts.
func (c *Capper) Range(pkgID int) (minWatts, maxWatts float64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.writable(pkgID)
	if err != nil {
		return 0, 0, err
	}
	cur, err := c.readZones(p)
	if err != nil {
		return 0, 0, err
	}
	lo, hi := c.rangeUW(p, cur)
	return float64(lo) / 1e6, float64(hi) / 1e6, nil
}

// SetPackageCap sets the long-term power limit of package pkgID to watts,
// clamped to the package's range, and returns the limit in force
// afterwards. The write is skipped when the limit is already in place.
// Before the first write to a zone its original limit (and enabled flag,
// when the zone has to be enabled) is recorded in the journal.
//
// Errors wrap backend.ErrBlocked (or sysfs.ErrReadOnly) when the host
// cannot enforce a RAPL cap: no such package, read-only or absent limits,
// a locked zone. Other errors (EIO, a value that does not stick) are
// failed attempts; either way the caller falls back to DVFS.
func (c *Capper) SetPackageCap(pkgID int, watts float64) (float64, error) {
	if math.IsNaN(watts) || math.IsInf(watts, 0) || watts <= 0 {
		return 0, fmt.Errorf("set package %d cap: invalid cap %g W", pkgID, watts)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.writable(pkgID)
	if err != nil {
		return 0, err
	}
	cur, err := c.readZones(p)
	if err != nil {
		return 0, err
	}
	lo, hi := c.rangeUW(p, cur)
	if hi <= 0 {
		return 0, fmt.Errorf("%w: package %d (%s): no maximum power known (the kernel reports none, no catalog maximum was given, and the current limit reads 0)", backend.ErrBlocked, p.ID, p.Zone)
	}
	total := int64(math.Round(watts * 1e6))
	total = min(max(total, lo), hi)

	// Decide per zone what has to change; the common case on every tick
	// is nothing.
	targets := make([]int64, len(p.Zones))
	var entries []state.Entry
	applied := int64(0)
	for i, z := range p.Zones {
		targets[i] = share(total, len(p.Zones), i)
		if z.MaxPowerUW > 0 {
			targets[i] = min(targets[i], z.MaxPowerUW)
		}
		if abs(cur[i].limit-targets[i]) >= LimitToleranceUW {
			entries = append(entries, state.Entry{Backend: Backend, Kind: state.KindCPU, ID: z.Name + "/" + limitAttr(z.LongTermIndex), Original: strconv.FormatInt(cur[i].limit, 10)})
		} else {
			targets[i] = -1 // in place
			applied += cur[i].limit
		}
		if !cur[i].enabled {
			if !z.EnabledWritable {
				return 0, fmt.Errorf("%w: package %d: powercap zone %s is disabled and its enabled flag is read-only, so no limit takes effect", backend.ErrBlocked, p.ID, z.Name)
			}
			entries = append(entries, state.Entry{Backend: Backend, Kind: state.KindCPU, ID: z.Name + "/" + enabledAttr, Original: "0"})
		}
	}
	if len(entries) == 0 {
		return float64(applied) / 1e6, nil
	}
	if err := c.journal.Record(entries...); err != nil {
		return 0, fmt.Errorf("set package %d cap: original limits not recorded, nothing written: %w", p.ID, err)
	}

	for i, z := range p.Zones {
		if targets[i] >= 0 {
			got, err := c.writeLimit(z, targets[i])
			if err != nil {
				return 0, fmt.Errorf("set long-term limit of package %d (%s) to %d µW: %w", p.ID, z.Name, targets[i], err)
			}
			applied += got
		}
		if !cur[i].enabled {
			if err := c.writeEnabled(z.Dir, 1); err != nil {
				return 0, fmt.Errorf("enable powercap zone %s of package %d: %w", z.Name, p.ID, err)
			}
		}
	}
	return float64(applied) / 1e6, nil
}

// writable returns package pkgID, or a blocked error when its limits
// cannot be written.
func (c *Capper) writable(pkgID int) (*Package, error) {
	p, ok := c.pkg(pkgID)
	if !ok {
		return nil, fmt.Errorf("%w: no RAPL package zone for CPU package %d", backend.ErrBlocked, pkgID)
	}
	if !p.LimitsWritable {
		return nil, fmt.Errorf("%w: %s (package %d: %s)", backend.ErrBlocked, c.readOnlyReason(), p.ID, p.LimitsReason)
	}
	return p, nil
}

func (c *Capper) readOnlyReason() string {
	switch c.opts.Vendor {
	case "AuthenticAMD", "HygonGenuine":
		return "RAPL power limits are read-only on this CPU (AMD EPYC exposes energy only); falling back to DVFS"
	}
	return "RAPL power limits are read-only on this CPU; falling back to DVFS"
}

type zoneState struct {
	limit   int64
	enabled bool
}

// readZones reads the limit and enabled flag of every zone of p as they
// are now: another tool may have changed them since discovery.
func (c *Capper) readZones(p *Package) ([]zoneState, error) {
	out := make([]zoneState, len(p.Zones))
	for i, z := range p.Zones {
		limit, err := c.fs.ReadInt(z.Dir + "/" + limitAttr(z.LongTermIndex))
		if err != nil {
			return nil, fmt.Errorf("read long-term limit of package %d (%s): %w", p.ID, z.Name, err)
		}
		out[i].limit = limit
		out[i].enabled = true
		if v, err := c.fs.ReadInt(z.Dir + "/" + enabledAttr); err == nil {
			out[i].enabled = v != 0
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("read enabled flag of package %d (%s): %w", p.ID, z.Name, err)
		}
	}
	return out, nil
}

// rangeUW is the clamp range of a package cap in µW. The ceiling is the
// kernel's maximum, else the caller's, else the limit the host had before
// the agent's first write (journaled, or in force now when nothing has
// been written yet): with no figure to go by, the agent may lower the
// firmware's limit but never raise it.
func (c *Capper) rangeUW(p *Package, cur []zoneState) (lo, hi int64) {
	hi = p.MaxPowerUW
	if hi <= 0 && c.opts.MaxWatts > 0 {
		hi = int64(math.Round(c.opts.MaxWatts * 1e6))
	}
	if hi <= 0 {
		for i, z := range p.Zones {
			v := cur[i].limit
			if orig, ok := c.journal.Original(Backend, z.Name+"/"+limitAttr(z.LongTermIndex)); ok {
				if o, err := sysfs.ParseInt(orig); err == nil {
					v = o
				}
			}
			hi += v
		}
	}
	lo = p.MinPowerUW
	if lo <= 0 && c.opts.MinWatts > 0 {
		lo = int64(math.Round(c.opts.MinWatts * 1e6))
	}
	if lo <= 0 {
		lo = int64(float64(hi) * DefaultMinFraction)
	}
	return min(lo, hi), hi
}

// writeLimit writes a zone's long-term limit and returns the value read
// back.
func (c *Capper) writeLimit(z Zone, uw int64) (int64, error) {
	file := z.Dir + "/" + limitAttr(z.LongTermIndex)
	if err := c.fs.WriteInt(file, uw); err != nil {
		return 0, err
	}
	got, err := c.fs.ReadInt(file)
	if err != nil {
		return 0, fmt.Errorf("read back: %w", err)
	}
	if abs(got-uw) >= LimitToleranceUW {
		return got, fmt.Errorf("%s reads %d µW after writing %d µW (limit locked or clamped by firmware?)", c.fs.Path(file), got, uw)
	}
	return got, nil
}

func (c *Capper) writeEnabled(dir string, v int64) error {
	file := dir + "/" + enabledAttr
	if err := c.fs.WriteInt(file, v); err != nil {
		return err
	}
	got, err := c.fs.ReadInt(file)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	if got != v {
		return fmt.Errorf("%s reads %d after writing %d", c.fs.Path(file), got, v)
	}
	return nil
}

// Restore writes a journaled original back (state.Restorer). The ID must
// name a package zone's power limit or enabled flag; a zone that no longer
// exists (driver unloaded, different kernel) is an error naming it, and
// the journal keeps the entry.
func (c *Capper) Restore(id, original string) error {
	zone, attr, ok := parseControlID(id)
	if !ok {
		return fmt.Errorf("restore %q: not a RAPL package limit or enabled flag; refusing to write it", id)
	}
	v, err := sysfs.ParseInt(original)
	if err != nil || v < 0 {
		return fmt.Errorf("restore %s: bad original %q", id, original)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	dir := classDir + "/" + zone
	if !c.fs.Exists(dir) {
		return fmt.Errorf("restore %s to %s: powercap zone %s no longer exists (%s missing; intel_rapl driver unloaded?)", id, original, zone, c.fs.Path(dir))
	}
	file := dir + "/" + attr
	if attr == enabledAttr {
		if cur, err := c.fs.ReadInt(file); err == nil && cur == v {
			return nil
		}
		if err := c.writeEnabled(dir, v); err != nil {
			return fmt.Errorf("restore %s to %s: %w", id, original, err)
		}
		return nil
	}
	if cur, err := c.fs.ReadInt(file); err == nil && abs(cur-v) < LimitToleranceUW {
		return nil
	}
	if err := c.fs.WriteInt(file, v); err != nil {
		return fmt.Errorf("restore %s to %s: %w", id, original, err)
	}
	got, err := c.fs.ReadInt(file)
	if err != nil {
		return fmt.Errorf("restore %s to %s: read back: %w", id, original, err)
	}
	if abs(got-v) >= LimitToleranceUW {
		return fmt.Errorf("restore %s to %s: %s reads %d µW afterwards", id, original, c.fs.Path(file), got)
	}
	return nil
}

// Present reports, without writing, whether the control id names is still
// on the host: its zone's attribute file exists. An ID that names no RAPL
// package control is nothing this backend could ever reach: not present.
func (c *Capper) Present(id string) (bool, error) {
	zone, attr, ok := parseControlID(id)
	if !ok {
		return false, nil
	}
	return c.fs.Exists(classDir + "/" + zone + "/" + attr), nil
}

// share is part i of total split into n parts that add up to total.
func share(total int64, n, i int) int64 {
	s := total / int64(n)
	if i == n-1 {
		s = total - s*int64(n-1)
	}
	return s
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
