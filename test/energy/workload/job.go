package workload

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/catalog"
	"joulie.io/joulie/test/energy/physics"
)

// Class is a job's workload class, the value of its pod's
// joulie.io/workload-class annotation.
type Class string

const (
	// Performance jobs must not be slowed: Joulie keeps them off eco nodes.
	Performance Class = v1alpha1.WorkloadClassPerformance
	// Standard jobs may run anywhere, capped or not.
	Standard Class = v1alpha1.WorkloadClassStandard
)

// Job is one pod to replay: when it arrives, what it asks for, and how long
// it runs at full speed.
type Job struct {
	// ID is unique within a job list: the pod's name for a trace,
	// "job-NNNNNN" in arrival order for a generated list.
	ID string
	// Arrival is when the pod is created, from the start of the list.
	Arrival time.Duration
	Class   Class
	// Boundness sets how much a power cap slows the job (package physics).
	Boundness physics.Boundness
	// CPUMilli and MemoryMiB are the pod's requests; GPUs the whole GPUs
	// it asks for.
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int
	// Work is the job's runtime at full speed.
	Work time.Duration
	// Truncated says the job's real runtime is longer than Work: a trace
	// pod still running when the trace ended, or a generated lifetime
	// beyond Config.Lifetime.Max.
	Truncated bool
	// Source is "gpu-stream" or "cpu-stream" for a generated job (see
	// Config), "trace" for a replayed pod.
	Source string
	// GPUModels are the GPU models the pod accepts (the trace's gpu_spec,
	// as written there); empty means any.
	GPUModels []string
	// SharedGPUMilli is the trace's gpu_milli when the pod asked for part
	// of one GPU (1..999 thousandths); it was given a whole GPU. 0 when the
	// pod asked for whole GPUs or none.
	SharedGPUMilli int
}

// Node is one node of the cluster a job list runs on.
type Node struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	// CPUModel is the CPU's model name, empty when the source does not
	// give it (the Alibaba node list does not).
	CPUModel string
	GPUs     int
	// GPUModel is the GPU model as the source wrote it; GPU is the catalog
	// entry it resolves to (zero when GPUs is 0).
	GPUModel string
	GPU      catalog.GPU
	// CPUTDPWatts is the sum over the node's CPU packages of the
	// catalog's TDP for CPUModel; GPUMaxWatts the catalog's maximum board
	// power of one of its GPUs. The simulator scales its power curves by
	// them against the standard nodes'. 0 means unknown: take the
	// standard node's figure. ReadNodes fills both, with the standard
	// figures and a warning where the catalog does not know the model.
	CPUTDPWatts float64
	GPUMaxWatts float64
}

// The standard cluster's node shapes: the hardware the default physics
// models. CPU counts are the catalog's threads (Kubernetes counts a
// hyperthread as a CPU); memory is a common configuration for each.
const (
	standardCPUModel     = "AMD EPYC 9654"
	standardHostCPUModel = "Intel Xeon Platinum 8480+"
	standardGPUModel     = "NVIDIA H100 80GB HBM3"
	standardGPUsPerNode  = 8
	standardSockets      = 2
	// 24 × 64 GiB DIMMs on a CPU node, 32 × 64 GiB on an HGX host.
	standardCPUNodeMemoryMiB = 1536 * 1024
	standardGPUNodeMemoryMiB = 2048 * 1024
)

// StandardCluster returns cpuNodes CPU nodes (2 × AMD EPYC 9654, 384 CPUs,
// 1.5 TiB) named cpu-NNNN and gpuNodes GPU nodes (2 × Xeon Platinum 8480+,
// 224 CPUs, 2 TiB, 8 × H100 SXM) named gpu-NNNN: the benchmark's cluster
// (2,000 and 500 nodes) or a smaller one of the same shape.
func StandardCluster(cpuNodes, gpuNodes int) []Node {
	cat := catalog.Default()
	epyc, _ := cat.ResolveCPU(standardCPUModel)
	xeon, _ := cat.ResolveCPU(standardHostCPUModel)
	h100, _ := cat.ResolveGPU(standardGPUModel)
	nodes := make([]Node, 0, cpuNodes+gpuNodes)
	for i := range cpuNodes {
		nodes = append(nodes, Node{
			Name:        fmt.Sprintf("cpu-%04d", i),
			CPUMilli:    standardSockets * int64(epyc.Threads) * 1000,
			MemoryMiB:   standardCPUNodeMemoryMiB,
			CPUModel:    standardCPUModel,
			CPUTDPWatts: standardSockets * epyc.TDPWatts,
		})
	}
	for i := range gpuNodes {
		nodes = append(nodes, Node{
			Name:        fmt.Sprintf("gpu-%04d", i),
			CPUMilli:    standardSockets * int64(xeon.Threads) * 1000,
			MemoryMiB:   standardGPUNodeMemoryMiB,
			CPUModel:    standardHostCPUModel,
			CPUTDPWatts: standardSockets * xeon.TDPWatts,
			GPUs:        standardGPUsPerNode,
			GPUModel:    standardGPUModel,
			GPU:         h100,
			GPUMaxWatts: h100.TDPWatts,
		})
	}
	return nodes
}

// SixFamilies returns a small cluster of six hardware families, perFamily
// nodes each: two CPU-only (2 × EPYC 9654 as the standard CPU node, 2 ×
// Xeon Platinum 8480+) and four GPU (8 × H100 SXM as the standard GPU
// node, 8 × A100 SXM4 80GB, 4 × L40S and 4 × T4, the last two on 2 ×
// Xeon Gold 6448Y). It is the sparse, many-family cluster that issue 39
// asks the warm reserve to be checked on: each family's performance
// demand is small, so a reserve per family is a large share of the
// cluster. Names are <family>-NN.
func SixFamilies(perFamily int) []Node {
	cat := catalog.Default()
	type shape struct {
		prefix, cpu string
		sockets     int
		memoryMiB   int64
		gpus        int
		gpu         string
	}
	shapes := []shape{
		{"epyc", standardCPUModel, standardSockets, standardCPUNodeMemoryMiB, 0, ""},
		{"xeon", standardHostCPUModel, standardSockets, 1024 * 1024, 0, ""},
		{"h100", standardHostCPUModel, standardSockets, standardGPUNodeMemoryMiB, standardGPUsPerNode, standardGPUModel},
		{"a100", standardHostCPUModel, standardSockets, standardGPUNodeMemoryMiB, 8, "NVIDIA A100-SXM4-80GB"},
		{"l40s", "Intel Xeon Gold 6448Y", 2, 1024 * 1024, 4, "NVIDIA L40S"},
		{"t4", "Intel Xeon Gold 6448Y", 2, 512 * 1024, 4, "Tesla T4"},
	}
	nodes := make([]Node, 0, len(shapes)*perFamily)
	for _, sh := range shapes {
		c, _ := cat.ResolveCPU(sh.cpu)
		for i := range perFamily {
			n := Node{
				Name:        fmt.Sprintf("%s-%02d", sh.prefix, i),
				CPUMilli:    int64(sh.sockets) * int64(c.Threads) * 1000,
				MemoryMiB:   sh.memoryMiB,
				CPUModel:    sh.cpu,
				CPUTDPWatts: float64(sh.sockets) * c.TDPWatts,
			}
			if sh.gpus > 0 {
				g, _ := cat.ResolveGPU(sh.gpu)
				n.GPUs, n.GPUModel, n.GPU, n.GPUMaxWatts = sh.gpus, sh.gpu, g, g.TDPWatts
			}
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// hashVersion starts the canonical form; change it when the form changes,
// so that hashes of different forms never match.
const hashVersion = "joulie-energy-workload-v1\n"

// Hash is the SHA-256, in hex, of the canonical form of a job list: the
// jobs ordered by arrival, then ID, one line each with every field. It
// does not depend on the order of jobs, and changes with any field of
// any job, so two results with the same hash ran the same work.
func Hash(jobs []Job) string {
	sorted := slices.Clone(jobs)
	slices.SortFunc(sorted, func(a, b Job) int {
		return cmp.Or(cmp.Compare(a.Arrival, b.Arrival), strings.Compare(a.ID, b.ID))
	})
	h := sha256.New()
	h.Write([]byte(hashVersion))
	var line []byte
	for i := range sorted {
		j := &sorted[i]
		line = line[:0]
		line = strconv.AppendQuote(line, j.ID)
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(j.Arrival), 10)
		line = append(line, ' ')
		line = strconv.AppendQuote(line, string(j.Class))
		line = append(line, ' ')
		line = strconv.AppendQuote(line, string(j.Boundness))
		for _, n := range []int64{j.CPUMilli, j.MemoryMiB, int64(j.GPUs), int64(j.Work)} {
			line = append(line, ' ')
			line = strconv.AppendInt(line, n, 10)
		}
		line = append(line, ' ')
		line = strconv.AppendBool(line, j.Truncated)
		line = append(line, ' ')
		line = strconv.AppendQuote(line, j.Source)
		line = append(line, ' ')
		line = strconv.AppendQuote(line, strings.Join(j.GPUModels, "|"))
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(j.SharedGPUMilli), 10)
		line = append(line, '\n')
		h.Write(line)
	}
	return hex.EncodeToString(h.Sum(nil))
}
