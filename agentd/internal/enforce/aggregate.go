package enforce

import (
	"fmt"
	"strings"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// aggregate folds per-device outcomes into one result for the class:
// error when any device failed, blocked when any could not be enforced
// (and none failed), applied when every device applied. The message names
// the devices that did not apply, so an operator sees which one to check.
func aggregate(devices []joulie.DeviceControlStatus) (joulie.ControlResult, string) {
	if len(devices) == 0 {
		return joulie.ResultNone, ""
	}
	result := joulie.ResultApplied
	var problems []string
	for _, d := range devices {
		switch d.Result {
		case joulie.ResultError:
			result = joulie.ResultError
		case joulie.ResultBlocked:
			if result != joulie.ResultError {
				result = joulie.ResultBlocked
			}
		default:
			continue
		}
		problems = append(problems, fmt.Sprintf("%s: %s", d.ID, d.Message))
	}
	return result, strings.Join(problems, "; ")
}

// commonCap is the cap every applied device shares, or nil when they
// differ (per-device values are in Devices then).
func commonCap(devices []joulie.DeviceControlStatus) *float64 {
	var v *float64
	for _, d := range devices {
		if d.AppliedCapWatts == nil {
			continue
		}
		if v == nil {
			w := *d.AppliedCapWatts
			v = &w
		} else if *v != *d.AppliedCapWatts {
			return nil
		}
	}
	return v
}
