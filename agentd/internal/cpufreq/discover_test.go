package cpufreq

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"joulie.io/joulie/agentd/internal/cpufreq/cpufreqtest"
	"joulie.io/joulie/agentd/internal/sysfs"
)

var update = flag.Bool("update", false, "rewrite golden files")

// xeon is a small two-socket intel_pstate host with SMT: 2 packages x 2
// cores x 2 threads, numbered as Linux numbers them (cpu0-3 first threads,
// cpu4-7 their siblings).
var xeon = cpufreqtest.Spec{Packages: 2, CoresPerPackage: 2, ThreadsPerCore: 2,
	MinKHz: 800000, MaxKHz: 3900000, BaseKHz: 2100000}

func build(t *testing.T, s cpufreqtest.Spec) (*cpufreqtest.Tree, *sysfs.FS) {
	t.Helper()
	tree := cpufreqtest.Build(t, t.TempDir(), s)
	return tree, sysfs.New(tree.Root)
}

func TestDiscoverReadsEveryCPUThroughPolicyLinks(t *testing.T) {
	_, fs := build(t, xeon)
	h := Discover(fs)
	got, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "discover-2s-smt.golden")
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != string(got)+"\n" {
		t.Errorf("Discover differs from %s:\n%s", golden, got)
	}
	if !h.Available() || !h.Writable || len(h.Warnings) != 0 {
		t.Errorf("available=%v writable=%v warnings=%q", h.Available(), h.Writable, h.Warnings)
	}
	c, ok := h.CPU(6)
	if !ok || c.Package != 1 || !slices.Equal(c.Siblings, []int{2, 6}) || c.Policy != "policy6" || c.Dir != "sys/devices/system/cpu/cpu6/cpufreq" {
		t.Errorf("cpu6 = %+v", c)
	}
}

func TestDiscoverOnHostWithoutCpufreqIsEmptyWithWarning(t *testing.T) {
	// A VM: CPUs and topology, no cpufreq anywhere.
	root := t.TempDir()
	for _, rel := range []string{"sys/devices/system/cpu/cpu0/topology", "sys/devices/system/cpu/cpu1/topology", "sys/devices/system/cpu/cpufreq"} {
		if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "sys/devices/system/cpu/online"), []byte("0-1\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	h := Discover(sysfs.New(root))
	if h.Available() || h.Writable || len(h.CPUs) != 0 {
		t.Errorf("VM: %+v", h)
	}
	if len(h.Warnings) != 1 || !strings.Contains(h.Warnings[0], "no cpufreq") {
		t.Errorf("warnings = %q", h.Warnings)
	}
	// An empty root (no /sys at all) is the same, not a failure.
	if h := Discover(sysfs.New(t.TempDir())); h.Available() || len(h.Warnings) != 1 {
		t.Errorf("empty root: %+v", h)
	}
}

func TestDiscoverOnThisMachineNeverFails(t *testing.T) {
	h := Discover(sysfs.New("/"))
	t.Logf("this machine: %d cpufreq CPUs, driver %q, %d..%d kHz, warnings %q", len(h.CPUs), h.Driver, h.MinKHz, h.MaxKHz, h.Warnings)
	if !h.Available() && len(h.Warnings) == 0 {
		t.Error("no cpufreq and no warning saying so")
	}
}

func TestDiscoverFindsPoliciesWhenLinksAreMissing(t *testing.T) {
	s := xeon
	s.NoSymlinks = true
	_, fs := build(t, s)
	h := Discover(fs)
	if len(h.CPUs) != 8 {
		t.Fatalf("found %d CPUs, want 8; warnings %q", len(h.CPUs), h.Warnings)
	}
	c, _ := h.CPU(6)
	if c.Dir != "sys/devices/system/cpu/cpufreq/policy6" || c.Policy != "policy6" || c.ScalingMaxKHz != 3900000 {
		t.Errorf("cpu6 = %+v", c)
	}
}

func TestDiscoverSeesPoliciesSharedByThreads(t *testing.T) {
	s := xeon
	s.PolicyPerCore = true
	s.Driver = "acpi-cpufreq"
	_, fs := build(t, s)
	h := Discover(fs)
	c, _ := h.CPU(6)
	if c.Policy != "policy2" || !slices.Equal(c.RelatedCPUs, []int{2, 6}) {
		t.Errorf("cpu6 policy %q related %v, want policy2 [2 6]", c.Policy, c.RelatedCPUs)
	}
	if h.Driver != "acpi-cpufreq" || h.BaseKHz != 2100000 {
		t.Errorf("landmarks: %q base %d", h.Driver, h.BaseKHz)
	}
}

func TestDiscoverWarnsWhenCPUsDisagree(t *testing.T) {
	// A hybrid part: the E-cores (cpu2, cpu3, cpu6, cpu7 here) top out lower.
	s := xeon
	s.Override = map[int]map[string]string{}
	for _, c := range []int{2, 3, 6, 7} {
		s.Override[c] = map[string]string{"cpuinfo_max_freq": "3000000"}
	}
	_, fs := build(t, s)
	h := Discover(fs)
	if h.MaxKHz != 3900000 {
		t.Errorf("landmark max %d, want cpu0's 3900000", h.MaxKHz)
	}
	if len(h.Warnings) != 1 || !strings.Contains(h.Warnings[0], "cpuinfo_max_freq") || !strings.Contains(h.Warnings[0], "2-3,6-7") {
		t.Errorf("warnings = %q", h.Warnings)
	}
}

func TestDiscoverSkipsOfflineCPUs(t *testing.T) {
	s := xeon
	s.Offline = []int{0, 7}
	_, fs := build(t, s)
	h := Discover(fs)
	var ids []int
	for _, c := range h.CPUs {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []int{1, 2, 3, 4, 5, 6}) {
		t.Errorf("CPUs %v, want 1-6", ids)
	}
	// Landmarks come from the lowest CPU found when cpu0 is gone.
	if h.MinKHz != 800000 || len(h.Warnings) != 0 {
		t.Errorf("min %d warnings %q", h.MinKHz, h.Warnings)
	}
}

func TestDiscoverWithoutOnlineListUsesCPUDirectories(t *testing.T) {
	tree, _ := build(t, xeon)
	if err := os.Remove(filepath.Join(tree.Root, cpufreqtest.CPURoot, "online")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree.Root, cpufreqtest.CPURoot, "cpu3/online"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := Discover(sysfs.New(tree.Root))
	if len(h.CPUs) != 7 || len(h.Warnings) != 0 {
		t.Errorf("%d CPUs, warnings %q; want 7 (cpu3 offline)", len(h.CPUs), h.Warnings)
	}
	if _, ok := h.CPU(3); ok {
		t.Error("offline cpu3 discovered")
	}
}

func TestDiscoverReportsReadOnlyCeilings(t *testing.T) {
	s := xeon
	s.ReadOnly = []int{1, 2}
	_, fs := build(t, s)
	h := Discover(fs)
	if c, _ := h.CPU(1); c.Writable {
		t.Error("cpu1 reported writable")
	}
	if !h.Writable || len(h.Warnings) != 1 || !strings.Contains(h.Warnings[0], "read-only on CPUs 1-2") {
		t.Errorf("writable=%v warnings=%q", h.Writable, h.Warnings)
	}
	s.ReadOnly = []int{0, 1, 2, 3, 4, 5, 6, 7}
	_, fs = build(t, s)
	if h := Discover(fs); h.Writable || !h.Available() {
		t.Errorf("all read-only: writable=%v available=%v", h.Writable, h.Available())
	}
}

func TestDiscoverLeavesOutCPUsWithBrokenFiles(t *testing.T) {
	s := xeon
	s.Override = map[int]map[string]string{3: {"cpuinfo_max_freq": "garbage"}, 4: {"cpuinfo_min_freq": "0"}}
	_, fs := build(t, s)
	h := Discover(fs)
	if len(h.CPUs) != 6 || len(h.Warnings) != 2 {
		t.Errorf("%d CPUs, warnings %q", len(h.CPUs), h.Warnings)
	}
}
