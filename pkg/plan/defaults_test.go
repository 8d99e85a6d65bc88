package plan

import (
	"reflect"
	"testing"
	"time"

	"joulie.io/joulie/pkg/intent"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/powerpub"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/pkg/twin"
)

// The defaults are SPEC.md's and the seeds'.
func TestDefaultParams(t *testing.T) {
	s := DefaultParams()
	if s.NodeSelector == nil || s.NodeSelector.String() != "joulie.io/managed=true" || s.Policy != PolicyQueueAware ||
		s.StaticHPFrac != 0.5 || s.Queue != policy.DefaultQueueAware() || s.Interval != time.Minute ||
		s.MinEcoDwell != 5*time.Minute || s.Cooling != twin.DefaultLinearCoolingModel() || s.RackCapacityW != 50000 ||
		s.MeasurementMaxAge != 3*time.Minute || s.Catalog != nil || s.Coefficients != powerest.DefaultCoefficients() ||
		s.CapMode != CapModePays || s.Spread != policy.SpreadDemand {
		t.Errorf("DefaultParams() = %+v", s)
	}
	if !reflect.DeepEqual(s.Intent, intent.Default()) {
		t.Errorf("intent %+v, want intent.Default()", s.Intent)
	}
	// Each call is fresh: changing one result leaves the next alone.
	s.Intent.GPUProductLabelKeys[0] = "changed"
	if DefaultParams().Intent.GPUProductLabelKeys[0] == "changed" {
		t.Error("DefaultParams shares its product label keys between calls")
	}
}

// An unchanged twin is rewritten before the extender's default staleness
// threshold would make it score neutral, even one refresh late.
func TestDefaultTwinRefreshIsWithinTheStalenessThreshold(t *testing.T) {
	if th := scoring.DefaultParams().StalenessThreshold; 2*DefaultTwinRefresh >= th {
		t.Errorf("DefaultTwinRefresh %v: two of them reach the extender's staleness threshold %v", DefaultTwinRefresh, th)
	}
}

// An agent's reading counts until the agent has missed at least one
// publication: a steady node republishes every powerpub.Interval.
func TestDefaultMeasurementMaxAgeOutlastsPublication(t *testing.T) {
	if s := DefaultParams(); s.MeasurementMaxAge < 2*powerpub.Interval {
		t.Errorf("MeasurementMaxAge %v is under two publication intervals (%v)", s.MeasurementMaxAge, powerpub.Interval)
	}
}
