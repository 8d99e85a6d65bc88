package localapi

import (
	"fmt"
	"math"
	"strings"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// ValidateSpec checks a spec against the rules the NodePowerProfile CRD
// enforces in the API server (profile performance or eco, percentages
// 0..100, watts 0 or more), so a local override cannot hold what the
// cluster would refuse. Every problem is named by its JSON path, and the
// error wraps ErrInvalidSpec.
func ValidateSpec(spec joulie.NodePowerProfileSpec) error {
	var problems []string
	add := func(p string) {
		if p != "" {
			problems = append(problems, p)
		}
	}
	switch spec.Profile {
	case joulie.ProfilePerformance, joulie.ProfileEco:
	case "":
		add("spec.profile is required: performance or eco")
	default:
		add(fmt.Sprintf("spec.profile %q is not one of performance, eco", spec.Profile))
	}
	if c := spec.CPU; c != nil {
		add(checkWatts("spec.cpu.packagePowerCapWatts", c.PackagePowerCapWatts))
		add(checkPct("spec.cpu.packagePowerCapPctOfMax", c.PackagePowerCapPctOfMax))
	}
	if g := spec.GPU; g != nil && g.PowerCap != nil {
		add(checkWatts("spec.gpu.powerCap.capWattsPerGpu", g.PowerCap.CapWattsPerGpu))
		add(checkPct("spec.gpu.powerCap.capPctOfMax", g.PowerCap.CapPctOfMax))
	}
	// Parking is the controller's alone: a local profile must never power
	// the host off or make it send packets.
	if !spec.PowerState.Awake() {
		add(fmt.Sprintf("spec.powerState %q is the controller's to set: a local profile cannot park the host", spec.PowerState))
	}
	if spec.PowerStateSince != nil || spec.WakeAttempts != 0 || len(spec.WakeOnLAN) > 0 {
		add("spec.powerStateSince, spec.wakeAttempts and spec.wakeOnLAN are the controller's to set, not a local profile's")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidSpec, strings.Join(problems, "; "))
	}
	return nil
}

func checkWatts(path string, v *float64) string {
	if v == nil || (*v >= 0 && !math.IsInf(*v, 1)) {
		return ""
	}
	return fmt.Sprintf("%s must be a number of watts, 0 or more (got %g)", path, *v)
}

func checkPct(path string, v *float64) string {
	if v == nil || (*v >= 0 && *v <= 100) {
		return ""
	}
	return fmt.Sprintf("%s must be a percentage from 0 to 100 (got %g)", path, *v)
}
