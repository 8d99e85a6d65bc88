package catalog

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"text/tabwriter"
)

var update = flag.Bool("update", false, "rewrite testdata/catalog.golden from the embedded catalog")

// TestGoldenCatalog pins every figure of the embedded catalog, density
// included, so that a change to catalog.yaml shows up as a readable diff of
// testdata/catalog.golden. Regenerate with -update and review the diff.
func TestGoldenCatalog(t *testing.T) {
	c := Default()
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CPU\tvendor\tfamily\tcores\tthreads\tbase MHz\tboost MHz\tTDP W\tcap W\tdensity\tidle W")
	for _, e := range c.CPUs() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%g\t%g..%g\t%.3f\t%g\n", e.ID, e.Vendor, orDash(e.Family),
			e.Cores, e.Threads, e.BaseMHz, e.BoostMHz, e.TDPWatts, e.CapMinWatts, e.CapMaxWatts, e.Density, e.IdleWatts)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "GPU\tvendor\tfamily\tmemory GiB\tTDP W\tcap W\tFP16 TFLOPS\tdensity\tidle W")
	for _, e := range c.GPUs() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%g\t%g..%g\t%g\t%.3f\t%g\n", e.ID, e.Vendor, orDash(e.Family),
			e.MemoryGiB, e.TDPWatts, e.CapMinWatts, e.CapMaxWatts, e.FP16TFLOPS, e.Density, e.IdleWatts)
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "catalog.golden")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("catalog differs from %s; if the change is intended, run go test -run Golden -update and review the diff.\ngot:\n%s", path, buf.Bytes())
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// TestFiguresArePlausible guards against typos that validation cannot
// catch: a figure in the wrong unit, a digit too many.
func TestFiguresArePlausible(t *testing.T) {
	c := Default()
	for _, e := range c.CPUs() {
		check := func(ok bool, format string, args ...any) {
			t.Helper()
			if !ok {
				t.Errorf("cpu %s: "+format, append([]any{e.ID}, args...)...)
			}
		}
		check(e.Vendor != "" && e.Name != "" && e.Source != "", "vendor, name and source must be set")
		check(e.Generic == (e.Family == ""), "exactly the generic entries have no family")
		check(e.Cores >= 8 && e.Cores <= 256, "%d cores", e.Cores)
		check(e.Threads == e.Cores || e.Threads == 2*e.Cores, "%d threads for %d cores", e.Threads, e.Cores)
		check(e.BaseMHz >= 1500 && e.BaseMHz <= 4500, "base %d MHz", e.BaseMHz)
		check(e.BoostMHz >= e.BaseMHz && e.BoostMHz <= 5700, "boost %d MHz", e.BoostMHz)
		check(e.TDPWatts >= 100 && e.TDPWatts <= 600, "TDP %g W", e.TDPWatts)
		check(e.CapMinWatts <= e.TDPWatts && e.TDPWatts <= e.CapMaxWatts, "TDP %g W outside cap range %g..%g", e.TDPWatts, e.CapMinWatts, e.CapMaxWatts)
		check(e.CapMinWatts >= e.TDPWatts/2 && e.CapMaxWatts <= 1.25*e.TDPWatts, "cap range %g..%g far from TDP %g", e.CapMinWatts, e.CapMaxWatts, e.TDPWatts)
		check(e.Density > 0 && e.Density < 3, "density %g", e.Density)
		check(math.Abs(e.Density-float64(e.Cores*e.BaseMHz)/(96*2400)) < 0.0006, "density %g is not cores x base / EPYC 9654", e.Density)
		check(e.Generic == (e.IdleWatts == 0), "idle %g W: every model and no generic entry has an idle figure", e.IdleWatts)
		check(e.IdleWatts < e.CapMinWatts, "idle %g W not below the lowest cap %g W", e.IdleWatts, e.CapMinWatts)
	}
	for _, e := range c.GPUs() {
		check := func(ok bool, format string, args ...any) {
			t.Helper()
			if !ok {
				t.Errorf("gpu %s: "+format, append([]any{e.ID}, args...)...)
			}
		}
		check(e.Vendor != "" && e.Name != "" && e.Source != "", "vendor, name and source must be set")
		check(e.Generic == (e.Family == ""), "exactly the generic entries have no family")
		// The floors admit the oldest and smallest boards listed: the P100
		// PCIe's 12 GiB, Pascal's FP16 without tensor cores (18.7 TFLOPS)
		// and the 60 W A2 (18 TFLOPS).
		check(e.MemoryGiB >= 12 && e.MemoryGiB <= 512, "%d GiB", e.MemoryGiB)
		check(e.TDPWatts >= 50 && e.TDPWatts <= 1500, "TDP %g W", e.TDPWatts)
		check(e.CapMaxWatts == e.TDPWatts, "cap maximum %g W is not the TDP %g W", e.CapMaxWatts, e.TDPWatts)
		check(e.CapMinWatts >= e.TDPWatts/4 && e.CapMinWatts <= e.TDPWatts*0.6, "cap minimum %g W for TDP %g W", e.CapMinWatts, e.TDPWatts)
		check(e.FP16TFLOPS >= 15 && e.FP16TFLOPS <= 5000, "%g TFLOPS", e.FP16TFLOPS)
		check(math.Abs(e.Density-e.FP16TFLOPS/989.5) < 0.0006, "density %g is not FP16 TFLOPS / H100 SXM", e.Density)
		check(e.Generic == (e.IdleWatts == 0), "idle %g W: every model and no generic entry has an idle figure", e.IdleWatts)
		check(e.IdleWatts < e.CapMinWatts, "idle %g W not below the lowest cap %g W", e.IdleWatts, e.CapMinWatts)
	}
	if e, _ := c.CPUByID("amd-epyc-9654"); e.Density != 1 {
		t.Errorf("the CPU reference part has density %g, want 1", e.Density)
	}
	if e, _ := c.GPUByID("nvidia-h100-sxm"); e.Density != 1 {
		t.Errorf("the GPU reference part has density %g, want 1", e.Density)
	}
}

// TestCatalogCoversTheFleet lists the parts Joulie's users run, so that
// none is dropped from catalog.yaml by accident.
func TestCatalogCoversTheFleet(t *testing.T) {
	c := Default()
	cpus := []string{
		"amd-epyc-9654", "amd-epyc-9554", "amd-epyc-9454", "amd-epyc-9354", "amd-epyc-9254", "amd-epyc-9124",
		"amd-epyc-9684x", "amd-epyc-9754",
		"amd-epyc-9965", "amd-epyc-9755", "amd-epyc-9655", "amd-epyc-9555", "amd-epyc-9455", "amd-epyc-9355", "amd-epyc-9135",
		"amd-epyc-7763", "amd-epyc-7713", "amd-epyc-7543", "amd-epyc-7443", "amd-epyc-7313",
		"intel-xeon-8480plus", "intel-xeon-8470", "intel-xeon-8460yplus", "intel-xeon-6448y", "intel-xeon-6438yplus",
		"intel-xeon-8592plus", "intel-xeon-8580", "intel-xeon-6548yplus",
		"intel-xeon-6980p", "intel-xeon-6972p", "intel-xeon-6960p", "intel-xeon-6787p",
		"intel-xeon-6780e", "intel-xeon-8380",
		"generic-amd-epyc", "generic-intel-xeon", "generic-x86",
	}
	for _, id := range cpus {
		if _, ok := c.CPUByID(id); !ok {
			t.Errorf("CPU %s is missing", id)
		}
	}
	gpus := []string{
		"nvidia-a100-sxm4-40gb", "nvidia-a100-sxm4-80gb", "nvidia-a100-pcie-40gb", "nvidia-a100-pcie-80gb",
		"nvidia-h100-sxm", "nvidia-h100-pcie", "nvidia-h100-nvl", "nvidia-h200-sxm", "nvidia-h200-nvl",
		"nvidia-l40s", "nvidia-l4", "nvidia-b200", "nvidia-gb200",
		"amd-instinct-mi210", "amd-instinct-mi250x", "amd-instinct-mi250", "amd-instinct-mi300x", "amd-instinct-mi325x",
		"generic-nvidia-gpu", "generic-amd-instinct", "generic-gpu",
	}
	for _, id := range gpus {
		if _, ok := c.GPUByID(id); !ok {
			t.Errorf("GPU %s is missing", id)
		}
	}
}

// The digital twin's reference node (seed digital-twin.txt) is a 2-socket
// EPYC 9654 with 8 H100 NVL at 4000 W; the catalog should agree with it.
func TestTwinReferenceNode(t *testing.T) {
	c := Default()
	cpu, _ := c.ResolveCPU("AMD EPYC 9654 96-Core Processor")
	gpu, _ := c.ResolveGPU("NVIDIA H100 NVL")
	if total := 2*cpu.TDPWatts + 8*gpu.TDPWatts; math.Abs(total-4000) > 200 {
		t.Errorf("reference node draws %g W by the catalog, the twin assumes about 4000 W", total)
	}
}
