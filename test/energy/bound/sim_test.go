package bound

import (
	"context"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/sim"
	"joulie.io/joulie/test/energy/workload"
)

// Every arm of the simulator, run on a small cluster of the benchmark's
// shape, spends at least the bound over the window they share, with the
// latest start any arm gave each job: the check the report makes on every
// run, here on every arm including the oracles; with every job at its
// class's figures, and with each at its own true ones (the default's
// spread), which the bound must follow.
func TestNoArmBelowTheBound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every arm")
	}
	m := physics.Default()
	t.Run("nominal", func(t *testing.T) { noArmBelowTheBound(t, m, physics.Truth{}, sim.Arms()) })
	// With the true figures, the arms that differ most in placement,
	// power states and caps, the oracles among them: every arm costs
	// make test's time.
	t.Run("true figures", func(t *testing.T) {
		noArmBelowTheBound(t, m, physics.Truth{Spread: m.Spread, Seed: 1},
			[]sim.Arm{sim.ArmBinPack, sim.ArmPowerOff, sim.ArmJoulie, sim.ArmOraclePhysical, sim.ArmOracle})
	})
}

func noArmBelowTheBound(t *testing.T, m *physics.Model, truth physics.Truth, arms []sim.Arm) {
	cfg := workload.DefaultConfig()
	cfg.Nodes = workload.StandardCluster(12, 4)
	cfg.Jobs, cfg.Horizon = 300, 0
	cfg.Lifetime.P50, cfg.Lifetime.P90, cfg.Lifetime.P99, cfg.Lifetime.Max = 3*time.Minute, 20*time.Minute, 2*time.Hour, 6*time.Hour
	jobs := workload.Generate(1, cfg)
	var results []sim.Result
	for _, arm := range arms {
		r, err := sim.Run(context.Background(), arm, cfg.Nodes, jobs, sim.Options{Seed: 1, Model: m, Truth: truth})
		if err != nil {
			t.Fatalf("arm %s: %v", arm, err)
		}
		results = append(results, r)
	}
	start, end := results[0].Window.Start, results[0].Window.End
	latest := map[string]time.Duration{}
	for _, r := range results {
		start, end = max(start, r.Window.Start), min(end, r.Window.End)
		for _, j := range r.Jobs {
			latest[j.ID] = max(latest[j.ID], j.Start)
		}
	}
	fams := Families(cfg.Nodes, func(n workload.Node) (physics.Curve, physics.GPUNode) { return sim.NodePhysics(m, n) })
	in := Input{Jobs: jobs, Families: fams, Model: m, Truth: truth, Start: start, End: end, LatestStart: latest}
	physical := compute(t, in)
	if !truth.Spread.Zero() {
		// The bound follows each job's own figures, not its class's.
		nominal := in
		nominal.Truth = physics.Truth{}
		if n := compute(t, nominal); n.Dynamic == physical.Dynamic {
			t.Errorf("the bound's dynamic term, %.0f J, is the same with the jobs' true figures as with their classes'", n.Dynamic)
		}
	}
	in.SliceCaps = true
	idealised := compute(t, in)
	if idealised.Joules > physical.Joules {
		t.Errorf("the bound with slice caps, %.0f J, is above the physical one, %.0f J", idealised.Joules, physical.Joules)
	}
	for _, r := range results {
		b := physical
		if spec, _ := sim.Spec(r.Arm); spec.Oracle == sim.OracleSlices {
			b = idealised
		}
		// The arms' own windows may run past the shared one; the energy
		// past it only adds.
		if r.EnergyJ < b.Joules {
			t.Errorf("arm %s: %.0f J, below the bound's %.0f J (%+v)", r.Arm, r.EnergyJ, b.Joules, b)
		}
		t.Logf("%-20s %.3f × the bound", r.Arm, r.EnergyJ/b.Joules)
	}
	t.Logf("physical bound %+v", physical)
}

// BenchmarkCompute is the bound of one seed's list on a cluster of the
// standard run's shape at a fifth of its size, with every job at its own
// true figures (the default spread), as the report computes it per seed.
func BenchmarkCompute(b *testing.B) {
	m := physics.Default()
	cfg := workload.DefaultConfig()
	cfg.Nodes = workload.StandardCluster(40, 10)
	cfg.Jobs, cfg.Horizon = 3000, 0
	jobs := workload.Generate(1, cfg)
	fams := Families(cfg.Nodes, func(n workload.Node) (physics.Curve, physics.GPUNode) { return sim.NodePhysics(m, n) })
	in := Input{Jobs: jobs, Families: fams, Model: m, Truth: physics.Truth{Spread: m.Spread, Seed: 1}, Start: time.Hour, End: 20 * time.Hour}
	for b.Loop() {
		if _, err := Compute(in); err != nil {
			b.Fatal(err)
		}
	}
}
