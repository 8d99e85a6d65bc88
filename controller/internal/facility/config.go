package facility

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"joulie.io/joulie/pkg/baseurl"
	"joulie.io/joulie/pkg/settings"
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
// The Prometheus URL is required only when the poller is enabled. Each
// message names the configuration key (facility.pollInterval); the
// controller's configuration loader says where the value came from.
func (c Config) Validate() error {
	return c.validate(c.Enabled)
}

func (c Config) validate(needURL bool) error {
	var errs []error
	for _, p := range c.Problems(needURL) {
		errs = append(errs, errors.New(p.Key+": "+p.Msg))
	}
	return errors.Join(errs...)
}

// Problems is every setting that would keep the poller (or, with needURL,
// Kepler's queries, which share the Prometheus URL) from working, by
// configuration key.
func (c Config) Problems(needURL bool) []settings.Problem {
	var ps []settings.Problem
	if c.Interval <= 0 {
		ps = append(ps, settings.Problem{Key: "facility.pollInterval", Msg: fmt.Sprintf("%q must be positive", c.Interval.String())})
	}
	if c.Timeout <= 0 {
		ps = append(ps, settings.Problem{Key: "facility.queryTimeout", Msg: fmt.Sprintf("%q must be positive", c.Timeout.String())})
	}
	for _, q := range []struct{ key, expr string }{
		{"facility.ambientTempMetric", c.AmbientTempQuery},
		{"facility.itPowerMetric", c.ITPowerQuery},
		{"facility.coolingPowerMetric", c.CoolingPowerQuery},
	} {
		if strings.TrimSpace(q.expr) == "" {
			ps = append(ps, settings.Problem{Key: q.key, Msg: "is empty: want a metric name or PromQL expression"})
		}
	}
	if needURL {
		if strings.TrimSpace(c.PrometheusURL) == "" {
			ps = append(ps, settings.Problem{Key: "facility.prometheusURL", Msg: "is empty: facility metrics and Kepler power need a Prometheus to query"})
		} else if _, err := baseurl.Parse(c.PrometheusURL); err != nil {
			ps = append(ps, settings.Problem{Key: "facility.prometheusURL",
				Msg: fmt.Sprintf("%q %s; want a base URL such as %s", c.PrometheusURL, baseurl.Reason(err), DefaultPrometheusURL)})
		}
	}
	return ps
}

// parseBaseURL is the Prometheus URL once validated: pkg/baseurl's rule,
// so a path prefix (Prometheus behind a proxy under /prometheus) is kept.
func parseBaseURL(raw string) (*url.URL, error) { return baseurl.Parse(raw) }
