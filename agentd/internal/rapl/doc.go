// Package rapl is the agent's RAPL backend: it finds the CPU package
// power-capping zones of the Linux powercap framework, sets a package's
// long-term power limit, puts journaled originals back, and turns the
// packages' energy counters into watts.
//
// # What it writes, and why nothing else
//
// The kernel shows RAPL as powercap zones under /sys/class/powercap
// (symlinks into /sys/devices/virtual/powercap/<control type>/). A package
// zone is named "package-N" after its physical package id; below it sit
// subzones for core, uncore and dram. The agent writes, per package:
//
//   - only the package zone. Capping core or uncore would starve one part
//     of the package behind the firmware's back, and dram limits throttle
//     memory; the package limit is the one the firmware balances itself.
//   - only the long_term constraint (PL1), found by its constraint_K_name
//     and not assumed to be constraint 0. The short-term limit (PL2) and
//     peak power (PL4) protect the voltage regulators and the PSU; they
//     are the platform's, not a policy knob.
//   - only one interface. Client and some server parts expose the same
//     package through the MSR interface (intel-rapl) and through MMIO
//     (intel-rapl-mmio); the hardware enforces the lower of the two
//     limits, so writing both would leave the host with two caps to
//     reason about and restore. The MSR zone is used; the MMIO zone only
//     for a package the MSR driver does not expose.
//
// # Multi-die packages
//
// On parts whose RAPL MSRs are per die (Cascade Lake-AP) the kernel names
// zones "package-P-die-D", one per die. They are grouped into one Package;
// a package cap is split evenly across its dies (the dies of such parts
// are identical) and the package's energy is the sum of its dies'.
//
// # Energy only (AMD)
//
// On AMD Zen the same driver registers package zones whose energy counter
// works but whose limits do not: the constraint files are read-only, read
// 0, or are missing. Such packages are discovered with LimitsWritable
// false and every cap request returns an error wrapping power.ErrBlocked,
// so the caller falls back to DVFS (or the AMD socket cap) and reports the
// CPU control as blocked, not failed.
//
// # Safety
//
// Before the first write to a limit or an enabled flag, the current value
// is recorded in the state journal (backend "rapl", ID
// "<zone>/constraint_<K>_power_limit_uw" or "<zone>/enabled"), and a
// write happens only once that record is on disk. Every cap is clamped to
// the zone's reported range; when the kernel reports no maximum, to the
// caller's (the catalog's) maximum, and failing that, to the limit the
// host had before the agent touched it, so a cap never raises the limit
// above what the firmware set. After a write the limit is read back: the
// kernel converts microwatts to the hardware's power unit (1/8 W on most
// Intel parts), so the value read back may differ by less than one unit,
// and anything further off is an error.
package rapl
