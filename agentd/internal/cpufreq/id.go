package cpufreq

import (
	"fmt"
	"strconv"
	"strings"
)

const (
	idPrefix = "cpu"
	idSuffix = "/scaling_max_freq"
	// maxCPUID bounds the CPU number a journal ID may name, as the sysfs
	// CPU list parser does.
	maxCPUID = 1<<16 - 1
)

// ID is the journal's name for cpu's frequency ceiling,
// "cpuN/scaling_max_freq".
func ID(cpu int) string { return idPrefix + strconv.Itoa(cpu) + idSuffix }

// ParseID reads the CPU number back from a journal ID. It accepts only
// what ID writes (no sign, no leading zeros, no other attribute), so a
// hand-edited or foreign journal entry can never steer a write elsewhere.
func ParseID(id string) (int, error) {
	num, ok := strings.CutPrefix(id, idPrefix)
	if ok {
		num, ok = strings.CutSuffix(num, idSuffix)
	}
	if !ok || num == "" || len(num) > 5 || (len(num) > 1 && num[0] == '0') {
		return 0, fmt.Errorf("not a cpufreq control %q (want cpuN%s)", clip(id), idSuffix)
	}
	for _, r := range num {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("not a cpufreq control %q (want cpuN%s)", clip(id), idSuffix)
		}
	}
	cpu, err := strconv.Atoi(num)
	if err != nil || cpu > maxCPUID {
		return 0, fmt.Errorf("cpufreq control %q names CPU beyond %d", clip(id), maxCPUID)
	}
	return cpu, nil
}

// clip keeps error messages short when a journal holds garbage.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
