// Package podenergy attributes a host's measured energy to the pods that
// ran on it: each GPU's energy to the pods holding that GPU, measured, and
// the CPU packages' energy to the pods by their share of CPU time, an
// estimate.
//
// A Ledger is fed one Tick per agent tick: the GPUs' cumulative energy
// counters (NVML's total energy since the driver loaded), which pods held
// which GPU at that moment (the kubelet's pod-resources API), the CPU
// packages' energy since the previous tick (RAPL) and each pod's
// cumulative CPU time (its cgroup's cpu.stat). It does no I/O; the agent
// reads the hardware, the kubelet and the cgroups and hands the values in.
//
// The rules, each an operator can check against the figures:
//
//   - A GPU's energy over an interval is the difference of its counter. A
//     counter that went backwards was reset (a driver reload): for that
//     interval the device's power reading times the interval is used
//     instead, so nothing is negative or counted twice. A device without
//     an energy counter is integrated from its power readings (the mean
//     of the interval's two readings); the pod's total then says it is
//     partly estimated.
//   - The interval's energy goes to the holders at both ends of it. When
//     the holders changed between two ticks, the change is put at the
//     interval's middle: half to the old holders, half to the new. A tick
//     is 5 s by default, so that is the resolution of a change of hands.
//   - A GPU held by several pods at once (time-slicing) is split by the
//     replicas each holds: a pod with two of four replicas gets half.
//   - Energy of a GPU no pod holds is the node's, counted as unattributed
//     per device, not given to any pod.
//   - A pod's CPU estimate is the packages' energy times the pod's share of
//     the host's busy CPU time over the interval. The idle draw of the
//     packages is thus shared among the pods in proportion to their CPU
//     time; time used outside pods (the system, the kubelet) keeps its
//     share unattributed.
//   - A pod that no tick lists any more has ended: its totals are final,
//     reported once through Ended, and kept for a retention time so
//     metrics and joulie-agentctl can still show them, then dropped.
package podenergy
