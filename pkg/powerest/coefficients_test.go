package powerest

import (
	"math"
	"testing"
)

func TestDefaultCoefficients(t *testing.T) {
	c := DefaultCoefficients()
	if c != (Coefficients{CPUUtil: 0.8, GPUUtilStandard: 0.6, GPUUtilPerformance: 0.9}) {
		t.Errorf("DefaultCoefficients = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		c       Coefficients
		wantErr string
	}{
		{name: "bounds are inclusive", c: Coefficients{CPUUtil: 0, GPUUtilStandard: 1, GPUUtilPerformance: 1}},
		{name: "zero value is valid", c: Coefficients{}},
		{name: "CPU above 1", c: Coefficients{CPUUtil: 1.2, GPUUtilStandard: 0.6, GPUUtilPerformance: 0.9},
			wantErr: "MARGINAL_CPU_UTIL_COEFF=1.2: must be between 0 and 1"},
		{name: "standard GPU negative", c: Coefficients{CPUUtil: 0.8, GPUUtilStandard: -1, GPUUtilPerformance: 0.9},
			wantErr: "MARGINAL_GPU_UTIL_COEFF_STANDARD=-1: must be between 0 and 1"},
		{name: "performance GPU NaN", c: Coefficients{CPUUtil: 0.8, GPUUtilStandard: 0.6, GPUUtilPerformance: math.NaN()},
			wantErr: "MARGINAL_GPU_UTIL_COEFF_PERFORMANCE=NaN: must be between 0 and 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Errorf("Validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
