package simulated

import (
	"strings"
	"testing"

	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/simulated/httpbackend"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// The configuration refuses exactly the base URLs the client refuses, so
// that a bad http.controlURL stops the start instead of failing every
// tick.
func TestConfigAcceptsTheURLsTheClientAccepts(t *testing.T) {
	for _, u := range []string{
		"http://sim:8080", "https://sim/{node}/", "http://sim/a/{node}", "http://u:p@sim",
		"sim:8080", "ftp://sim", "http://", "http:///x", "http://sim/?a=b", "http://sim/#x", "http://sim/?",
		"http://[::1", "://x", "http://sim/%zz", "http://{node}:8080/",
	} {
		cfg := config.Default()
		cfg.NodeName, cfg.Backend, cfg.HTTP.ControlURL = "node-1", joulie.EndpointHTTP, u
		verr := cfg.Validate()
		mine := verr == nil || !strings.Contains(verr.Error(), "http.controlURL")
		_, err := httpbackend.New(Endpoints(cfg.HTTP, cfg.NodeName))
		if theirs := err == nil; mine != theirs {
			t.Errorf("%q: config accepts %v (%v), httpbackend accepts %v (%v)", u, mine, verr, theirs, err)
		}
	}
}

func TestEndpointsCarryTheURLsAndTimeoutToBothHalves(t *testing.T) {
	cfg := config.Default()
	cfg.HTTP.TelemetryURL, cfg.HTTP.ControlURL = "http://sim/t/{node}", "http://sim/c/{node}"
	got := Endpoints(cfg.HTTP, "node-1")
	if got.Node != "node-1" || got.Telemetry.URL != cfg.HTTP.TelemetryURL || got.Control.URL != cfg.HTTP.ControlURL ||
		got.Telemetry.Timeout != joulie.DefaultEndpointTimeout || got.Control.Timeout != joulie.DefaultEndpointTimeout {
		t.Errorf("Endpoints = %+v", got)
	}
}
