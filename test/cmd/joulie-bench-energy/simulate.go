package main

import (
	"context"
	"time"

	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/sim"
	"joulie.io/joulie/test/energy/workload"
)

// simulate runs one arm on one job list through package sim. The report
// integrates each result's power over the seed's common window itself.
// Without seedMethod the seed document's pass is skipped (a negative
// SeedWindow), so the result has no SeedMethod.
func simulate(ctx context.Context, arm sim.Arm, seed int64, nodes []workload.Node, jobs []workload.Job, model *physics.Model, seedMethod bool, progress func(time.Duration, float64)) (sim.Result, error) {
	opts := sim.Options{Seed: seed, Model: model, Progress: progress}
	if !seedMethod {
		opts.SeedWindow = -1
	}
	return sim.Run(ctx, arm, nodes, jobs, opts)
}
