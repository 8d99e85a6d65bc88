package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"joulie.io/joulie/pkg/catalog"
	"joulie.io/joulie/test/energy/physics"
)

func TestHashIgnoresOrderAndSeesEveryField(t *testing.T) {
	base := []Job{
		{ID: "a", Arrival: time.Second, Class: Standard, Boundness: physics.GPUCompute, CPUMilli: 1000, MemoryMiB: 1024,
			GPUs: 1, Work: time.Minute, Source: "trace", GPUModels: []string{"T4"}, SharedGPUMilli: 500},
		{ID: "b", Arrival: time.Second, Class: Performance, Boundness: physics.CPULow, CPUMilli: 2000, MemoryMiB: 2048,
			Work: time.Hour, Truncated: true, Source: "trace"},
		{ID: "c", Arrival: time.Minute, Class: Standard, Boundness: physics.CPUMemory, CPUMilli: 500, MemoryMiB: 512,
			Work: time.Second, Source: "cpu-stream"},
	}
	h := Hash(base)
	if len(h) != 64 {
		t.Fatalf("hash %q is not 64 hex digits", h)
	}
	shuffled := slices.Clone(base)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	slices.Reverse(shuffled)
	if Hash(shuffled) != h {
		t.Error("reordering the jobs changed the hash")
	}
	for name, change := range map[string]func(*Job){
		"ID":             func(j *Job) { j.ID = "a2" },
		"Arrival":        func(j *Job) { j.Arrival++ },
		"Class":          func(j *Job) { j.Class = Performance },
		"Boundness":      func(j *Job) { j.Boundness = physics.GPUMixed },
		"CPUMilli":       func(j *Job) { j.CPUMilli++ },
		"MemoryMiB":      func(j *Job) { j.MemoryMiB++ },
		"GPUs":           func(j *Job) { j.GPUs++ },
		"Work":           func(j *Job) { j.Work++ },
		"Truncated":      func(j *Job) { j.Truncated = true },
		"Source":         func(j *Job) { j.Source = "gpu-stream" },
		"GPUModels":      func(j *Job) { j.GPUModels = []string{"T4", "A10"} },
		"SharedGPUMilli": func(j *Job) { j.SharedGPUMilli = 0 },
	} {
		changed := slices.Clone(base)
		change(&changed[0])
		if Hash(changed) == h {
			t.Errorf("changing %s left the hash as it was", name)
		}
	}
	if Hash(base[:2]) == h || Hash(nil) == h {
		t.Error("dropping jobs left the hash as it was")
	}
}

// The canonical form, written out: a change to it must change hashVersion
// too, so that lists hashed under two forms never match.
func TestHashIsTheSHA256OfTheCanonicalForm(t *testing.T) {
	jobs := []Job{
		{ID: "y", Arrival: 2 * time.Second, Class: Performance, Boundness: physics.GPUMixed, CPUMilli: 8000, MemoryMiB: 4096,
			GPUs: 2, Work: time.Minute, Truncated: true, Source: "trace", GPUModels: []string{"V100M16", "V100M32"}, SharedGPUMilli: 250},
		{ID: "x", Class: Standard, Boundness: physics.CPULow, CPUMilli: 1, Work: time.Second, Source: "cpu-stream"},
	}
	canonical := "joulie-energy-workload-v1\n" +
		`"x" 0 "standard" "cpu-low" 1 0 0 1000000000 false "cpu-stream" "" 0` + "\n" +
		`"y" 2000000000 "performance" "gpu-mixed" 8000 4096 2 60000000000 true "trace" "V100M16|V100M32" 250` + "\n"
	sum := sha256.Sum256([]byte(canonical))
	if got, want := Hash(jobs), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("Hash = %s, want the SHA-256 of\n%s= %s", got, canonical, want)
	}
}

func TestStandardClusterHasTheBenchmarkShapes(t *testing.T) {
	nodes := StandardCluster(2, 1)
	if len(nodes) != 3 {
		t.Fatalf("%d nodes", len(nodes))
	}
	cpu, gpu := nodes[0], nodes[2]
	// 2 × 96 cores × 2 threads; 2 × 56 × 2; 8 H100 SXM per GPU node.
	if cpu.CPUMilli != 384000 || cpu.GPUs != 0 || cpu.Name != "cpu-0000" || cpu.MemoryMiB != 1536*1024 {
		t.Errorf("CPU node %+v", cpu)
	}
	if gpu.CPUMilli != 224000 || gpu.GPUs != 8 || gpu.GPU.ID != "nvidia-h100-sxm" || gpu.Name != "gpu-0000" || gpu.MemoryMiB != 2048*1024 {
		t.Errorf("GPU node %+v", gpu)
	}
	// The catalog's TDPs: 2 × 360 W, 2 × 350 W, and 700 W an H100 SXM.
	if cpu.CPUTDPWatts != 720 || cpu.GPUMaxWatts != 0 || gpu.CPUTDPWatts != 700 || gpu.GPUMaxWatts != 700 {
		t.Errorf("power figures: CPU node %v W of CPUs, %v W a GPU; GPU node %v W, %v W", cpu.CPUTDPWatts, cpu.GPUMaxWatts, gpu.CPUTDPWatts, gpu.GPUMaxWatts)
	}
}

func TestSixFamiliesResolvesEachFamilyInTheCatalog(t *testing.T) {
	nodes := SixFamilies(2)
	if len(nodes) != 12 {
		t.Fatalf("%d nodes, want 12", len(nodes))
	}
	cat := catalog.Default()
	cpus, gpus := map[string]bool{}, map[string]bool{}
	for _, n := range nodes {
		c, ex := cat.ResolveCPU(n.CPUModel)
		if ex == catalog.ExactnessGeneric || n.CPUTDPWatts != 2*c.TDPWatts || n.CPUMilli != 2*int64(c.Threads)*1000 {
			t.Errorf("%s: CPU %q resolved %s (%v), %v W, %d mCPU", n.Name, n.CPUModel, c.ID, ex, n.CPUTDPWatts, n.CPUMilli)
		}
		if n.GPUs == 0 {
			cpus[c.ID] = true
			continue
		}
		// The model's own datasheet power, not the H100's fallback.
		if _, gex := cat.ResolveGPU(n.GPUModel); gex == catalog.ExactnessGeneric || n.GPUMaxWatts != n.GPU.TDPWatts || n.GPUMaxWatts <= 0 {
			t.Errorf("%s: GPU %q resolved %q at %v W", n.Name, n.GPUModel, n.GPU.ID, n.GPUMaxWatts)
		}
		gpus[n.GPU.ID] = true
	}
	if len(cpus) != 2 || len(gpus) != 4 {
		t.Errorf("CPU-only families %v and GPU families %v, want 2 and 4", cpus, gpus)
	}
	if t4 := nodes[len(nodes)-1]; t4.GPUMaxWatts != 70 || t4.GPUs != 4 {
		t.Errorf("last node %+v, want a T4 node (4 × 70 W)", t4)
	}
}
