package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
)

// debugBody is the head of a /debug/scoring body as the extender writes
// it (extender/README.md), nodes cut to one.
const debugBody = `{"scoringMode":"headroom","pod":{"cpuCores":0,"gpus":0},
 "coefficients":{"cpuUtilCoeff":0.5,"gpuUtilCoeffStandard":0.4,"gpuUtilCoeffPerformance":1},
 "facilityMetrics":true,"stalenessThreshold":"2m30s","synced":true,"clusterTrendWPerMin":-5.2,
 "trendScale":6,"perfPressure":39.6,"nodes":[{"nodeName":"a","baseScore":50}]}`

func TestParseExtenderSettings(t *testing.T) {
	base := scoring.DefaultParams()
	p, err := parseExtenderSettings([]byte(debugBody), base)
	if err != nil {
		t.Fatal(err)
	}
	want := base
	want.Mode, want.StalenessThreshold, want.FacilityMetrics = scoring.ModeHeadroom, 150*time.Second, true
	want.Coefficients = powerest.Coefficients{CPUUtil: 0.5, GPUUtilStandard: 0.4, GPUUtilPerformance: 1}
	if p != want {
		t.Fatalf("settings %+v, want %+v", p, want)
	}

	for _, tc := range []struct{ name, body, err string }{
		{"not JSON", `<html>502 Bad Gateway</html>`, "not JSON from joulie-extender"},
		{"another service", `{"status":"ok"}`, "is the Service joulie-extender's?"},
		{"unknown mode", strings.Replace(debugBody, `"headroom"`, `"spread"`, 1), `scoringMode: unknown scoring mode "spread"`},
		{"bad staleness", strings.Replace(debugBody, `"2m30s"`, `"soon"`, 1), `stalenessThreshold "soon": want a positive duration`},
		{"zero staleness", strings.Replace(debugBody, `"2m30s"`, `"0s"`, 1), `stalenessThreshold "0s"`},
		{"coefficient out of range", strings.Replace(debugBody, `"cpuUtilCoeff":0.5`, `"cpuUtilCoeff":1.5`, 1), "coefficients: marginal.cpuUtilCoeff: 1.5 is not a number between 0 and 1"},
	} {
		got, err := parseExtenderSettings([]byte(tc.body), base)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.err)
		}
		if got != base {
			t.Errorf("%s: settings %+v returned with the error, want the base's", tc.name, got)
		}
	}
}

// FuzzParseExtenderSettings: whatever the Service answers, explain gets
// either an error that says something, with its own settings untouched,
// or settings the extender itself would accept. Seeds in
// testdata/fuzz/FuzzParseExtenderSettings.
func FuzzParseExtenderSettings(f *testing.F) {
	f.Add([]byte(debugBody))
	f.Fuzz(func(t *testing.T, body []byte) {
		base := scoring.DefaultParams()
		p, err := parseExtenderSettings(body, base)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			if p != base {
				t.Fatalf("settings %+v returned with error %v", p, err)
			}
			return
		}
		if _, e := p.Mode.MarshalText(); e != nil || p.StalenessThreshold <= 0 || p.Coefficients.Validate() != nil {
			t.Fatalf("accepted settings the extender would refuse: %+v", p)
		}
	})
}

// The flags given to explain go over the extender's settings, each on
// its own, and the source says so; flags not given leave the extender's.
func TestFlagsGoOverTheExtendersSettings(t *testing.T) {
	defaults := scoring.DefaultParams()
	o := &explainOptions{explainSettings: explainSettings{mode: "pack-standard", staleness: time.Hour, cpuUtil: 0.25}}
	given := func(names ...string) func(string) bool {
		return func(flag string) bool {
			for _, n := range names {
				if n == flag {
					return true
				}
			}
			return false
		}
	}
	p, from, err := o.settings(context.Background(), nil, given(), defaults)
	if err != nil || p != defaults || from != "explain's defaults" {
		t.Fatalf("no service, no flags: %+v, %q, %v", p, from, err)
	}
	p, from, err = o.settings(context.Background(), nil, given("scoring-mode", "marginal-cpu-util-coeff"), defaults)
	want := defaults
	want.Mode, want.Coefficients.CPUUtil = scoring.ModePackStandard, 0.25
	if err != nil || p != want || from != "explain's defaults, with explain's flags" {
		t.Fatalf("two flags: %+v, %q, %v; want %+v", p, from, err, want)
	}
	o.mode = "spread"
	if _, _, err := o.settings(context.Background(), nil, given("scoring-mode"), defaults); !isUsage(err) {
		t.Fatalf("--scoring-mode spread: %v, want a usage error", err)
	}
	o.staleness = 0
	if _, _, err := o.settings(context.Background(), nil, given("twin-staleness-threshold"), defaults); !isUsage(err) || !strings.Contains(err.Error(), "want a positive duration") {
		t.Fatalf("--twin-staleness-threshold 0: %v, want a usage error", err)
	}
	o.cpuUtil = 5
	if _, _, err := o.settings(context.Background(), nil, given("marginal-cpu-util-coeff"), defaults); !isUsage(err) ||
		!strings.Contains(err.Error(), "marginal.cpuUtilCoeff: 5 is not a number between 0 and 1") {
		t.Fatalf("--marginal-cpu-util-coeff 5: %v, want a usage error", err)
	}
	o.service = "no-slash"
	if _, _, err := o.settings(context.Background(), &cluster{}, given(), defaults); !isUsage(err) || !strings.Contains(err.Error(), "want NAMESPACE/NAME") {
		t.Fatalf("--extender-service no-slash: %v, want a usage error", err)
	}
}

func isUsage(err error) bool {
	_, ok := errors.AsType[usageError](err)
	return ok
}

// The proxy is asked on the port named after the scheme, as the chart
// names the extender's; a Service without one is not the extender's.
func TestServicePort(t *testing.T) {
	svc := func(names ...string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}}
		for _, n := range names {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: n})
		}
		return s
	}
	for _, tc := range []struct {
		svc  *corev1.Service
		want string
	}{{svc("http"), "http"}, {svc("metrics", "https"), "https"}} {
		if got, err := servicePort(tc.svc); err != nil || got != tc.want {
			t.Errorf("ports %v: %q, %v; want %q", tc.svc.Spec.Ports, got, err, tc.want)
		}
	}
	if _, err := servicePort(svc("grpc")); err == nil || !strings.Contains(err.Error(), "no port named http or https") {
		t.Errorf("a Service without an http port: %v", err)
	}
}
