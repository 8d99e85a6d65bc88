package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestExitCodes(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		code int
		say  string
	}{
		{"help", []string{"--help"}, nil, 0, "EXTENDER_ADDR"},
		{"version", []string{"--version"}, nil, 0, "joulie-extender"},
		{"unknown flag", []string{"--bogus"}, nil, 2, "bogus"},
		{"argument", []string{"serve"}, nil, 2, `"serve"`},
		{"bad duration", []string{"--twin-staleness-threshold", "soon"}, nil, 2, `twinStalenessThreshold: --twin-staleness-threshold="soon"`},
		{"bad switch from the environment", nil, map[string]string{"ENABLE_FACILITY_METRICS": "maybe"}, 2, "ENABLE_FACILITY_METRICS"},
		{"missing kubeconfig", []string{"--kubeconfig", "/nonexistent/kubeconfig"}, nil, 2, "/nonexistent/kubeconfig"},
		{"no cluster", nil, nil, 2, "not running in a cluster"},
		{"missing config file", []string{"--config", "/nonexistent/extender.yaml"}, nil, 2, "/nonexistent/extender.yaml"},
		{"manual page", []string{"--man-page"}, nil, 0, ".TH joulie-extender 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var out, errOut bytes.Buffer
			code := run(append([]string{"joulie-extender"}, tt.args...), &out, &errOut)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out.String(), errOut.String())
			}
			if !strings.Contains(out.String()+errOut.String(), tt.say) {
				t.Errorf("output does not say %q\nstdout: %s\nstderr: %s", tt.say, out.String(), errOut.String())
			}
		})
	}
}
