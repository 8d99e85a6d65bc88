package powerest

import (
	"math"
	"strings"
	"testing"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

func TestDefaultCoefficients(t *testing.T) {
	c := DefaultCoefficients()
	if c != (Coefficients{CPUUtil: 0.8, GPUUtilStandard: 0.6, GPUUtilPerformance: 0.9}) {
		t.Errorf("DefaultCoefficients = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestCoefficientsFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		vars    map[string]string
		want    Coefficients
		wantErr []string // substrings, all of which the error must contain
	}{
		{name: "nothing set keeps the defaults", want: DefaultCoefficients()},
		{name: "all set", vars: map[string]string{
			EnvCPUUtilCoeff: "0.5", EnvGPUUtilCoeffStandard: "0.4", EnvGPUUtilCoeffPerformance: "1",
		}, want: Coefficients{CPUUtil: 0.5, GPUUtilStandard: 0.4, GPUUtilPerformance: 1}},
		{name: "one set, others default", vars: map[string]string{EnvGPUUtilCoeffPerformance: "0.95"},
			want: Coefficients{CPUUtil: 0.8, GPUUtilStandard: 0.6, GPUUtilPerformance: 0.95}},
		{name: "blanks around a value are trimmed", vars: map[string]string{EnvCPUUtilCoeff: " 0.7\n"},
			want: Coefficients{CPUUtil: 0.7, GPUUtilStandard: 0.6, GPUUtilPerformance: 0.9}},
		{name: "empty value keeps the default", vars: map[string]string{EnvCPUUtilCoeff: "", EnvGPUUtilCoeffStandard: "  "},
			want: DefaultCoefficients()},
		{name: "zero switches a term off", vars: map[string]string{EnvCPUUtilCoeff: "0"},
			want: Coefficients{CPUUtil: 0, GPUUtilStandard: 0.6, GPUUtilPerformance: 0.9}},

		{name: "not a number", vars: map[string]string{EnvCPUUtilCoeff: "abc"},
			wantErr: []string{`MARGINAL_CPU_UTIL_COEFF="abc": not a number`}},
		{name: "percent is not a number", vars: map[string]string{EnvGPUUtilCoeffStandard: "60%"},
			wantErr: []string{`MARGINAL_GPU_UTIL_COEFF_STANDARD="60%": not a number`}},
		{name: "above 1", vars: map[string]string{EnvGPUUtilCoeffStandard: "1.5"},
			wantErr: []string{`MARGINAL_GPU_UTIL_COEFF_STANDARD="1.5": must be between 0 and 1`}},
		{name: "negative", vars: map[string]string{EnvGPUUtilCoeffPerformance: "-0.1"},
			wantErr: []string{`MARGINAL_GPU_UTIL_COEFF_PERFORMANCE="-0.1": must be between 0 and 1`}},
		{name: "NaN", vars: map[string]string{EnvCPUUtilCoeff: "NaN"},
			wantErr: []string{`MARGINAL_CPU_UTIL_COEFF="NaN": must be between 0 and 1`}},
		{name: "Inf", vars: map[string]string{EnvCPUUtilCoeff: "+Inf"},
			wantErr: []string{`MARGINAL_CPU_UTIL_COEFF="+Inf": must be between 0 and 1`}},
		{name: "overflow", vars: map[string]string{EnvCPUUtilCoeff: "1e999"},
			wantErr: []string{`MARGINAL_CPU_UTIL_COEFF="1e999": must be between 0 and 1`}},
		{name: "every bad variable is reported", vars: map[string]string{
			EnvCPUUtilCoeff: "x", EnvGPUUtilCoeffStandard: "0.5", EnvGPUUtilCoeffPerformance: "2",
		}, wantErr: []string{`MARGINAL_CPU_UTIL_COEFF="x"`, `MARGINAL_GPU_UTIL_COEFF_PERFORMANCE="2"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CoefficientsFromEnv(env(tt.vars))
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if got != tt.want {
					t.Errorf("CoefficientsFromEnv = %+v, want %+v", got, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, got %+v", got)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if strings.Contains(err.Error(), EnvGPUUtilCoeffStandard) && tt.vars[EnvGPUUtilCoeffStandard] == "0.5" {
				t.Errorf("error %q blames a valid variable", err)
			}
		})
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
