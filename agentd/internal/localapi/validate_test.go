package localapi

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// A local profile never parks the host or sends Wake-on-LAN packets:
// those are the controller's, through the NodePowerProfile.
func TestLocalProfileCannotPark(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*joulie.NodePowerProfileSpec)
		says string
	}{
		{"parked", func(s *joulie.NodePowerProfileSpec) { s.PowerState = joulie.PowerParked }, `spec.powerState "parked" is the controller's`},
		{"since", func(s *joulie.NodePowerProfileSpec) { s.PowerStateSince = &metav1.Time{} }, "spec.powerStateSince"},
		{"wake on LAN", func(s *joulie.NodePowerProfileSpec) { s.WakeOnLAN = []string{"0c:c4:7a:12:34:56"} }, "spec.wakeOnLAN"},
		{"awake", func(s *joulie.NodePowerProfileSpec) { s.PowerState = joulie.PowerAwake }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco}
			tc.mod(&spec)
			err := ValidateSpec(spec)
			if tc.says == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("%v, want an invalid spec saying %q", err, tc.says)
			}
		})
	}
}
