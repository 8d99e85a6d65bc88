package podresources

import (
	"strings"
	"testing"
)

// FuzzGPUHolders: device IDs and names come from device plugins and the
// kubelet, not from the agent, so any of them, malformed or huge, must
// map without a panic and by the rules: no empty key, every key the
// physical ID of an input ID, every holder listed once per device with
// at least one replica, and as many replicas in all as there are
// distinct IDs that name a device. The input is a resource name, a
// namespace, a pod name and newline-separated IDs for each of two
// containers. Seeds in testdata/fuzz/FuzzGPUHolders.
func FuzzGPUHolders(f *testing.F) {
	f.Fuzz(func(t *testing.T, resource, ns, name, idsA, idsB string) {
		pods := []Pod{{Namespace: ns, Name: name, Containers: []Container{
			{Name: "a", Devices: []Allocation{{Resource: resource, IDs: strings.Split(idsA, "\n")}}},
			{Name: "b", Devices: []Allocation{{Resource: resource, IDs: strings.Split(idsB, "\n")}}},
		}}}
		got := GPUHolders(pods, nil)
		if !matchResource(resource, DefaultGPUResources()) {
			if len(got) != 0 {
				t.Fatalf("resource %q is no GPU, yet %d devices mapped", resource, len(got))
			}
			return
		}
		physical := map[string]bool{}
		for _, id := range strings.Split(idsA+"\n"+idsB, "\n") {
			physical[physicalID(id)] = true
		}
		total := 0
		for device, holders := range got {
			if device == "" {
				t.Fatal("empty device key")
			}
			if !physical[device] {
				t.Fatalf("key %q is the physical ID of no input ID", device)
			}
			seen := map[string]bool{}
			for _, h := range holders {
				if h.Replicas < 1 || seen[h.Container] {
					t.Fatalf("%s: holders %v", device, holders)
				}
				seen[h.Container] = true
				total += h.Replicas
			}
		}
		want := 0
		for _, ids := range []string{idsA, idsB} {
			distinct := map[string]bool{}
			for _, id := range strings.Split(ids, "\n") {
				if physicalID(id) != "" {
					distinct[id] = true
				}
			}
			want += len(distinct)
		}
		if total != want {
			t.Fatalf("%d replicas mapped for %d distinct device IDs", total, want)
		}
	})
}
