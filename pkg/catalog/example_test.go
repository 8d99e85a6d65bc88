package catalog_test

import (
	"fmt"

	"joulie.io/joulie/pkg/catalog"
)

func ExampleCatalog_ResolveCPU() {
	c := catalog.Default()
	for _, raw := range []string{
		"AMD EPYC 9654 96-Core Processor", // /proc/cpuinfo
		"Intel-Xeon-Platinum-8480plus",    // joulie.io/hw.cpu-model label
		"AMD EPYC 9645 96-Core Processor", // a part the catalog does not list
		"AMD Ryzen 9 7950X 16-Core Processor",
	} {
		cpu, exactness := c.ResolveCPU(raw)
		fmt.Printf("%s: %s (%s), TDP %g W, density %.3f\n", raw, cpu.ID, exactness, cpu.TDPWatts, cpu.Density)
	}
	// Output:
	// AMD EPYC 9654 96-Core Processor: amd-epyc-9654 (exact), TDP 360 W, density 1.000
	// Intel-Xeon-Platinum-8480plus: intel-xeon-8480plus (exact), TDP 350 W, density 0.486
	// AMD EPYC 9645 96-Core Processor: amd-epyc-9655 (proxy), TDP 400 W, density 1.083
	// AMD Ryzen 9 7950X 16-Core Processor: generic-x86 (generic), TDP 150 W, density 0.139
}

func ExampleCatalog_ResolveGPU() {
	c := catalog.Default()
	gpu, exactness := c.ResolveGPU("NVIDIA H100 80GB HBM3") // NVML device name
	fmt.Printf("%s (%s): cap %g..%g W, %d GiB\n", gpu.ID, exactness, gpu.CapMinWatts, gpu.CapMaxWatts, gpu.MemoryGiB)

	gpu, exactness = c.ResolveGPU("")
	fmt.Printf("%s (%s)\n", gpu.ID, exactness)
	// Output:
	// nvidia-h100-sxm (exact): cap 200..700 W, 80 GiB
	// generic-gpu (generic)
}
