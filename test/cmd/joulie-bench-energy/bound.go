package main

import (
	"fmt"
	"time"

	"joulie.io/joulie/test/energy/bound"
	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/report"
	"joulie.io/joulie/test/energy/sim"
	"joulie.io/joulie/test/energy/workload"
)

// seedBound is the lower bound of one seed's job list over the window
// every arm of the seed accounts, each job started no later than the
// latest any arm started it, under the jobs' true figures: physical, and
// with f-oracle's slice caps.
func seedBound(nodes []workload.Node, jobs []workload.Job, model *physics.Model, seed int64, results []sim.Result) (report.Bound, error) {
	if len(results) == 0 {
		return report.Bound{}, fmt.Errorf("lower bound: no results")
	}
	in := bound.Input{Jobs: jobs, Model: model, Truth: truthOf(model, seed), Start: results[0].Window.Start, End: results[0].Window.End, LatestStart: map[string]time.Duration{},
		Families: bound.Families(nodes, func(n workload.Node) (physics.Curve, physics.GPUNode) { return sim.NodePhysics(model, n) })}
	for _, r := range results {
		// A whole-run window ends at the arm's last completion; the
		// window they share is the shortest, and an arm's energy past it
		// only adds.
		in.Start, in.End = max(in.Start, r.Window.Start), min(in.End, r.Window.End)
		for _, j := range r.Jobs {
			in.LatestStart[j.ID] = max(in.LatestStart[j.ID], j.Start)
		}
	}
	physical, err := bound.Compute(in)
	if err != nil {
		return report.Bound{}, fmt.Errorf("lower bound: %w", err)
	}
	in.SliceCaps = true
	slices, err := bound.Compute(in)
	if err != nil {
		return report.Bound{}, fmt.Errorf("lower bound with slice caps: %w", err)
	}
	return report.Bound{Physical: physical.Joules, SliceCaps: slices.Joules}, nil
}
