// Package enforce turns a node's desired power target (the spec of its
// NodePowerProfile) into actions on the host's backends, and reports what
// happened in the form of NodePowerProfile status.
//
// CPU, in the agent seed's backend order:
//
//  1. Resolve the per-package cap: packagePowerCapWatts when set, else
//     packagePowerCapPctOfMax of each package's maximum (the RAPL zone's
//     max power, else the catalog TDP of the model).
//  2. With watts, try RAPL: write each package's long-term limit, clamped
//     to its range, and read it back.
//  3. When RAPL is absent, read-only or a write fails, fall back to DVFS:
//     steer the measured package power (RAPL energy or telemetry) toward
//     the cap by lowering cpufreq ceilings on a share of the CPUs.
//  4. When a percentage cannot be resolved to watts (no maximum known),
//     take the DVFS percent path: throttle 100 - pct percent of the CPUs.
//  5. While on DVFS because RAPL failed, retry RAPL with backoff; when it
//     works again, lift the DVFS throttle and return to RAPL.
//
// GPU: each device's cap is capWattsPerGpu when set, else capPctOfMax of
// that device's own maximum; every device is capped independently, so one
// failing GPU does not stop the others.
//
// A target that asks for nothing (no CPU or GPU block) puts the journaled
// originals of that class back: Joulie leaves the hardware as it found it.
//
// Resolution and aggregation are pure functions; the enforcers hold only
// the mode and retry state, and reach hardware through small interfaces
// implemented by the rapl, dvfs, nvml, amdhwmon, amdsmi and httpbackend
// packages.
package enforce
