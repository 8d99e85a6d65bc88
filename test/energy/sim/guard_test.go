package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"testing"
)

// resultHash digests everything a run reports: each job's node, profile,
// start and end, the power series, the energy (to the bit) and the seed
// method's pass.
func resultHash(r Result) string {
	h := sha256.New()
	f := func(v float64) { _ = binary.Write(h, binary.LittleEndian, math.Float64bits(v)) }
	fmt.Fprintf(h, "%s %d %s %d %d %d %s %s %d\n", r.Arm, r.Seed, r.JobsHash, r.Nodes, r.CPUNodes, r.GPUNodes, r.Makespan, r.Window, r.PerfOnEcoOrDraining)
	for _, j := range r.Jobs {
		fmt.Fprintf(h, "%+v\n", j)
	}
	for _, p := range r.Power {
		fmt.Fprintf(h, "%d ", p.T)
		f(p.Watts)
	}
	f(r.EnergyJ)
	if m := r.SeedMethod; m != nil {
		fmt.Fprintf(h, "%s %d %d ", m.Window, m.Accepted, m.Dropped)
		f(m.EnergyJ)
		f(m.AcceptedCoreHours)
		f(m.AcceptedGPUHours)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// The simulator's speed work must not change a single result: these
// digests were taken from the code before it (the commit that added this
// test, with the agent's publication in, a node's jobs in a fixed order,
// and pending performance pods counted only once they have arrived), for
// every arm on a small configuration of two seeds. A change that is meant
// to change results updates them and says why in its commit.
func TestResultsUnchangedBySpeedWork(t *testing.T) {
	want := map[string]string{
		"a-default/6":       "791dc856146bec8e",
		"b-binpack/6":       "358944e481121e3b",
		"c-static/6":        "f0d090cc8a7a03f6",
		"d-queue-aware/6":   "0d2d4f4994de2aa5",
		"e-joulie-nocaps/6": "5e082614c388e47b",
		"f-oracle/6":        "e78589040d9dd08f",
		"a-default/7":       "92dd04d85fa0a071",
		"b-binpack/7":       "9a5eb8d89970d287",
		"c-static/7":        "a707f4005cfc7333",
		"d-queue-aware/7":   "755b202023a57051",
		"e-joulie-nocaps/7": "6697772e13affe6c",
		"f-oracle/7":        "cd1d3c0d64a3f188",
	}
	for _, seed := range []int64{6, 7} {
		nodes, jobs := smallRun(t, seed, 600)
		for _, arm := range []Arm{ArmDefault, ArmBinPack, ArmStatic, ArmQueueAware, ArmNoCaps, ArmOracle} {
			r := run(t, arm, nodes, jobs, Options{Seed: seed})
			key := fmt.Sprintf("%s/%d", arm, seed)
			if got := resultHash(r); got != want[key] {
				t.Errorf("%s: results digest %s, want %s", key, got, want[key])
			}
		}
	}
}
