package rapl

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"

	"joulie.io/joulie/agentd/internal/sysfs"
)

// classDir is where the kernel links every powercap zone, relative to the
// host root.
const classDir = "sys/class/powercap"

// maxConstraints bounds the constraint_K_* scan. RAPL package zones have
// two or three (long_term, short_term, peak_power).
const maxConstraints = 16

// Zone is one powercap zone of a package: the package itself, or one die
// of a multi-die package.
type Zone struct {
	// Name is the zone's directory name: intel-rapl:0, intel-rapl-mmio:0.
	Name string
	// Die is the die number from a "package-P-die-D" name, -1 when the
	// zone covers the whole package.
	Die int
	// Dir is the zone's directory relative to the host root, through the
	// class symlink: sys/class/powercap/intel-rapl:0.
	Dir string
	// LongTermIndex is K of the constraint named long_term, -1 when the
	// zone has none.
	LongTermIndex int
	// LimitUW is the long-term power limit in force at discovery, in µW.
	LimitUW int64
	// MaxPowerUW is constraint_K_max_power_uw of the long-term
	// constraint, 0 when the kernel does not give it.
	MaxPowerUW int64
	// MinPowerUW is constraint_K_min_power_uw, 0 when absent (the RAPL
	// drivers do not expose one today).
	MinPowerUW int64
	// MaxEnergyRangeUJ is where energy_uj wraps, 0 when unknown.
	MaxEnergyRangeUJ uint64
	// LimitsWritable tells whether the long-term limit can be written;
	// LimitsReason says why not.
	LimitsWritable bool
	LimitsReason   string
	// Enabled is the zone's enabled flag; a disabled zone ignores its
	// limits. EnabledWritable tells whether the agent can set it.
	Enabled         bool
	EnabledWritable bool
	// HasEnergy tells whether energy_uj is readable.
	HasEnergy bool
}

// Package is one CPU package (socket) as RAPL controls it. For a package
// with one zone (all but multi-die parts) the fields are that zone's. For
// a multi-die package, Zone, Dir, LongTermIndex and MaxEnergyRangeUJ are
// the first die's; LimitUW, MaxPowerUW and MinPowerUW add up the dies'
// (0 when a die lacks the figure), and LimitsWritable, Enabled and
// HasEnergy hold only when they hold for every die.
type Package struct {
	// ID is the physical package id, from the zone's name.
	ID int
	// Zone is the zone's directory name, e.g. intel-rapl:0.
	Zone string
	// Interface is InterfaceMSR or InterfaceMMIO.
	Interface string
	// Dir is the zone's directory relative to the host root.
	Dir              string
	LongTermIndex    int
	LimitUW          int64
	MaxPowerUW       int64
	MinPowerUW       int64
	MaxEnergyRangeUJ uint64
	LimitsWritable   bool
	LimitsReason     string
	Enabled          bool
	HasEnergy        bool
	// Zones lists the package's zones, one per die, ordered by die.
	Zones []Zone
}

// MaxWatts is the package's reported maximum long-term limit in watts, 0
// when the kernel gives none.
func (p Package) MaxWatts() float64 { return float64(p.MaxPowerUW) / 1e6 }

// LimitWatts is the long-term limit at discovery in watts.
func (p Package) LimitWatts() float64 { return float64(p.LimitUW) / 1e6 }

// Discover finds the CPU package zones under the host root and reads
// their limits. It never fails: missing or unreadable pieces become
// warnings or a package whose limits are not writable, and a host without
// RAPL yields no packages and a warning. Packages are sorted by ID.
func Discover(fs *sysfs.FS) ([]Package, []string) {
	var warnings []string
	entries, err := fs.Glob(classDir + "/*")
	if err != nil {
		return nil, []string{fmt.Sprintf("list powercap zones: %v", err)}
	}
	type key struct {
		iface string
		pkg   int
	}
	groups := make(map[key][]Zone)
	for _, dir := range entries {
		zoneName := path.Base(dir)
		iface, _, ok := parseZoneDir(zoneName)
		if !ok {
			continue
		}
		name, err := fs.ReadString(dir + "/name")
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("powercap zone %s: %v; zone skipped", zoneName, err))
			continue
		}
		pkg, die, ok := parseZoneName(name)
		if !ok {
			continue // psys and other platform zones
		}
		z, w := readZone(fs, dir, zoneName, die)
		warnings = append(warnings, w...)
		k := key{iface, pkg}
		if dup := slices.IndexFunc(groups[k], func(o Zone) bool { return o.Die == die }); dup >= 0 {
			warnings = append(warnings, fmt.Sprintf("powercap zones %s and %s are both named %q; %s ignored",
				groups[k][dup].Name, zoneName, name, zoneName))
			continue
		}
		groups[k] = append(groups[k], z)
	}

	var pkgs []Package
	for k, zones := range groups {
		if k.iface == InterfaceMMIO {
			if _, ok := groups[key{InterfaceMSR, k.pkg}]; ok {
				continue // MSR interface preferred for this package
			}
		}
		slices.SortFunc(zones, func(a, b Zone) int { return cmp.Compare(a.Die, b.Die) })
		if len(zones) > 1 && zones[0].Die < 0 {
			warnings = append(warnings, fmt.Sprintf("package %d: zone %s covers the whole package but die zones exist too; only %s is used",
				k.pkg, zones[0].Name, zones[0].Name))
			zones = zones[:1]
		}
		pkgs = append(pkgs, aggregate(k.pkg, k.iface, zones))
	}
	slices.SortFunc(pkgs, func(a, b Package) int { return cmp.Compare(a.ID, b.ID) })
	if len(pkgs) == 0 {
		warnings = append(warnings, "no RAPL package zones under /"+classDir+" (intel_rapl_msr not loaded, or no RAPL on this CPU)")
	}
	return pkgs, warnings
}

// CurrentLimits returns pkgs with the long-term limits in force now, read
// again from each zone, without discovering the zones again: their
// layout, ranges and writability hold while the driver is loaded, only
// the limits change (the agent and other tools write them). An error
// means a zone's limit can no longer be read (the zone went away with
// its driver, say); the caller then runs Discover again.
func CurrentLimits(fs *sysfs.FS, pkgs []Package) ([]Package, error) {
	out := make([]Package, len(pkgs))
	for i, p := range pkgs {
		p.Zones = slices.Clone(p.Zones)
		p.LimitUW = 0
		for j := range p.Zones {
			z := &p.Zones[j]
			if z.LongTermIndex < 0 {
				continue
			}
			v, err := fs.ReadInt(z.Dir + "/" + limitAttr(z.LongTermIndex))
			if err != nil {
				return nil, fmt.Errorf("read long-term limit of package %d (%s): %w", p.ID, z.Name, err)
			}
			z.LimitUW = v
			p.LimitUW += v
		}
		out[i] = p
	}
	return out, nil
}

// readZone reads one package zone. Optional files (maxima, the energy
// range) that are missing or unreadable are left at 0: kernels omit
// constraint_K_max_power_uw on some parts and return ENODATA for it on
// others.
func readZone(fs *sysfs.FS, dir, zoneName string, die int) (Zone, []string) {
	var warnings []string
	z := Zone{Name: zoneName, Die: die, Dir: dir, LongTermIndex: -1}

	switch v, err := fs.ReadInt(dir + "/enabled"); {
	case err == nil:
		z.Enabled = v != 0
	case errors.Is(err, os.ErrNotExist):
		// Every powercap zone has the flag; without it, assume the
		// firmware's default (enabled) rather than refuse to cap.
		z.Enabled = true
	default:
		warnings = append(warnings, fmt.Sprintf("powercap zone %s: %v", zoneName, err))
	}
	z.EnabledWritable = fs.Writable(dir + "/enabled")

	if _, err := fs.ReadUint(dir + "/energy_uj"); err == nil {
		z.HasEnergy = true
	} else if !errors.Is(err, os.ErrNotExist) {
		warnings = append(warnings, fmt.Sprintf("powercap zone %s: energy counter unreadable: %v", zoneName, err))
	}
	if v, err := fs.ReadUint(dir + "/max_energy_range_uj"); err == nil {
		z.MaxEnergyRangeUJ = v
	}

	for k := 0; k < maxConstraints; k++ {
		name, err := fs.ReadString(dir + "/constraint_" + strconv.Itoa(k) + "_name")
		if err != nil {
			break
		}
		if name == "long_term" {
			z.LongTermIndex = k
			break
		}
	}
	if z.LongTermIndex < 0 {
		z.LimitsReason = fmt.Sprintf("%s has no long_term constraint (energy counter only)", zoneName)
		return z, warnings
	}
	prefix := dir + "/constraint_" + strconv.Itoa(z.LongTermIndex) + "_"
	limitFile := prefix + "power_limit_uw"
	limit, err := fs.ReadInt(limitFile)
	if err != nil {
		z.LimitsReason = fmt.Sprintf("long-term limit of %s is unreadable: %v", zoneName, err)
		return z, warnings
	}
	z.LimitUW = limit
	if v, err := fs.ReadInt(prefix + "max_power_uw"); err == nil && v > 0 {
		z.MaxPowerUW = v
	}
	if v, err := fs.ReadInt(prefix + "min_power_uw"); err == nil && v > 0 {
		z.MinPowerUW = v
	}
	switch {
	case !fs.Writable(limitFile):
		z.LimitsReason = fmt.Sprintf("%s of %s is read-only", path.Base(limitFile), zoneName)
	case limit <= 0 && z.MaxPowerUW == 0:
		// A package never runs without a long-term limit; a zone that
		// reads 0 with no maximum has no limit register behind it (the
		// energy-only zones of AMD parts on some kernels).
		z.LimitsReason = fmt.Sprintf("%s reports no long-term limit and no maximum (energy counter only)", zoneName)
	default:
		z.LimitsWritable = true
	}
	return z, warnings
}

// aggregate folds a package's zones into one Package.
func aggregate(id int, iface string, zones []Zone) Package {
	first := zones[0]
	p := Package{
		ID:               id,
		Zone:             first.Name,
		Interface:        iface,
		Dir:              first.Dir,
		LongTermIndex:    first.LongTermIndex,
		MaxEnergyRangeUJ: first.MaxEnergyRangeUJ,
		LimitsWritable:   true,
		Enabled:          true,
		HasEnergy:        true,
		Zones:            zones,
	}
	sumMax, sumMin := true, true
	for _, z := range zones {
		p.LimitUW += z.LimitUW
		p.MaxPowerUW += z.MaxPowerUW
		p.MinPowerUW += z.MinPowerUW
		sumMax = sumMax && z.MaxPowerUW > 0
		sumMin = sumMin && z.MinPowerUW > 0
		if !z.LimitsWritable && p.LimitsWritable {
			p.LimitsWritable = false
			p.LimitsReason = z.LimitsReason
		}
		p.Enabled = p.Enabled && z.Enabled
		p.HasEnergy = p.HasEnergy && z.HasEnergy
	}
	if !sumMax {
		p.MaxPowerUW = 0
	}
	if !sumMin {
		p.MinPowerUW = 0
	}
	return p
}
