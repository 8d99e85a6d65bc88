package podresources

import (
	"cmp"
	"slices"
	"strings"
)

// Pod is one pod as the kubelet reports it on the pod-resources API: the
// pods it runs on this node, with the devices its device plugins gave
// each container. CPU and memory assignments, which the API also
// carries, are left out.
type Pod struct {
	Namespace  string
	Name       string
	Containers []Container
}

// Container is one container of a Pod and the devices it was given.
type Container struct {
	Name    string
	Devices []Allocation
}

// Allocation is the devices of one extended resource (nvidia.com/gpu)
// allocated to a container, by the IDs the device plugin advertised.
type Allocation struct {
	Resource string
	IDs      []string
}

// Holder is a container holding a GPU.
type Holder struct {
	Namespace string
	Pod       string
	Container string
	// Replicas is how many of the container's device IDs resolve to the
	// GPU: 1 for a whole GPU, n for n time-slicing replicas of one. A
	// GPU shared by replicas is split between its holders in proportion
	// to Replicas; the replicas nobody holds are not in the map, so a
	// caller that wants to leave their share unattributed needs the
	// plugin's replica count from elsewhere.
	Replicas int
}

// DefaultGPUResources returns the extended resources that count as GPUs
// when the caller names none:
//
//   - nvidia.com/gpu: the NVIDIA device plugin's GPUs, whole, as
//     time-slicing replicas, or as MIG devices under its "single" MIG
//     strategy;
//   - nvidia.com/gpu.shared: the same replicas when the plugin's
//     time-slicing config renames the resource (renameByDefault);
//   - nvidia.com/mig-*: MIG devices under the "mixed" strategy, one
//     resource per profile (nvidia.com/mig-1g.10gb);
//   - amd.com/gpu: the AMD device plugin's GPUs and their replicas.
//
// A name ending in "*" matches every resource that starts with the rest.
func DefaultGPUResources() []string {
	return []string{"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*", "amd.com/gpu"}
}

// Replica separators of the device plugins, each followed by a decimal
// replica number. The NVIDIA plugin with time-slicing (or MPS)
// advertises each GPU n times as "<id>::<k>", k from 0 to n-1, and
// splits an ID at its first "::". The AMD plugin's time-slicing
// advertises "<id>-slice-<k>" and splits at the last "-slice-".
const (
	nvidiaReplica = "::"
	amdReplica    = "-slice-"
)

// GPUHolders maps each GPU held by a container of pods to its holders,
// one per container, sorted by namespace, pod and container. Only
// allocations of the given resources count (nil or empty: the
// DefaultGPUResources); the rest (NICs, FPGAs, hugepages) are ignored.
//
// The rules, in the order they apply to each device ID:
//
//   - A replica ID stands for its physical device: "GPU-<uuid>::<k>"
//     for GPU-<uuid> and "0000:c1:00.0-slice-<k>" for 0000:c1:00.0, as
//     long as k is a decimal number. The suffix comes off once, at the
//     separator the plugin itself splits at. Anything else is kept
//     whole: an ID like "GPU-x::y" is no replica the plugins make, so
//     it is not guessed at.
//   - An ID, or a physical ID, that is empty is dropped: it names no
//     device.
//   - The same ID listed twice for one container counts once. Each
//     distinct ID that resolves to a device adds one to the container's
//     Replicas there, so a container given replicas 0 and 2 of one GPU
//     holds it with Replicas 2.
//   - Several holders of one key, in different pods or in one, share
//     that GPU (time-slicing or MPS); one holder with Replicas 1 owns
//     it whole.
//   - A MIG device ("MIG-<uuid>", or "MIG-GPU-<uuid>/<gi>/<ci>" from
//     drivers before R470) is kept under its own ID, as is a replica of
//     one: which physical GPU it belongs to is known only to NVML. The
//     caller matches it against NVML's MIG devices or reports its
//     energy as unattributed.
//   - Every other ID is kept as the plugin reported it: NVIDIA GPU
//     UUIDs ("GPU-<uuid>", or indices "0", "1" with the plugin's
//     deviceIDStrategy=index) and the AMD plugin's PCI addresses
//     ("0000:c1:00.0"). Matching them to the GPUs the agent drives is
//     the caller's job.
//
// The map is never nil. GPUHolders is a pure function of its arguments.
func GPUHolders(pods []Pod, resources []string) map[string][]Holder {
	if len(resources) == 0 {
		resources = DefaultGPUResources()
	}
	type held struct {
		device string
		who    Holder // Replicas left 0: the key
	}
	type seen struct {
		who Holder
		id  string
	}
	replicas := map[held]int{}
	counted := map[seen]bool{}
	for _, p := range pods {
		for _, c := range p.Containers {
			who := Holder{Namespace: p.Namespace, Pod: p.Name, Container: c.Name}
			for _, a := range c.Devices {
				if !matchResource(a.Resource, resources) {
					continue
				}
				for _, id := range a.IDs {
					device := physicalID(id)
					if device == "" || counted[seen{who, id}] {
						continue
					}
					counted[seen{who, id}] = true
					replicas[held{device, who}]++
				}
			}
		}
	}
	out := make(map[string][]Holder)
	for h, n := range replicas {
		who := h.who
		who.Replicas = n
		out[h.device] = append(out[h.device], who)
	}
	for _, holders := range out {
		slices.SortFunc(holders, func(a, b Holder) int {
			return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Pod, b.Pod),
				strings.Compare(a.Container, b.Container))
		})
	}
	return out
}

// physicalID returns the device a device plugin's ID stands for: the
// ID without its replica suffix ("::<k>" or "-slice-<k>", k decimal),
// or the ID itself when it has none.
func physicalID(id string) string {
	if i := strings.Index(id, nvidiaReplica); i >= 0 && isDecimal(id[i+len(nvidiaReplica):]) {
		return id[:i]
	}
	if i := strings.LastIndex(id, amdReplica); i >= 0 && isDecimal(id[i+len(amdReplica):]) {
		return id[:i]
	}
	return id
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// matchResource reports whether resource is one of names, where a name
// ending in "*" stands for every resource starting with the rest.
func matchResource(resource string, names []string) bool {
	for _, n := range names {
		if prefix, ok := strings.CutSuffix(n, "*"); ok {
			if strings.HasPrefix(resource, prefix) {
				return true
			}
		} else if resource == n {
			return true
		}
	}
	return false
}
