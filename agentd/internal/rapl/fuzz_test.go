package rapl

import (
	"strconv"
	"strings"
	"testing"
)

// The parsers below read what sysfs and the state journal hand the agent.
// They must never panic and must accept only what they document. Seeds
// live in testdata/fuzz/<target>/.

func FuzzParseZoneName(f *testing.F) {
	f.Fuzz(func(t *testing.T, name string) {
		pkg, die, ok := parseZoneName(name)
		if !ok {
			return
		}
		if pkg < 0 || pkg >= maxID || die < -1 || die >= maxID {
			t.Fatalf("parseZoneName(%q) = %d, %d out of range", name, pkg, die)
		}
		// Accepted names are exactly the kernel's two forms.
		want := "package-" + strconv.Itoa(pkg)
		if die >= 0 {
			want += "-die-" + strconv.Itoa(die)
		}
		if name != want {
			t.Fatalf("parseZoneName(%q) accepted a name the kernel does not write (reads as %q)", name, want)
		}
	})
}

func FuzzParseControlID(f *testing.F) {
	f.Fuzz(func(t *testing.T, id string) {
		zone, attr, ok := parseControlID(id)
		if !ok {
			return
		}
		if zone+"/"+attr != id {
			t.Fatalf("parseControlID(%q) = %q, %q: does not rebuild the id", id, zone, attr)
		}
		// Nothing accepted may leave the zone's directory or name a
		// subzone.
		if strings.Contains(id, "..") || strings.Count(id, "/") != 1 || strings.Count(zone, ":") != 1 {
			t.Fatalf("parseControlID(%q) accepted a path outside a package zone", id)
		}
		if attr != enabledAttr && !(strings.HasPrefix(attr, "constraint_") && strings.HasSuffix(attr, "_power_limit_uw")) {
			t.Fatalf("parseControlID(%q) accepted attribute %q", id, attr)
		}
	})
}

func FuzzParseCounter(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := parseCounter(b)
		want, err := strconv.ParseUint(strings.TrimRight(string(b), " \t\r\n"), 10, 64)
		// strconv accepts a leading '+' and underscores only with base 0;
		// with base 10 the two must agree exactly.
		if ok != (err == nil) || (ok && v != want) {
			t.Fatalf("parseCounter(%q) = %d, %v; strconv says %d, %v", b, v, ok, want, err)
		}
	})
}
