// Package rapltest builds powercap trees for tests, laid out as the kernel
// lays them out: zone directories under
// sys/devices/virtual/powercap/<control type>/, subzones nested inside
// their parent, and sys/class/powercap/<zone> as relative symlinks into
// that tree. File modes follow the kernel's (limits 0644, names and
// maxima 0444, energy counters 0400), because the rapl package decides
// what it may write from the mode.
//
// A typical two-socket host:
//
//	root := t.TempDir()
//	rapltest.Write(t, root,
//		rapltest.XeonPackage(rapltest.MSR, 0, 0, 270),
//		rapltest.XeonPackage(rapltest.MSR, 1, 1, 270))
//	fs := sysfs.New(root)
//
// Writer stands in for the kernel on writes: it counts them, can fail them
// (EIO) and can change what lands in the file (rounding, clamping).
package rapltest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The powercap control types the RAPL drivers register.
const (
	MSR  = "intel-rapl"      // intel_rapl_msr (and intel_rapl_tpmi)
	MMIO = "intel-rapl-mmio" // intel_rapl_mmio (processor_thermal_device)
)

// Typical values of a server package, as read on real hosts.
const (
	// EnergyRangeIntelUJ is max_energy_range_uj of an Intel package with
	// the common 61 µJ energy unit and a 32-bit counter.
	EnergyRangeIntelUJ uint64 = 262143328850
	// EnergyRangeAMDUJ is max_energy_range_uj of an AMD Zen package.
	EnergyRangeAMDUJ uint64 = 65532610987
)

// Constraint is one constraint_K_* group of a zone.
type Constraint struct {
	// Name is constraint_K_name: long_term, short_term or peak_power.
	Name string
	// LimitUW is constraint_K_power_limit_uw.
	LimitUW int64
	// TimeWindowUS is constraint_K_time_window_us.
	TimeWindowUS int64
	// MaxPowerUW is constraint_K_max_power_uw; 0 leaves the file out,
	// as kernels do when the hardware reports no maximum.
	MaxPowerUW int64
	// MinPowerUW is constraint_K_min_power_uw; 0 leaves it out (the
	// RAPL drivers never expose it today).
	MinPowerUW int64
	// ReadOnly gives the limit and time window mode 0444, as on
	// energy-only hardware.
	ReadOnly bool
}

// Zone is one powercap zone with its subzones.
type Zone struct {
	// Interface is the control type, MSR or MMIO; empty means MSR.
	Interface string
	// Index is N in <interface>:N (for a subzone, M in <parent>:M).
	Index int
	// Name is the name file: package-0, package-0-die-1, psys, core,
	// uncore, dram.
	Name string
	// Disabled writes enabled as 0.
	Disabled bool
	// EnabledReadOnly gives the enabled file mode 0444.
	EnabledReadOnly bool
	// EnergyUJ and MaxEnergyRangeUJ are the energy counter and where it
	// wraps. A zero range leaves max_energy_range_uj out; NoEnergy leaves
	// energy_uj out.
	EnergyUJ         uint64
	MaxEnergyRangeUJ uint64
	NoEnergy         bool
	// Constraints are written as constraint_0_*, constraint_1_*, ... in
	// this order.
	Constraints []Constraint
	// Subzones are nested inside the zone (intel-rapl:0:0 ...).
	Subzones []Zone
}

// ZoneName is the zone's directory name: intel-rapl:0, intel-rapl-mmio:0.
func (z Zone) ZoneName() string {
	return fmt.Sprintf("%s:%d", iface(z.Interface), z.Index)
}

func iface(s string) string {
	if s == "" {
		return MSR
	}
	return s
}

// XeonPackage is a Xeon package zone as the MSR or MMIO driver shows it:
// long_term (PL1) at the TDP with the TDP as its maximum, short_term (PL2)
// at 1.2 × TDP, and for the MSR interface a dram subzone.
func XeonPackage(iface string, index, pkg int, tdpWatts float64) Zone {
	tdp := int64(tdpWatts * 1e6)
	z := Zone{
		Interface:        iface,
		Index:            index,
		Name:             fmt.Sprintf("package-%d", pkg),
		EnergyUJ:         uint64(1_000_000_000 * (pkg + 1)),
		MaxEnergyRangeUJ: EnergyRangeIntelUJ,
		Constraints: []Constraint{
			{Name: "long_term", LimitUW: tdp, TimeWindowUS: 999424, MaxPowerUW: tdp},
			{Name: "short_term", LimitUW: tdp * 12 / 10, TimeWindowUS: 2440, MaxPowerUW: tdp * 2},
		},
	}
	if iface == "" || iface == MSR {
		z.Subzones = []Zone{{
			Index:            0,
			Name:             "dram",
			EnergyUJ:         400_000_000,
			MaxEnergyRangeUJ: 65712999613,
			Constraints:      []Constraint{{Name: "long_term", TimeWindowUS: 976}},
		}}
	}
	return z
}

// EPYCPackage is an AMD Zen package zone: the energy counter works, the
// zone reads disabled, and its constraints are read-only with no limit,
// as intel_rapl_msr exposes them on AMD.
func EPYCPackage(index, pkg int) Zone {
	return Zone{
		Index:            index,
		Name:             fmt.Sprintf("package-%d", pkg),
		Disabled:         true,
		EnergyUJ:         uint64(2_000_000_000 * (pkg + 1)),
		MaxEnergyRangeUJ: EnergyRangeAMDUJ,
		Constraints: []Constraint{
			{Name: "long_term", TimeWindowUS: 976, ReadOnly: true},
			{Name: "short_term", TimeWindowUS: 976, ReadOnly: true},
		},
	}
}

// TwoSocketXeon writes a two-socket Xeon host (package-0 and package-1
// on the MSR interface, TDP tdpWatts) and returns its zones.
func TwoSocketXeon(t testing.TB, root string, tdpWatts float64) []Zone {
	t.Helper()
	zones := []Zone{XeonPackage(MSR, 0, 0, tdpWatts), XeonPackage(MSR, 1, 1, tdpWatts)}
	Write(t, root, zones...)
	return zones
}

// TwoSocketEPYC writes a two-socket AMD EPYC host (energy-only zones).
func TwoSocketEPYC(t testing.TB, root string) []Zone {
	t.Helper()
	zones := []Zone{EPYCPackage(0, 0), EPYCPackage(1, 1)}
	Write(t, root, zones...)
	return zones
}

// ClassDir is the zone's directory through the class symlink, relative to
// the host root: sys/class/powercap/intel-rapl:0.
func ClassDir(zone string) string { return "sys/class/powercap/" + zone }

// Write creates the zones under root, with the control type directories,
// the class symlinks and the subzones. It may be called more than once on
// the same root.
func Write(t testing.TB, root string, zones ...Zone) {
	t.Helper()
	class := filepath.Join(root, "sys/class/powercap")
	mkdir(t, class)
	for _, z := range zones {
		ct := iface(z.Interface)
		ctDir := filepath.Join(root, "sys/devices/virtual/powercap", ct)
		if _, err := os.Stat(ctDir); err != nil {
			mkdir(t, filepath.Join(ctDir, "power"))
			file(t, filepath.Join(ctDir, "enabled"), "1", 0o644)
			file(t, filepath.Join(ctDir, "uevent"), "", 0o644)
			symlink(t, "../../../../class/powercap", filepath.Join(ctDir, "subsystem"))
			symlink(t, "../../devices/virtual/powercap/"+ct, filepath.Join(class, ct))
		}
		writeZone(t, root, ctDir, "../../devices/virtual/powercap/"+ct, z.ZoneName(), z, 0)
	}
}

// writeZone writes zone z into parentDir (the control type's directory
// or the parent zone's). link is parentDir as seen from sys/class/powercap,
// depth the nesting level below the control type.
func writeZone(t testing.TB, root, parentDir, link, name string, z Zone, depth int) {
	t.Helper()
	dir := filepath.Join(parentDir, name)
	mkdir(t, filepath.Join(dir, "power"))
	symlink(t, link+"/"+name, filepath.Join(root, "sys/class/powercap", name))
	symlink(t, strings.Repeat("../", 5+depth)+"class/powercap", filepath.Join(dir, "subsystem"))
	file(t, filepath.Join(dir, "uevent"), "", 0o644)
	file(t, filepath.Join(dir, "name"), z.Name, 0o444)
	enabled := "1"
	if z.Disabled {
		enabled = "0"
	}
	file(t, filepath.Join(dir, "enabled"), enabled, modeRW(z.EnabledReadOnly))
	if !z.NoEnergy {
		// Root-only since Linux 5.10 (CVE-2020-8694, PLATYPUS).
		file(t, filepath.Join(dir, "energy_uj"), u(z.EnergyUJ), 0o400)
	}
	if z.MaxEnergyRangeUJ != 0 {
		file(t, filepath.Join(dir, "max_energy_range_uj"), u(z.MaxEnergyRangeUJ), 0o444)
	}
	for k, c := range z.Constraints {
		p := filepath.Join(dir, fmt.Sprintf("constraint_%d_", k))
		file(t, p+"name", c.Name, 0o444)
		file(t, p+"power_limit_uw", i(c.LimitUW), modeRW(c.ReadOnly))
		file(t, p+"time_window_us", i(c.TimeWindowUS), modeRW(c.ReadOnly))
		if c.MaxPowerUW != 0 {
			file(t, p+"max_power_uw", i(c.MaxPowerUW), 0o444)
		}
		if c.MinPowerUW != 0 {
			file(t, p+"min_power_uw", i(c.MinPowerUW), 0o444)
		}
	}
	for _, s := range z.Subzones {
		writeZone(t, root, dir, link+"/"+name, fmt.Sprintf("%s:%d", name, s.Index), s, depth+1)
	}
}

func modeRW(readOnly bool) os.FileMode {
	if readOnly {
		return 0o444
	}
	return 0o644
}

// SetAttr overwrites an attribute of a zone (keeping its mode), e.g. to
// advance energy_uj between two meter readings.
func SetAttr(t testing.TB, root, zone, attr, value string) {
	t.Helper()
	p := filepath.Join(root, ClassDir(zone), attr)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatalf("rapltest: %v", err)
	}
	if err := os.WriteFile(p, []byte(value+"\n"), st.Mode().Perm()); err != nil {
		t.Fatalf("rapltest: %v", err)
	}
}

// Remove takes a top-level zone away, as the kernel does when its driver
// is unloaded: its directory and its class symlink go.
func Remove(t testing.TB, root, zone string) {
	t.Helper()
	link := filepath.Join(root, ClassDir(zone))
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		t.Fatalf("rapltest: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatalf("rapltest: %v", err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatalf("rapltest: %v", err)
	}
}

// Attr reads an attribute of a zone, without the trailing newline.
func Attr(t testing.TB, root, zone, attr string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ClassDir(zone), attr))
	if err != nil {
		t.Fatalf("rapltest: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// WriteOp is one write that reached a Writer.
type WriteOp struct {
	// Path is the absolute path written, Value what was asked for.
	Path, Value string
}

// Writer is a sysfs.Writer standing in for the kernel. It records every
// write; when Err is set it fails them (and writes nothing), and when
// Rewrite is set it stores Rewrite's result instead of the value asked
// for, as a driver that rounds or clamps would.
type Writer struct {
	Err     error
	Rewrite func(path, value string) string

	mu     sync.Mutex
	writes []WriteOp
}

// WriteFile implements sysfs.Writer.
func (w *Writer) WriteFile(path string, data []byte) error {
	w.mu.Lock()
	w.writes = append(w.writes, WriteOp{Path: path, Value: string(data)})
	w.mu.Unlock()
	if w.Err != nil {
		return w.Err
	}
	v := string(data)
	if w.Rewrite != nil {
		v = w.Rewrite(path, v)
	}
	// The file exists (sysfs checked); WriteFile keeps its mode.
	return os.WriteFile(path, []byte(v+"\n"), 0)
}

// Writes returns the writes so far.
func (w *Writer) Writes() []WriteOp {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WriteOp(nil), w.writes...)
}

// Count is the number of writes so far.
func (w *Writer) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

func mkdir(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("rapltest: %v", err)
	}
}

func file(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content+"\n"), mode); err != nil {
		t.Fatalf("rapltest: %v", err)
	}
	// WriteFile's mode is filtered by the umask and ignored for existing
	// files; the mode is what the code under test reads.
	if err := os.Chmod(path, mode); err != nil {
		t.Fatalf("rapltest: %v", err)
	}
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if cur, err := os.Readlink(link); err == nil {
		if cur == target {
			return
		}
		t.Fatalf("rapltest: %s already links to %s, not %s", link, cur, target)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatalf("rapltest: %v", err)
	}
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }
func i(v int64) string  { return strconv.FormatInt(v, 10) }
