package main

import (
	"context"
	"errors"
	"time"

	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/sim"
	"joulie.io/joulie/test/energy/workload"
)

// simulate runs one arm on one job list through package sim.
//
// TODO(i14-sim): package sim's Run was not on any branch when this was
// written; wire it here (sim.Run(ctx, arm, cluster, jobs, opts) with the
// seed, the physics model and the progress callback in opts) when the two
// branches merge. The report integrates each result's Power itself over
// the common window, so opts.Window can stay unset.
func simulate(ctx context.Context, arm sim.Arm, seed int64, nodes []workload.Node, jobs []workload.Job, model *physics.Model, progress func(time.Duration, float64)) (sim.Result, error) {
	return sim.Result{}, errors.New("the simulator (package test/energy/sim, branch i14-sim) is not wired into this command yet")
}
