package httpbackend

import (
	"time"

	"joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// ConfigFor turns a TelemetryProfile's routing into the configuration of
// node's client. ok is false when neither telemetry nor control is routed
// to http, that is when the node stays on its host backends. The caller
// still sets HTTPClient if it needs one.
func ConfigFor(spec *v1alpha1.TelemetryProfileSpec, node string) (cfg Config, ok bool) {
	cfg.Node = node
	if spec == nil {
		return cfg, false
	}
	if e := spec.Telemetry; e != nil && e.Type == v1alpha1.EndpointHTTP {
		cfg.Telemetry, ok = endpoint(e), true
	}
	if e := spec.Control; e != nil && e.Type == v1alpha1.EndpointHTTP {
		cfg.Control, ok = endpoint(e), true
	}
	return cfg, ok
}

func endpoint(e *v1alpha1.Endpoint) Endpoint {
	var timeout time.Duration
	if e.Timeout != nil {
		timeout = e.Timeout.Duration
	}
	return Endpoint{URL: e.URL, Timeout: timeout}
}
