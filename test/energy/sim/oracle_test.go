package sim

import (
	"math"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/workload"
)

// With its caps forced to 100% the oracle is arm a: the same placements,
// the same power at every step, the same energy.
func TestOracleUncappedReproducesDefault(t *testing.T) {
	nodes, jobs := smallRun(t, 6, 300)
	a := run(t, ArmDefault, nodes, jobs, Options{Seed: 6})
	f := run(t, ArmOracle, nodes, jobs, Options{Seed: 6, OracleUncapped: true})
	if a.EnergyJ != f.EnergyJ || a.Makespan != f.Makespan || len(a.Power) != len(f.Power) {
		t.Fatalf("energy %g J / %g J, makespan %s / %s, %d / %d power steps", a.EnergyJ, f.EnergyJ, a.Makespan, f.Makespan, len(a.Power), len(f.Power))
	}
	for i := range a.Jobs {
		if a.Jobs[i] != f.Jobs[i] {
			t.Fatalf("job %d: %+v in arm a, %+v in the uncapped oracle", i, a.Jobs[i], f.Jobs[i])
		}
	}
	for i := range a.Power {
		if a.Power[i] != f.Power[i] {
			t.Fatalf("power step %d: %+v in arm a, %+v in the uncapped oracle", i, a.Power[i], f.Power[i])
		}
	}
}

// On the same job list the oracle uses less energy than arm a over their
// common window, runs every performance job at full speed, and runs each
// standard job for exactly its work times the stretch of the cap the
// physics says minimises its energy.
func TestOracleSavesEnergyWithoutSlowingPerformanceJobs(t *testing.T) {
	m := physics.Default()
	for _, seed := range []int64{1, 2, 7} {
		nodes, jobs := smallRun(t, seed, 300)
		a := run(t, ArmDefault, nodes, jobs, Options{Seed: seed})
		f := run(t, ArmOracle, nodes, jobs, Options{Seed: seed})
		window := max(a.Makespan, f.Makespan)
		ea, ef := integrate(a.Power, window), integrate(f.Power, window)
		if ef >= ea {
			t.Errorf("seed %d: the oracle drew %.1f kWh, arm a %.1f kWh over the same %s", seed, ef/3.6e6, ea/3.6e6, window)
		}
		byName := map[string]workload.Node{}
		for _, n := range nodes {
			byName[n.Name] = n
		}
		capped := 0
		for _, j := range f.Jobs {
			ran := j.End - j.Start
			if j.Class == string(workload.Performance) {
				// The simulator rounds a completion up by 1 ns.
				if ran > j.Work+time.Nanosecond {
					t.Errorf("seed %d: performance job %s ran %s for %s of work", seed, j.ID, ran, j.Work)
				}
				continue
			}
			n := byName[j.Node]
			host := m.CPUNode
			if n.GPUs > 0 {
				host = m.GPUNode.Host
			}
			b := physics.Boundness(j.Boundness)
			u := m.Class(b).Utilization
			shares := []physics.Share{physics.CPUShare(host, float64(j.CPUMilli)/float64(n.CPUMilli), u)}
			if j.GPUs > 0 {
				shares = append(shares, m.GPUShare(j.GPUs, u))
			}
			c := m.MinEnergyCap(b, shares...)
			if c < 1 {
				capped++
			}
			want := float64(j.Work) * m.Stretch(b, c)
			if math.Abs(float64(ran)-want) > 2 {
				t.Errorf("seed %d: standard %s job %s ran %s for %s of work; at cap %v it should run %s", seed, b, j.ID, ran, j.Work, c, time.Duration(want))
			}
		}
		if capped == 0 {
			t.Errorf("seed %d: no standard job was capped", seed)
		}
	}
}

// One standard job alone on a node: its draw, worked out by hand from the
// physics, holds for its stretched runtime.
func TestOracleNodePowerOfOneJob(t *testing.T) {
	for _, tc := range []struct {
		name     string
		node     workload.Node
		job      workload.Job
		watts    float64
		duration time.Duration
	}{
		{
			// Host: 8 of 224 CPUs busy, load 1/28, 128 + 1290 / 28 =
			// 174.0714 W; the job's slice draws like a full node, so the
			// floor cuts 408.5 of its 689 W above idle: 46.0714 × (1 −
			// 408.5 / 689) = 18.7564 W above idle remain. GPUs: the job's
			// at 50% of 700 W, seven idle at 70 W.
			name:     "gpu-compute on a GPU node",
			node:     workload.StandardCluster(0, 1)[0],
			job:      workload.Job{ID: "g", Class: workload.Standard, Boundness: physics.GPUCompute, CPUMilli: 8000, MemoryMiB: 1024, GPUs: 1, Work: time.Hour},
			watts:    128 + 18.7564 + 350 + 7*70,
			duration: 75 * time.Minute, // 1.25 × 1 h at the floor
		},
		{
			// 96 of 384 CPUs at utilization 0.8: load 0.2, 257 + 382.5 ×
			// 0.1 = 295.25 W, 167.25 W above idle; the slice's natural
			// 654.2 W (526.2 above idle) is cut to 408.5 (280.5 above
			// idle): 167.25 × 280.5 / 526.2 = 89.1553 W remain.
			name:     "cpu-memory on a CPU node",
			node:     workload.StandardCluster(1, 0)[0],
			job:      workload.Job{ID: "c", Class: workload.Standard, Boundness: physics.CPUMemory, CPUMilli: 96000, MemoryMiB: 1024, Work: time.Hour},
			watts:    128 + 89.1553,
			duration: 63*time.Minute + 45*time.Second, // 1.0625 × 1 h
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, ArmOracle, []workload.Node{tc.node}, []workload.Job{tc.job}, Options{Seed: 1, SeedWindow: -1})
			if len(r.Power) != 2 || r.Power[0].T != 0 || math.Abs(r.Power[0].Watts-tc.watts) > 1e-3 {
				t.Fatalf("power %+v, want %.4f W from 0 until the job ends, then idle", r.Power, tc.watts)
			}
			if ran := r.Jobs[0].End - r.Jobs[0].Start; ran-tc.duration > time.Microsecond || tc.duration-ran > 0 {
				t.Errorf("job ran %s, want %s", ran, tc.duration)
			}
			if want := tc.watts * r.Makespan.Seconds(); math.Abs(r.EnergyJ-want) > 1e-3*want/tc.watts {
				t.Errorf("energy %.1f J, want %.1f J", r.EnergyJ, want)
			}
		})
	}
}
