package sim

import (
	"cmp"
	"reflect"
	"testing"

	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/test/energy/physics"
)

// The simulator's Joulie is the programs' Joulie: with the run's defaults
// its controller plans with plan.DefaultParams (the controller's key
// table's defaults) but for the arm's policy and its cap and spread modes,
// and its extender scores with scoring.DefaultParams (the extender's) at
// the chart's weight, but for the scoring mode and weight an arm asks for.
// A default restated here instead of taken from pkg/ would drift from the
// programs' and fail this.
func TestSimulatorRunsTheProgramsDefaults(t *testing.T) {
	for _, spec := range ArmSpecs {
		if !spec.Joulie {
			continue
		}
		s, err := newSimulation(spec, nil, nil, Options{Seed: 1, Model: physics.Default(), ReconcileInterval: plan.DefaultParams().Interval})
		if err != nil {
			t.Fatal(err)
		}
		want := plan.DefaultParams()
		want.Policy = spec.Policy
		// An arm that does not ask for the cap that pays or the demand
		// spread runs the seeds' modes, which issue 14's arms were taken
		// with (planParams).
		want.CapMode = cmp.Or(spec.CapMode, plan.CapModeFixed)
		want.Spread = cmp.Or(spec.Spread, policy.SpreadDensity)
		want.Guard = cmp.Or(spec.Guard, policy.GuardSeed)
		want.GPUCapScope = cmp.Or(spec.GPUCapScope, plan.GPUScopeNode)
		if !reflect.DeepEqual(s.plan, want) {
			t.Errorf("%s: the simulated controller plans with\n%+v\nthe controller's defaults are\n%+v", spec.Arm, s.plan, want)
		}
		params, weight := scoring.DefaultParams(), int64(scoring.ChartWeight)
		if spec.Scoring != "" {
			params.Mode = spec.Scoring
		}
		if spec.ExtenderWeight != 0 {
			weight = spec.ExtenderWeight
		}
		if !reflect.DeepEqual(s.ext.params, params) || s.ext.Weight() != weight {
			t.Errorf("%s: the simulated extender scores with %+v at weight %d, want the extender's defaults with the arm's mode and weight, %+v at %d",
				spec.Arm, s.ext.params, s.ext.Weight(), params, weight)
		}
		s.sched.Close()
	}
}
