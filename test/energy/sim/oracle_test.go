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
