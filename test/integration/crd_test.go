package integration

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	jouliev1alpha1 "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
)

func TestNodePowerProfileValidationByTheAPIServer(t *testing.T) {
	cs := versioned.NewForConfigOrDie(cp.AdminConfig())
	profiles := cs.JoulieV1alpha1().NodePowerProfiles()

	tests := []struct {
		name string
		spec jouliev1alpha1.NodePowerProfileSpec
		// wantField and wantMessage are what the API server must say; an
		// empty wantField means the object is valid.
		wantField   string
		wantMessage string
	}{
		{
			name: "eco at 60 percent of max is accepted",
			spec: jouliev1alpha1.NodePowerProfileSpec{
				Profile: jouliev1alpha1.ProfileEco,
				CPU:     &jouliev1alpha1.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(60.0)},
				GPU:     &jouliev1alpha1.GPUPowerTarget{PowerCap: &jouliev1alpha1.GPUPowerCap{CapPctOfMax: ptr.To(60.0)}},
			},
		},
		{
			name:        "CPU cap above 100 percent",
			spec:        jouliev1alpha1.NodePowerProfileSpec{Profile: jouliev1alpha1.ProfileEco, CPU: &jouliev1alpha1.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(150.0)}},
			wantField:   "spec.cpu.packagePowerCapPctOfMax",
			wantMessage: "should be less than or equal to 100",
		},
		{
			name:        "negative CPU watts",
			spec:        jouliev1alpha1.NodePowerProfileSpec{Profile: jouliev1alpha1.ProfileEco, CPU: &jouliev1alpha1.CPUPowerTarget{PackagePowerCapWatts: ptr.To(-5.0)}},
			wantField:   "spec.cpu.packagePowerCapWatts",
			wantMessage: "should be greater than or equal to 0",
		},
		{
			name:        "GPU cap above 100 percent",
			spec:        jouliev1alpha1.NodePowerProfileSpec{Profile: jouliev1alpha1.ProfilePerformance, GPU: &jouliev1alpha1.GPUPowerTarget{PowerCap: &jouliev1alpha1.GPUPowerCap{CapPctOfMax: ptr.To(101.0)}}},
			wantField:   "spec.gpu.powerCap.capPctOfMax",
			wantMessage: "should be less than or equal to 100",
		},
		{
			name:        "negative GPU watts",
			spec:        jouliev1alpha1.NodePowerProfileSpec{Profile: jouliev1alpha1.ProfilePerformance, GPU: &jouliev1alpha1.GPUPowerTarget{PowerCap: &jouliev1alpha1.GPUPowerCap{CapWattsPerGpu: ptr.To(-1.0)}}},
			wantField:   "spec.gpu.powerCap.capWattsPerGpu",
			wantMessage: "should be greater than or equal to 0",
		},
		{
			name:        "unknown profile",
			spec:        jouliev1alpha1.NodePowerProfileSpec{Profile: "turbo"},
			wantField:   "spec.profile",
			wantMessage: `Unsupported value: "turbo": supported values: "performance", "eco"`,
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := &jouliev1alpha1.NodePowerProfile{
				ObjectMeta: metav1.ObjectMeta{Name: "validation-" + string(rune('a'+i))},
				Spec:       tc.spec,
			}
			_, err := profiles.Create(t.Context(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("valid profile refused: %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want 422 Invalid, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.wantMessage) {
				t.Errorf("message %q does not say %q", err.Error(), tc.wantMessage)
			}
			if !hasCause(err, tc.wantField) {
				t.Errorf("no cause names field %s in %v", tc.wantField, err)
			}
		})
	}
}

// hasCause reports whether the API status of err names field among its
// causes.
func hasCause(err error, field string) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == field {
			return true
		}
	}
	return false
}
