package amdsmi

import (
	"context"
	"math"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/podenergy"
	"joulie.io/joulie/agentd/internal/podmeter"
)

// The per-pod energy meter fed from this backend as the agent feeds it:
// each tick's GPU list, as GPUs() returns it, in the tick's snapshot.

var train = podenergy.Key{Namespace: "ml", Name: "train"}

// deviceKubelet answers as the kubelet does on a node with the AMD device
// plugin, which names a GPU by its PCI address.
type deviceKubelet struct{ holders map[string][]podenergy.Claim }

func (k deviceKubelet) Devices(context.Context) (podmeter.Devices, bool, string) {
	return podmeter.Devices{Pods: []podenergy.Key{train}, Holders: k.holders}, true, "connected"
}

// meteredHost ticks a meter with the GPU list of an amd-smi GPU backend.
type meteredHost struct {
	t     *testing.T
	gpus  *GPUCapper
	snap  agent.Snapshot
	meter *podmeter.Meter
}

func newMeteredHost(t *testing.T, l *Library) *meteredHost {
	j, _ := openJournal(t)
	h := &meteredHost{t: t, gpus: NewGPUCapper(l, j)}
	h.meter = podmeter.New(podmeter.Options{
		Snapshot: func() agent.Snapshot { return h.snap },
		Kubelet: deviceKubelet{map[string][]podenergy.Claim{
			"0000:c1:00.0": {{Pod: train, Container: "trainer", Replicas: 1}},
		}},
	})
	return h
}

// tick reads the GPUs at t0 + s seconds and lets the meter observe it.
// The fake's counters run one second of draw per read, so ticks one
// second apart see the energy the draw says.
func (h *meteredHost) tick(s int) {
	h.t.Helper()
	gpus, err := h.gpus.GPUs()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, g := range gpus {
		if !g.HasEnergy {
			h.t.Fatalf("GPU %d has no energy reading", g.Index)
		}
	}
	h.snap.LastReconcile = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC).Add(time.Duration(s) * time.Second)
	h.snap.GPUs = gpus
	h.meter.Observe(context.Background())
}

func (h *meteredHost) pod(k podenergy.Key) podenergy.PodEnergy {
	h.t.Helper()
	for _, p := range h.meter.Pods() {
		if p.Key == k {
			return p
		}
	}
	h.t.Fatalf("no pod %s in %+v", k, h.meter.Pods())
	return podenergy.PodEnergy{}
}

func TestMeterGivesAmdSmiGPUEnergyToThePodHoldingIt(t *testing.T) {
	h := newMeteredHost(t, openFake(t, "full"))
	for s := range 3 {
		h.tick(s)
	}
	// GPU 0 (0000:c1:00.0) draws 212 W and is train's: two seconds of it,
	// measured by its counter. GPU 1 draws 431 W and nobody holds it.
	p := h.pod(train)
	if math.Abs(p.GPUJoules-424) > 1e-3 || p.GPUEstimated {
		t.Errorf("train: %v J (estimated %v), want 424 J measured", p.GPUJoules, p.GPUEstimated)
	}
	u, resets := h.meter.Unattributed()
	if got := u["85ff74a1-0000-1000-8000-000000000002"]; math.Abs(got-862) > 1e-3 || resets != 0 {
		t.Errorf("unattributed %v, %d resets; want GPU 1's 862 J and none", u, resets)
	}
}

func TestAmdSmiCounterWrapAndResetGiveNoNegativeOrDoubledEnergy(t *testing.T) {
	l := openFake(t, "full")
	h := newMeteredHost(t, l)
	counts := fakeVar[[2]uint64](t, l, "fake_energy_count")
	// A 32-bit accumulator, as older parts had, a little short of
	// wrapping: one second of 212 W (13.9 M counts) takes it past 2^32.
	*fakeVar[uint32](t, l, "fake_energy_counter_bits") = 32
	counts[0] = 1<<32 - 5_000_000

	h.tick(0)
	h.tick(1) // wrapped: the counter reads less than before
	h.tick(2)
	counts[0] = 0 // the driver reloaded
	h.tick(3)
	h.tick(4)

	// Four seconds at 212 W. Over the wrap and over the reload the draw
	// stands in for the counter, so the figure says it is partly
	// estimated; the other two seconds are counted.
	p := h.pod(train)
	if math.Abs(p.GPUJoules-848) > 1e-3 || !p.GPUEstimated {
		t.Errorf("train: %v J (estimated %v), want 848 J, partly estimated", p.GPUJoules, p.GPUEstimated)
	}
	if _, resets := h.meter.Unattributed(); resets != 2 {
		t.Errorf("%d counter resets seen, want 2 (the wrap and the reload)", resets)
	}
}
