package reconcile

import (
	"time"

	"k8s.io/apimachinery/pkg/labels"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/intent"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/powerest"
)

// The settings the controller's tests plan with, the same as pkg/plan's
// tests (which cannot import a helper that imports plan); the nodes and
// pods of both come from plantest.

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func settings(p string) plan.Params {
	sel, _ := labels.Parse(joulie.LabelManaged + "=true")
	return plan.Params{NodeSelector: sel, Policy: p, StaticHPFrac: 0.5, Queue: policy.DefaultQueueAware(),
		Interval: time.Minute, Intent: intent.Default(), RackCapacityW: 50000, MeasurementMaxAge: 3 * time.Minute,
		Coefficients: powerest.DefaultCoefficients()}
}
