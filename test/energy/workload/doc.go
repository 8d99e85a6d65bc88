// Package workload is the job list of Joulie's energy benchmark: the pods
// every arm runs, identical across arms ([Hash] proves it). A list comes
// from one of two sources:
//
//   - [Generate], a seeded generator shaped on published statistics of a
//     GPU cluster's pods (GPU count per pod, lifetime quantiles, bursts)
//     and on the openb trace's hourly arrivals, at the arrival rate that
//     offers a chosen load to a given cluster ([Config.Load]), or that
//     allocates a chosen share of it inside the measured window
//     ([LoadLevel], [ExpectedAllocation]);
//   - [ReadPods] and [ReadNodes], a reader for traces in the schema of
//     Alibaba's cluster-trace-gpu-v2023 (openb) pod and node lists, so an
//     operator can replay an export of their own cluster.
//
// Either way a [Job] says when a pod arrives, what it requests, its
// workload class, its boundness class (how much a power cap slows it,
// package physics) and its work: its runtime at full speed. Whatever was
// cut, rounded or left out is counted and said, as values ([PodStats],
// warnings), never logged.
//
// Generation is deterministic (math/rand/v2 with a PCG source seeded from
// the seed) and reads no clock. test/energy/README.md documents the trace
// schema and the generator's assumptions.
package workload
