package powerest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// res builds a ResourceList from name/quantity pairs.
func res(pairs ...string) corev1.ResourceList {
	if len(pairs) == 0 {
		return nil
	}
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

func ctr(requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func sidecar(requests corev1.ResourceList) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	c := ctr(requests, nil)
	c.RestartPolicy = &always
	return c
}

func cpu(q string) corev1.ResourceList { return res("cpu", q) }

func TestPodDemand(t *testing.T) {
	tests := []struct {
		name string
		spec corev1.PodSpec
		want Demand
	}{
		{name: "no containers", want: Demand{}},
		{name: "container without resources", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, want: Demand{}},
		{name: "millicores", spec: corev1.PodSpec{Containers: []corev1.Container{ctr(cpu("500m"), nil)}}, want: Demand{CPUCores: 0.5}},
		{name: "containers add up", spec: corev1.PodSpec{Containers: []corev1.Container{
			ctr(cpu("100m"), nil), ctr(cpu("100m"), nil), ctr(cpu("100m"), nil),
		}}, want: Demand{CPUCores: 0.3}},
		{name: "limit stands in for a missing request", spec: corev1.PodSpec{Containers: []corev1.Container{
			ctr(nil, cpu("2")), ctr(cpu("1"), nil),
		}}, want: Demand{CPUCores: 3}},
		{name: "request wins over limit", spec: corev1.PodSpec{Containers: []corev1.Container{ctr(cpu("1"), cpu("4"))}}, want: Demand{CPUCores: 1}},
		{name: "memory only", spec: corev1.PodSpec{Containers: []corev1.Container{ctr(res("memory", "1Gi"), nil)}}, want: Demand{}},

		{name: "init container larger than app containers", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{ctr(cpu("4"), nil)},
			Containers:     []corev1.Container{ctr(cpu("1"), nil)},
		}, want: Demand{CPUCores: 4}},
		{name: "init containers take the largest, not the sum", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{ctr(cpu("3"), nil), ctr(cpu("2"), nil)},
			Containers:     []corev1.Container{ctr(cpu("1"), nil)},
		}, want: Demand{CPUCores: 3}},
		{name: "init container smaller than app containers", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{ctr(cpu("500m"), nil)},
			Containers:     []corev1.Container{ctr(cpu("2"), nil)},
		}, want: Demand{CPUCores: 2}},
		{name: "sidecar adds to app containers", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar(cpu("1"))},
			Containers:     []corev1.Container{ctr(cpu("2"), nil)},
		}, want: Demand{CPUCores: 3}},
		{name: "init container after a sidecar runs next to it", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar(cpu("1")), ctr(cpu("3"), nil)},
			Containers:     []corev1.Container{ctr(cpu("1"), nil)},
		}, want: Demand{CPUCores: 4}},
		{name: "init container before a sidecar runs alone", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{ctr(cpu("3"), nil), sidecar(cpu("1"))},
			Containers:     []corev1.Container{ctr(cpu("1"), nil)},
		}, want: Demand{CPUCores: 3}},
		{name: "only sidecars", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar(cpu("250m")), sidecar(cpu("250m"))},
		}, want: Demand{CPUCores: 0.5}},

		{name: "overhead is added", spec: corev1.PodSpec{
			Containers: []corev1.Container{ctr(cpu("1"), nil)},
			Overhead:   cpu("250m"),
		}, want: Demand{CPUCores: 1.25}},
		{name: "pod-level request replaces the containers' sum", spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: cpu("4")},
			Containers: []corev1.Container{ctr(cpu("1"), nil), ctr(nil, nil)},
			Overhead:   cpu("100m"),
		}, want: Demand{CPUCores: 4.1}},
		{name: "pod-level limit stands in when no container requests CPU", spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Limits: cpu("6")},
			Containers: []corev1.Container{ctr(nil, nil), ctr(nil, nil)},
		}, want: Demand{CPUCores: 6}},
		{name: "pod-level limit does not replace container requests", spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Limits: cpu("6")},
			Containers: []corev1.Container{ctr(cpu("2"), nil)},
		}, want: Demand{CPUCores: 2}},
		{name: "pod-level memory only keeps the containers' CPU", spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: res("memory", "4Gi")},
			Containers: []corev1.Container{ctr(cpu("2"), nil)},
		}, want: Demand{CPUCores: 2}},

		{name: "NVIDIA GPU limit", spec: corev1.PodSpec{Containers: []corev1.Container{
			ctr(cpu("8"), res("nvidia.com/gpu", "2")),
		}}, want: Demand{CPUCores: 8, GPUs: 2}},
		{name: "AMD GPU limit", spec: corev1.PodSpec{Containers: []corev1.Container{
			ctr(nil, res("amd.com/gpu", "4")),
		}}, want: Demand{GPUs: 4}},
		{name: "GPU request without limit", spec: corev1.PodSpec{Containers: []corev1.Container{
			ctr(res("nvidia.com/gpu", "1"), nil),
		}}, want: Demand{GPUs: 1}},
		{name: "GPU limit wins over a different request", spec: corev1.PodSpec{Containers: []corev1.Container{
			ctr(res("nvidia.com/gpu", "1"), res("nvidia.com/gpu", "2")),
		}}, want: Demand{GPUs: 2}},
		{name: "NVIDIA and AMD GPUs add up", spec: corev1.PodSpec{Containers: []corev1.Container{
			ctr(nil, res("nvidia.com/gpu", "1")), ctr(nil, res("amd.com/gpu", "1")),
		}}, want: Demand{GPUs: 2}},
		{name: "other extended resources are not GPUs", spec: corev1.PodSpec{Containers: []corev1.Container{
			ctr(nil, res("example.com/fpga", "1", "gpu.intel.com/i915", "1")),
		}}, want: Demand{}},
		{name: "GPUs of an init container follow the same rule", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{ctr(nil, res("nvidia.com/gpu", "4"))},
			Containers:     []corev1.Container{ctr(nil, res("nvidia.com/gpu", "2"))},
		}, want: Demand{GPUs: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PodDemand(&corev1.Pod{Spec: tt.spec})
			if !near(got.CPUCores, tt.want.CPUCores) || !near(got.GPUs, tt.want.GPUs) {
				t.Errorf("PodDemand = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPodDemandNilPod(t *testing.T) {
	if got := PodDemand(nil); got != (Demand{}) {
		t.Errorf("PodDemand(nil) = %+v, want zero", got)
	}
}

func TestPodDemandDoesNotAllocate(t *testing.T) {
	pod := benchmarkPod()
	if n := testing.AllocsPerRun(100, func() { _ = PodDemand(pod) }); n != 0 {
		t.Errorf("PodDemand: %v allocations per call, want 0", n)
	}
}

// benchmarkPod is a typical GPU job: a sidecar, an init container and two
// app containers.
func benchmarkPod() *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{sidecar(cpu("100m")), ctr(cpu("1"), nil)},
		Containers: []corev1.Container{
			ctr(res("cpu", "8", "memory", "32Gi"), res("memory", "32Gi", "nvidia.com/gpu", "2")),
			ctr(res("cpu", "500m", "memory", "1Gi"), nil),
		},
	}}
}

func BenchmarkPodDemand(b *testing.B) {
	pod := benchmarkPod()
	b.ReportAllocs()
	for b.Loop() {
		_ = PodDemand(pod)
	}
}
