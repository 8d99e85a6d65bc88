package cpuinfo_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"joulie.io/joulie/agentd/internal/cpuinfo"
	"joulie.io/joulie/agentd/internal/cpuinfo/cpuinfotest"
	"joulie.io/joulie/agentd/internal/sysfs"
)

func span(lo, hi int) []int {
	var out []int
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

func TestDiscover(t *testing.T) {
	epyc9654 := cpuinfotest.EPYC2S()
	epyc9654.ModelName = "AMD EPYC 9654 96-Core Processor"
	epyc9654.CoresPerSocket = 96
	epyc9654.CoreIDStride = 2

	noSysfsTopo := cpuinfotest.Xeon2S()
	noSysfsTopo.NoSysfsTopology = true

	vm := cpuinfotest.Xeon2S()
	vm.Sockets, vm.CoresPerSocket, vm.ThreadsPerCore = 1, 8, 1
	vm.NoSysfsTopology, vm.NoCPUInfoTopology = true, true

	procOnly := cpuinfotest.Xeon2S()
	procOnly.NoSysfs = true

	sysOnly := cpuinfotest.EPYC2S()
	sysOnly.NoCPUInfo, sysOnly.MemTotalKB = true, 0

	offline := cpuinfotest.Xeon2S()
	offline.Offline = []int{127, 64}

	multiDie := cpuinfotest.Xeon2S()
	multiDie.ModelName = "Intel(R) Xeon(R) Platinum 9242 CPU @ 2.30GHz"
	multiDie.CoresPerSocket, multiDie.DiesPerSocket = 48, 2

	type want struct {
		vendor, model                              string
		sockets, perSocket, cores, logical, thread int
		pkg0, pkg1                                 []int
		mem                                        uint64
		warnings                                   []string // substrings, in order
	}
	for _, tc := range []struct {
		name string
		host cpuinfotest.Host
		want want
	}{
		{"two-socket EPYC 9454, 96 cores 192 threads", cpuinfotest.EPYC2S(), want{
			vendor: "AuthenticAMD", model: "AMD EPYC 9454 48-Core Processor",
			sockets: 2, perSocket: 48, cores: 96, logical: 192, thread: 2,
			pkg0: append(span(0, 47), span(96, 143)...), pkg1: append(span(48, 95), span(144, 191)...),
			mem: 805306368 * 1024,
		}},
		{"two-socket EPYC 9654 with sparse core ids", epyc9654, want{
			vendor: "AuthenticAMD", model: "AMD EPYC 9654 96-Core Processor",
			sockets: 2, perSocket: 96, cores: 192, logical: 384, thread: 2,
			pkg0: append(span(0, 95), span(192, 287)...), pkg1: append(span(96, 191), span(288, 383)...),
			mem: 805306368 * 1024,
		}},
		{"Intel without sysfs topology falls back to cpuinfo", noSysfsTopo, want{
			vendor: "GenuineIntel", model: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
			sockets: 2, perSocket: 32, cores: 64, logical: 128, thread: 2,
			pkg0: append(span(0, 31), span(64, 95)...), pkg1: append(span(32, 63), span(96, 127)...),
			mem:      536870912 * 1024,
			warnings: []string{"sysfs topology missing for 128 of 128 CPUs"},
		}},
		{"VM without any topology counts one package of single-thread cores", vm, want{
			vendor: "GenuineIntel", model: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
			sockets: 1, perSocket: 8, cores: 8, logical: 8, thread: 1,
			pkg0: span(0, 7), mem: 536870912 * 1024,
			warnings: []string{"sysfs topology missing for 8 of 8 CPUs", "physical package unknown for 8 of 8 CPUs", "core id unknown"},
		}},
		{"no sysfs CPUs: processors of cpuinfo", procOnly, want{
			vendor: "GenuineIntel", model: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
			sockets: 2, perSocket: 32, cores: 64, logical: 128, thread: 2,
			pkg0: append(span(0, 31), span(64, 95)...), pkg1: append(span(32, 63), span(96, 127)...),
			mem:      536870912 * 1024,
			warnings: []string{"no CPUs under /sys/devices/system/cpu", "sysfs topology missing for 128 of 128 CPUs"},
		}},
		{"no cpuinfo: topology from sysfs, vendor unknown", sysOnly, want{
			sockets: 2, perSocket: 48, cores: 96, logical: 192, thread: 2,
			pkg0: append(span(0, 47), span(96, 143)...), pkg1: append(span(48, 95), span(144, 191)...),
			warnings: []string{"CPU vendor and model unknown", "memory size unknown"},
		}},
		{"offline CPUs are not counted", offline, want{
			vendor: "GenuineIntel", model: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
			sockets: 2, perSocket: 32, cores: 64, logical: 126, thread: 0,
			pkg0: append(span(0, 31), span(65, 95)...), pkg1: append(span(32, 63), span(96, 126)...),
			mem: 536870912 * 1024,
		}},
		{"multi-die packages repeat core ids per die", multiDie, want{
			vendor: "GenuineIntel", model: "Intel(R) Xeon(R) Platinum 9242 CPU @ 2.30GHz",
			sockets: 2, perSocket: 48, cores: 96, logical: 192, thread: 2,
			pkg0: append(span(0, 47), span(96, 143)...), pkg1: append(span(48, 95), span(144, 191)...),
			mem: 536870912 * 1024,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // fixture writing is bound by syscalls, not CPU
			root := t.TempDir()
			cpuinfotest.Write(t, root, tc.host)
			info, warnings, err := cpuinfo.Discover(sysfs.New(root))
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			got := []any{info.Vendor, info.ModelName, info.Sockets, info.CoresPerSocket, info.TotalCores, info.LogicalCPUs, info.ThreadsPerCore, info.MemTotalBytes}
			exp := []any{w.vendor, w.model, w.sockets, w.perSocket, w.cores, w.logical, w.thread, w.mem}
			if !reflect.DeepEqual(got, exp) {
				t.Errorf("vendor, model, sockets, cores/socket, cores, logical, threads/core, mem =\n %v\nwant\n %v", got, exp)
			}
			if !reflect.DeepEqual(info.CPUsOf(0), w.pkg0) {
				t.Errorf("package 0 CPUs = %v, want %v", info.CPUsOf(0), w.pkg0)
			}
			if !reflect.DeepEqual(info.CPUsOf(1), w.pkg1) {
				t.Errorf("package 1 CPUs = %v, want %v", info.CPUsOf(1), w.pkg1)
			}
			checkWarnings(t, warnings, w.warnings)
			if tc.host.Vendor == "" || tc.host.NoCPUInfo {
				return
			}
			// The host's own description agrees with what was found.
			for p := 0; p < tc.host.Sockets; p++ {
				if !reflect.DeepEqual(info.CPUsOf(p), tc.host.PackageCPUs(p)) {
					t.Errorf("package %d: %v, fixture says %v", p, info.CPUsOf(p), tc.host.PackageCPUs(p))
				}
			}
		})
	}
}

// checkWarnings wants each substring in its own warning, in order, and no
// other warnings.
func checkWarnings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("warnings %q, want %d matching %q", got, len(want), want)
		return
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("warning %d = %q, want it to mention %q", i, got[i], want[i])
		}
	}
}

func TestDiscoverFailsOnlyWhenNothingIsReadable(t *testing.T) {
	_, _, err := cpuinfo.Discover(sysfs.New(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "no CPU found") {
		t.Fatalf("empty host root: %v", err)
	}
}

func TestDiscoverWithoutOnlineListCountsCPUDirectories(t *testing.T) {
	root := t.TempDir()
	cpuinfotest.Write(t, root, cpuinfotest.EPYC2S())
	if err := os.Remove(filepath.Join(root, "sys/devices/system/cpu/online")); err != nil {
		t.Fatal(err)
	}
	info, warnings, err := cpuinfo.Discover(sysfs.New(root))
	if err != nil {
		t.Fatal(err)
	}
	if info.LogicalCPUs != 192 || info.TotalCores != 96 || info.Sockets != 2 {
		t.Errorf("got %d CPUs, %d cores, %d sockets", info.LogicalCPUs, info.TotalCores, info.Sockets)
	}
	checkWarnings(t, warnings, []string{"online CPU list unreadable"})
}

func TestDiscoverSurvivesGarbledCPUInfo(t *testing.T) {
	root := t.TempDir()
	cpuinfotest.Write(t, root, cpuinfotest.Xeon2S())
	if err := os.WriteFile(filepath.Join(root, "proc/cpuinfo"), []byte("this is not cpuinfo\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	info, warnings, err := cpuinfo.Discover(sysfs.New(root))
	if err != nil {
		t.Fatal(err)
	}
	if info.Vendor != "" || info.Sockets != 2 || info.TotalCores != 64 {
		t.Errorf("got %+v", info)
	}
	checkWarnings(t, warnings, []string{"cpuinfo"})
}
