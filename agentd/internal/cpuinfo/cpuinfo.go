// Package cpuinfo discovers the host's processors: vendor, model, and how
// logical CPUs group into cores and packages (sockets). The agent
// publishes these facts in NodeHardware, resolves the model against the
// hardware catalog, and uses the package → CPU map to throttle the CPUs of
// one package when RAPL cannot cap it.
//
// Topology comes from sysfs (sys/devices/system/cpu/cpuN/topology), which
// the kernel derives from CPUID/ACPI and which stays right on hosts where
// /proc/cpuinfo is thin (some hypervisors omit "physical id"). Where a
// CPU's sysfs topology is missing, its /proc/cpuinfo record stands in, and
// where both are missing the count falls back to coarser figures. Every
// fallback is a warning for NodeHardware, never a failure: discovery fails
// only when neither source names a single CPU.
package cpuinfo

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"joulie.io/joulie/agentd/internal/sysfs"
)

const cpuDir = "sys/devices/system/cpu"

// Info is what Discover found.
type Info struct {
	// Vendor is vendor_id from /proc/cpuinfo: GenuineIntel, AuthenticAMD.
	Vendor string
	// ModelName is "model name" from /proc/cpuinfo.
	ModelName string
	// Sockets counts physical packages.
	Sockets int
	// CoresPerSocket counts physical cores in one package (the largest
	// package when they differ).
	CoresPerSocket int
	// TotalCores counts physical cores on the host.
	TotalCores int
	// LogicalCPUs counts online hardware threads.
	LogicalCPUs int
	// ThreadsPerCore is LogicalCPUs / TotalCores when that divides evenly,
	// else 0.
	ThreadsPerCore int
	// Packages lists the packages by physical package id.
	Packages []Package
	// MemTotalBytes is MemTotal from /proc/meminfo, 0 when unknown.
	MemTotalBytes uint64
}

// Package is one physical package (socket).
type Package struct {
	// ID is the physical package id.
	ID int
	// CPUs are the package's online logical CPUs, ascending.
	CPUs []int
	// Cores counts the package's physical cores.
	Cores int
}

// CPUsOf returns the logical CPUs of package id, nil when there is no
// such package.
func (i Info) CPUsOf(id int) []int {
	for _, p := range i.Packages {
		if p.ID == id {
			return p.CPUs
		}
	}
	return nil
}

// cpu is one logical CPU's place in the topology; -1 is unknown.
type cpu struct {
	id, pkg, die, core int
	fromCPUInfo        bool
}

// Discover reads the processor facts under fs's root.
func Discover(fs *sysfs.FS) (Info, []string, error) {
	var info Info
	var warnings []string
	warn := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }

	records, err := readCPUInfo(fs)
	if err != nil {
		warn("CPU vendor and model unknown: %v", err)
	}
	byProc := make(map[int]procfs.CPUInfo, len(records))
	for _, r := range records {
		byProc[int(r.Processor)] = r
		if info.Vendor == "" {
			info.Vendor = strings.TrimSpace(r.VendorID)
		}
		if info.ModelName == "" {
			info.ModelName = strings.TrimSpace(r.ModelName)
		}
	}
	if len(records) > 0 && info.Vendor == "" {
		warn("/proc/cpuinfo names no vendor_id")
	}
	if len(records) > 0 && info.ModelName == "" {
		warn("/proc/cpuinfo names no model name")
	}

	ids, w := onlineCPUs(fs)
	warnings = append(warnings, w...)
	if len(ids) == 0 {
		for _, r := range records {
			ids = append(ids, int(r.Processor))
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		if len(ids) > 0 {
			warn("no CPUs under /%s; counting the processors of /proc/cpuinfo", cpuDir)
		}
	}
	if len(ids) == 0 {
		return Info{}, warnings, errors.New("no CPU found: neither /" + cpuDir + " nor /proc/cpuinfo is readable under " + fs.Root())
	}

	cpus := make([]cpu, 0, len(ids))
	var fromCPUInfo, noPkg, noCore int
	for _, id := range ids {
		c := cpu{id: id, pkg: -1, die: 0, core: -1}
		topo := cpuDir + "/cpu" + strconv.Itoa(id) + "/topology/"
		if v, err := fs.ReadInt(topo + "physical_package_id"); err == nil && v >= 0 {
			c.pkg = int(v)
		}
		if v, err := fs.ReadInt(topo + "core_id"); err == nil && v >= 0 {
			c.core = int(v)
		}
		if v, err := fs.ReadInt(topo + "die_id"); err == nil && v >= 0 {
			c.die = int(v)
		}
		if c.pkg < 0 || c.core < 0 {
			if r, ok := byProc[id]; ok {
				if c.pkg < 0 {
					c.pkg = atoi(r.PhysicalID)
				}
				if c.core < 0 {
					c.core = atoi(r.CoreID)
				}
				c.fromCPUInfo = true
			}
		}
		if c.fromCPUInfo {
			fromCPUInfo++
		}
		if c.pkg < 0 {
			noPkg++
			c.pkg = 0
		}
		if c.core < 0 {
			noCore++
		}
		cpus = append(cpus, c)
	}
	if fromCPUInfo > 0 {
		warn("sysfs topology missing for %d of %d CPUs; took their package and core from /proc/cpuinfo", fromCPUInfo, len(cpus))
	}
	if noPkg > 0 {
		warn("physical package unknown for %d of %d CPUs; counted them in package 0", noPkg, len(cpus))
	}

	info.LogicalCPUs = len(cpus)
	info.Packages, w = group(cpus, byProc, noCore > 0)
	warnings = append(warnings, w...)
	info.Sockets = len(info.Packages)
	for _, p := range info.Packages {
		info.TotalCores += p.Cores
		info.CoresPerSocket = max(info.CoresPerSocket, p.Cores)
	}
	if info.Sockets > 1 && info.CoresPerSocket*info.Sockets != info.TotalCores {
		warn("packages have different core counts (%d cores in %d packages); coresPerSocket is the largest", info.TotalCores, info.Sockets)
	}
	if info.TotalCores > 0 && info.LogicalCPUs%info.TotalCores == 0 {
		info.ThreadsPerCore = info.LogicalCPUs / info.TotalCores
	}

	if mem, err := readMemTotal(fs); err != nil {
		warn("memory size unknown: %v", err)
	} else {
		info.MemTotalBytes = mem
	}
	return info, warnings, nil
}

// group builds the packages. A core is a distinct (die, core id) within a
// package: core ids repeat across the dies of multi-die packages.
func group(cpus []cpu, byProc map[int]procfs.CPUInfo, coresUnknown bool) ([]Package, []string) {
	var warnings []string
	type coreKey struct{ die, core int }
	byPkg := make(map[int]*Package)
	cores := make(map[int]map[coreKey]bool)
	unknown := make(map[int]bool)
	for _, c := range cpus {
		p, ok := byPkg[c.pkg]
		if !ok {
			p = &Package{ID: c.pkg}
			byPkg[c.pkg] = p
			cores[c.pkg] = make(map[coreKey]bool)
		}
		p.CPUs = append(p.CPUs, c.id)
		if c.core < 0 {
			unknown[c.pkg] = true
			continue
		}
		cores[c.pkg][coreKey{c.die, c.core}] = true
	}
	out := make([]Package, 0, len(byPkg))
	for id, p := range byPkg {
		slices.Sort(p.CPUs)
		p.Cores = len(cores[id])
		if unknown[id] {
			p.Cores = coresFallback(p, byProc)
		}
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Package) int { return cmp.Compare(a.ID, b.ID) })
	if coresUnknown {
		warnings = append(warnings, "core id unknown for some CPUs; their packages' core counts come from /proc/cpuinfo \"cpu cores\", or count one core per CPU")
	}
	return out, warnings
}

// coresFallback is a package's core count when some of its CPUs have no
// core id: "cpu cores" of its /proc/cpuinfo records, else one core per
// logical CPU (no SMT assumed, which overstates cores rather than
// inventing threads).
func coresFallback(p *Package, byProc map[int]procfs.CPUInfo) int {
	for _, id := range p.CPUs {
		if r, ok := byProc[id]; ok && r.CPUCores > 0 {
			return int(r.CPUCores)
		}
	}
	return len(p.CPUs)
}

// onlineCPUs lists the online CPUs: the online mask, else every cpuN
// directory.
func onlineCPUs(fs *sysfs.FS) ([]int, []string) {
	s, err := fs.ReadString(cpuDir + "/online")
	if err == nil {
		ids, perr := sysfs.ParseCPUList(s)
		if perr == nil && len(ids) > 0 {
			return ids, nil
		}
		if perr != nil {
			err = fmt.Errorf("%s: %w", fs.Path(cpuDir, "online"), perr)
		} else {
			err = fmt.Errorf("%s is empty", fs.Path(cpuDir, "online"))
		}
	}
	dirs, gerr := fs.Glob(cpuDir + "/cpu[0-9]*")
	var ids []int
	if gerr == nil {
		for _, d := range dirs {
			if n, err := strconv.Atoi(strings.TrimPrefix(path.Base(d), "cpu")); err == nil && n >= 0 {
				ids = append(ids, n)
			}
		}
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return nil, nil // the caller falls back to /proc/cpuinfo and says so
	}
	return ids, []string{fmt.Sprintf("online CPU list unreadable (%v); counting every cpuN directory", err)}
}

func readCPUInfo(fs *sysfs.FS) ([]procfs.CPUInfo, error) {
	pfs, err := procfs.NewFS(fs.Path("proc"))
	if err != nil {
		return nil, fmt.Errorf("no %s: %w", fs.Path("proc"), err)
	}
	records, err := pfs.CPUInfo()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", fs.Path("proc", "cpuinfo"), err)
	}
	return records, nil
}

func readMemTotal(fs *sysfs.FS) (uint64, error) {
	pfs, err := procfs.NewFS(fs.Path("proc"))
	if err != nil {
		return 0, fmt.Errorf("no %s: %w", fs.Path("proc"), err)
	}
	mi, err := pfs.Meminfo()
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", fs.Path("proc", "meminfo"), err)
	}
	if mi.MemTotalBytes == nil {
		return 0, fmt.Errorf("%s has no MemTotal", fs.Path("proc", "meminfo"))
	}
	return *mi.MemTotalBytes, nil
}

// atoi parses a /proc/cpuinfo id field, -1 when absent or not a number.
func atoi(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return -1
	}
	return n
}
