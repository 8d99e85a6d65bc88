package main

import (
	"fmt"
	"slices"
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
	// The jobs that fit no node did no work in any arm; nothing bounds it.
	pending := map[string]bool{}
	for _, u := range results[0].Unplaceable {
		pending[u.ID] = true
	}
	if len(pending) > 0 {
		jobs = slices.DeleteFunc(slices.Clone(jobs), func(j workload.Job) bool { return pending[j.ID] })
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
	sliceCapped, err := bound.Compute(in)
	if err != nil {
		return report.Bound{}, fmt.Errorf("lower bound with slice caps: %w", err)
	}
	return report.Bound{Physical: physical.Joules, SliceCaps: sliceCapped.Joules}, nil
}
