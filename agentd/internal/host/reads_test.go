package host

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"

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

// A tick lists the GPUs once: enforcement, the measured power and the
// NodeHardware published after the tick share the list, and the list
// carries the limits the tick set.
func TestATickEnumeratesTheGPUsOnce(t *testing.T) {
	root, dgx := xeonDGX(t)
	c := newClock()
	h := open(t, root, t.TempDir(), dgx, c)
	defer h.Close()
	enumerations := func() int { return len(dgx.Server.DeviceGetCountCalls()) }
	gpuCaps := func(hw joulie.NodeHardwareStatus) []float64 {
		var out []float64
		for _, d := range hw.GPU.Devices {
			out = append(out, *d.CurrentCapWatts)
		}
		return out
	}

	for tick, want := range []struct {
		spec  *joulie.NodePowerProfileSpec
		watts float64
	}{
		{ptr.To(eco(60)), 420}, {ptr.To(eco(60)), 420}, {nil, 420}, // nil: paused, measure only
		{&joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance}, 700}, {ptr.To(eco(80)), 560},
	} {
		before := enumerations()
		r := h.Enforce(c.now(), want.spec)
		hw := h.Hardware(c.now())
		n := enumerations() - before
		if caps := gpuCaps(hw); len(caps) != 8 || caps[0] != want.watts || caps[7] != want.watts {
			t.Fatalf("tick %d: published GPU limits %v, want %g W", tick, caps, want.watts)
		}
		if !r.Power.HasGPU {
			t.Fatalf("tick %d: no GPU power measured", tick)
		}
		// Lifting the caps restores the originals behind the list's back,
		// so the publish after that tick lists again.
		wantN := 1
		if tick == 3 {
			wantN = 2
		}
		if n != wantN {
			t.Fatalf("tick %d enumerated the GPUs %d times, want %d", tick, n, wantN)
		}
		c.step(5 * time.Second)
	}
}
