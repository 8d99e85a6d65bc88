package sim

import (
	"math"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/workload"
)

// With their caps forced to 100% both oracles are bin-packing with
// foresight power-off: the same placements and completion times as arm b,
// the same power as each other, and never more energy than b.
func TestOracleUncappedIsBinPackingWithForesight(t *testing.T) {
	nodes, jobs := smallRun(t, 6, 300)
	b := run(t, ArmBinPack, nodes, jobs, Options{Seed: 6})
	phys := run(t, ArmOraclePhysical, nodes, jobs, Options{Seed: 6, OracleUncapped: true})
	ideal := run(t, ArmOracle, nodes, jobs, Options{Seed: 6, OracleUncapped: true})
	for i := range b.Jobs {
		if b.Jobs[i] != phys.Jobs[i] || b.Jobs[i] != ideal.Jobs[i] {
			t.Fatalf("job %d: %+v in arm b, %+v and %+v in the uncapped oracles", i, b.Jobs[i], phys.Jobs[i], ideal.Jobs[i])
		}
	}
	if phys.EnergyJ != ideal.EnergyJ || len(phys.Power) != len(ideal.Power) {
		t.Fatalf("uncapped oracles differ: %g J / %g J, %d / %d steps", phys.EnergyJ, ideal.EnergyJ, len(phys.Power), len(ideal.Power))
	}
	if phys.EnergyJ > b.EnergyJ {
		t.Errorf("foresight power-off drew %g J, more than bin-packing's %g J", phys.EnergyJ, b.EnergyJ)
	}
	if phys.Boots == 0 || phys.Shutdowns == 0 {
		t.Errorf("the oracle switched %d nodes off and booted %d: its power states did nothing", phys.Shutdowns, phys.Boots)
	}
}

// On the same job list each oracle uses less energy per unit of work than
// bin-packing, runs every performance job at full speed, and never makes
// a pod wait for a boot.
func TestOraclesSaveEnergyWithoutSlowingPerformanceJobs(t *testing.T) {
	for _, seed := range []int64{1, 2, 7} {
		nodes, jobs := smallRun(t, seed, 300)
		b := run(t, ArmBinPack, nodes, jobs, Options{Seed: seed})
		perWork := func(r Result) float64 { return r.EnergyJ / r.CoreHours }
		for _, arm := range []Arm{ArmOraclePhysical, ArmOracle} {
			f := run(t, arm, nodes, jobs, Options{Seed: seed})
			if perWork(f) >= perWork(b) {
				t.Errorf("seed %d %s: %.1f J per core-hour, bin-packing %.1f", seed, arm, perWork(f), perWork(b))
			}
			capped := 0
			for _, j := range f.Jobs {
				ran := j.End - j.Start
				if j.Start != j.Arrival && j.BootWait != 0 {
					t.Errorf("seed %d %s: job %s waited for a boot", seed, arm, j.ID)
				}
				if ran > j.Work+time.Nanosecond {
					if j.Class == string(workload.Performance) {
						t.Errorf("seed %d %s: performance job %s ran %s for %s of work", seed, arm, j.ID, ran, j.Work)
					}
					capped++
				}
			}
			if capped == 0 {
				t.Errorf("seed %d %s: no standard job was slowed by a cap", seed, arm)
			}
		}
	}
}

// One standard GPU job alone on a GPU node: the physical oracle caps its
// GPU at the cap the physics says minimises its energy, the node draws
// that GPU's capped draw beside the idle ones and the uncapped host, and
// the job runs its work times that cap's stretch.
func TestOracleNodePowerOfOneGPUJob(t *testing.T) {
	m := physics.Default()
	node := workload.StandardCluster(0, 1)[0]
	job := workload.Job{ID: "g", Class: workload.Standard, Boundness: physics.GPUCompute, CPUMilli: 8000, MemoryMiB: 1024, GPUs: 1, Work: time.Hour}
	gpu := m.GPUDevice(1, 1)
	c := m.MinEnergyCap(physics.GPUCompute, gpu)
	if c >= 1 {
		t.Fatalf("the physics caps a compute-bound H100 at %v: nothing to test", c)
	}
	watts := m.GPUNode.Host.At(8.0/224) + m.Draw(gpu, c) + 7*m.GPUNode.GPUIdleWatts
	ran := time.Duration(float64(time.Hour) * m.Stretch(physics.GPUCompute, gpu, c))
	r := run(t, ArmOraclePhysical, []workload.Node{node}, []workload.Job{job}, Options{Seed: 1, SeedWindow: -1})
	if got := r.Jobs[0].End - r.Jobs[0].Start; got-ran > time.Microsecond || ran-got > time.Microsecond {
		t.Errorf("job ran %s, want %s", got, ran)
	}
	if e := energyOver(r.Power, 0, ran); math.Abs(e-watts*ran.Seconds()) > 1e-6*e {
		t.Errorf("energy while the job ran %.1f J, want %.1f W for %s", e, watts, ran)
	}
}
