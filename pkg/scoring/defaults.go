package scoring

import (
	"time"

	"joulie.io/joulie/pkg/powerest"
)

// DefaultParams are joulie-extender's scoring settings with nothing
// configured: pack mode, the marginal-power coefficients of pkg/powerest,
// PUE weighting off, and twins older than five minutes scoring neutral
// (the controller refreshes an unchanged twin well within that). The
// extender's key table takes its defaults from here, and so does the
// energy simulator's extender.
func DefaultParams() Params {
	return Params{
		Mode:               ModePack,
		Coefficients:       powerest.DefaultCoefficients(),
		FacilityMetrics:    false,
		StalenessThreshold: 5 * time.Minute,
	}
}

// ChartWeight is the weight the Helm chart (packaging/helm/joulie, value
// extender.scheduler.weight) gives the extender in kube-scheduler's
// configuration: kube-scheduler multiplies the extender's scores, 0..10,
// by it (and by 10) before adding them to its own plugins' scores, 0..100
// each. At 2 a performance pod's power headroom outweighs the chart's
// MostAllocated packing (values.yaml says why). It is a Go constant for
// the energy simulator, which schedules as the chart's scheduler does; a
// test keeps it equal to the chart's value.
const ChartWeight = 2
