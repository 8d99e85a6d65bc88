package main

import (
	"context"
	"time"

	"joulie.io/joulie/pkg/park"

	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/sim"
	"joulie.io/joulie/test/energy/workload"
)

// simulate runs one arm on one job list through package sim and records
// on the result the load level the list was generated for. Without
// seedMethod the seed document's pass is skipped (a negative SeedWindow),
// so the result has no SeedMethod. parking, when not nil, is the parking
// arms' settings (sim.Options.Parking). Each job runs on its true figures,
// drawn with the model's spread from the list's seed (sim.Options.Truth),
// so every arm of one seed sees the same ones.
func simulate(ctx context.Context, arm sim.Arm, level float64, seed int64, nodes []workload.Node, jobs []workload.Job, window sim.Window, model *physics.Model, seedMethod bool, parking *park.Params, progress func(time.Duration, float64)) (sim.Result, error) {
	opts := sim.Options{Seed: seed, Model: model, Truth: truthOf(model, seed), Window: window, Level: level, Parking: parking, Progress: progress}
	if !seedMethod {
		opts.SeedWindow = -1
	}
	return sim.Run(ctx, arm, nodes, jobs, opts)
}

// truthOf is how the jobs of seed's list get their true figures under
// model: the model's spread, seeded by the list's seed.
func truthOf(model *physics.Model, seed int64) physics.Truth {
	return physics.Truth{Spread: model.Spread, Seed: seed}
}
