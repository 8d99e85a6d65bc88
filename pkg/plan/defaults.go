package plan

import (
	"time"

	"k8s.io/apimachinery/pkg/labels"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/intent"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/twin"
)

// DefaultNodeSelector is the label selector of managed nodes when none is
// configured (nodeSelector, NODE_SELECTOR), as written.
const DefaultNodeSelector = joulie.LabelManaged + "=true"

// DefaultTwinRefresh is how often joulie-controller rewrites an unchanged
// NodeTwin's lastUpdated when nothing else is configured
// (twinRefreshInterval). It stays below the extender's staleness threshold
// (scoring.DefaultParams), so that a live controller never looks stale.
const DefaultTwinRefresh = 2 * time.Minute

// DefaultDrainDwell is how long a node stays draining, uncapped, before
// its eco cap is applied (drainDwell). The extender's cache follows node
// labels through a watch, within a second on a healthy API server (the
// integration test's eco-race check measures it); 15 s leaves room for a
// loaded one and costs little: the node was going to eco for minutes.
const DefaultDrainDwell = 15 * time.Second

// DefaultParams are joulie-controller's planning parameters with nothing
// configured. The controller's key table takes its defaults from here, and
// so does anything else (the energy simulator) that wants to plan as an
// unconfigured controller does. Catalog is left nil. Every call returns
// fresh values, so the result may be changed freely.
func DefaultParams() Params {
	sel, err := labels.Parse(DefaultNodeSelector)
	if err != nil {
		panic("plan: DefaultNodeSelector does not parse: " + err.Error())
	}
	return Params{
		NodeSelector:      sel,
		Policy:            PolicyQueueAware,
		StaticHPFrac:      0.5,
		Queue:             policy.DefaultQueueAware(),
		Interval:          time.Minute,
		MinEcoDwell:       5 * time.Minute,
		Guard:             policy.GuardDrain,
		DrainDwell:        DefaultDrainDwell,
		Intent:            intent.Default(),
		Cooling:           twin.DefaultLinearCoolingModel(),
		RackCapacityW:     twin.DefaultReferenceRackCapacityW,
		MeasurementMaxAge: 3 * time.Minute,
		Coefficients:      powerest.DefaultCoefficients(),
		CapMode:           CapModePays,
		Spread:            policy.SpreadDemand,
		GPUCapScope:       GPUScopeNode,
	}
}
