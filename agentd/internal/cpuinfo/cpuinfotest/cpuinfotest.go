// Package cpuinfotest writes the CPU side of a host fixture: proc/cpuinfo,
// proc/meminfo and sys/devices/system/cpu with per-CPU topology, laid out
// and numbered as Linux does on x86 (first threads of every core of every
// package, then the second threads).
//
//	root := t.TempDir()
//	cpuinfotest.Write(t, root, cpuinfotest.EPYC2S())   // 2 × 48 cores, 192 CPUs
//	info, warnings, err := cpuinfo.Discover(sysfs.New(root))
package cpuinfotest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Host describes the processors to write.
type Host struct {
	Vendor    string // vendor_id
	Family    int    // cpu family
	Model     int    // model
	ModelName string // model name
	MHz       float64

	Sockets        int
	CoresPerSocket int
	ThreadsPerCore int
	// DiesPerSocket splits each package's cores into dies (core ids
	// restart on each die, as on multi-die Intel parts); 0 means 1.
	DiesPerSocket int
	// CoreIDStride spaces core ids (AMD numbers cores with gaps between
	// CCXs); 0 means 1.
	CoreIDStride int

	// Offline CPUs are left out of the online list and get no topology
	// directory, as the kernel does.
	Offline []int
	// NoSysfsTopology leaves out every cpuN/topology directory (some
	// containers and hypervisors).
	NoSysfsTopology bool
	// NoCPUInfoTopology leaves "physical id", "core id", "siblings" and
	// "cpu cores" out of /proc/cpuinfo.
	NoCPUInfoTopology bool
	// NoSysfs writes no sys/devices/system/cpu at all.
	NoSysfs bool
	// NoCPUInfo writes no proc/cpuinfo.
	NoCPUInfo bool

	// MemTotalKB is MemTotal in /proc/meminfo; 0 writes no meminfo.
	MemTotalKB uint64
}

// EPYC2S is a two-socket AMD EPYC 9454 host: 2 × 48 cores, 2 threads per
// core, 192 logical CPUs, 768 GiB.
func EPYC2S() Host {
	return Host{
		Vendor: "AuthenticAMD", Family: 25, Model: 17,
		ModelName: "AMD EPYC 9454 48-Core Processor", MHz: 2750,
		Sockets: 2, CoresPerSocket: 48, ThreadsPerCore: 2,
		MemTotalKB: 805306368,
	}
}

// Xeon2S is a two-socket Intel Xeon Gold 6338 host: 2 × 32 cores, 2
// threads per core, 128 logical CPUs, 512 GiB.
func Xeon2S() Host {
	return Host{
		Vendor: "GenuineIntel", Family: 6, Model: 106,
		ModelName: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", MHz: 2000,
		Sockets: 2, CoresPerSocket: 32, ThreadsPerCore: 2,
		MemTotalKB: 536870912,
	}
}

// CPU is the logical CPU number Linux gives thread t of core c of
// package p.
func (h Host) CPU(p, c, t int) int {
	return t*h.Sockets*h.CoresPerSocket + p*h.CoresPerSocket + c
}

// LogicalCPUs is the number of logical CPUs, offline ones included.
func (h Host) LogicalCPUs() int { return h.Sockets * h.CoresPerSocket * h.ThreadsPerCore }

// PackageCPUs lists the online CPUs of package p, ascending.
func (h Host) PackageCPUs(p int) []int {
	var out []int
	for t := 0; t < h.ThreadsPerCore; t++ {
		for c := 0; c < h.CoresPerSocket; c++ {
			if cpu := h.CPU(p, c, t); !h.offline(cpu) {
				out = append(out, cpu)
			}
		}
	}
	return out
}

func (h Host) offline(cpu int) bool { return slices.Contains(h.Offline, cpu) }

func (h Host) dies() int { return max(h.DiesPerSocket, 1) }

// coreID is the core id sysfs and cpuinfo report for core c, and die its
// die.
func (h Host) coreID(c int) (die, id int) {
	perDie := h.CoresPerSocket / h.dies()
	die = c / perDie
	return die, (c % perDie) * max(h.CoreIDStride, 1)
}

// Write writes h under root.
func Write(t testing.TB, root string, h Host) {
	t.Helper()
	if h.Sockets <= 0 || h.CoresPerSocket <= 0 || h.ThreadsPerCore <= 0 {
		t.Fatalf("cpuinfotest: host needs sockets, cores and threads: %+v", h)
	}
	var cpuinfo strings.Builder
	var online []int
	n := h.LogicalCPUs()
	for cpu := 0; cpu < n; cpu++ {
		p, c, _ := h.place(cpu)
		die, core := h.coreID(c)
		if !h.offline(cpu) {
			online = append(online, cpu)
			h.writeCPUInfo(&cpuinfo, cpu, p, core)
		}
		if h.NoSysfs {
			continue
		}
		dir := filepath.Join(root, "sys/devices/system/cpu", fmt.Sprintf("cpu%d", cpu))
		mkdir(t, dir)
		if cpu != 0 { // cpu0 cannot go offline on x86 and has no online file
			file(t, filepath.Join(dir, "online"), boolString(!h.offline(cpu)), 0o644)
		}
		if h.offline(cpu) || h.NoSysfsTopology {
			continue
		}
		topo := filepath.Join(dir, "topology")
		mkdir(t, topo)
		var siblings []int
		for s := 0; s < h.ThreadsPerCore; s++ {
			siblings = append(siblings, h.CPU(p, c, s))
		}
		file(t, filepath.Join(topo, "physical_package_id"), fmt.Sprint(p), 0o444)
		file(t, filepath.Join(topo, "die_id"), fmt.Sprint(die), 0o444)
		file(t, filepath.Join(topo, "core_id"), fmt.Sprint(core), 0o444)
		file(t, filepath.Join(topo, "core_cpus_list"), cpuList(siblings), 0o444)
		file(t, filepath.Join(topo, "thread_siblings_list"), cpuList(siblings), 0o444)
		file(t, filepath.Join(topo, "package_cpus_list"), cpuList(h.packageAll(p)), 0o444)
		file(t, filepath.Join(topo, "core_siblings_list"), cpuList(h.packageAll(p)), 0o444)
	}
	if !h.NoSysfs {
		base := filepath.Join(root, "sys/devices/system/cpu")
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		file(t, filepath.Join(base, "possible"), cpuList(all), 0o444)
		file(t, filepath.Join(base, "present"), cpuList(all), 0o444)
		file(t, filepath.Join(base, "online"), cpuList(online), 0o444)
		off := slices.Clone(h.Offline)
		slices.Sort(off)
		file(t, filepath.Join(base, "offline"), cpuList(off), 0o444)
	}
	if !h.NoCPUInfo {
		mkdir(t, filepath.Join(root, "proc"))
		file(t, filepath.Join(root, "proc/cpuinfo"), strings.TrimSuffix(cpuinfo.String(), "\n"), 0o444)
	}
	if h.MemTotalKB > 0 {
		mkdir(t, filepath.Join(root, "proc"))
		free := h.MemTotalKB / 2
		file(t, filepath.Join(root, "proc/meminfo"), fmt.Sprintf(
			"MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nBuffers:          123456 kB\nCached:         4194304 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB",
			h.MemTotalKB, free, free+4194304), 0o444)
	}
}

// place is the package, core and thread of a logical CPU.
func (h Host) place(cpu int) (p, c, t int) {
	perThread := h.Sockets * h.CoresPerSocket
	t = cpu / perThread
	r := cpu % perThread
	return r / h.CoresPerSocket, r % h.CoresPerSocket, t
}

func (h Host) packageAll(p int) []int {
	var out []int
	for t := 0; t < h.ThreadsPerCore; t++ {
		for c := 0; c < h.CoresPerSocket; c++ {
			out = append(out, h.CPU(p, c, t))
		}
	}
	return out
}

func (h Host) writeCPUInfo(b *strings.Builder, cpu, p, core int) {
	fmt.Fprintf(b, "processor\t: %d\n", cpu)
	fmt.Fprintf(b, "vendor_id\t: %s\n", h.Vendor)
	fmt.Fprintf(b, "cpu family\t: %d\n", h.Family)
	fmt.Fprintf(b, "model\t\t: %d\n", h.Model)
	fmt.Fprintf(b, "model name\t: %s\n", h.ModelName)
	fmt.Fprintf(b, "stepping\t: 1\n")
	fmt.Fprintf(b, "microcode\t: 0xa101148\n")
	fmt.Fprintf(b, "cpu MHz\t\t: %.3f\n", h.MHz)
	fmt.Fprintf(b, "cache size\t: 1024 KB\n")
	if !h.NoCPUInfoTopology {
		fmt.Fprintf(b, "physical id\t: %d\n", p)
		fmt.Fprintf(b, "siblings\t: %d\n", h.CoresPerSocket*h.ThreadsPerCore)
		fmt.Fprintf(b, "core id\t\t: %d\n", core)
		fmt.Fprintf(b, "cpu cores\t: %d\n", h.CoresPerSocket)
	}
	fmt.Fprintf(b, "apicid\t\t: %d\n", cpu)
	fmt.Fprintf(b, "initial apicid\t: %d\n", cpu)
	fmt.Fprintf(b, "fpu\t\t: yes\n")
	fmt.Fprintf(b, "fpu_exception\t: yes\n")
	fmt.Fprintf(b, "cpuid level\t: 16\n")
	fmt.Fprintf(b, "wp\t\t: yes\n")
	fmt.Fprintf(b, "flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov constant_tsc rapl\n")
	fmt.Fprintf(b, "bugs\t\t: sysret_ss_attrs spectre_v1 spectre_v2\n")
	fmt.Fprintf(b, "bogomips\t: %.2f\n", h.MHz*2)
	fmt.Fprintf(b, "clflush size\t: 64\n")
	fmt.Fprintf(b, "cache_alignment\t: 64\n")
	fmt.Fprintf(b, "address sizes\t: 52 bits physical, 57 bits virtual\n")
	fmt.Fprintf(b, "power management: ts ttp tm hwpstate\n\n")
}

// cpuList formats CPUs in the kernel's list format ("0-3,8").
func cpuList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(cpus[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func boolString(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func mkdir(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("cpuinfotest: %v", err)
	}
}

func file(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	// No chmod after the write: a umask only removes bits, and the
	// readers of these files care about nothing but their content.
	if err := os.WriteFile(path, []byte(content+"\n"), mode); err != nil {
		t.Fatalf("cpuinfotest: %v", err)
	}
}
