package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestBadConfigurationExitsTwoNamingTheSetting(t *testing.T) {
	for _, tc := range []struct {
		env  [2]string
		args []string
		want string
	}{
		{[2]string{"POLICY_TYPE", "fastest"}, nil, `policy: "fastest" is not one of`},
		{[2]string{"NODE_SELECTOR", "a in ("}, nil, "nodeSelector"},
		{[2]string{"STATIC_HP_FRAC", "1.5"}, nil, "staticHpFrac: 1.5 is not a fraction in [0, 1] (from STATIC_HP_FRAC)"},
		{[2]string{"QUEUE_PERF_PER_HP_NODE", "0"}, nil, "queue.perfPerHpNode: 0 must be positive (from QUEUE_PERF_PER_HP_NODE)"},
		{[2]string{"QUEUE_HP_MAX", "1"}, []string{"--queue-hp-min", "3"}, "queue.hpMax: 1 is neither"},
		{[2]string{"CPU_ECO_CAP_PCT_OF_MAX", "0"}, nil, "CPU_ECO_CAP_PCT_OF_MAX"},
		{[2]string{"GPU_MODEL_CAPS_JSON", "{"}, nil, "GPU_MODEL_CAPS_JSON"},
		{[2]string{"RENEW_DEADLINE", "30s"}, nil, "want lease duration > renew deadline > retry period > 0 (from RENEW_DEADLINE)"},
		{[2]string{"RECONCILE_INTERVAL", "soon"}, nil, "soon"},
		{[2]string{"FACILITY_POLL_INTERVAL", "often"}, nil, "FACILITY_POLL_INTERVAL"},
		{[2]string{"FACILITY_PROMETHEUS_URL", "::not a url"}, []string{"--enable-kepler-power"}, "FACILITY_PROMETHEUS_URL"},
		{[2]string{"LOG_LEVEL", "loud"}, []string{"--kubeconfig", "/nonexistent"}, "LOG_LEVEL"},
		{[2]string{"MARGINAL_GPU_UTIL_COEFF_STANDARD", "1.5"}, nil, "MARGINAL_GPU_UTIL_COEFF_STANDARD"},
		{[2]string{"JOULIE_CONTROLLER_CONFIG", "/nonexistent/controller.yaml"}, nil, "/nonexistent/controller.yaml"},
	} {
		t.Run(tc.env[0], func(t *testing.T) {
			t.Setenv(tc.env[0], tc.env[1])
			var out, errb bytes.Buffer
			code := run(append([]string{"joulie-controller"}, tc.args...), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and a message naming %s", code, errb.String(), tc.want)
			}
		})
	}
}

func TestMissingKubeconfigIsARuntimeFailure(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"joulie-controller", "--kubeconfig", "/nonexistent/kubeconfig", "--metrics-address", ""}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "/nonexistent/kubeconfig") {
		t.Errorf("exit %d, stderr %q; want 1 naming the file", code, errb.String())
	}
}

func TestHealthAndReadiness(t *testing.T) {
	st := &state{interval: time.Second}
	get := func(h http.HandlerFunc) int {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		return rec.Code
	}
	// A standby is healthy and ready.
	if get(st.healthz) != 200 || get(st.readyz) != 200 {
		t.Fatal("standby not healthy and ready")
	}
	// A leader is not ready until its caches synced and it reconciled.
	st.leading.Store(true)
	if get(st.readyz) != http.StatusServiceUnavailable {
		t.Error("leader without synced caches reported ready")
	}
	st.synced.Store(true)
	st.lastSync.Store(time.Now().UnixNano())
	if get(st.readyz) != 200 || get(st.healthz) != 200 {
		t.Error("synced leader not ready and healthy")
	}
	// A leader whose loop stalled is unhealthy.
	st.lastSync.Store(time.Now().Add(-time.Hour).UnixNano())
	if get(st.healthz) != http.StatusServiceUnavailable {
		t.Error("stalled leader reported healthy")
	}
}
