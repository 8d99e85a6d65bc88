// Package hwview builds the normalized view of a node's hardware that
// planning works from: from the agent's NodeHardware when it exists,
// otherwise from the node's joulie.io/hw.* labels and its allocatable
// GPUs, resolved against the hardware catalog. The view carries what
// planning and the twin need: the family a node belongs to, its compute
// density, its CPU and GPU power ranges, and what the utilization model of
// its draw needs (cores and idle power). Build is a pure function of the
// objects it is given; nothing here reads the API, the clock or the
// network.
package hwview

import (
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/catalog"
)

// Source says where a view came from.
type Source string

const (
	SourceNodeHardware Source = "NodeHardware"
	SourceLabels       Source = "labels"
)

// Reference node of the density score, the digital-twin seed's reference
// node: two EPYC 9654 packages and eight H100 SXM, each of which is 1.0 in
// the catalog's density.
const (
	referenceSockets = 2
	referenceGPUs    = 8
)

// View is one node's hardware as planning sees it.
type View struct {
	Source Source
	// CPUModel and GPUModel are catalog IDs ("" when there is no GPU).
	CPUModel, GPUModel string
	// GPUProduct is the GPU's product name as reported (for model caps).
	GPUProduct string
	Sockets    int
	GPUCount   int
	// CPUMaxWattsPerSocket and GPUMaxWatts are the cap ranges' maxima:
	// the host's own when it reports them, else the catalog's.
	CPUMaxWattsPerSocket float64
	GPUMaxWatts          float64
	// CPUTotalCores counts the physical cores of all sockets: the host's
	// own count when it reports one, else the catalog's per socket.
	CPUTotalCores int
	// CPUIdleWattsPerSocket and GPUIdleWatts are the catalog's idle figures
	// for the models; 0 (unknown) when a model resolved only to a generic
	// stand-in.
	CPUIdleWattsPerSocket float64
	GPUIdleWatts          float64
	// Family is the hardware family of the family floor: the GPU model for
	// GPU nodes, the CPU model for CPU-only nodes.
	Family string
	// DensityScore is the normalized compute density in 0..100: half for
	// CPU, half for GPU, each relative to the reference node.
	DensityScore float64
}

// Build returns node's view; hw may be nil.
func Build(node *corev1.Node, hw *joulie.NodeHardware, cat *catalog.Catalog) View {
	var v View
	if hw != nil && (hw.Status.CPU.CatalogModel != "" || hw.Status.CPU.Model != "") {
		v = fromHardware(&hw.Status, cat)
	} else {
		v = fromLabels(node, cat)
	}
	v.Family = "cpu:" + v.CPUModel
	if v.GPUCount > 0 && v.GPUModel != "" {
		v.Family = "gpu:" + v.GPUModel
	}
	return v
}

func fromHardware(st *joulie.NodeHardwareStatus, cat *catalog.Catalog) View {
	v := View{Source: SourceNodeHardware, Sockets: int(st.CPU.Sockets)}
	cpuRaw := st.CPU.CatalogModel
	if cpuRaw == "" {
		cpuRaw = st.CPU.Model
	}
	cpu, _ := cat.ResolveCPU(cpuRaw)
	v.CPUModel = cpu.ID
	v.CPUMaxWattsPerSocket = cpu.CapMaxWatts
	if r := st.CPU.CapRange; r != nil && r.MaxWatts > 0 {
		v.CPUMaxWattsPerSocket = r.MaxWatts
	}
	if v.Sockets <= 0 {
		v.Sockets = 1
	}
	v.CPUIdleWattsPerSocket = cpu.IdleWatts
	switch {
	case st.CPU.TotalCores > 0:
		v.CPUTotalCores = int(st.CPU.TotalCores)
	case st.CPU.CoresPerSocket > 0:
		v.CPUTotalCores = v.Sockets * int(st.CPU.CoresPerSocket)
	default:
		v.CPUTotalCores = v.Sockets * cpu.Cores
	}
	var gpuDensity float64
	if g := st.GPU; g != nil && g.Count > 0 {
		raw := g.CatalogModel
		if raw == "" {
			raw = g.Model
		}
		gpu, _ := cat.ResolveGPU(raw)
		v.GPUModel, v.GPUProduct, v.GPUCount = gpu.ID, g.Model, int(g.Count)
		v.GPUMaxWatts, v.GPUIdleWatts = gpu.CapMaxWatts, gpu.IdleWatts
		if g.CapRange != nil && g.CapRange.MaxWatts > 0 {
			v.GPUMaxWatts = g.CapRange.MaxWatts
		}
		gpuDensity = gpu.Density
	}
	v.DensityScore = score(v.Sockets, cpu.Density, v.GPUCount, gpuDensity)
	return v
}

func fromLabels(node *corev1.Node, cat *catalog.Catalog) View {
	v := View{Source: SourceLabels}
	cpu, _ := cat.ResolveCPU(node.Labels[joulie.LabelHWCPUModel])
	v.CPUModel, v.CPUMaxWattsPerSocket, v.CPUIdleWattsPerSocket = cpu.ID, cpu.CapMaxWatts, cpu.IdleWatts
	// Sockets from the node's logical CPUs over the model's threads per
	// package; one when either is unknown.
	v.Sockets = 1
	if q, ok := node.Status.Capacity[corev1.ResourceCPU]; ok && cpu.Threads > 0 {
		if s := int(math.Round(float64(q.Value()) / float64(cpu.Threads))); s > 1 {
			v.Sockets = s
		}
	}
	v.CPUTotalCores = v.Sockets * cpu.Cores
	count := 0
	if c, err := strconv.Atoi(node.Labels[joulie.LabelHWGPUCount]); err == nil && c > 0 {
		count = c
	} else {
		for _, r := range []corev1.ResourceName{joulie.ResourceNVIDIAGPU, joulie.ResourceAMDGPU} {
			if q, ok := node.Status.Allocatable[r]; ok && q.Value() > 0 {
				count = int(q.Value())
				break
			}
		}
	}
	var gpuDensity float64
	if count > 0 {
		raw := node.Labels[joulie.LabelHWGPUModel]
		if raw == "" {
			// A GPU count without a model: the vendor's resource name is all
			// there is.
			if _, ok := node.Status.Allocatable[joulie.ResourceAMDGPU]; ok {
				raw = "AMD"
			} else {
				raw = "NVIDIA"
			}
		}
		gpu, _ := cat.ResolveGPU(raw)
		v.GPUModel, v.GPUProduct, v.GPUCount, v.GPUMaxWatts = gpu.ID, node.Labels[joulie.LabelHWGPUModel], count, gpu.CapMaxWatts
		v.GPUIdleWatts = gpu.IdleWatts
		gpuDensity = gpu.Density
	}
	v.DensityScore = score(v.Sockets, cpu.Density, v.GPUCount, gpuDensity)
	return v
}

// score is 50 × CPU compute / reference CPU compute + 50 × GPU compute /
// reference GPU compute, clamped to 0..100, rounded to 0.1.
func score(sockets int, cpuDensity float64, gpus int, gpuDensity float64) float64 {
	s := 50*float64(sockets)*cpuDensity/referenceSockets + 50*float64(gpus)*gpuDensity/referenceGPUs
	return math.Round(math.Min(100, math.Max(0, s))*10) / 10
}
