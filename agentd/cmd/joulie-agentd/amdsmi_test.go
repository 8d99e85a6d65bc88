package main

import (
	"syscall"
	"testing"

	"joulie.io/joulie/agentd/internal/pci/pcitest"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// TestDaemonCapsAMDGPUsThroughAmdSmi runs the daemon binary with the
// fake libamd_smi.so (agentd/internal/amdsmi/testdata) where
// amdsmiLibraryPath says and no NVML: the binary loads it with dlopen,
// lists its two GPUs (300 and 750 W), caps each at the eco 60%, reads
// their draw, and says all of it in status, hardware and metrics. The
// fake keeps its state in the daemon's process, so what the daemon reads
// back from it is what the test sees. It runs as each amd-smi release
// whose power-info layout differs (FAKE_AMDSMI_VERSION: ROCm 6.1 to 6.3,
// 6.4, 7.0 on), which the draw in the metrics must survive.
func TestDaemonCapsAMDGPUsThroughAmdSmi(t *testing.T) {
	for _, version := range []string{"24", "25", "26"} {
		t.Run("amd-smi "+version, func(t *testing.T) { testDaemonOnAmdSmi(t, version) })
	}
}

func testDaemonOnAmdSmi(t *testing.T, version string) {
	f := newFixture(t)
	// The fake's GPUs on the PCI bus: the MI210 and the MI300X its cap
	// ranges are.
	pcitest.Write(t, f.root, pcitest.MI210("0000:c1:00.0"), pcitest.MI300X("0001:41:00.0"))
	f.nvml, f.amdsmi = "none", bin.amdsmi
	f.metrics = freeAddress(t)
	f.writeConfig(t, 60)
	d := f.start(t, "FAKE_AMDSMI_VERSION="+version)
	waitFor(t, "the GPU caps applied", func() bool {
		s := status(t, f)
		return s.GPU != nil && s.GPU.Result == joulie.ResultApplied
	})

	s := status(t, f)
	if s.GPU.Backend != joulie.BackendAMDSMI || len(s.GPU.Devices) != 2 {
		t.Fatalf("GPU status %+v, want amdsmi over 2 GPUs", s.GPU)
	}
	for i, want := range []float64{180, 450} {
		dev := s.GPU.Devices[i]
		if dev.Result != joulie.ResultApplied || dev.AppliedCapWatts == nil || *dev.AppliedCapWatts != want {
			t.Errorf("GPU %d: %+v (cap %v), want applied at %v W", i, dev, dev.AppliedCapWatts, want)
		}
	}
	if s.CPU.Result != joulie.ResultApplied || s.CPU.Backend != joulie.BackendRAPL {
		t.Errorf("CPU %+v: the Xeon's RAPL caps, amd-smi or not", s.CPU)
	}

	var hw joulie.NodeHardwareStatus
	ctlJSON(t, f, "hardware", &hw)
	if hw.GPU == nil || hw.GPU.Count != 2 || hw.GPU.Control.Backend != joulie.BackendAMDSMI || len(hw.GPU.Devices) != 2 {
		t.Fatalf("hardware GPU %+v", hw.GPU)
	}
	if r := hw.GPU.Devices[1].CapRange; r == nil || r.MinWatts != 200 || r.MaxWatts != 750 {
		t.Errorf("GPU 1's cap range %+v, want 200 to 750 W from amd-smi", r)
	}
	// Named from the bus, so the catalog resolves the product.
	if hw.GPU.Model != "AMD Instinct MI210" || hw.GPU.Devices[1].Name != "AMD Instinct MI300X" || hw.GPU.Exactness != joulie.ExactnessExact {
		t.Errorf("GPU model %q (%s, %s), GPU 1 %q: want the MI210 exactly and the MI300X", hw.GPU.Model, hw.GPU.CatalogModel, hw.GPU.Exactness, hw.GPU.Devices[1].Name)
	}

	// The draw: 212 W current socket power on GPU 0, 431 W average on
	// GPU 1 (the fake's older part).
	f.metricsHave(t,
		`joulie_control_result{class="gpu",node="node-a",result="applied"} 1`,
		`joulie_gpu_control_result{gpu="1",node="node-a",result="applied"} 1`,
		`joulie_power_watts{component="gpu",node="node-a"} 643`)

	d.signal(t, syscall.SIGTERM)
	if code := d.wait(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
