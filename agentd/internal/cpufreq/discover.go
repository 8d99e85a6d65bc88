// Package cpufreq is the agent's cpufreq backend: it discovers the host's
// frequency landmarks and scaling limits, and lowers or restores the
// per-CPU frequency ceiling (scaling_max_freq) for the DVFS fallback.
//
// The kernel publishes one policy directory per frequency domain
// (/sys/devices/system/cpu/cpufreq/policyN, whose related_cpus lists the
// CPUs it governs) and a cpuN/cpufreq symlink to it for every online CPU.
// intel_pstate and amd-pstate give every CPU its own policy; acpi-cpufreq
// may share one among the threads of a core or more. Writing a shared
// policy's scaling_max_freq through any of its CPUs changes all of them.
//
// A host without cpufreq (most virtual machines) is not an error: Discover
// returns no CPUs and a warning, and DVFS is reported unavailable.
package cpufreq

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"joulie.io/joulie/agentd/internal/sysfs"
)

// cpuRoot is where the kernel publishes CPUs, relative to the host root.
const cpuRoot = "sys/devices/system/cpu"

// CPU is one online CPU's cpufreq view. Frequencies are in kHz, as the
// kernel writes them.
type CPU struct {
	// ID is the logical CPU number (cpuN).
	ID int
	// Package is topology/physical_package_id (0 when not published).
	Package int
	// Siblings are the SMT threads of this CPU's core, itself included
	// (topology/core_cpus_list or thread_siblings_list).
	Siblings []int
	// Policy names the frequency domain ("policy3"); CPUs with the same
	// policy share one scaling_max_freq.
	Policy string
	// RelatedCPUs are the CPUs of the policy (related_cpus).
	RelatedCPUs []int
	// Dir is the cpufreq directory relative to the host root: the
	// cpuN/cpufreq link when the kernel has it, else the policy directory.
	Dir string
	// Driver is scaling_driver (intel_pstate, amd-pstate, amd-pstate-epp,
	// acpi-cpufreq, ...); Governor is scaling_governor.
	Driver, Governor string
	// CPUInfoMinKHz and CPUInfoMaxKHz are the hardware range
	// (cpuinfo_min_freq, cpuinfo_max_freq); every write is clamped to it.
	CPUInfoMinKHz, CPUInfoMaxKHz int64
	// ScalingMinKHz and ScalingMaxKHz are the limits in force when the CPU
	// was discovered.
	ScalingMinKHz, ScalingMaxKHz int64
	// BaseKHz is base_frequency, 0 when the driver does not publish it
	// (intel_pstate with HWP and recent amd-pstate do).
	BaseKHz int64
	// Writable is true when scaling_max_freq has a write bit.
	Writable bool
}

// MaxFreqPath is the CPU's scaling_max_freq relative to the host root.
func (c *CPU) MaxFreqPath() string { return c.Dir + "/scaling_max_freq" }

// Host is what Discover found.
type Host struct {
	// CPUs are the online CPUs with cpufreq, ascending by ID.
	CPUs []CPU
	// Driver, Governor and the frequency landmarks (kHz) are cpu0's, or
	// the lowest-numbered CPU's when cpu0 has no cpufreq. MinKHz is
	// cpuinfo_min_freq, MaxKHz cpuinfo_max_freq, BaseKHz base_frequency
	// (0 when not published).
	Driver, Governor        string
	MinKHz, BaseKHz, MaxKHz int64
	// Writable is true when at least one CPU's scaling_max_freq can be
	// written, that is when the DVFS fallback can act at all.
	Writable bool
	// Warnings say what is missing or odd, for NodeHardware.
	Warnings []string
}

// Available reports whether the host has any cpufreq CPU.
func (h *Host) Available() bool { return len(h.CPUs) > 0 }

// CPU returns the discovered CPU with the given ID.
func (h *Host) CPU(id int) (*CPU, bool) {
	i, ok := slices.BinarySearchFunc(h.CPUs, id, func(c CPU, id int) int { return c.ID - id })
	if !ok {
		return nil, false
	}
	return &h.CPUs[i], true
}

// Discover reads the cpufreq view of every online CPU under fs. It never
// fails: what cannot be read is left out and explained in Warnings.
func Discover(fs *sysfs.FS) Host {
	var h Host
	online, err := onlineCPUs(fs)
	if err != nil {
		h.Warnings = append(h.Warnings, err.Error())
	}
	var policies map[int]string // CPU -> policy directory, built on demand
	var missing []int
	for _, id := range online {
		dir := fmt.Sprintf("%s/cpu%d/cpufreq", cpuRoot, id)
		if !fs.Exists(dir) {
			if policies == nil {
				policies = policyDirs(fs)
			}
			p, ok := policies[id]
			if !ok {
				missing = append(missing, id)
				continue
			}
			dir = p
		}
		c, err := readCPU(fs, id, dir)
		if err != nil {
			h.Warnings = append(h.Warnings, fmt.Sprintf("cpu%d left out of DVFS: %v", id, err))
			continue
		}
		h.CPUs = append(h.CPUs, c)
	}
	if len(h.CPUs) == 0 {
		h.Warnings = append(h.Warnings, fmt.Sprintf("no cpufreq under %s (a virtual machine, or cpufreq disabled): no frequency landmarks and no DVFS fallback", fs.Path(cpuRoot)))
		return h
	}
	if len(missing) > 0 {
		h.Warnings = append(h.Warnings, fmt.Sprintf("online CPUs %s have no cpufreq and are left out of DVFS", sysfs.FormatCPUList(missing)))
	}
	ref := &h.CPUs[0]
	h.Driver, h.Governor = ref.Driver, ref.Governor
	h.MinKHz, h.BaseKHz, h.MaxKHz = ref.CPUInfoMinKHz, ref.BaseKHz, ref.CPUInfoMaxKHz
	var readOnly []int
	for i := range h.CPUs {
		if h.CPUs[i].Writable {
			h.Writable = true
		} else {
			readOnly = append(readOnly, h.CPUs[i].ID)
		}
	}
	if len(readOnly) > 0 {
		h.Warnings = append(h.Warnings, fmt.Sprintf("scaling_max_freq is read-only on CPUs %s", sysfs.FormatCPUList(readOnly)))
	}
	h.Warnings = append(h.Warnings, disagreements(h.CPUs)...)
	return h
}

// disagreements warns, one line per attribute, when CPUs differ from the
// reference CPU (hybrid P/E cores, a driver mix after a failed load,
// per-core boost limits): the landmarks published are then cpu0's only.
func disagreements(cpus []CPU) []string {
	ref := &cpus[0]
	fields := []struct {
		name string
		get  func(*CPU) string
	}{
		{"scaling_driver", func(c *CPU) string { return c.Driver }},
		{"cpuinfo_min_freq", func(c *CPU) string { return strconv.FormatInt(c.CPUInfoMinKHz, 10) + " kHz" }},
		{"cpuinfo_max_freq", func(c *CPU) string { return strconv.FormatInt(c.CPUInfoMaxKHz, 10) + " kHz" }},
		{"base_frequency", func(c *CPU) string { return strconv.FormatInt(c.BaseKHz, 10) + " kHz" }},
	}
	var out []string
	for _, f := range fields {
		want := f.get(ref)
		var odd []int
		var example string
		for i := range cpus[1:] {
			c := &cpus[i+1]
			if v := f.get(c); v != want {
				odd = append(odd, c.ID)
				if example == "" {
					example = v
				}
			}
		}
		if len(odd) > 0 {
			out = append(out, fmt.Sprintf("CPUs disagree on %s: cpu%d has %s, CPUs %s differ (cpu%d has %s); the landmarks are cpu%d's",
				f.name, ref.ID, want, sysfs.FormatCPUList(odd), odd[0], example, ref.ID))
		}
	}
	return out
}

// onlineCPUs lists the online CPUs from the kernel's online list, or,
// where that file is missing, from the cpuN directories (skipping those
// whose online attribute says 0).
func onlineCPUs(fs *sysfs.FS) ([]int, error) {
	s, err := fs.ReadString(cpuRoot + "/online")
	if err == nil {
		cpus, perr := sysfs.ParseCPUList(s)
		if perr == nil {
			return cpus, nil
		}
		err = perr
	}
	if !errors.Is(err, os.ErrNotExist) {
		err = fmt.Errorf("cannot read the online CPU list (%v); using the cpuN directories", err)
	} else {
		err = nil
	}
	dirs, _ := fs.Glob(cpuRoot + "/cpu[0-9]*")
	var cpus []int
	for _, d := range dirs {
		id, convErr := strconv.Atoi(strings.TrimPrefix(path.Base(filepath.ToSlash(d)), "cpu"))
		if convErr != nil {
			continue
		}
		if v, rerr := fs.ReadString(fmt.Sprintf("%s/cpu%d/online", cpuRoot, id)); rerr == nil && v == "0" {
			continue
		}
		cpus = append(cpus, id)
	}
	slices.Sort(cpus)
	return cpus, err
}

// policyDirs maps each CPU to its policy directory through related_cpus,
// for trees where the cpuN/cpufreq links are absent (they are always
// there on a live kernel, but a bind-mounted or copied tree may lose
// symlinks).
func policyDirs(fs *sysfs.FS) map[int]string {
	out := make(map[int]string)
	dirs, _ := fs.Glob(cpuRoot + "/cpufreq/policy[0-9]*")
	for _, d := range dirs {
		d = filepath.ToSlash(d)
		s, err := fs.ReadString(d + "/related_cpus")
		if err != nil {
			continue
		}
		cpus, err := sysfs.ParseCPUList(s)
		if err != nil {
			continue
		}
		for _, c := range cpus {
			if _, taken := out[c]; !taken {
				out[c] = d
			}
		}
	}
	return out
}

func readCPU(fs *sysfs.FS, id int, dir string) (CPU, error) {
	c := CPU{ID: id, Dir: dir, Siblings: []int{id}, RelatedCPUs: []int{id}}
	var err error
	if c.CPUInfoMinKHz, err = fs.ReadInt(dir + "/cpuinfo_min_freq"); err != nil {
		return c, err
	}
	if c.CPUInfoMaxKHz, err = fs.ReadInt(dir + "/cpuinfo_max_freq"); err != nil {
		return c, err
	}
	if c.CPUInfoMinKHz <= 0 || c.CPUInfoMaxKHz < c.CPUInfoMinKHz {
		return c, fmt.Errorf("implausible hardware range %d..%d kHz", c.CPUInfoMinKHz, c.CPUInfoMaxKHz)
	}
	if c.ScalingMaxKHz, err = fs.ReadInt(c.MaxFreqPath()); err != nil {
		return c, err
	}
	if c.ScalingMinKHz, err = fs.ReadInt(dir + "/scaling_min_freq"); err != nil {
		c.ScalingMinKHz = c.CPUInfoMinKHz
	}
	if v, err := fs.ReadInt(dir + "/base_frequency"); err == nil && v > 0 {
		c.BaseKHz = v
	}
	c.Driver, _ = fs.ReadString(dir + "/scaling_driver")
	c.Governor, _ = fs.ReadString(dir + "/scaling_governor")
	c.Writable = fs.Writable(c.MaxFreqPath())
	if s, err := fs.ReadString(dir + "/related_cpus"); err == nil {
		if cpus, err := sysfs.ParseCPUList(s); err == nil && slices.Contains(cpus, id) {
			c.RelatedCPUs = cpus
		}
	}
	c.Policy = fmt.Sprintf("cpu%d", id)
	if real, err := filepath.EvalSymlinks(fs.Path(dir)); err == nil && strings.HasPrefix(filepath.Base(real), "policy") {
		c.Policy = filepath.Base(real)
	} else if base := path.Base(dir); strings.HasPrefix(base, "policy") {
		c.Policy = base
	}
	topo := fmt.Sprintf("%s/cpu%d/topology/", cpuRoot, id)
	if v, err := fs.ReadInt(topo + "physical_package_id"); err == nil && v >= 0 {
		c.Package = int(v)
	}
	for _, name := range []string{"core_cpus_list", "thread_siblings_list"} {
		s, err := fs.ReadString(topo + name)
		if err != nil {
			continue
		}
		if cpus, err := sysfs.ParseCPUList(s); err == nil && slices.Contains(cpus, id) {
			c.Siblings = cpus
		}
		break
	}
	return c, nil
}
