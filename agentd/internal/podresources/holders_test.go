package podresources

import (
	"reflect"
	"strings"
	"testing"
)

func pod(ns, name string, containers ...Container) Pod {
	return Pod{Namespace: ns, Name: name, Containers: containers}
}

func ctr(name string, devices ...Allocation) Container {
	return Container{Name: name, Devices: devices}
}

func gpus(resource string, ids ...string) Allocation {
	return Allocation{Resource: resource, IDs: ids}
}

func TestGPUHolders(t *testing.T) {
	const (
		gpuA = "GPU-0b5e1c6a-6c2f-4f0e-9a57-1d2b3c4d5e6f"
		gpuB = "GPU-7f3a9e21-1b44-4c8d-b0e2-6a5b4c3d2e1f"
		migA = "MIG-4d1e7f0a-2b3c-5d6e-8f90-a1b2c3d4e5f6"
		amd0 = "0000:c1:00.0"
	)
	for _, tc := range []struct {
		name      string
		pods      []Pod
		resources []string
		want      map[string][]Holder
	}{
		{"no pods", nil, nil, map[string][]Holder{}},
		{"whole GPUs, one per pod",
			[]Pod{
				pod("ml", "train-0", ctr("trainer", gpus("nvidia.com/gpu", gpuA))),
				pod("ml", "train-1", ctr("trainer", gpus("nvidia.com/gpu", gpuB))),
			}, nil,
			map[string][]Holder{
				gpuA: {{"ml", "train-0", "trainer", 1}},
				gpuB: {{"ml", "train-1", "trainer", 1}},
			}},
		{"one container, two GPUs",
			[]Pod{pod("ml", "big", ctr("trainer", gpus("nvidia.com/gpu", gpuB, gpuA)))}, nil,
			map[string][]Holder{
				gpuA: {{"ml", "big", "trainer", 1}},
				gpuB: {{"ml", "big", "trainer", 1}},
			}},
		{"time-sliced GPU shared by pods, replicas counted",
			[]Pod{
				pod("web", "infer-b", ctr("server", gpus("nvidia.com/gpu", gpuA+"::1", gpuA+"::3"))),
				pod("web", "infer-a", ctr("server", gpus("nvidia.com/gpu", gpuA+"::0"))),
			}, nil,
			map[string][]Holder{gpuA: {{"web", "infer-a", "server", 1}, {"web", "infer-b", "server", 2}}}},
		{"renamed time-slicing resource",
			[]Pod{pod("web", "infer", ctr("server", gpus("nvidia.com/gpu.shared", gpuA+"::2")))}, nil,
			map[string][]Holder{gpuA: {{"web", "infer", "server", 1}}}},
		{"two containers of one pod share a GPU",
			[]Pod{pod("web", "infer",
				ctr("server", gpus("nvidia.com/gpu", gpuA+"::0")),
				ctr("sidecar", gpus("nvidia.com/gpu", gpuA+"::1")))}, nil,
			map[string][]Holder{gpuA: {{"web", "infer", "server", 1}, {"web", "infer", "sidecar", 1}}}},
		{"same namespace and pod names sort by namespace first",
			[]Pod{
				pod("b", "x", ctr("c", gpus("nvidia.com/gpu", gpuA+"::0"))),
				pod("a", "y", ctr("c", gpus("nvidia.com/gpu", gpuA+"::1"))),
			}, nil,
			map[string][]Holder{gpuA: {{"a", "y", "c", 1}, {"b", "x", "c", 1}}}},
		{"MIG devices stay under their own ID, replicas folded",
			[]Pod{
				pod("ml", "mixed", ctr("c", gpus("nvidia.com/mig-1g.10gb", migA))),
				pod("ml", "single", ctr("c", gpus("nvidia.com/gpu", "MIG-GPU-0b5e1c6a/1/0"))),
				pod("ml", "shared-mig", ctr("c", gpus("nvidia.com/mig-3g.40gb", "MIG-99::0", "MIG-99::1"))),
			}, nil,
			map[string][]Holder{
				migA:                   {{"ml", "mixed", "c", 1}},
				"MIG-GPU-0b5e1c6a/1/0": {{"ml", "single", "c", 1}},
				"MIG-99":               {{"ml", "shared-mig", "c", 2}},
			}},
		{"AMD PCI addresses and their slices",
			[]Pod{
				pod("hpc", "sim", ctr("solver", gpus("amd.com/gpu", amd0))),
				pod("hpc", "viz", ctr("render", gpus("amd.com/gpu", "0000:c2:00.0-slice-0", "0000:c2:00.0-slice-5"))),
			}, nil,
			map[string][]Holder{
				amd0:           {{"hpc", "sim", "solver", 1}},
				"0000:c2:00.0": {{"hpc", "viz", "render", 2}},
			}},
		{"devices that are no GPUs are ignored",
			[]Pod{pod("net", "router", ctr("dp",
				gpus("intel.com/sriov_netdevice", "0000:3b:02.1"),
				gpus("nvidia.com/gpux", "GPU-not-really"),
				gpus("hugepages-1Gi", "x"),
				gpus("nvidia.com/gpu", gpuA)))}, nil,
			map[string][]Holder{gpuA: {{"net", "router", "dp", 1}}}},
		{"the caller's resources replace the defaults",
			[]Pod{pod("ml", "p", ctr("c",
				gpus("nvidia.com/gpu", gpuA),
				gpus("example.com/accel-small", "acc-1"),
				gpus("example.com/accel-big", "acc-2")))}, []string{"example.com/accel-*"},
			map[string][]Holder{"acc-1": {{"ml", "p", "c", 1}}, "acc-2": {{"ml", "p", "c", 1}}}},
		{"the same ID twice in a container counts once",
			[]Pod{pod("ml", "p", ctr("c", gpus("nvidia.com/gpu", gpuA+"::0"), gpus("nvidia.com/gpu", gpuA+"::0", gpuA+"::0")))}, nil,
			map[string][]Holder{gpuA: {{"ml", "p", "c", 1}}}},
		{"malformed IDs: empty ones dropped, odd ones kept whole",
			[]Pod{pod("ml", "p", ctr("c", gpus("nvidia.com/gpu", "", "::", "::0", "-slice-3", "GPU-x::y", "GPU-y::", "::::7", "GPU-z::1::2")))}, nil,
			map[string][]Holder{
				"::":          {{"ml", "p", "c", 1}},
				"GPU-x::y":    {{"ml", "p", "c", 1}},
				"GPU-y::":     {{"ml", "p", "c", 1}},
				"::::7":       {{"ml", "p", "c", 1}},
				"GPU-z::1::2": {{"ml", "p", "c", 1}},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := GPUHolders(tc.pods, tc.resources)
			if got == nil {
				t.Fatal("nil map")
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestPhysicalID(t *testing.T) {
	for id, want := range map[string]string{
		"GPU-a":                "GPU-a",
		"GPU-a::0":             "GPU-a",
		"GPU-a::17":            "GPU-a",
		"MIG-b::2":             "MIG-b",
		"0000:c1:00.0":         "0000:c1:00.0",
		"0000:c1:00.0-slice-3": "0000:c1:00.0",
		"a-slice-b-slice-1":    "a-slice-b",
		"GPU-a::-1":            "GPU-a::-1",
		"GPU-a::+1":            "GPU-a::+1",
		"GPU-a::١":             "GPU-a::١", // Arabic-Indic digit: not what the plugins write
		"3":                    "3",
		"0:1":                  "0:1",
		"":                     "",
		"::":                   "::",
		"::0":                  "",
		strings.Repeat(":", 9): strings.Repeat(":", 9),
	} {
		if got := physicalID(id); got != want {
			t.Errorf("physicalID(%q) = %q, want %q", id, got, want)
		}
	}
}

// The defaults are a fresh slice: a caller changing its copy changes no
// one else's.
func TestDefaultGPUResourcesIsACopy(t *testing.T) {
	d := DefaultGPUResources()
	d[0] = "changed"
	if DefaultGPUResources()[0] != "nvidia.com/gpu" {
		t.Fatal("DefaultGPUResources shares its slice")
	}
}
