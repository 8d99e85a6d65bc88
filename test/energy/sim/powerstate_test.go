package sim

import (
	"math"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/workload"
)

// Two CPU nodes, one job on one of them: under the autoscaler's rules the
// other is switched off IdleOffAfter after the start, through its
// shutdown, and the busy one once its job has been gone as long; a job
// arriving later wakes one of them.
func TestPowerOffSwitchesEmptyNodesOff(t *testing.T) {
	m := physics.Default()
	nodes := workload.StandardCluster(2, 0)
	jobs := []workload.Job{cpuJob("one", 0, 8, time.Hour), cpuJob("late", 3*time.Hour, 8, time.Minute)}
	r := run(t, ArmPowerOff, nodes, jobs, Options{Seed: 1})
	if r.Shutdowns != 2 || r.Boots != 1 {
		t.Errorf("%d shutdowns and %d boots, want 2 and 1", r.Shutdowns, r.Boots)
	}
	at := func(t0 time.Duration) Parts {
		var p Parts
		for _, s := range r.Power {
			if s.T <= t0 {
				p = s.Parts
			}
		}
		return p
	}
	if p := at(IdleOffAfter + time.Second); p.Booting != m.Power.ShutdownWatts || p.Off != 0 {
		t.Errorf("during the idle node's shutdown: %+v", p)
	}
	if p := at(IdleOffAfter + m.Power.Shutdown); p.Off != m.Power.OffWatts || p.IdleAwake != m.CPUNode.Idle() {
		t.Errorf("once it is off: %+v", p)
	}
	// The first job runs until 1 h (and 1 ns); its node goes off 10 min
	// later.
	if p := at(time.Hour + IdleOffAfter + m.Power.Shutdown + time.Second); p.Off != 2*m.Power.OffWatts || p.IdleAwake != 0 {
		t.Errorf("both off: %+v", p)
	}
	if p := at(3*time.Hour + time.Second); p.Booting != m.Power.BootWatts || p.Off != m.Power.OffWatts {
		t.Errorf("booting for the late job: %+v", p)
	}
	if late := r.Jobs[1]; late.Start != late.Arrival+m.Power.Boot {
		t.Errorf("the late job started %s after it arrived, want the boot's %s", late.Start-late.Arrival, m.Power.Boot)
	}
}

// A pod that fits on no awake node wakes an off one and waits for its
// boot; with foresight the oracle has the node Ready as the pod arrives,
// and pays the boot before it.
func TestAPodThatFitsNoAwakeNodeWaitsForABoot(t *testing.T) {
	m := physics.Default()
	nodes := workload.StandardCluster(2, 0)
	jobs := []workload.Job{
		cpuJob("first", 0, 300, 4*time.Hour),
		cpuJob("second", 2*time.Hour, 300, time.Hour), // fits only on the node switched off at 10 min
	}
	jobs[1].Class = workload.Performance
	g := run(t, ArmPowerOff, nodes, jobs, Options{Seed: 1})
	second := g.Jobs[1]
	if wait := second.Start - second.Arrival; wait != m.Power.Boot || second.BootWait != m.Power.Boot {
		t.Errorf("waited %s (for a boot %s), want the boot's %s", wait, second.BootWait, m.Power.Boot)
	}
	if g.PerfBootWaits != 1 || g.Boots != 1 {
		t.Errorf("%d performance boot waits and %d boots, want 1 and 1", g.PerfBootWaits, g.Boots)
	}
	f := run(t, ArmOraclePhysical, nodes, jobs, Options{Seed: 1, OracleUncapped: true})
	second = f.Jobs[1]
	if second.Start != second.Arrival || second.BootWait != 0 || f.PerfBootWaits != 0 {
		t.Errorf("the oracle's job waited %s (for a boot %s)", second.Start-second.Arrival, second.BootWait)
	}
	// The second node: shut down at 0, off, booted to be Ready at 2 h,
	// and shut down again when its job ends at 3 h (the first node's job
	// ends the run).
	var booting time.Duration
	for i, s := range f.Power {
		if s.Parts.Booting > 0 && i+1 < len(f.Power) {
			booting += f.Power[i+1].T - s.T
		}
	}
	if want := 2*m.Power.Shutdown + m.Power.Boot; booting != want {
		t.Errorf("the oracle spent %s booting or shutting down, want %s", booting, want)
	}
	// Over the boot: the first node at its job's load, the second booting.
	want := (m.CPUNode.At(300.0/384) + m.Power.BootWatts) * m.Power.Boot.Seconds()
	if e := energyOver(f.Power, 2*time.Hour-m.Power.Boot, 2*time.Hour); math.Abs(e-want) > 1e-6*want {
		t.Errorf("energy over the boot before the second job %.1f J, want %.1f J", e, want)
	}
}

// One rule for every arm (BootWaitRule): a pod waited for a boot when it
// queued and started on a node that became Ready after it arrived. A pod
// that woke a node but started on an awake node freed before the boot
// ended waited for a completion, not a boot; a pod that arrived while a
// boot for another pod was under way and started on that node waited for
// the boot, for all of its wait, though it woke nothing.
func TestBootWaitIsCountedByOneRule(t *testing.T) {
	m := physics.Default()
	nodes := workload.StandardCluster(2, 0)
	jobs := []workload.Job{
		cpuJob("first", 0, 300, 2*time.Hour+100*time.Second),
		cpuJob("second", 2*time.Hour, 300, time.Hour),               // wakes the node off since 10 min, starts where first ends
		cpuJob("third", 2*time.Hour+10*time.Second, 300, time.Hour), // starts on the node second woke
	}
	jobs[1].Class, jobs[2].Class = workload.Performance, workload.Performance
	g := run(t, ArmPowerOff, nodes, jobs, Options{Seed: 1})
	first, second, third := g.Jobs[0], g.Jobs[1], g.Jobs[2]
	if second.Node != first.Node || second.Start != first.End || second.BootWait != 0 {
		t.Errorf("second started on %s at %s (boot wait %s), want on %s when first ended at %s, no boot wait", second.Node, second.Start, second.BootWait, first.Node, first.End)
	}
	if ready := 2*time.Hour + m.Power.BootTime(false); third.Node == first.Node || third.Start != ready || third.BootWait != third.Start-third.Arrival {
		t.Errorf("third started on %s at %s (boot wait %s), want on the woken node when it was Ready at %s, all its wait a boot wait", third.Node, third.Start, third.BootWait, ready)
	}
	if g.PerfBootWaits != 1 || g.Boots != 1 {
		t.Errorf("%d performance boot waits and %d boots, want 1 and 1", g.PerfBootWaits, g.Boots)
	}
}

// Under the HGX bracket a GPU node draws its own figures off (45 W) and
// booting (its idle, for its 7-minute boot), a CPU node the taurus ones.
func TestGPUNodesDrawTheirOwnPowerStates(t *testing.T) {
	m, err := physics.Embedded().Variant("hgx-power-states")
	if err != nil {
		t.Fatal(err)
	}
	nodes := workload.StandardCluster(1, 1)
	gpuJob := workload.Job{ID: "gpu", Arrival: 3 * time.Hour, Class: workload.Standard, Boundness: physics.GPUCompute,
		CPUMilli: 8000, MemoryMiB: 1024, GPUs: 1, Work: time.Minute}
	jobs := []workload.Job{cpuJob("cpu", 0, 8, time.Hour), gpuJob}
	r := run(t, ArmPowerOff, nodes, jobs, Options{Seed: 1, Model: m})
	at := func(t0 time.Duration) Parts {
		var p Parts
		for _, s := range r.Power {
			if s.T <= t0 {
				p = s.Parts
			}
		}
		return p
	}
	ps := m.Power
	if p := at(2 * time.Hour); p.Off != ps.OffWatts+ps.Off(true) {
		t.Errorf("both nodes off: %v W off, want %v + %v", p.Off, ps.OffWatts, ps.Off(true))
	}
	if p := at(3*time.Hour + time.Minute); p.Booting != ps.Booting(true) || p.Booting != m.GPUNode.Host.Idle()+8*m.GPUNode.GPUIdleWatts {
		t.Errorf("the GPU node booting draws %v W, want its idle", p.Booting)
	}
	if g := r.Jobs[1]; g.Start-g.Arrival != ps.BootTime(true) || ps.BootTime(true) != 420*time.Second {
		t.Errorf("the GPU job waited %s for the boot, want %s", g.Start-g.Arrival, ps.BootTime(true))
	}
}
