package catalog

import (
	"regexp"
	"strings"
	"testing"
)

// labelValue is a Kubernetes label value.
var labelValue = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)

// labelSafe turns a model string into a label value the way the package
// documentation suggests to admins: no trademarks, '+' spelled "plus",
// every other forbidden character a dash.
func labelSafe(s string) string {
	for _, tm := range []string{"(R)", "(r)", "(TM)", "(tm)"} {
		s = strings.ReplaceAll(s, tm, "")
	}
	s = strings.ReplaceAll(s, "+", "plus")
	var b strings.Builder
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	out := b.String()
	for strings.Contains(out, "--") {
		out = strings.ReplaceAll(out, "--", "-")
	}
	return strings.Trim(out, "-_.")
}

// spellings returns every spelling the catalog promises to match exactly:
// ID, name, aliases, and the label-safe forms of name and aliases.
func spellings(id, name string, aliases []string) []string {
	out := []string{id, name}
	for _, s := range append([]string{name}, aliases...) {
		out = append(out, s, labelSafe(s))
	}
	return out
}

func TestEverySpellingResolvesExactly(t *testing.T) {
	c := Default()
	for _, e := range c.CPUs() {
		if e.Generic {
			continue
		}
		for _, s := range spellings(e.ID, e.Name, e.Aliases) {
			if got, ex := c.ResolveCPU(s); got.ID != e.ID || ex != ExactnessExact {
				t.Errorf("ResolveCPU(%q) = %s, %s; want %s, exact", s, got.ID, ex, e.ID)
			}
		}
	}
	for _, e := range c.GPUs() {
		if e.Generic {
			continue
		}
		for _, s := range spellings(e.ID, e.Name, e.Aliases) {
			if got, ex := c.ResolveGPU(s); got.ID != e.ID || ex != ExactnessExact {
				t.Errorf("ResolveGPU(%q) = %s, %s; want %s, exact", s, got.ID, ex, e.ID)
			}
		}
	}
}

func TestLabelSafeFormsAreLabelValues(t *testing.T) {
	c := Default()
	check := func(s string) {
		if l := labelSafe(s); len(l) > 63 || !labelValue.MatchString(l) {
			t.Errorf("label-safe form %q of %q is not a valid label value", l, s)
		}
	}
	for _, e := range c.CPUs() {
		check(e.Name)
		for _, a := range e.Aliases {
			check(a)
		}
	}
	for _, e := range c.GPUs() {
		check(e.Name)
		for _, a := range e.Aliases {
			check(a)
		}
	}
}

type resolveCase struct {
	name, raw, id string
	exactness     Exactness
}

func TestResolveCPU(t *testing.T) {
	tests := []resolveCase{
		// Strings as /proc/cpuinfo shows them.
		{"Genoa cpuinfo", "AMD EPYC 9654 96-Core Processor", "amd-epyc-9654", ExactnessExact},
		{"Turin dense cpuinfo", "AMD EPYC 9965 192-Core Processor", "amd-epyc-9965", ExactnessExact},
		{"Milan cpuinfo", "AMD EPYC 7763 64-Core Processor", "amd-epyc-7763", ExactnessExact},
		{"Milan cpuinfo with stray spaces", "  AMD EPYC 7543  32-Core Processor\t", "amd-epyc-7543", ExactnessExact},
		{"Ice Lake cpuinfo with frequency", "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz", "intel-xeon-8380", ExactnessExact},
		{"Sapphire Rapids cpuinfo", "Intel(R) Xeon(R) Platinum 8480+", "intel-xeon-8480plus", ExactnessExact},
		{"Sapphire Rapids Gold", "Intel(R) Xeon(R) Gold 6438Y+", "intel-xeon-6438yplus", ExactnessExact},
		{"Emerald Rapids in capitals", "INTEL(R) XEON(R) PLATINUM 8592+", "intel-xeon-8592plus", ExactnessExact},
		{"Granite Rapids", "Intel(R) Xeon(R) 6980P", "intel-xeon-6980p", ExactnessExact},
		{"Sierra Forest", "Intel(R) Xeon(R) 6780E", "intel-xeon-6780e", ExactnessExact},
		// Label-safe forms an admin writes.
		{"label with vendor", "AMD-EPYC-9654", "amd-epyc-9654", ExactnessExact},
		{"label without vendor", "EPYC-9654", "amd-epyc-9654", ExactnessExact},
		{"label lower case with underscores", "amd_epyc_9754", "amd-epyc-9754", ExactnessExact},
		{"label of a plus part", "Intel-Xeon-Platinum-8480plus", "intel-xeon-8480plus", ExactnessExact},
		{"label with plus as a word", "Intel-Xeon-Platinum-8480-plus", "intel-xeon-8480plus", ExactnessExact},
		{"label without the tier is the ID", "intel-xeon-8592plus", "intel-xeon-8592plus", ExactnessExact},
		{"label of a cpuinfo string", "Intel-Xeon-Platinum-8380-CPU-2.30GHz", "intel-xeon-8380", ExactnessExact},
		// Unlisted parts of known families: the nearest model number.
		{"unlisted Turin", "AMD EPYC 9645 96-Core Processor", "amd-epyc-9655", ExactnessProxy},
		{"unlisted Turin frequency part", "AMD EPYC 9275F 24-Core Processor", "amd-epyc-9335", ExactnessProxy},
		{"single-socket P variant", "AMD EPYC 9654P 96-Core Processor", "amd-epyc-9654", ExactnessProxy},
		{"Milan P variant", "AMD EPYC 7713P 64-Core Processor", "amd-epyc-7713", ExactnessProxy},
		{"Sapphire Rapids without the plus", "Intel-Xeon-Platinum-8480", "intel-xeon-8480plus", ExactnessProxy},
		{"Sapphire Rapids Q part", "Intel(R) Xeon(R) Platinum 8470Q", "intel-xeon-8470", ExactnessProxy},
		{"Xeon Max is Sapphire Rapids", "Intel(R) Xeon(R) CPU Max 9480", "intel-xeon-8490h", ExactnessProxy},
		{"Emerald Rapids P part stays out of Xeon 6", "INTEL(R) XEON(R) PLATINUM 8558P", "intel-xeon-8562yplus", ExactnessProxy},
		{"unlisted Granite Rapids", "Intel(R) Xeon(R) 6979P", "intel-xeon-6980p", ExactnessProxy},
		{"unlisted Sierra Forest", "Intel(R) Xeon(R) 6756E", "intel-xeon-6766e", ExactnessProxy},
		{"unlisted Ice Lake", "Intel(R) Xeon(R) Gold 6348 CPU @ 2.60GHz", "intel-xeon-6338", ExactnessProxy},
		// Nothing more specific: the vendor's generic entry, or the class's.
		{"custom cloud EPYC", "AMD EPYC 7B13 64-Core Processor", "generic-amd-epyc", ExactnessGeneric},
		{"virtual EPYC", "AMD EPYC Processor (with IBPB)", "generic-amd-epyc", ExactnessGeneric},
		{"Broadwell Xeon", "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", "generic-intel-xeon", ExactnessGeneric},
		{"Cascade Lake Xeon", "Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz", "generic-intel-xeon", ExactnessGeneric},
		{"desktop AMD", "AMD Ryzen 9 7950X 16-Core Processor", "generic-x86", ExactnessGeneric},
		{"QEMU default", "QEMU Virtual CPU version 2.5+", "generic-x86", ExactnessGeneric},
		{"bare model number", "9654", "generic-x86", ExactnessGeneric},
		// No model string at all.
		{"empty", "", "generic-x86", ExactnessGeneric},
		{"blank", " \t ", "generic-x86", ExactnessGeneric},
		{"noise only", "CPU @ 2.00GHz", "generic-x86", ExactnessGeneric},
	}
	c := Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ex := c.ResolveCPU(tt.raw)
			if got.ID != tt.id || ex != tt.exactness {
				t.Errorf("ResolveCPU(%q) = %s, %s; want %s, %s", tt.raw, got.ID, ex, tt.id, tt.exactness)
			}
		})
	}
}

func TestResolveGPU(t *testing.T) {
	tests := []resolveCase{
		// Names as NVML and amd-smi report them.
		{"A100 SXM 80GB", "NVIDIA A100-SXM4-80GB", "nvidia-a100-sxm4-80gb", ExactnessExact},
		{"A100 SXM 40GB", "NVIDIA A100-SXM4-40GB", "nvidia-a100-sxm4-40gb", ExactnessExact},
		{"A100 PCIe 40GB", "NVIDIA A100-PCIE-40GB", "nvidia-a100-pcie-40gb", ExactnessExact},
		{"A100 PCIe 80GB", "NVIDIA A100 80GB PCIe", "nvidia-a100-pcie-80gb", ExactnessExact},
		{"H100 SXM", "NVIDIA H100 80GB HBM3", "nvidia-h100-sxm", ExactnessExact},
		{"H100 PCIe", "NVIDIA H100 PCIe", "nvidia-h100-pcie", ExactnessExact},
		{"H100 NVL", "NVIDIA H100 NVL", "nvidia-h100-nvl", ExactnessExact},
		{"H200 SXM", "NVIDIA H200", "nvidia-h200-sxm", ExactnessExact},
		{"H200 NVL", "NVIDIA H200 NVL", "nvidia-h200-nvl", ExactnessExact},
		{"L40S", "NVIDIA L40S", "nvidia-l40s", ExactnessExact},
		{"L4", "NVIDIA L4", "nvidia-l4", ExactnessExact},
		{"B200", "NVIDIA B200", "nvidia-b200", ExactnessExact},
		{"GB200", "NVIDIA GB200", "nvidia-gb200", ExactnessExact},
		{"MI300X", "AMD Instinct MI300X", "amd-instinct-mi300x", ExactnessExact},
		{"MI325X", "AMD Instinct MI325X", "amd-instinct-mi325x", ExactnessExact},
		{"MI250X", "AMD Instinct MI250X", "amd-instinct-mi250x", ExactnessExact},
		{"MI250", "AMD Instinct MI250", "amd-instinct-mi250", ExactnessExact},
		{"MI210", "AMD Instinct MI210", "amd-instinct-mi210", ExactnessExact},
		// The last generations' data-center boards, as NVML names them.
		{"T4", "Tesla T4", "nvidia-t4", ExactnessExact},
		{"V100 SXM2 32GB", "Tesla V100-SXM2-32GB", "nvidia-v100-sxm2-32gb", ExactnessExact},
		{"V100 SXM2 16GB", "Tesla V100-SXM2-16GB", "nvidia-v100-sxm2-16gb", ExactnessExact},
		{"V100 PCIe 32GB", "Tesla V100-PCIE-32GB", "nvidia-v100-pcie-32gb", ExactnessExact},
		{"V100S PCIe", "Tesla V100S-PCIE-32GB", "nvidia-v100s-pcie-32gb", ExactnessExact},
		{"P100 SXM2", "Tesla P100-SXM2-16GB", "nvidia-p100-sxm2-16gb", ExactnessExact},
		{"P100 PCIe 12GB", "Tesla P100-PCIE-12GB", "nvidia-p100-pcie-12gb", ExactnessExact},
		{"A10 is not an A100", "NVIDIA A10", "nvidia-a10", ExactnessExact},
		{"A30", "NVIDIA A30", "nvidia-a30", ExactnessExact},
		{"A40", "NVIDIA A40", "nvidia-a40", ExactnessExact},
		{"A2", "NVIDIA A2", "nvidia-a2", ExactnessExact},
		// Alibaba's GPU trace names its models in codes.
		{"trace code V100M32", "V100M32", "nvidia-v100-sxm2-32gb", ExactnessExact},
		{"trace code V100M16", "V100M16", "nvidia-v100-sxm2-16gb", ExactnessExact},
		{"trace code T4", "T4", "nvidia-t4", ExactnessExact},
		{"trace code P100", "P100", "nvidia-p100-sxm2-16gb", ExactnessProxy},
		{"trace code A10", "A10", "nvidia-a10", ExactnessExact},
		{"V100 without form factor", "Tesla V100 32GB", "nvidia-v100-sxm2-32gb", ExactnessProxy},
		// Label-safe forms.
		{"label of an NVML name", "NVIDIA-H100-80GB-HBM3", "nvidia-h100-sxm", ExactnessExact},
		{"label without vendor", "H100-PCIe", "nvidia-h100-pcie", ExactnessExact},
		{"label SXM5 form", "H100-SXM5-80GB", "nvidia-h100-sxm", ExactnessExact},
		{"label of an AMD part", "AMD-Instinct-MI300X", "amd-instinct-mi300x", ExactnessExact},
		{"short AMD label", "MI300X", "amd-instinct-mi300x", ExactnessExact},
		{"label of a short name", "l40s", "nvidia-l40s", ExactnessExact},
		// Proxies.
		{"H100 with a memory size picks the nearest", "NVIDIA H100 94GB something", "nvidia-h100-nvl", ExactnessProxy},
		{"bare H100 is the first listed", "NVIDIA H100", "nvidia-h100-sxm", ExactnessProxy},
		{"H800 stands in as H100", "NVIDIA H800", "nvidia-h100-sxm", ExactnessProxy},
		{"H800 PCIe shares the PCIe word", "NVIDIA H800 PCIe", "nvidia-h100-pcie", ExactnessProxy},
		{"MIG instance of an A100", "NVIDIA A100-SXM4-80GB MIG 1g.10gb", "nvidia-a100-sxm4-80gb", ExactnessProxy},
		{"A100 SXM without the 4", "NVIDIA A100-SXM-80GB", "nvidia-a100-sxm4-80gb", ExactnessProxy},
		{"B300 stands in as B200", "NVIDIA B300 SXM6 AC", "nvidia-b200", ExactnessProxy},
		{"GB300 stands in as GB200", "NVIDIA GB300", "nvidia-gb200", ExactnessProxy},
		{"MI300X virtual function", "AMD Instinct MI300X VF", "amd-instinct-mi300x", ExactnessProxy},
		{"MI300A APU", "AMD Instinct MI300A", "amd-instinct-mi300x", ExactnessProxy},
		{"MI308X export part", "AMD Instinct MI308X", "amd-instinct-mi300x", ExactnessProxy},
		{"rocm-smi combined name", "AMD Instinct MI250X/MI250", "amd-instinct-mi250x", ExactnessProxy},
		// Generics.
		{"Kepler is not listed", "Tesla K80", "generic-nvidia-gpu", ExactnessGeneric},
		{"GeForce", "NVIDIA GeForce RTX 4090", "generic-nvidia-gpu", ExactnessGeneric},
		{"Grace Hopper is not listed", "NVIDIA GH200 480GB", "generic-nvidia-gpu", ExactnessGeneric},
		{"Radeon", "AMD Radeon PRO W7900", "generic-amd-instinct", ExactnessGeneric},
		{"PCI vendor string", "Advanced Micro Devices, Inc. [AMD/ATI]", "generic-amd-instinct", ExactnessGeneric},
		{"Intel GPU", "Intel Data Center GPU Max 1550", "generic-gpu", ExactnessGeneric},
		{"empty", "", "generic-gpu", ExactnessGeneric},
	}
	c := Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ex := c.ResolveGPU(tt.raw)
			if got.ID != tt.id || ex != tt.exactness {
				t.Errorf("ResolveGPU(%q) = %s, %s; want %s, %s", tt.raw, got.ID, ex, tt.id, tt.exactness)
			}
		})
	}
}

// The controller resolves every node on every tick; resolution must not
// allocate, whichever way it goes.
func TestResolveDoesNotAllocate(t *testing.T) {
	c := Default()
	for _, raw := range []string{
		"AMD EPYC 9654 96-Core Processor",        // exact
		"Intel(R) Xeon(R) 6979P",                 // proxy
		"Intel(R) Xeon(R) CPU E5-2680 v4",        // generic
		"",                                       // unknown
		strings.Repeat("Xeon+ 9999+ ", 100),      // oversized
		"NVIDIA A100-SXM4-80GB MIG 1g.10gb",      // GPU proxy with memory
		"Advanced Micro Devices, Inc. [AMD/ATI]", // GPU generic
	} {
		if n := testing.AllocsPerRun(100, func() {
			c.ResolveCPU(raw)
			c.ResolveGPU(raw)
		}); n != 0 {
			t.Errorf("resolving %q allocates %.0f times per run", raw, n)
		}
	}
}

func TestCPUByIDAndGPUByID(t *testing.T) {
	c := Default()
	if e, ok := c.CPUByID("amd-epyc-9654"); !ok || e.Name != "AMD EPYC 9654" {
		t.Errorf("CPUByID(amd-epyc-9654) = %+v, %v", e, ok)
	}
	if e, ok := c.GPUByID("generic-gpu"); !ok || !e.Generic {
		t.Errorf("GPUByID(generic-gpu) = %+v, %v", e, ok)
	}
	if _, ok := c.CPUByID("nvidia-h100-sxm"); ok {
		t.Error("CPUByID found a GPU")
	}
	if _, ok := c.GPUByID(""); ok {
		t.Error("GPUByID found an entry for the empty ID")
	}
}

func TestListsAreCopies(t *testing.T) {
	c := Default()
	cpus := c.CPUs()
	cpus[0].TDPWatts = -1
	if c.CPUs()[0].TDPWatts == -1 {
		t.Error("CPUs() exposes the catalog's own slice")
	}
	gpus := c.GPUs()
	gpus[0].TDPWatts = -1
	if c.GPUs()[0].TDPWatts == -1 {
		t.Error("GPUs() exposes the catalog's own slice")
	}
}

var benchInputs = []struct{ name, raw string }{
	{"cpu-exact-cpuinfo", "AMD EPYC 9654 96-Core Processor"},
	{"cpu-exact-frequency", "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz"},
	{"cpu-exact-label", "Intel-Xeon-Platinum-8480plus"},
	{"cpu-proxy", "AMD EPYC 9645 96-Core Processor"},
	{"cpu-generic", "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz"},
	{"gpu-exact-nvml", "NVIDIA H100 80GB HBM3"},
	{"gpu-proxy", "NVIDIA H100 94GB something"},
	{"gpu-generic", "Tesla V100-SXM2-32GB"},
	{"empty", ""},
}

func BenchmarkResolve(b *testing.B) {
	c := Default()
	for _, in := range benchInputs {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			gpu := strings.HasPrefix(in.name, "gpu")
			for b.Loop() {
				if gpu {
					c.ResolveGPU(in.raw)
				} else {
					c.ResolveCPU(in.raw)
				}
			}
		})
	}
}
