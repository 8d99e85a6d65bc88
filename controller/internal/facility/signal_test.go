package facility

import (
	"math"
	"strings"
	"testing"
)

func TestSignalsCheckAndCombine(t *testing.T) {
	sig := signals(DefaultConfig())
	labelled := func(inst string, v float64) sample {
		return sample{labels: map[string]string{"__name__": "m", "instance": inst}, value: v}
	}
	for _, tc := range []struct {
		name    string
		sig     int
		in      []sample
		want    float64
		wantErr string
	}{
		{"power adds up the meters", sigITPower, []sample{labelled("pdu-a", 40000), labelled("pdu-b", 60000)}, 100000, ""},
		{"cooling adds up the units", sigCooling, []sample{labelled("crac-1", 10000), labelled("crac-2", 20000)}, 30000, ""},
		{"temperature takes the hottest", sigAmbient, []sample{labelled("row-1", 22), labelled("row-2", 31.5), labelled("row-3", 25)}, 31.5, ""},
		{"winter intake below zero", sigAmbient, []sample{labelled("outside", -12)}, -12, ""},
		{"cooling off", sigCooling, []sample{labelled("crac-1", 0)}, 0, ""},
		{"below absolute zero", sigAmbient, []sample{labelled("x", -300)}, 0, "below absolute zero"},
		{"IT power zero", sigITPower, []sample{labelled("pdu-a", 0)}, 0, "IT power must be positive"},
		{"negative cooling", sigCooling, []sample{labelled("crac-1", -5)}, 0, "cannot be negative"},
		{"one NaN meter spoils the sum", sigITPower, []sample{labelled("pdu-a", 1000), labelled("pdu-b", math.NaN())}, 0, `series m{instance="pdu-b"}: value NaN is not a usable number`},
		{"infinite temperature", sigAmbient, []sample{labelled("x", math.Inf(1))}, 0, "not a usable number"},
		{"sum that overflows", sigITPower, []sample{labelled("a", math.MaxFloat64), labelled("b", math.MaxFloat64)}, 0, "2 series add up to +Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sig[tc.sig].value(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %g, want %g", got, tc.want)
			}
		})
	}
}
