package rapl

import (
	"strconv"
	"strings"
)

// The powercap control types of the RAPL drivers. intel_rapl_tpmi
// registers under intel-rapl as well.
const (
	InterfaceMSR  = "intel-rapl"
	InterfaceMMIO = "intel-rapl-mmio"
)

// maxID bounds package, die and zone numbers read from sysfs names, so a
// corrupt name cannot produce absurd identifiers.
const maxID = 1 << 16

// parseZoneDir splits a top-level zone directory name ("intel-rapl:0",
// "intel-rapl-mmio:1") into its interface and index. Subzones
// ("intel-rapl:0:1"), the control type directories themselves and other
// control types (dtpm, ...) are refused: the agent only ever looks at
// package zones.
func parseZoneDir(dir string) (iface string, index int, ok bool) {
	iface, num, found := strings.Cut(dir, ":")
	if !found || (iface != InterfaceMSR && iface != InterfaceMMIO) {
		return "", 0, false
	}
	index, ok = parseID(num)
	return iface, index, ok
}

// parseZoneName reads a package zone's name file. The RAPL drivers name
// package zones "package-<physical package id>", and
// "package-<package>-die-<die>" on parts whose MSRs are per die
// (multi-die packages such as Cascade Lake-AP); die is -1 in the first
// form. Every other name (psys, core, uncore, dram) is not a package.
func parseZoneName(name string) (pkg, die int, ok bool) {
	rest, found := strings.CutPrefix(name, "package-")
	if !found {
		return 0, 0, false
	}
	p, d, hasDie := strings.Cut(rest, "-die-")
	if pkg, ok = parseID(p); !ok {
		return 0, 0, false
	}
	if !hasDie {
		return pkg, -1, true
	}
	if die, ok = parseID(d); !ok {
		return 0, 0, false
	}
	return pkg, die, true
}

// parseID accepts a plain decimal number below maxID: no sign, no
// leading zeros beyond "0", nothing around it.
func parseID(s string) (int, bool) {
	if s == "" || len(s) > 5 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n >= maxID {
		return 0, false
	}
	return n, true
}

// Journal IDs name the controls this backend writes:
// "<zone>/constraint_<K>_power_limit_uw" and "<zone>/enabled".
const enabledAttr = "enabled"

func limitAttr(k int) string { return "constraint_" + strconv.Itoa(k) + "_power_limit_uw" }

// parseControlID validates a journal ID before Restore writes to the file
// it names. The journal is a file on disk; an ID that names anything but
// a package zone's long-term limit or enabled flag is refused, so a
// damaged or edited journal cannot steer a write elsewhere in /sys.
func parseControlID(id string) (zone, attr string, ok bool) {
	zone, attr, found := strings.Cut(id, "/")
	if !found {
		return "", "", false
	}
	if _, _, ok := parseZoneDir(zone); !ok {
		return "", "", false
	}
	if attr == enabledAttr {
		return zone, attr, true
	}
	k, found := strings.CutPrefix(attr, "constraint_")
	if !found {
		return "", "", false
	}
	k, found = strings.CutSuffix(k, "_power_limit_uw")
	if !found {
		return "", "", false
	}
	if _, ok := parseID(k); !ok {
		return "", "", false
	}
	return zone, attr, true
}

// parseCounter parses an energy_uj read: decimal digits, optionally
// followed by white space (the kernel's newline). It works on the read
// buffer directly so that the meter does not allocate every tick.
func parseCounter(b []byte) (uint64, bool) {
	end := len(b)
	for end > 0 && (b[end-1] == '\n' || b[end-1] == ' ' || b[end-1] == '\t' || b[end-1] == '\r') {
		end--
	}
	if end == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b[:end] {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
