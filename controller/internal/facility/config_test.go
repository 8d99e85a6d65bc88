package facility

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestConfigFromEnvDefaultsAreTheSeeds(t *testing.T) {
	c, err := ConfigFromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Enabled:           false,
		PrometheusURL:     "http://prometheus-operated.monitoring.svc:9090",
		Interval:          30 * time.Second,
		Timeout:           10 * time.Second,
		AmbientTempQuery:  "datacenter_ambient_temperature_celsius",
		ITPowerQuery:      "datacenter_it_power_watts",
		CoolingPowerQuery: "datacenter_cooling_power_watts",
	}
	if c != want {
		t.Errorf("defaults:\n got %+v\nwant %+v", c, want)
	}
}

func TestConfigFromEnvOverrides(t *testing.T) {
	c, err := ConfigFromEnv(env(map[string]string{
		"ENABLE_FACILITY_METRICS":       "true",
		"FACILITY_POLL_INTERVAL":        "1m",
		"FACILITY_PROMETHEUS_URL":       "https://thanos.example:10902/prom",
		"FACILITY_QUERY_TIMEOUT":        " 2s ",
		"FACILITY_AMBIENT_TEMP_METRIC":  `max(inlet_temp_celsius{room="a"})`,
		"FACILITY_IT_POWER_METRIC":      "sum(pdu_power_watts)",
		"FACILITY_COOLING_POWER_METRIC": "crac_power_watts",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Enabled:           true,
		PrometheusURL:     "https://thanos.example:10902/prom",
		Interval:          time.Minute,
		Timeout:           2 * time.Second,
		AmbientTempQuery:  `max(inlet_temp_celsius{room="a"})`,
		ITPowerQuery:      "sum(pdu_power_watts)",
		CoolingPowerQuery: "crac_power_watts",
	}
	if c != want {
		t.Errorf("overrides:\n got %+v\nwant %+v", c, want)
	}
}

// Helm renders an unset value as "": that must mean "default", not "empty".
func TestConfigFromEnvBlankKeepsDefault(t *testing.T) {
	blank := map[string]string{}
	for _, k := range []string{EnvEnabled, EnvPollInterval, EnvPrometheusURL, EnvQueryTimeout,
		EnvAmbientTempMetric, EnvITPowerMetric, EnvCoolingMetric} {
		blank[k] = "  "
	}
	c, err := ConfigFromEnv(env(blank))
	if err != nil {
		t.Fatal(err)
	}
	if c != DefaultConfig() {
		t.Errorf("blank variables: got %+v, want the defaults", c)
	}
}

func TestConfigFromEnvErrorsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"interval not a duration", map[string]string{"FACILITY_POLL_INTERVAL": "abc"},
			[]string{`FACILITY_POLL_INTERVAL="abc": not a duration`}},
		{"interval without unit", map[string]string{"FACILITY_POLL_INTERVAL": "30"},
			[]string{`FACILITY_POLL_INTERVAL="30": not a duration`}},
		{"interval zero", map[string]string{"FACILITY_POLL_INTERVAL": "0s"},
			[]string{`FACILITY_POLL_INTERVAL="0s": must be positive`}},
		{"interval negative", map[string]string{"FACILITY_POLL_INTERVAL": "-5s"},
			[]string{`FACILITY_POLL_INTERVAL="-5s": must be positive`}},
		{"timeout not a duration", map[string]string{"FACILITY_QUERY_TIMEOUT": "soon"},
			[]string{`FACILITY_QUERY_TIMEOUT="soon": not a duration`}},
		{"timeout zero", map[string]string{"FACILITY_QUERY_TIMEOUT": "0"},
			[]string{`FACILITY_QUERY_TIMEOUT="0s": must be positive`}},
		{"enabled not a boolean", map[string]string{"ENABLE_FACILITY_METRICS": "yes"},
			[]string{`ENABLE_FACILITY_METRICS="yes": not a boolean`}},
		{"url without scheme", map[string]string{"ENABLE_FACILITY_METRICS": "true", "FACILITY_PROMETHEUS_URL": "prometheus:9090"},
			[]string{`FACILITY_PROMETHEUS_URL="prometheus:9090": want an http:// or https:// URL`}},
		{"url with a query", map[string]string{"ENABLE_FACILITY_METRICS": "true", "FACILITY_PROMETHEUS_URL": "http://p:9090/?x=1"},
			[]string{`FACILITY_PROMETHEUS_URL="http://p:9090/?x=1": a base URL takes no query`}},
		{"all problems at once", map[string]string{"FACILITY_POLL_INTERVAL": "abc", "FACILITY_QUERY_TIMEOUT": "-1s", "ENABLE_FACILITY_METRICS": "on"},
			[]string{"FACILITY_POLL_INTERVAL=", "FACILITY_QUERY_TIMEOUT=", "ENABLE_FACILITY_METRICS="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ConfigFromEnv(env(tc.env))
			if err == nil {
				t.Fatalf("accepted %v", tc.env)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// A bad URL only matters when the poller is going to use it.
func TestConfigURLCheckedOnlyWhenEnabled(t *testing.T) {
	if _, err := ConfigFromEnv(env(map[string]string{"FACILITY_PROMETHEUS_URL": "not a url"})); err != nil {
		t.Errorf("disabled poller refused for its URL: %v", err)
	}
	c := DefaultConfig()
	c.Enabled = true
	c.PrometheusURL = ""
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "FACILITY_PROMETHEUS_URL is empty") {
		t.Errorf("enabled with an empty URL: got %v", err)
	}
}

func TestConfigEmptyQueryRefused(t *testing.T) {
	c := DefaultConfig()
	c.ITPowerQuery = " "
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "FACILITY_IT_POWER_METRIC is empty") {
		t.Errorf("empty IT power query: got %v", err)
	}
}
