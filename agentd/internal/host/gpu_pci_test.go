package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"joulie.io/joulie/agentd/internal/cpuinfo/cpuinfotest"
	"joulie.io/joulie/agentd/internal/pci/pcitest"
	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// These tests open hosts whose GPUs are on the PCI bus but out of every
// backend's reach: the GPU class must say blocked, and why, never none.

// xeonWithPCI is a 2-socket Xeon with RAPL and the given PCI devices.
func xeonWithPCI(t *testing.T, devs ...pcitest.Device) string {
	t.Helper()
	root := t.TempDir()
	cpuinfotest.Write(t, root, cpuinfotest.Xeon2S())
	rapltest.TwoSocketXeon(t, root, 350)
	pcitest.Write(t, root, devs...)
	return root
}

func openPCIHost(t *testing.T, root, nvmlPath string) *Host {
	t.Helper()
	c := newClock()
	h, err := Open(Config{Root: root, StateDir: t.TempDir(), NVMLLibraryPath: nvmlPath, AMDSMILibraryPath: Skip, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func TestNVIDIAGPUsWithoutNVMLAreBlockedAndListed(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	for _, tc := range []struct {
		name, nvmlPath string
		why            []string
	}{
		{"library missing", missing, []string{missing + " not found", "install the NVIDIA driver", "nvmlLibraryPath"}},
		{"NVML switched off", Skip, []string{"nvmlLibraryPath is none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := openPCIHost(t, xeonWithPCI(t, pcitest.HGX(3)...), tc.nvmlPath)
			c := newClock()

			_, gpu := apply(h, c.now(), eco(60))
			if gpu.Result != joulie.ResultBlocked || gpu.Backend != joulie.BackendNone {
				t.Fatalf("GPU status %+v, want blocked with backend none", gpu)
			}
			for _, want := range append([]string{"3 of 3 GPUs not capped", "NVIDIA GPUs on the PCI bus"}, tc.why...) {
				if !strings.Contains(gpu.Message, want) {
					t.Errorf("GPU message %q does not say %q", gpu.Message, want)
				}
			}
			if len(gpu.Devices) != 3 {
				t.Fatalf("GPU devices %+v, want one blocked entry per GPU", gpu.Devices)
			}
			for _, d := range gpu.Devices {
				if d.Result != joulie.ResultBlocked || d.AppliedCapWatts != nil {
					t.Errorf("device %+v", d)
				}
			}

			hw := h.Hardware(c.now())
			g := hw.GPU
			if g == nil {
				t.Fatalf("NodeHardware lists no GPU; warnings %q", hw.Warnings)
			}
			if g.Vendor != "nvidia" || g.Count != 3 || g.Model != "NVIDIA H100 SXM" || g.CatalogModel != "nvidia-h100-sxm" {
				t.Errorf("GPU %+v", g)
			}
			var addrs []string
			for _, d := range g.Devices {
				addrs = append(addrs, d.PCIBusID)
			}
			if strings.Join(addrs, ",") != "0000:18:00.0,0000:2a:00.0,0000:3a:00.0" {
				t.Errorf("PCI addresses %q", addrs)
			}
			if g.Control.Backend != joulie.BackendNone || len(g.Control.Available) != 0 || !strings.Contains(g.Control.Reason, tc.why[0]) {
				t.Errorf("GPU control %+v", g.Control)
			}
			if g.CapRange == nil || g.CapRange.Source != "catalog" {
				t.Errorf("cap range %+v, want the catalog's", g.CapRange)
			}
			if !containsAll(hw.Warnings, "GPU power cannot be capped", tc.why[0]) {
				t.Errorf("warnings %q do not say why the GPUs cannot be capped", hw.Warnings)
			}

			// Asking for nothing is not a failure.
			if _, gpu := apply(h, c.now(), joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance}); gpu.Result != joulie.ResultNone {
				t.Errorf("no GPU target: %+v", gpu)
			}
		})
	}
}

// amdGPU is an MI300X bound to amdgpu with hwmon attributes; capMode is
// power1_cap's mode.
func amdGPU(t *testing.T, root, addr string, capMode os.FileMode) {
	t.Helper()
	for attr, v := range map[string]string{
		"name": "amdgpu", "power1_cap": "750000000", "power1_cap_max": "750000000",
		"power1_cap_min": "200000000", "power1_cap_default": "750000000", "power1_input": "300000000",
	} {
		mode := os.FileMode(0o444)
		if attr == "power1_cap" {
			mode = capMode
		}
		pcitest.WriteAttr(t, root, addr, "hwmon/hwmon4/"+attr, v, mode)
	}
}

func TestAMDGPUWithReadOnlyPowerCapIsBlocked(t *testing.T) {
	root := xeonWithPCI(t, pcitest.MI300X("0001:41:00.0"), pcitest.MI300X("0001:51:00.0"))
	amdGPU(t, root, "0001:41:00.0", 0o444)
	amdGPU(t, root, "0001:51:00.0", 0o444)
	h := openPCIHost(t, root, Skip)
	c := newClock()

	_, gpu := apply(h, c.now(), eco(60))
	if gpu.Result != joulie.ResultBlocked || gpu.Backend != joulie.BackendHwmon || !strings.Contains(gpu.Message, "read-only") {
		t.Fatalf("GPU status %+v, want blocked saying power1_cap is read-only", gpu)
	}
	if !strings.Contains(gpu.Message, "does not allow") {
		t.Errorf("GPU message %q does not say why", gpu.Message)
	}
	hw := h.Hardware(c.now())
	if hw.GPU == nil || hw.GPU.Count != 2 || hw.GPU.Model != "AMD Instinct MI300X" {
		t.Fatalf("GPU %+v", hw.GPU)
	}
	if ctl := hw.GPU.Control; ctl.Backend != joulie.BackendNone || !strings.Contains(ctl.Reason, "read-only") {
		t.Errorf("GPU control %+v: hwmon cannot cap these GPUs", ctl)
	}
	if hw.GPU.Telemetry.Source != joulie.TelemetryHwmon {
		t.Errorf("telemetry %+v: the draw is still readable", hw.GPU.Telemetry)
	}
	if !containsAll(hw.Warnings, "GPU power cannot be capped", "read-only") {
		t.Errorf("warnings %q", hw.Warnings)
	}
}

func TestAMDGPUWithoutTheDriverIsBlocked(t *testing.T) {
	unbound := pcitest.MI300X("0001:41:00.0")
	unbound.Driver = ""
	h := openPCIHost(t, xeonWithPCI(t, unbound), Skip)
	c := newClock()
	_, gpu := apply(h, c.now(), eco(60))
	if gpu.Result != joulie.ResultBlocked || !containsAll([]string{gpu.Message}, "AMD GPUs on the PCI bus", "amdgpu", "amdsmiLibraryPath is none") {
		t.Fatalf("GPU status %+v", gpu)
	}
	if hw := h.Hardware(c.now()); hw.GPU == nil || hw.GPU.Devices[0].PCIBusID != "0001:41:00.0" || hw.GPU.Vendor != "amd" {
		t.Fatalf("GPU %+v", hw.GPU)
	}
}

func TestNoGPUOnThePCIBusIsStillNone(t *testing.T) {
	// The BMC's VGA and NVSwitches are on the bus, but no GPU.
	h := openPCIHost(t, xeonWithPCI(t, pcitest.HGX(0)...), filepath.Join(t.TempDir(), "libnvidia-ml.so.1"))
	c := newClock()
	_, gpu := apply(h, c.now(), eco(60))
	if gpu.Result != joulie.ResultNone || gpu.Message != "no GPUs found on this host" {
		t.Fatalf("GPU status %+v", gpu)
	}
	hw := h.Hardware(c.now())
	if hw.GPU != nil {
		t.Errorf("GPU %+v on a host without one", hw.GPU)
	}
	for _, w := range hw.Warnings {
		if strings.HasPrefix(w, "GPU") {
			t.Errorf("warning %q on a host without GPUs", w)
		}
	}
}

// containsAll reports whether one of lines contains every one of subs.
func containsAll(lines []string, subs ...string) bool {
	for _, l := range lines {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			return true
		}
	}
	return false
}

// A backend that reaches some of the host's GPUs does not hide the others:
// amdgpu's hwmon caps the AMD GPU, and the NVIDIA GPUs beside it, which
// NVML cannot reach, are listed and blocked, each with its own state.
func TestGPUsNoBackendReachesAreListedBesideTheOthers(t *testing.T) {
	root := xeonWithPCI(t, append([]pcitest.Device{pcitest.MI300X("0001:41:00.0")}, pcitest.HGX(2)...)...)
	amdGPU(t, root, "0001:41:00.0", 0o644)
	h := openPCIHost(t, root, Skip)
	c := newClock()

	_, gpu := apply(h, c.now(), eco(60))
	if gpu.Backend != joulie.BackendHwmon || gpu.Result != joulie.ResultBlocked || len(gpu.Devices) != 3 {
		t.Fatalf("GPU status %+v, want hwmon's GPU and the two NVIDIA GPUs", gpu)
	}
	if d := gpu.Devices[0]; d.Result != joulie.ResultApplied || d.AppliedCapWatts == nil || *d.AppliedCapWatts != 450 {
		t.Errorf("the AMD GPU: %+v, want capped at 60%% of 750 W", d)
	}
	for _, d := range gpu.Devices[1:] {
		if d.Result != joulie.ResultBlocked || !strings.Contains(d.Message, "NVML cannot reach the NVIDIA GPUs") || !strings.Contains(d.Message, "nvmlLibraryPath is none") {
			t.Errorf("an NVIDIA GPU: %+v, want blocked, saying why", d)
		}
	}
	if !strings.Contains(gpu.Message, "2 of 3 GPUs not capped") {
		t.Errorf("GPU message %q", gpu.Message)
	}
	hw := h.Hardware(c.now())
	if hw.GPU == nil || hw.GPU.Count != 3 || len(hw.GPU.Devices) != 3 || hw.GPU.Devices[2].PCIBusID != "0000:2a:00.0" {
		t.Fatalf("NodeHardware GPU %+v, want all three", hw.GPU)
	}
	if !containsAll(hw.Warnings, "2 of 3 GPUs cannot be capped", "NVML cannot reach") {
		t.Errorf("warnings %q do not name the NVIDIA GPUs", hw.Warnings)
	}
}
