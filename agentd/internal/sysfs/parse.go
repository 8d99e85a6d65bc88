package sysfs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ParseInt parses a sysfs integer value ("42", "-1", "42\n").
func ParseInt(s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer: %q", clip(s))
	}
	return v, nil
}

// ParseUint parses an unsigned sysfs integer value.
func ParseUint(s string) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an unsigned integer: %q", clip(s))
	}
	return v, nil
}

// maxCPUs bounds what a CPU list may name, so a corrupt file cannot make
// the agent allocate without limit.
const maxCPUs = 1 << 16

// ParseCPUList parses the kernel's CPU list format ("0-3,8,10-11"), as in
// topology/*_cpus_list and cpufreq/policy*/related_cpus (which also
// separates with spaces). The result is ascending, without duplicates.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	seen := make(map[int]bool)
	var out []int
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU list %q: %q is not a CPU number", clip(s), clip(lo))
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad CPU list %q: bad range %q", clip(s), clip(part))
			}
		}
		if b >= maxCPUs {
			return nil, fmt.Errorf("bad CPU list %q: CPU %d beyond %d", clip(s), b, maxCPUs-1)
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// clip keeps error messages short when a file holds garbage.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// FormatCPUList writes ascending CPU numbers in the kernel's list format
// ("0-3,8,10-11"), the inverse of ParseCPUList; it keeps messages about
// hundreds of CPUs short.
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}
