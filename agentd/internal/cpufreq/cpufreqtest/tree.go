// Package cpufreqtest builds cpufreq fixture trees for tests: directories
// laid out as the kernel lays out /sys/devices/system/cpu, with one policy
// directory per frequency domain under cpufreq/policyN and a cpuN/cpufreq
// symlink to it for every online CPU, topology files, and the online list.
//
// It exists so the cpufreq and dvfs packages (and the agent's end-to-end
// tests) run against the same realistic tree instead of hand-made files.
package cpufreqtest

import (
	"fmt"
	"joulie.io/joulie/agentd/internal/sysfs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// CPURoot is where the kernel publishes CPUs, relative to the host root.
const CPURoot = "sys/devices/system/cpu"

// Spec describes the host to lay out. CPUs are numbered as Linux numbers
// them on x86: first thread of every core of package 0, then of package 1,
// and so on; then the second threads in the same order.
type Spec struct {
	Packages, CoresPerPackage, ThreadsPerCore int
	// Driver and Governor default to intel_pstate and powersave.
	Driver, Governor string
	// MinKHz and MaxKHz are cpuinfo_min_freq and cpuinfo_max_freq.
	MinKHz, MaxKHz int64
	// BaseKHz, when not 0, is published as base_frequency.
	BaseKHz int64
	// ScalingMaxKHz is the initial scaling_max_freq (default MaxKHz).
	ScalingMaxKHz int64
	// PolicyPerCore makes the SMT threads of a core share one policy (one
	// frequency domain per core, as some acpi-cpufreq hosts have); the
	// default is one policy per CPU, as intel_pstate and amd-pstate do.
	PolicyPerCore bool
	// NoSymlinks leaves out the cpuN/cpufreq links, so only the policy
	// directories and their related_cpus say which CPU is where.
	NoSymlinks bool
	// ReadOnly CPUs get a 0444 scaling_max_freq.
	ReadOnly []int
	// Offline CPUs are left out of the online list and have no cpufreq.
	Offline []int
	// Override replaces one attribute of one CPU's policy (file name to
	// content), e.g. a hybrid core's cpuinfo_max_freq.
	Override map[int]map[string]string
}

// Tree is a laid-out fixture.
type Tree struct {
	Root string
	Spec Spec
}

// NCPUs is the number of logical CPUs, online or not.
func (s Spec) NCPUs() int { return s.Packages * s.CoresPerPackage * s.ThreadsPerCore }

// Build writes the tree under root (usually t.TempDir()).
func Build(tb testing.TB, root string, s Spec) *Tree {
	tb.Helper()
	if s.Driver == "" {
		s.Driver = "intel_pstate"
	}
	if s.Governor == "" {
		s.Governor = "powersave"
	}
	if s.ScalingMaxKHz == 0 {
		s.ScalingMaxKHz = s.MaxKHz
	}
	if s.ThreadsPerCore == 0 {
		s.ThreadsPerCore = 1
	}
	n := s.NCPUs()
	perThread := s.Packages * s.CoresPerPackage
	offline := make(map[int]bool)
	for _, c := range s.Offline {
		offline[c] = true
	}
	readOnly := make(map[int]bool)
	for _, c := range s.ReadOnly {
		readOnly[c] = true
	}
	siblingsOf := func(cpu int) []int {
		core := cpu % perThread
		var sib []int
		for t := 0; t < s.ThreadsPerCore; t++ {
			sib = append(sib, core+t*perThread)
		}
		return sib
	}
	var online []int
	for cpu := 0; cpu < n; cpu++ {
		if !offline[cpu] {
			online = append(online, cpu)
		}
	}
	write(tb, root, CPURoot+"/online", List(online)+"\n", 0o444)
	write(tb, root, CPURoot+"/possible", fmt.Sprintf("0-%d\n", n-1), 0o444)
	for cpu := 0; cpu < n; cpu++ {
		dir := fmt.Sprintf("%s/cpu%d", CPURoot, cpu)
		pkg := (cpu % perThread) / s.CoresPerPackage
		core := cpu % s.CoresPerPackage
		write(tb, root, dir+"/topology/physical_package_id", strconv.Itoa(pkg)+"\n", 0o444)
		write(tb, root, dir+"/topology/core_id", strconv.Itoa(core)+"\n", 0o444)
		write(tb, root, dir+"/topology/thread_siblings_list", List(siblingsOf(cpu))+"\n", 0o444)
		if cpu != 0 {
			online := "1\n"
			if offline[cpu] {
				online = "0\n"
			}
			write(tb, root, dir+"/online", online, 0o644)
		}
		if offline[cpu] {
			continue
		}
		owner, related := cpu, []int{cpu}
		if s.PolicyPerCore {
			related = siblingsOf(cpu)
			owner = related[0]
		}
		policy := fmt.Sprintf("%s/cpufreq/policy%d", CPURoot, owner)
		if owner == cpu {
			attrs := map[string]string{
				"cpuinfo_min_freq": strconv.FormatInt(s.MinKHz, 10),
				"cpuinfo_max_freq": strconv.FormatInt(s.MaxKHz, 10),
				"scaling_min_freq": strconv.FormatInt(s.MinKHz, 10),
				"scaling_max_freq": strconv.FormatInt(s.ScalingMaxKHz, 10),
				"scaling_driver":   s.Driver,
				"scaling_governor": s.Governor,
				"related_cpus":     strings.ReplaceAll(List(related), ",", " "),
				"affected_cpus":    strings.ReplaceAll(List(related), ",", " "),
			}
			if s.BaseKHz != 0 {
				attrs["base_frequency"] = strconv.FormatInt(s.BaseKHz, 10)
			}
			for k, v := range s.Override[cpu] {
				attrs[k] = v
			}
			for name, v := range attrs {
				mode := os.FileMode(0o444)
				if strings.HasPrefix(name, "scaling_m") || name == "scaling_governor" {
					mode = 0o644
				}
				if name == "scaling_max_freq" && readOnly[cpu] {
					mode = 0o444
				}
				write(tb, root, policy+"/"+name, v+"\n", mode)
			}
		}
		if !s.NoSymlinks {
			link := filepath.Join(root, dir, "cpufreq")
			if err := os.Symlink(fmt.Sprintf("../cpufreq/policy%d", owner), link); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return &Tree{Root: root, Spec: s}
}

// ScalingMaxPath is the absolute path of cpu's scaling_max_freq through
// its cpuN/cpufreq link.
func (t *Tree) ScalingMaxPath(cpu int) string {
	return filepath.Join(t.Root, CPURoot, fmt.Sprintf("cpu%d/cpufreq/scaling_max_freq", cpu))
}

// ScalingMax reads cpu's scaling_max_freq.
func (t *Tree) ScalingMax(tb testing.TB, cpu int) int64 {
	tb.Helper()
	b, err := os.ReadFile(t.ScalingMaxPath(cpu))
	if err != nil {
		tb.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// SetScalingMax writes cpu's scaling_max_freq behind the agent's back, as
// an administrator or another tool would.
func (t *Tree) SetScalingMax(tb testing.TB, cpu int, khz int64) {
	tb.Helper()
	p := t.ScalingMaxPath(cpu)
	st, err := os.Stat(p)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strconv.FormatInt(khz, 10)+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(p, st.Mode().Perm()); err != nil {
		tb.Fatal(err)
	}
}

// List formats CPUs in the kernel's list format ("0-3,8").
func List(cpus []int) string { return sysfs.FormatCPUList(cpus) }

func write(tb testing.TB, root, rel, content string, mode os.FileMode) {
	tb.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		tb.Fatal(err)
	}
}
