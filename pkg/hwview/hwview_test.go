package hwview

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/catalog"
)

func node(labels map[string]string, cpus int64, alloc corev1.ResourceList) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpus, resource.DecimalSI)}
	n.Status.Allocatable = alloc
	return n
}

func TestReferenceNodeScoresHundred(t *testing.T) {
	hw := &joulie.NodeHardware{Status: joulie.NodeHardwareStatus{
		CPU: joulie.CPUHardware{CatalogModel: "amd-epyc-9654", Sockets: 2, CapRange: &joulie.PowerRange{MaxWatts: 400}},
		GPU: &joulie.GPUHardware{CatalogModel: "nvidia-h100-sxm", Model: "NVIDIA H100 80GB HBM3", Count: 8},
	}}
	v := Build(node(nil, 0, nil), hw, catalog.Default())
	if v.DensityScore != 100 || v.Source != SourceNodeHardware {
		t.Errorf("reference node: %+v, want density 100 from NodeHardware", v)
	}
	if v.Family != "gpu:nvidia-h100-sxm" || v.CPUMaxWattsPerSocket != 400 || v.GPUMaxWatts <= 0 || v.GPUProduct != "NVIDIA H100 80GB HBM3" {
		t.Errorf("view %+v", v)
	}
}

func TestLabelsAndAllocatableWhenNoNodeHardware(t *testing.T) {
	cat := catalog.Default()
	// CPU-only: the family is the CPU model; sockets from 384 logical CPUs
	// over the 9654's 192 threads.
	v := Build(node(map[string]string{joulie.LabelHWCPUModel: "amd-epyc-9654"}, 384, nil), nil, cat)
	if v.Source != SourceLabels || v.Sockets != 2 || v.GPUCount != 0 || v.Family != "cpu:amd-epyc-9654" || v.DensityScore != 50 {
		t.Errorf("CPU-only from labels: %+v", v)
	}
	// GPU count from allocatable nvidia.com/gpu when the label is absent.
	v = Build(node(map[string]string{joulie.LabelHWCPUModel: "amd-epyc-9654", joulie.LabelHWGPUModel: "nvidia-h100-sxm"}, 384,
		corev1.ResourceList{joulie.ResourceNVIDIAGPU: resource.MustParse("4")}), nil, cat)
	if v.GPUCount != 4 || v.GPUModel != "nvidia-h100-sxm" || v.Family != "gpu:nvidia-h100-sxm" || v.DensityScore != 75 {
		t.Errorf("GPU node from labels and allocatable: %+v", v)
	}
	// The count label wins over allocatable.
	v = Build(node(map[string]string{joulie.LabelHWGPUModel: "nvidia-h100-sxm", joulie.LabelHWGPUCount: "8"}, 0,
		corev1.ResourceList{joulie.ResourceNVIDIAGPU: resource.MustParse("2")}), nil, cat)
	if v.GPUCount != 8 {
		t.Errorf("GPU count %d, want the label's 8", v.GPUCount)
	}
	// AMD GPUs without a model label resolve to AMD's generic entry.
	v = Build(node(nil, 0, corev1.ResourceList{joulie.ResourceAMDGPU: resource.MustParse("8")}), nil, cat)
	if v.GPUCount != 8 || v.GPUModel == "" || v.GPUMaxWatts <= 0 {
		t.Errorf("AMD GPUs from allocatable: %+v", v)
	}
}

func TestDensityOrdersDenserHardwareFirst(t *testing.T) {
	cat := catalog.Default()
	small := Build(node(map[string]string{joulie.LabelHWCPUModel: "amd-epyc-9654", joulie.LabelHWGPUModel: "nvidia-h100-sxm", joulie.LabelHWGPUCount: "2"}, 0, nil), nil, cat)
	big := Build(node(map[string]string{joulie.LabelHWCPUModel: "amd-epyc-9654", joulie.LabelHWGPUModel: "nvidia-h100-sxm", joulie.LabelHWGPUCount: "8"}, 0, nil), nil, cat)
	cpuOnly := Build(node(map[string]string{joulie.LabelHWCPUModel: "amd-epyc-9654"}, 0, nil), nil, cat)
	if !(big.DensityScore > small.DensityScore && small.DensityScore > cpuOnly.DensityScore) {
		t.Errorf("densities 8 GPUs %v, 2 GPUs %v, CPU only %v: want decreasing", big.DensityScore, small.DensityScore, cpuOnly.DensityScore)
	}
}

// The utilization model needs cores and idle figures: from NodeHardware's
// counts and the catalog's models, and none for a generic stand-in.
func TestCoresAndIdleFigures(t *testing.T) {
	cat := catalog.Default()
	epyc, _ := cat.CPUByID("amd-epyc-9654")
	h100, _ := cat.GPUByID("nvidia-h100-sxm")
	hw := &joulie.NodeHardware{Status: joulie.NodeHardwareStatus{
		CPU: joulie.CPUHardware{CatalogModel: "amd-epyc-9654", Sockets: 2, TotalCores: 190},
		GPU: &joulie.GPUHardware{CatalogModel: "nvidia-h100-sxm", Count: 8},
	}}
	v := Build(node(nil, 0, nil), hw, cat)
	if v.CPUTotalCores != 190 || v.CPUIdleWattsPerSocket != epyc.IdleWatts || v.GPUIdleWatts != h100.IdleWatts || epyc.IdleWatts <= 0 || h100.IdleWatts <= 0 {
		t.Errorf("from NodeHardware: cores %d, idle %v W per socket and %v W per GPU; want 190, %v, %v",
			v.CPUTotalCores, v.CPUIdleWattsPerSocket, v.GPUIdleWatts, epyc.IdleWatts, h100.IdleWatts)
	}
	hw.Status.CPU.TotalCores, hw.Status.CPU.CoresPerSocket = 0, 64
	if v := Build(node(nil, 0, nil), hw, cat); v.CPUTotalCores != 128 {
		t.Errorf("cores %d, want 2 sockets × 64 reported per socket", v.CPUTotalCores)
	}
	v = Build(node(map[string]string{joulie.LabelHWCPUModel: "amd-epyc-9654"}, 384, nil), nil, cat)
	if v.CPUTotalCores != 192 || v.CPUIdleWattsPerSocket != epyc.IdleWatts {
		t.Errorf("from labels: cores %d, idle %v W; want 2 × 96, %v", v.CPUTotalCores, v.CPUIdleWattsPerSocket, epyc.IdleWatts)
	}
	v = Build(node(nil, 0, corev1.ResourceList{joulie.ResourceNVIDIAGPU: resource.MustParse("4")}), nil, cat)
	if v.CPUIdleWattsPerSocket != 0 || v.GPUIdleWatts != 0 || v.CPUTotalCores <= 0 {
		t.Errorf("unidentified hardware: idle %v W per socket, %v W per GPU, cores %d; want no idle figures", v.CPUIdleWattsPerSocket, v.GPUIdleWatts, v.CPUTotalCores)
	}
}
