package rapltest_test

import (
	"errors"
	"testing"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/cpuinfo"
	"joulie.io/joulie/agentd/internal/cpuinfo/cpuinfotest"
	"joulie.io/joulie/agentd/internal/rapl"
	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
)

// TestTwoSocketEPYCHost builds the whole CPU side of a host, as the
// enforcement tests do: topology and cpuinfo from cpuinfotest, powercap
// zones from rapltest, under one root.
func TestTwoSocketEPYCHost(t *testing.T) {
	root := t.TempDir()
	cpuinfotest.Write(t, root, cpuinfotest.EPYC2S())
	rapltest.TwoSocketEPYC(t, root)
	fs := sysfs.New(root)

	info, warnings, err := cpuinfo.Discover(fs)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("cpuinfo: %v, %q", err, warnings)
	}
	if info.LogicalCPUs != 192 || info.Sockets != 2 || info.Vendor != "AuthenticAMD" {
		t.Fatalf("cpuinfo: %+v", info)
	}
	pkgs, warnings := rapl.Discover(fs)
	if len(pkgs) != 2 || len(warnings) != 0 {
		t.Fatalf("rapl: %d packages, %q", len(pkgs), warnings)
	}
	j, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &rapltest.Writer{}
	c, err := rapl.NewCapper(fs.WithWriter(w), j, pkgs, rapl.Options{Vendor: info.Vendor})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetPackageCap(0, 216); !errors.Is(err, backend.ErrBlocked) {
		t.Fatalf("EPYC cap: %v", err)
	}
	if w.Count() != 0 {
		t.Fatalf("%d writes", w.Count())
	}
}

func TestTwoSocketXeonHost(t *testing.T) {
	root := t.TempDir()
	cpuinfotest.Write(t, root, cpuinfotest.Xeon2S())
	zones := rapltest.TwoSocketXeon(t, root, 205)
	pkgs, _ := rapl.Discover(sysfs.New(root))
	if len(pkgs) != len(zones) || !pkgs[1].LimitsWritable || pkgs[1].MaxWatts() != 205 {
		t.Fatalf("rapl: %+v", pkgs)
	}
}
