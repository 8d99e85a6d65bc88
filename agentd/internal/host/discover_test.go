package host

import (
	"testing"

	"joulie.io/joulie/agentd/internal/nvml"
	"joulie.io/joulie/agentd/internal/rapl"
	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// RAPL zones are discovered once, at Open: a publish only reads their
// limits again, and discovers again only when a zone has gone away.
func TestRAPLIsDiscoveredAtOpenAndAgainOnlyWhenAZoneGoes(t *testing.T) {
	root, dgx := xeonDGX(t)
	c := newClock()
	discoveries := 0
	h, err := Open(Config{Root: root, StateDir: t.TempDir(), AMDSMILibraryPath: Skip, Now: c.now,
		OpenNVML: func(j *state.Journal) *nvml.Backend { return nvml.New(nvml.Wrap(dgx.Server), j) },
		DiscoverRAPL: func(fs *sysfs.FS) ([]rapl.Package, []string) {
			discoveries++
			return rapl.Discover(fs)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if discoveries != 1 {
		t.Fatalf("Open discovered RAPL %d times, want 1", discoveries)
	}

	limits := func(hw joulie.NodeHardwareStatus) []float64 {
		var out []float64
		for _, p := range hw.CPU.Packages {
			out = append(out, *p.CurrentCapWatts)
		}
		return out
	}
	for tick := range 5 {
		apply(h, c.now(), eco(60))
		if got := limits(h.Hardware(c.now())); len(got) != 2 || got[0] != 210 || got[1] != 210 {
			t.Fatalf("tick %d: published limits %v, want the 210 W in force", tick, got)
		}
	}
	if discoveries != 1 {
		t.Fatalf("5 publishes discovered RAPL %d more times, want none", discoveries-1)
	}

	rapltest.Remove(t, root, "intel-rapl:1") // its driver unloaded
	for range 3 {
		if got := limits(h.Hardware(c.now())); len(got) != 1 {
			t.Fatalf("published limits %v after intel-rapl:1 went, want package 0's only", got)
		}
	}
	if discoveries != 2 {
		t.Fatalf("RAPL discovered %d times, want 2: once at Open, once when intel-rapl:1 went", discoveries)
	}
}
