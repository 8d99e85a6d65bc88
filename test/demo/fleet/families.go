package fleet

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"joulie.io/joulie/test/energy/physics"
)

// Family is one kind of simulated host: what the agent discovers on it
// (CPU model and packages, GPUs and their limit ranges), what the node
// offers the scheduler, and how it draws power.
type Family struct {
	// Name is short and used in node names: epyc, h100, l40s.
	Name string
	// Description is for people: "2 x EPYC 9654".
	Description string

	// CPUVendor and CPUModel are written into /proc/cpuinfo of a daemon
	// node's fixture tree as Linux prints them; the agent resolves the
	// model in the hardware catalog.
	CPUVendor, CPUModel string
	// CPUCatalog is the CPU's hardware-catalog id. Pool nodes carry it
	// as their joulie.io/hw.cpu-model label, where pool mode reads the
	// model: the HTTP contract's telemetry has none.
	CPUCatalog               string
	Sockets, CoresPerSocket  int
	PackageMinW, PackageMaxW float64 // the range a package limit accepts
	MemoryGiB                int
	GPUs                     int
	GPUName                  string // as NVML names the board
	GPUResource              corev1.ResourceName
	GPUMinW, GPUMaxW         float64 // the range a GPU limit accepts
	// PoolOnly keeps the family behind the pool agent: no daemon node
	// is made of it.
	PoolOnly bool

	// Power: a CPU-only family draws Host at its CPU load; a GPU family
	// draws Host plus, per GPU, GPUIdleW + GPUDynamicW × utilization.
	Host                  physics.Curve
	GPUIdleW, GPUDynamicW float64
}

// LogicalCPUs is the node's CPU count: two threads per core.
func (f *Family) LogicalCPUs() int { return f.Sockets * f.CoresPerSocket * 2 }

// gpuNode is the family's GPU figures in the physics' own type, so its
// formulas (GPUWatts, GPUMaxWatts) are the benchmark's.
func (f *Family) gpuNode() physics.GPUNode {
	return physics.GPUNode{Host: f.Host, GPUIdleWatts: f.GPUIdleW, GPUDynamicWatts: f.GPUDynamicW}
}

// Allocatable is what the node offers the scheduler.
func (f *Family) Allocatable() corev1.ResourceList {
	r := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(f.LogicalCPUs()), resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", f.MemoryGiB)),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	if f.GPUs > 0 {
		r[f.GPUResource] = *resource.NewQuantity(int64(f.GPUs), resource.DecimalSI)
	}
	return r
}

// ResourceNVIDIAGPU is the extended resource NVIDIA's device plugin
// advertises.
const ResourceNVIDIAGPU corev1.ResourceName = "nvidia.com/gpu"

// Families returns the simulated hardware, its power taken from model:
//
//   - epyc: CPU-only 2 × AMD EPYC 9654, the physics' CPU node (SPECpower
//     curve). Package limits 180..360 W: the catalog's TDP as the maximum
//     and half of it, the physics' floor, as the minimum. A real EPYC
//     exposes RAPL read-only and is capped through amd-smi's socket
//     limit, whose cTDP floor (320 W in the catalog) would hide most of an
//     eco cap; the demo keeps the limit writable over the range the
//     physics models, so CPU-only nodes show capping too. Pool only: the
//     agent's host path for EPYC is the DVFS or amd-smi fallback, not
//     what the daemon nodes are here to exercise.
//   - h100: 2 × Xeon Platinum 8480+ with 8 × H100 SXM, the physics' GPU
//     node (its host curve and 70 W idle + 630 W dynamic per GPU).
//     Package limits 175..350 W and GPU limits 200..700 W, the catalog's.
//   - l40s: 2 × Xeon Platinum 8480+ with 4 × L40S. The physics file has
//     no L40S, so its GPU figures are the H100's scaled to the L40S's
//     350 W board power (NVIDIA L40S datasheet; the catalog's
//     nvidia-l40s): the same 10% idle share, 35 W idle + 315 W dynamic.
//     GPU limits 175..350 W, the catalog's.
func Families(model *physics.Model) []*Family {
	g := model.GPUNode
	l40sScale := 350 / g.GPUMaxWatts()
	xeon := func(f Family) *Family {
		f.CPUVendor, f.CPUModel, f.CPUCatalog = "GenuineIntel", "Intel(R) Xeon(R) Platinum 8480+", "intel-xeon-8480plus"
		f.Sockets, f.CoresPerSocket = 2, 56
		f.PackageMinW, f.PackageMaxW = 175, 350
		f.MemoryGiB = 2048
		f.GPUResource = ResourceNVIDIAGPU
		f.Host = g.Host
		return &f
	}
	return []*Family{
		{
			Name: "epyc", Description: "2 x AMD EPYC 9654",
			CPUVendor: "AuthenticAMD", CPUModel: "AMD EPYC 9654 96-Core Processor", CPUCatalog: "amd-epyc-9654",
			Sockets: 2, CoresPerSocket: 96, PackageMinW: 180, PackageMaxW: 360,
			MemoryGiB: 1536, PoolOnly: true, Host: model.CPUNode,
		},
		xeon(Family{Name: "h100", Description: "2 x Xeon Platinum 8480+, 8 x H100 SXM",
			GPUs: 8, GPUName: "NVIDIA H100 80GB HBM3", GPUMinW: 200, GPUMaxW: 700,
			GPUIdleW: g.GPUIdleWatts, GPUDynamicW: g.GPUDynamicWatts}),
		xeon(Family{Name: "l40s", Description: "2 x Xeon Platinum 8480+, 4 x L40S",
			GPUs: 4, GPUName: "NVIDIA L40S", GPUMinW: 175, GPUMaxW: 350,
			GPUIdleW: g.GPUIdleWatts * l40sScale, GPUDynamicW: g.GPUDynamicWatts * l40sScale}),
	}
}
