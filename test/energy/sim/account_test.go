package sim

import (
	"math"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/workload"
)

// energyOver integrates a power series over [from, to) the plain way, one
// step at a time, the last step holding until to: the test's own
// arithmetic, apart from the simulator's.
func energyOver(power []Sample, from, to time.Duration) float64 {
	var e float64
	for i, p := range power {
		next := to
		if i+1 < len(power) {
			next = power[i+1].T
		}
		lo, hi := max(p.T, from), min(next, to)
		if hi > lo {
			e += p.Watts * (hi - lo).Seconds()
		}
	}
	return e
}

func cpuJob(id string, arrival time.Duration, cpus int64, work time.Duration) workload.Job {
	return workload.Job{ID: id, Arrival: arrival, Class: workload.Standard, Boundness: physics.CPUCompute,
		CPUMilli: cpus * 1000, MemoryMiB: 1024, Work: work}
}

// The window's energy is the integral of the reported power over the
// window, and its parts add up to it, in every arm.
func TestWindowEnergyIsTheIntegralOfPower(t *testing.T) {
	nodes, jobs := smallRun(t, 2, 300)
	w := Window{Start: 30 * time.Minute, End: 3 * time.Hour}
	for _, spec := range ArmSpecs {
		r := run(t, spec.Arm, nodes, jobs, Options{Seed: 2, Window: w})
		if r.Window != w {
			t.Fatalf("%s: window %+v, want %+v", spec.Arm, r.Window, w)
		}
		want := energyOver(r.Power, w.Start, w.End)
		if math.Abs(r.EnergyJ-want) > 1e-9*want {
			t.Errorf("%s: window energy %.6g J, the power series integrates to %.6g J", spec.Arm, r.EnergyJ, want)
		}
		if p := r.EnergyParts.Total(); math.Abs(p-r.EnergyJ) > 1e-9*r.EnergyJ {
			t.Errorf("%s: parts %+v add up to %.6g J, the energy is %.6g J", spec.Arm, r.EnergyParts, p, r.EnergyJ)
		}
		for _, s := range r.Power {
			if math.Abs(s.Parts.Total()-s.Watts) > 1e-9*s.Watts {
				t.Fatalf("%s: sample %+v: parts do not add up to the watts", spec.Arm, s)
			}
		}
	}
}

// Work is the progress made inside the window: a job running across an
// edge counts only the part done inside, and the allocation is measured
// the same way.
func TestWorkInsideTheWindowSplitsJobsAtItsEdges(t *testing.T) {
	nodes := workload.StandardCluster(1, 0)
	jobs := []workload.Job{
		cpuJob("before-and-in", 0, 10, 2*time.Hour),              // 1 h inside
		cpuJob("inside", 90*time.Minute, 20, 30*time.Minute),     // all inside
		cpuJob("in-and-after", 150*time.Minute, 40, 2*time.Hour), // 30 min inside
		cpuJob("after", 4*time.Hour, 80, time.Hour),              // none
		cpuJob("before", 0, 30, 30*time.Minute),                  // none
	}
	w := Window{Start: time.Hour, End: 3 * time.Hour}
	r := run(t, ArmBinPack, nodes, jobs, Options{Seed: 1, Window: w})
	if want := 10*1.0 + 20*0.5 + 40*0.5; math.Abs(r.CoreHours-want) > 1e-9 {
		t.Errorf("core-hours inside the window %g, want %g", r.CoreHours, want)
	}
	if r.GPUHours != 0 {
		t.Errorf("GPU-hours %g on a CPU node", r.GPUHours)
	}
	// Requested CPU-hours inside the window over the node's 384 CPUs for
	// its 2 h.
	if want := (10*1.0 + 20*0.5 + 40*0.5) / (384 * 2); math.Abs(r.AllocCPU-want) > 1e-9 {
		t.Errorf("allocated CPU share %g, want %g", r.AllocCPU, want)
	}
}

// A job slowed by a cap is credited at its slowed rate: inside a window
// that its stretched run covers, it does less than full-speed work.
func TestAStretchedJobCreditsLessWork(t *testing.T) {
	nodes := workload.StandardCluster(1, 0)
	// 384 CPUs of cpu-compute saturate the node; the oracle's physical
	// package cap binds there and slows it.
	jobs := []workload.Job{cpuJob("all", 0, 384, 10*time.Hour)}
	w := Window{Start: time.Hour, End: 2 * time.Hour}
	b := run(t, ArmBinPack, nodes, jobs, Options{Seed: 1, Window: w})
	f := run(t, ArmOraclePhysical, nodes, jobs, Options{Seed: 1, Window: w})
	if b.CoreHours != 384 {
		t.Errorf("uncapped: %g core-hours in one hour of 384 CPUs", b.CoreHours)
	}
	ran := f.Jobs[0].End - f.Jobs[0].Start
	want := 384 * float64(10*time.Hour) / float64(ran)
	if f.CoreHours >= b.CoreHours || math.Abs(f.CoreHours-want) > 1e-6*want {
		t.Errorf("capped: %g core-hours in the hour, want %g (the job ran %s for 10 h of work)", f.CoreHours, want, ran)
	}
}
