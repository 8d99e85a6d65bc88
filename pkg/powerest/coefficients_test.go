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

// Each problem names the configuration key, as every other setting does;
// the programs' loaders add where the value came from.
func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		c       Coefficients
		wantErr string
	}{
		{name: "bounds are inclusive", c: Coefficients{CPUUtil: 0, GPUUtilStandard: 1, GPUUtilPerformance: 1}},
		{name: "zero value is valid", c: Coefficients{}},
		{name: "CPU above 1", c: Coefficients{CPUUtil: 1.2, GPUUtilStandard: 0.6, GPUUtilPerformance: 0.9},
			wantErr: "marginal.cpuUtilCoeff: 1.2 is not a number between 0 and 1"},
		{name: "standard GPU negative", c: Coefficients{CPUUtil: 0.8, GPUUtilStandard: -1, GPUUtilPerformance: 0.9},
			wantErr: "marginal.gpuUtilCoeffStandard: -1 is not a number between 0 and 1"},
		{name: "performance GPU NaN", c: Coefficients{CPUUtil: 0.8, GPUUtilStandard: 0.6, GPUUtilPerformance: math.NaN()},
			wantErr: "marginal.gpuUtilCoeffPerformance: NaN is not a number between 0 and 1"},
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
