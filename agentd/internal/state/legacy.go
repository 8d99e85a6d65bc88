package state

import "strings"

// legacyKind classifies an entry of a journal written before entries
// carried their kind (agents up to the one that introduced Entry.Kind),
// from the backend names and IDs those agents wrote. Packages upgrade in
// place, so such a journal may be left by a crash just before the
// upgrade and must still restore class by class. Every backend now
// records its kind, so this table is frozen: a new backend never needs a
// line here. An entry it cannot place keeps no kind, and is restored only
// by a full restore (stop, failsafe, joulie-agentctl restore), as before.
func legacyKind(backend, id string) Kind {
	switch backend {
	case "rapl", "cpufreq":
		return KindCPU
	case "nvml", "hwmon":
		return KindGPU
	case "amdsmi": // both kinds, told apart by the ID's prefix
		switch {
		case strings.HasPrefix(id, "cpu-socket/"):
			return KindCPU
		case strings.HasPrefix(id, "gpu/"):
			return KindGPU
		}
	}
	return ""
}
