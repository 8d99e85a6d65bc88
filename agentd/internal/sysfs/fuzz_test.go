package sysfs

import (
	"slices"
	"strconv"
	"testing"
)

// FuzzParseCPUList: never panics; an accepted list is sorted, unique and
// bounded. Seeds in testdata/fuzz/FuzzParseCPUList.
func FuzzParseCPUList(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		if !slices.IsSorted(cpus) || len(slices.Compact(slices.Clone(cpus))) != len(cpus) {
			t.Fatalf("ParseCPUList(%q) = %v: not sorted and unique", s, cpus)
		}
		if len(cpus) > 0 && (cpus[0] < 0 || cpus[len(cpus)-1] >= maxCPUs) {
			t.Fatalf("ParseCPUList(%q) = %v: out of bounds", s, cpus)
		}
	})
}

// FuzzParseInt: never panics; an accepted value prints back to the same
// number.
func FuzzParseInt(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := ParseInt(s); err == nil {
			if w, err := ParseInt(strconv.FormatInt(v, 10)); err != nil || w != v {
				t.Fatalf("ParseInt(%q) = %d does not round-trip", s, v)
			}
		}
		_, _ = ParseUint(s)
	})
}
