package rapl

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	"joulie.io/joulie/agentd/internal/sysfs"
)

// pkgSummary is the part of a Package the discovery table compares.
type pkgSummary struct {
	ID        int
	Zone      string
	Interface string
	Dir       string
	LongTerm  int
	LimitUW   int64
	MaxUW     int64
	MinUW     int64
	RangeUJ   uint64
	Writable  bool
	Enabled   bool
	HasEnergy bool
	Zones     []string
}

func summarize(pkgs []Package) []pkgSummary {
	var out []pkgSummary
	for _, p := range pkgs {
		s := pkgSummary{p.ID, p.Zone, p.Interface, p.Dir, p.LongTermIndex, p.LimitUW, p.MaxPowerUW, p.MinPowerUW,
			p.MaxEnergyRangeUJ, p.LimitsWritable, p.Enabled, p.HasEnergy, nil}
		for _, z := range p.Zones {
			s.Zones = append(s.Zones, z.Name)
		}
		out = append(out, s)
	}
	return out
}

func TestDiscover(t *testing.T) {
	const tdp = 270_000_000
	xeon := func(iface string, index, pkg int) rapltest.Zone { return rapltest.XeonPackage(iface, index, pkg, 270) }
	intel := func(id int, zone string) pkgSummary {
		return pkgSummary{id, zone, InterfaceMSR, "sys/class/powercap/" + zone, 0, tdp, tdp, 0,
			rapltest.EnergyRangeIntelUJ, true, true, true, []string{zone}}
	}

	swapped := xeon(rapltest.MSR, 0, 0)
	swapped.Constraints[0], swapped.Constraints[1] = swapped.Constraints[1], swapped.Constraints[0]

	noMax := xeon(rapltest.MSR, 0, 0)
	noMax.Constraints[0].MaxPowerUW = 0

	withMin := xeon(rapltest.MSR, 0, 0)
	withMin.Constraints[0].MinPowerUW = 90_000_000

	disabled := xeon(rapltest.MSR, 0, 0)
	disabled.Disabled = true

	amdNoConstraints := rapltest.EPYCPackage(0, 0)
	amdNoConstraints.Constraints = nil

	amdZeroLimit := rapltest.EPYCPackage(0, 0)
	amdZeroLimit.Constraints[0].ReadOnly = false

	psys := rapltest.Zone{Index: 1, Name: "psys", EnergyUJ: 5, MaxEnergyRangeUJ: rapltest.EnergyRangeIntelUJ,
		Constraints: []rapltest.Constraint{{Name: "long_term", LimitUW: 0}, {Name: "short_term", LimitUW: 0}}}

	die := func(index, pkg, d int) rapltest.Zone {
		z := rapltest.XeonPackage(rapltest.MSR, index, pkg, 175)
		z.Name = z.Name + "-die-" + string(rune('0'+d))
		return z
	}

	for _, tc := range []struct {
		name     string
		zones    []rapltest.Zone
		want     []pkgSummary
		reason   []string // LimitsReason substrings by package
		warnings []string
	}{
		{
			name:  "two-socket Intel with MSR and MMIO package-0: MSR chosen",
			zones: []rapltest.Zone{xeon(rapltest.MSR, 0, 0), xeon(rapltest.MSR, 1, 1), xeon(rapltest.MMIO, 0, 0)},
			want:  []pkgSummary{intel(0, "intel-rapl:0"), intel(1, "intel-rapl:1")},
		},
		{
			name:  "package only on MMIO is taken from MMIO",
			zones: []rapltest.Zone{xeon(rapltest.MMIO, 0, 0)},
			want: []pkgSummary{{0, "intel-rapl-mmio:0", InterfaceMMIO, "sys/class/powercap/intel-rapl-mmio:0", 0, tdp, tdp, 0,
				rapltest.EnergyRangeIntelUJ, true, true, true, []string{"intel-rapl-mmio:0"}}},
		},
		{
			name:  "long_term at constraint 1",
			zones: []rapltest.Zone{swapped},
			want: []pkgSummary{{0, "intel-rapl:0", InterfaceMSR, "sys/class/powercap/intel-rapl:0", 1, tdp, tdp, 0,
				rapltest.EnergyRangeIntelUJ, true, true, true, []string{"intel-rapl:0"}}},
		},
		{
			name:  "missing max_power_uw reads as 0",
			zones: []rapltest.Zone{noMax},
			want: []pkgSummary{{0, "intel-rapl:0", InterfaceMSR, "sys/class/powercap/intel-rapl:0", 0, tdp, 0, 0,
				rapltest.EnergyRangeIntelUJ, true, true, true, []string{"intel-rapl:0"}}},
		},
		{
			name:  "min_power_uw when the kernel gives it",
			zones: []rapltest.Zone{withMin},
			want: []pkgSummary{{0, "intel-rapl:0", InterfaceMSR, "sys/class/powercap/intel-rapl:0", 0, tdp, tdp, 90_000_000,
				rapltest.EnergyRangeIntelUJ, true, true, true, []string{"intel-rapl:0"}}},
		},
		{
			name:  "disabled zone",
			zones: []rapltest.Zone{disabled},
			want: []pkgSummary{{0, "intel-rapl:0", InterfaceMSR, "sys/class/powercap/intel-rapl:0", 0, tdp, tdp, 0,
				rapltest.EnergyRangeIntelUJ, true, false, true, []string{"intel-rapl:0"}}},
		},
		{
			name:  "AMD EPYC energy-only zones with read-only limits",
			zones: []rapltest.Zone{rapltest.EPYCPackage(0, 0), rapltest.EPYCPackage(1, 1)},
			want: []pkgSummary{
				{0, "intel-rapl:0", InterfaceMSR, "sys/class/powercap/intel-rapl:0", 0, 0, 0, 0, rapltest.EnergyRangeAMDUJ, false, false, true, []string{"intel-rapl:0"}},
				{1, "intel-rapl:1", InterfaceMSR, "sys/class/powercap/intel-rapl:1", 0, 0, 0, 0, rapltest.EnergyRangeAMDUJ, false, false, true, []string{"intel-rapl:1"}},
			},
			reason: []string{"constraint_0_power_limit_uw of intel-rapl:0 is read-only", "constraint_0_power_limit_uw of intel-rapl:1 is read-only"},
		},
		{
			name:  "AMD zone without constraints",
			zones: []rapltest.Zone{amdNoConstraints},
			want: []pkgSummary{{0, "intel-rapl:0", InterfaceMSR, "sys/class/powercap/intel-rapl:0", -1, 0, 0, 0,
				rapltest.EnergyRangeAMDUJ, false, false, true, []string{"intel-rapl:0"}}},
			reason: []string{"no long_term constraint"},
		},
		{
			name:  "AMD zone with a writable zero limit and no maximum",
			zones: []rapltest.Zone{amdZeroLimit},
			want: []pkgSummary{{0, "intel-rapl:0", InterfaceMSR, "sys/class/powercap/intel-rapl:0", 0, 0, 0, 0,
				rapltest.EnergyRangeAMDUJ, false, false, true, []string{"intel-rapl:0"}}},
			reason: []string{"no long-term limit and no maximum"},
		},
		{
			name:  "psys between packages: the package number comes from the name",
			zones: []rapltest.Zone{xeon(rapltest.MSR, 0, 0), psys, xeon(rapltest.MSR, 2, 1)},
			want:  []pkgSummary{intel(0, "intel-rapl:0"), intel(1, "intel-rapl:2")},
		},
		{
			name:  "multi-die packages group their dies",
			zones: []rapltest.Zone{die(0, 0, 0), die(1, 0, 1), die(2, 1, 0), die(3, 1, 1)},
			want: []pkgSummary{
				{0, "intel-rapl:0", InterfaceMSR, "sys/class/powercap/intel-rapl:0", 0, 350_000_000, 350_000_000, 0,
					rapltest.EnergyRangeIntelUJ, true, true, true, []string{"intel-rapl:0", "intel-rapl:1"}},
				{1, "intel-rapl:2", InterfaceMSR, "sys/class/powercap/intel-rapl:2", 0, 350_000_000, 350_000_000, 0,
					rapltest.EnergyRangeIntelUJ, true, true, true, []string{"intel-rapl:2", "intel-rapl:3"}},
			},
		},
		{
			name:     "two zones claiming the same package",
			zones:    []rapltest.Zone{xeon(rapltest.MSR, 0, 0), xeon(rapltest.MSR, 1, 0)},
			want:     []pkgSummary{intel(0, "intel-rapl:0")},
			warnings: []string{`intel-rapl:0 and intel-rapl:1 are both named "package-0"`},
		},
		{
			name:     "no RAPL at all",
			warnings: []string{"no RAPL package zones"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			rapltest.Write(t, root, tc.zones...)
			pkgs, warnings := Discover(sysfs.New(root))
			if got := summarize(pkgs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("packages:\n got %+v\nwant %+v", got, tc.want)
			}
			for i, r := range tc.reason {
				if i < len(pkgs) && !strings.Contains(pkgs[i].LimitsReason, r) {
					t.Errorf("package %d reason %q, want it to mention %q", pkgs[i].ID, pkgs[i].LimitsReason, r)
				}
			}
			if tc.reason == nil {
				for _, p := range pkgs {
					if p.LimitsReason != "" {
						t.Errorf("package %d: unexpected reason %q", p.ID, p.LimitsReason)
					}
				}
			}
			checkWarnings(t, warnings, tc.warnings)
		})
	}
}

func TestDiscoverSkipsUnreadableZoneWithWarning(t *testing.T) {
	root := t.TempDir()
	rapltest.TwoSocketXeon(t, root, 270)
	if err := os.Remove(filepath.Join(root, rapltest.ClassDir("intel-rapl:1"), "name")); err != nil {
		t.Fatal(err)
	}
	pkgs, warnings := Discover(sysfs.New(root))
	if len(pkgs) != 1 || pkgs[0].Zone != "intel-rapl:0" {
		t.Errorf("packages %+v", summarize(pkgs))
	}
	checkWarnings(t, warnings, []string{"powercap zone intel-rapl:1"})
}

func TestFixtureIsLaidOutLikeSysfs(t *testing.T) {
	root := t.TempDir()
	rapltest.Write(t, root, rapltest.XeonPackage(rapltest.MSR, 0, 0, 270), rapltest.XeonPackage(rapltest.MMIO, 0, 0, 270))
	for link, target := range map[string]string{
		"sys/class/powercap/intel-rapl":        "../../devices/virtual/powercap/intel-rapl",
		"sys/class/powercap/intel-rapl:0":      "../../devices/virtual/powercap/intel-rapl/intel-rapl:0",
		"sys/class/powercap/intel-rapl:0:0":    "../../devices/virtual/powercap/intel-rapl/intel-rapl:0/intel-rapl:0:0",
		"sys/class/powercap/intel-rapl-mmio:0": "../../devices/virtual/powercap/intel-rapl-mmio/intel-rapl-mmio:0",
	} {
		got, err := os.Readlink(filepath.Join(root, link))
		if err != nil || got != target {
			t.Errorf("%s -> %q (%v), want %q", link, got, err, target)
		}
	}
	for file, mode := range map[string]os.FileMode{
		"intel-rapl:0/name":                        0o444,
		"intel-rapl:0/enabled":                     0o644,
		"intel-rapl:0/energy_uj":                   0o400,
		"intel-rapl:0/constraint_0_power_limit_uw": 0o644,
		"intel-rapl:0/constraint_0_max_power_uw":   0o444,
		"intel-rapl:0:0/name":                      0o444,
	} {
		st, err := os.Stat(filepath.Join(root, "sys/class/powercap", file))
		if err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: %v, %v; want mode %v", file, st, err, mode)
		}
	}
	sub, err := os.Stat(filepath.Join(root, "sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/intel-rapl:0:0/subsystem"))
	if err != nil || !sub.IsDir() {
		t.Errorf("subzone subsystem link does not resolve to the class directory: %v", err)
	}
	if got := rapltest.Attr(t, root, "intel-rapl:0:0", "name"); got != "dram" {
		t.Errorf("subzone name %q", got)
	}
}

// checkWarnings wants each substring in its own warning, in order, and no
// other warnings.
func checkWarnings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("warnings %q, want %d matching %q", got, len(want), want)
		return
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("warning %d = %q, want it to mention %q", i, got[i], want[i])
		}
	}
}

func TestCurrentLimitsRereadsOnlyTheLimits(t *testing.T) {
	root := t.TempDir()
	rapltest.TwoSocketXeon(t, root, 350)
	fs := sysfs.New(root)
	pkgs, _ := Discover(fs)
	rapltest.SetAttr(t, root, "intel-rapl:1", "constraint_0_power_limit_uw", "200000000")

	cur, err := CurrentLimits(fs, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Discover(fs)
	if !reflect.DeepEqual(cur, again) {
		t.Fatalf("current limits %+v\ndiffer from a new discovery %+v", summarize(cur), summarize(again))
	}
	if pkgs[1].LimitUW != 350_000_000 || pkgs[1].Zones[0].LimitUW != 350_000_000 {
		t.Fatalf("the discovered packages were changed in place: %+v", pkgs[1])
	}

	rapltest.Remove(t, root, "intel-rapl:1")
	if _, err := CurrentLimits(fs, pkgs); err == nil || !strings.Contains(err.Error(), "package 1 (intel-rapl:1)") {
		t.Fatalf("a zone that went away must be an error naming it, got %v", err)
	}
}
