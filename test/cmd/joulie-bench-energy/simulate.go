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
func simulate(ctx context.Context, arm sim.Arm, seed int64, nodes []workload.Node, jobs []workload.Job, model *physics.Model, progress func(time.Duration, float64)) (sim.Result, error) {
	return sim.Run(ctx, arm, nodes, jobs, sim.Options{Seed: seed, Model: model, Progress: progress})
}
