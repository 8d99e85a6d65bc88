package nodehardware

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/backend"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/catalog"
)

var update = flag.Bool("update", false, "rewrite golden files")

var now = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func h100s(n int) []backend.GPU {
	var out []backend.GPU
	for i := 0; i < n; i++ {
		out = append(out, backend.GPU{Index: i, UUID: fmt.Sprintf("GPU-%08d", i), Name: "NVIDIA H100 80GB HBM3",
			PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+i), MinWatts: 200, MaxWatts: 700, DefaultWatts: 700, CapWatts: 700,
			PowerWatts: 120, HasPower: true})
	}
	return out
}

// pciOnly are n H100s as the PCI bus shows them: no range, no readings,
// and the reason no backend reaches them.
func pciOnly(n int, why string) []backend.GPU {
	var out []backend.GPU
	for i := range n {
		out = append(out, backend.GPU{Index: i, Name: "NVIDIA H100 SXM", PCIBusID: fmt.Sprintf("0000:%02x:00.0", 0x18+i), CapBlocked: why})
	}
	return out
}

func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		name  string
		facts Facts
		check func(t *testing.T, st joulie.NodeHardwareStatus)
	}{
		{
			name: "epyc-readonly-rapl-8xh100",
			facts: Facts{
				CPU:      CPUFacts{Vendor: "AuthenticAMD", Model: "AMD EPYC 9654 96-Core Processor", Sockets: 2, CoresPerSocket: 96, TotalCores: 192, LogicalCPUs: 384},
				Packages: []PackageFacts{{ID: 0, Zone: "intel-rapl:0"}, {ID: 1, Zone: "intel-rapl:1"}}, CPUEnergy: true,
				Frequency:  &FrequencyFacts{Driver: "amd-pstate-epp", Governor: "performance", MinKHz: 400000, MaxKHz: 3709000, Writable: true},
				GPUBackend: joulie.BackendNVML, GPUs: h100s(8), MemoryBytes: 1536 << 30, AgentVersion: "v0.1.0",
				Network: []joulie.NetworkInterface{{Name: "eno1", MAC: "0c:c4:7a:12:34:56", WakeOnLAN: true}, {Name: "eno2", MAC: "0c:c4:7a:12:34:57"}},
			},
			check: func(t *testing.T, st joulie.NodeHardwareStatus) {
				if st.CPU.Control.Backend != joulie.BackendDVFS || st.CPU.CapRange.Source != "catalog" || st.CPU.CapRange.MaxWatts != 360 {
					t.Errorf("read-only RAPL should leave DVFS in control and the catalog TDP as max: %+v %+v", st.CPU.Control, st.CPU.CapRange)
				}
				if st.GPU == nil || st.GPU.Count != 8 || st.GPU.CatalogModel != "nvidia-h100-sxm" || st.GPU.Exactness != joulie.ExactnessExact || st.GPU.Vendor != "nvidia" {
					t.Errorf("GPU %+v", st.GPU)
				}
				if st.Quality != joulie.DiscoveryComplete {
					t.Errorf("quality %s, warnings %v", st.Quality, st.Warnings)
				}
			},
		},
		{
			name: "intel-rapl-two-sockets",
			facts: Facts{
				CPU: CPUFacts{Vendor: "GenuineIntel", Model: "Intel(R) Xeon(R) Platinum 8480+", Sockets: 2, CoresPerSocket: 56, TotalCores: 112, LogicalCPUs: 224},
				Packages: []PackageFacts{
					{ID: 0, Zone: "intel-rapl:0", MaxWatts: 350, LimitWatts: 350, Writable: true},
					{ID: 1, Zone: "intel-rapl:1", MaxWatts: 340, LimitWatts: 340, Writable: true},
				},
				CPUEnergy: true,
				Frequency: &FrequencyFacts{Driver: "intel_pstate", Governor: "powersave", MinKHz: 800000, BaseKHz: 2000000, MaxKHz: 3800000, Writable: true},
			},
			check: func(t *testing.T, st joulie.NodeHardwareStatus) {
				if st.CPU.Control.Backend != joulie.BackendRAPL || st.CPU.CapRange.MaxWatts != 340 || st.CPU.CapRange.Source != "rapl" {
					t.Errorf("RAPL in control with the narrowest zone range: %+v %+v", st.CPU.Control, st.CPU.CapRange)
				}
				if st.GPU != nil {
					t.Errorf("CPU-only host reports a GPU: %+v", st.GPU)
				}
			},
		},
		{
			name:  "bare-vm",
			facts: Facts{CPU: CPUFacts{Vendor: "AuthenticAMD", Model: "AMD EPYC", Sockets: 1, CoresPerSocket: 2, TotalCores: 2, LogicalCPUs: 2}, Warnings: []string{"no /sys/class/powercap"}},
			check: func(t *testing.T, st joulie.NodeHardwareStatus) {
				if st.CPU.Control.Backend != joulie.BackendNone || st.Quality != joulie.DiscoveryPartial || st.CPU.Exactness != joulie.ExactnessGeneric {
					t.Errorf("control %+v quality %s exactness %s", st.CPU.Control, st.Quality, st.CPU.Exactness)
				}
			},
		},
		{
			// NVIDIA GPUs on the PCI bus, no libnvidia-ml: listed from PCI,
			// planned with catalog figures, and not controllable.
			name: "xeon-3xh100-without-driver",
			facts: Facts{
				CPU:        CPUFacts{Vendor: "GenuineIntel", Model: "Intel(R) Xeon(R) Platinum 8480+", Sockets: 2, CoresPerSocket: 56, TotalCores: 112, LogicalCPUs: 224},
				Packages:   []PackageFacts{{ID: 0, Zone: "intel-rapl:0", MaxWatts: 350, LimitWatts: 350, Writable: true}, {ID: 1, Zone: "intel-rapl:1", MaxWatts: 350, LimitWatts: 350, Writable: true}},
				CPUEnergy:  true,
				Frequency:  &FrequencyFacts{Driver: "intel_pstate", Governor: "powersave", MinKHz: 800000, MaxKHz: 3800000, Writable: true},
				GPUBackend: joulie.BackendNone,
				GPUs:       pciOnly(3, "NVML cannot reach the NVIDIA GPUs on the PCI bus: libnvidia-ml.so.1 not found; install the NVIDIA driver"),
			},
			check: func(t *testing.T, st joulie.NodeHardwareStatus) {
				g := st.GPU
				if g == nil || g.Count != 3 || g.Vendor != "nvidia" || g.CatalogModel != "nvidia-h100-sxm" || g.CapRange.Source != "catalog" {
					t.Fatalf("GPU %+v", g)
				}
				if g.Control.Backend != joulie.BackendNone || len(g.Control.Available) != 0 || g.Telemetry.Source != joulie.TelemetryNone {
					t.Errorf("control %+v telemetry %+v", g.Control, g.Telemetry)
				}
				if len(st.Warnings) != 1 || st.Quality != joulie.DiscoveryPartial {
					t.Errorf("one warning for one problem: %q, quality %s", st.Warnings, st.Quality)
				}
			},
		},
		{
			// amdgpu hwmon reaches both GPUs, but only one limit is writable.
			name: "epyc-2xmi300x-one-read-only",
			facts: Facts{
				CPU:        CPUFacts{Vendor: "AuthenticAMD", Model: "AMD EPYC 9654 96-Core Processor", Sockets: 1, CoresPerSocket: 96, TotalCores: 96, LogicalCPUs: 192},
				Frequency:  &FrequencyFacts{Driver: "amd-pstate-epp", Governor: "performance", MinKHz: 400000, MaxKHz: 3709000, Writable: true},
				CPUEnergy:  true,
				GPUBackend: joulie.BackendHwmon,
				GPUs: []backend.GPU{
					{Index: 0, UUID: "0001:41:00.0", PCIBusID: "0001:41:00.0", Name: "AMD Instinct MI300X", MinWatts: 200, MaxWatts: 750, DefaultWatts: 750, CapWatts: 750, PowerWatts: 300, HasPower: true},
					{Index: 1, UUID: "0001:51:00.0", PCIBusID: "0001:51:00.0", Name: "AMD Instinct MI300X", MinWatts: 200, MaxWatts: 750, DefaultWatts: 750, CapWatts: 750, PowerWatts: 300, HasPower: true,
						CapBlocked: "its hwmon power1_cap is read-only"},
				},
			},
			check: func(t *testing.T, st joulie.NodeHardwareStatus) {
				if c := st.GPU.Control; c.Backend != joulie.BackendHwmon || c.Reason != "GPU 1: its hwmon power1_cap is read-only" {
					t.Errorf("control %+v", c)
				}
			},
		},
		{
			name:  "nothing-known",
			facts: Facts{GPUError: errors.New("NVML unavailable: libnvidia-ml.so.1 not found")},
			check: func(t *testing.T, st joulie.NodeHardwareStatus) {
				if st.Quality != joulie.DiscoveryMinimal || st.CPU.CatalogModel == "" || st.CPU.CapRange == nil {
					t.Errorf("an unknown host still gets catalog figures: %+v", st.CPU)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Build(tc.facts, catalog.Default(), now)
			tc.check(t, st)
			got, err := json.MarshalIndent(st, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.name+".golden.json")
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if string(want) != string(got)+"\n" {
				t.Errorf("status differs from %s:\n%s", path, got)
			}
		})
	}
}

func TestMixedGPUsAreWarnedAndRangeIsNarrowest(t *testing.T) {
	gpus := h100s(2)
	gpus[1].Name, gpus[1].MaxWatts = "NVIDIA H100 PCIe", 350
	st := Build(Facts{CPU: CPUFacts{Model: "AMD EPYC 9654 96-Core Processor", Sockets: 1}, GPUBackend: joulie.BackendNVML, GPUs: gpus}, catalog.Default(), now)
	if st.GPU.CapRange.MaxWatts != 350 || st.Quality != joulie.DiscoveryPartial {
		t.Fatalf("range %+v quality %s warnings %v", st.GPU.CapRange, st.Quality, st.Warnings)
	}
}
