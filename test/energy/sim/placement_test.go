package sim

import (
	"slices"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/workload"
)

// The arms that run as an operator configures a cluster share one
// placement: the chart's scheduler profile and the GPU taint. b-tuned is
// b with it, g is b-tuned with idle power-off, Joulie's arms run on it as
// they would on the operator's cluster; g0 keeps g's placement before
// issue 38, plain MostAllocated with no taint.
func TestTunedArmsShareTheOperatorsPlacement(t *testing.T) {
	for _, a := range []Arm{ArmBinPackTuned, ArmPowerOff, ArmJoulie, ArmJouliePerGPU} {
		s, err := Spec(a)
		if err != nil {
			t.Fatal(err)
		}
		if !s.GPUTaint || !slices.Equal(s.Profile.Resources, ShippedProfile.Resources) || s.Profile.Strategy != ShippedProfile.Strategy {
			t.Errorf("%s: profile %+v, GPU taint %v; want the chart's profile and the GPU taint", a, s.Profile, s.GPUTaint)
		}
	}
	g0, _ := Spec(ArmPowerOffNaive)
	b, _ := Spec(ArmBinPack)
	if g0.GPUTaint || g0.PowerOff != AutoscalerRules || len(g0.Profile.Resources) != 0 || g0.Profile.Strategy != b.Profile.Strategy {
		t.Errorf("g0: %+v; want b's placement with the autoscaler's rules", g0)
	}
	g, _ := Spec(ArmPowerOff)
	if g.PowerOff != AutoscalerRules || g.Joulie || g.Caps {
		t.Errorf("g: %+v; want the autoscaler's rules, no Joulie, no caps", g)
	}
}

// With the CPU node full, a CPU pod in b takes the GPU node's spare
// cores; in b-tuned the GPU taint keeps it off and it waits for the CPU
// node, while a GPU pod, which tolerates the taint, still lands on the
// GPU node at once.
func TestTheGPUTaintKeepsCPUPodsOffGPUNodes(t *testing.T) {
	nodes := workload.StandardCluster(1, 1)
	gpu := workload.Job{ID: "gpu", Arrival: 2 * time.Minute, Class: workload.Standard, Boundness: physics.GPUCompute,
		CPUMilli: 8000, MemoryMiB: 1024, GPUs: 1, Work: 10 * time.Minute}
	jobs := []workload.Job{cpuJob("fill", 0, 384, time.Hour), cpuJob("cpu", time.Minute, 8, 10*time.Minute), gpu}
	b := run(t, ArmBinPack, nodes, jobs, Options{Seed: 1})
	if j := b.Jobs[1]; j.Node != "gpu-0000" || j.Start != j.Arrival {
		t.Errorf("b: the CPU pod started %s after it arrived on %s, want at once on gpu-0000", j.Start-j.Arrival, j.Node)
	}
	tuned := run(t, ArmBinPackTuned, nodes, jobs, Options{Seed: 1})
	if j := tuned.Jobs[1]; j.Node != "cpu-0000" || j.Start < tuned.Jobs[0].End {
		t.Errorf("b-tuned: the CPU pod started at %s on %s, want on cpu-0000 once fill ended at %s", j.Start, j.Node, tuned.Jobs[0].End)
	}
	if j := tuned.Jobs[2]; j.Node != "gpu-0000" || j.Start != j.Arrival {
		t.Errorf("b-tuned: the GPU pod started %s after it arrived on %s, want at once on gpu-0000", j.Start-j.Arrival, j.Node)
	}
}

// A CPU pod that fits no awake node wakes the switched-off GPU node in
// g0, and waits for its boot; in g it does not wake a node whose taint it
// does not tolerate (cluster-autoscaler would not scale up a node group
// the pod cannot land on) and waits for the CPU node instead.
func TestPowerOffWakesOnlyANodeThePodTolerates(t *testing.T) {
	m := physics.Default()
	nodes := workload.StandardCluster(1, 1)
	jobs := []workload.Job{cpuJob("fill", 0, 300, 2*time.Hour), cpuJob("cpu", time.Hour, 200, 10*time.Minute)}
	g0 := run(t, ArmPowerOffNaive, nodes, jobs, Options{Seed: 1})
	if j := g0.Jobs[1]; g0.Boots != 1 || j.Node != "gpu-0000" || j.Start-j.Arrival != m.Power.BootTime(true) {
		t.Errorf("g0: %d boots, the CPU pod on %s after %s; want one boot and the pod on gpu-0000 after its boot, %s",
			g0.Boots, j.Node, j.Start-j.Arrival, m.Power.BootTime(true))
	}
	g := run(t, ArmPowerOff, nodes, jobs, Options{Seed: 1})
	if j := g.Jobs[1]; g.Boots != 0 || j.Node != "cpu-0000" || j.Start < g.Jobs[0].End {
		t.Errorf("g: %d boots, the CPU pod on %s at %s; want no boot and the pod on cpu-0000 once fill ended at %s", g.Boots, j.Node, j.Start, g.Jobs[0].End)
	}
}
