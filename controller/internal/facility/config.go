package facility

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Environment variables of the poller's settings (operator seed,
// "Facility metrics"), the Env names of the controller's configuration
// keys.
const (
	EnvEnabled           = "ENABLE_FACILITY_METRICS"
	EnvPollInterval      = "FACILITY_POLL_INTERVAL"
	EnvPrometheusURL     = "FACILITY_PROMETHEUS_URL"
	EnvQueryTimeout      = "FACILITY_QUERY_TIMEOUT"
	EnvAmbientTempMetric = "FACILITY_AMBIENT_TEMP_METRIC"
	EnvITPowerMetric     = "FACILITY_IT_POWER_METRIC"
	EnvCoolingMetric     = "FACILITY_COOLING_POWER_METRIC"
)

// Defaults of the settings. The URL is the Service the Prometheus Operator
// creates for a Prometheus in the monitoring namespace.
const (
	DefaultPollInterval      = 30 * time.Second
	DefaultPrometheusURL     = "http://prometheus-operated.monitoring.svc:9090"
	DefaultQueryTimeout      = 10 * time.Second
	DefaultAmbientTempMetric = "datacenter_ambient_temperature_celsius"
	DefaultITPowerMetric     = "datacenter_it_power_watts"
	DefaultCoolingMetric     = "datacenter_cooling_power_watts"
)

// Config is what the poller needs. The three queries are PromQL
// expressions: a bare metric name is one, and a site whose meters need
// joining or filtering writes the expression that yields the signal.
type Config struct {
	Enabled       bool
	PrometheusURL string
	Interval      time.Duration
	// Timeout bounds each query, both on the wire and, passed as the
	// query's timeout parameter, inside Prometheus.
	Timeout           time.Duration
	AmbientTempQuery  string
	ITPowerQuery      string
	CoolingPowerQuery string
}

// DefaultConfig is the configuration when no variable is set: disabled,
// with the seed's metric names.
func DefaultConfig() Config {
	return Config{
		PrometheusURL:     DefaultPrometheusURL,
		Interval:          DefaultPollInterval,
		Timeout:           DefaultQueryTimeout,
		AmbientTempQuery:  DefaultAmbientTempMetric,
		ITPowerQuery:      DefaultITPowerMetric,
		CoolingPowerQuery: DefaultCoolingMetric,
	}
}

// Validate reports every setting that would keep the poller from working.
// The Prometheus URL is required only when the poller is enabled; messages
// name the variable an operator sets.
func (c Config) Validate() error {
	return c.validate(c.Enabled)
}

func (c Config) validate(needURL bool) error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("%s=%q: must be positive", EnvPollInterval, c.Interval))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("%s=%q: must be positive", EnvQueryTimeout, c.Timeout))
	}
	for _, q := range []struct{ name, expr string }{
		{EnvAmbientTempMetric, c.AmbientTempQuery},
		{EnvITPowerMetric, c.ITPowerQuery},
		{EnvCoolingMetric, c.CoolingPowerQuery},
	} {
		if strings.TrimSpace(q.expr) == "" {
			errs = append(errs, fmt.Errorf("%s is empty: want a metric name or PromQL expression", q.name))
		}
	}
	if needURL {
		if _, err := parseBaseURL(c.PrometheusURL); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// parseBaseURL accepts an http(s) URL with a host and any path prefix, as
// when Prometheus is served behind a proxy under /prometheus.
func parseBaseURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, fmt.Errorf("%s is empty: facility metrics are enabled and need a Prometheus to query", EnvPrometheusURL)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s=%q: want an http:// or https:// URL such as %s", EnvPrometheusURL, raw, DefaultPrometheusURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s=%q: a base URL takes no query or fragment", EnvPrometheusURL, raw)
	}
	return u, nil
}
