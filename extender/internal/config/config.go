// Package config is joulie-extender's one configuration: every setting is
// a command-line flag and an environment variable (the scheduler-extender
// design's names where it has one: EXTENDER_ADDR,
// TWIN_STALENESS_THRESHOLD, MARGINAL_*, ENABLE_FACILITY_METRICS), loaded
// and checked here, once, so that a bad value stops the program at start
// with a message naming the setting and the value.
package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"joulie.io/joulie/extender/internal/server"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
)

// ErrUsage marks errors of configuration, which exit with status 2.
var ErrUsage = errors.New("bad configuration")

// Config is the extender's configuration.
type Config struct {
	Addr               string
	Kubeconfig         string
	StalenessThreshold time.Duration
	Coefficients       powerest.Coefficients
	FacilityMetrics    bool
	TLSCertFile        string
	TLSKeyFile         string
	// Certificate is the loaded key pair; nil without TLS.
	Certificate       *tls.Certificate
	MaxRequestBytes   int64
	MaxInFlightBytes  int64
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	LogLevel          slog.Level
	LogFormat         string
}

// setting is one key: its flag, its variable, its default and its parser.
type setting struct {
	flag, env, def, usage string
	parse                 func(c *Config, v string) error
}

// boolean reports whether the setting is a switch, such as
// --enable-facility-metrics: one whose default is true or false. cli
// parses switches itself.
func (s setting) boolean() bool { return s.def == "true" || s.def == "false" }

// settings lists every key, in the order of --help and the README.
var settings = []setting{
	{"addr", "EXTENDER_ADDR", ":9876", "host:port to serve on",
		func(c *Config, v string) error {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return errors.New("not a host:port (such as \":9876\")")
			}
			c.Addr = v
			return nil
		}},
	{"kubeconfig", "KUBECONFIG", "", "kubeconfig file; empty uses the in-cluster service account",
		func(c *Config, v string) error { c.Kubeconfig = v; return nil }},
	{"twin-staleness-threshold", "TWIN_STALENESS_THRESHOLD", "5m", "age beyond which a NodeTwin scores a neutral 50",
		func(c *Config, v string) error { return positiveDuration(&c.StalenessThreshold, v) }},
	{"marginal-cpu-util-coeff", powerest.EnvCPUUtilCoeff, ftoa(powerest.DefaultCoefficients().CPUUtil), "share of its CPU power a pod is expected to draw, 0..1",
		func(c *Config, v string) error { return coefficient(&c.Coefficients.CPUUtil, v) }},
	{"marginal-gpu-util-coeff-standard", powerest.EnvGPUUtilCoeffStandard, ftoa(powerest.DefaultCoefficients().GPUUtilStandard), "share of its GPU power a standard pod is expected to draw, 0..1",
		func(c *Config, v string) error { return coefficient(&c.Coefficients.GPUUtilStandard, v) }},
	{"marginal-gpu-util-coeff-performance", powerest.EnvGPUUtilCoeffPerformance, ftoa(powerest.DefaultCoefficients().GPUUtilPerformance), "share of its GPU power a performance pod is expected to draw, 0..1",
		func(c *Config, v string) error { return coefficient(&c.Coefficients.GPUUtilPerformance, v) }},
	{"enable-facility-metrics", "ENABLE_FACILITY_METRICS", "false", "weight marginal power by the twin's estimatedPUE",
		func(c *Config, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return errors.New("not true or false")
			}
			c.FacilityMetrics = b
			return nil
		}},
	{"tls-cert-file", "EXTENDER_TLS_CERT_FILE", "", "PEM certificate to serve HTTPS with (needs --tls-key-file)",
		func(c *Config, v string) error { c.TLSCertFile = v; return nil }},
	{"tls-key-file", "EXTENDER_TLS_KEY_FILE", "", "PEM private key of --tls-cert-file",
		func(c *Config, v string) error { c.TLSKeyFile = v; return nil }},
	{"max-request-bytes", "EXTENDER_MAX_REQUEST_BYTES", "64Mi", "largest request body accepted (5,000 full Nodes are up to about 60M)",
		func(c *Config, v string) error { return size(&c.MaxRequestBytes, v) }},
	{"max-inflight-bytes", "EXTENDER_MAX_INFLIGHT_BYTES", "160Mi", "memory all calls in flight may hold together (bodies, decoded nodes, replies); calls beyond it get a 503",
		func(c *Config, v string) error { return size(&c.MaxInFlightBytes, v) }},
	{"read-header-timeout", "EXTENDER_READ_HEADER_TIMEOUT", "10s", "time to read a request's headers",
		func(c *Config, v string) error { return positiveDuration(&c.ReadHeaderTimeout, v) }},
	{"read-timeout", "EXTENDER_READ_TIMEOUT", "30s", "time to read a whole request",
		func(c *Config, v string) error { return positiveDuration(&c.ReadTimeout, v) }},
	{"write-timeout", "EXTENDER_WRITE_TIMEOUT", "30s", "time from the end of a request's headers to the end of its reply",
		func(c *Config, v string) error { return positiveDuration(&c.WriteTimeout, v) }},
	{"idle-timeout", "EXTENDER_IDLE_TIMEOUT", "2m", "time a kept-alive connection may stay idle",
		func(c *Config, v string) error { return positiveDuration(&c.IdleTimeout, v) }},
	{"log-level", "EXTENDER_LOG_LEVEL", "info", "debug, info, warn or error",
		func(c *Config, v string) error {
			if err := c.LogLevel.UnmarshalText([]byte(strings.TrimSpace(v))); err != nil {
				return errors.New("not one of debug, info, warn, error")
			}
			return nil
		}},
	{"log-format", "EXTENDER_LOG_FORMAT", "text", "text or json",
		func(c *Config, v string) error {
			switch v {
			case "text", "json":
				c.LogFormat = v
				return nil
			}
			return errors.New("not text or json")
		}},
}

// size parses a byte count such as "64Mi".
func size(dst *int64, v string) error {
	q, err := resource.ParseQuantity(strings.TrimSpace(v))
	if err != nil {
		return errors.New("not a size (such as \"64Mi\" or \"100M\")")
	}
	if n := q.Value(); n < 1024 || n > math.MaxInt32 {
		return errors.New("must be between 1Ki and 2Gi")
	}
	*dst = q.Value()
	return nil
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func positiveDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return errors.New("not a duration (such as \"30s\" or \"5m\")")
	}
	if d <= 0 {
		return errors.New("must be positive")
	}
	*dst = d
	return nil
}

func coefficient(dst *float64, v string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(f >= 0 && f <= 1) { // also refuses NaN
		return errors.New("not a number between 0 and 1")
	}
	*dst = f
	return nil
}

// Flags are the command-line flags, each also read from its variable.
func Flags() []cli.Flag {
	flags := make([]cli.Flag, 0, len(settings))
	for _, s := range settings {
		if s.boolean() {
			def, _ := strconv.ParseBool(s.def)
			flags = append(flags, &cli.BoolFlag{Name: s.flag, EnvVars: []string{s.env}, Value: def, Usage: s.usage})
			continue
		}
		flags = append(flags, &cli.StringFlag{Name: s.flag, EnvVars: []string{s.env}, Value: s.def, Usage: s.usage})
	}
	return flags
}

// FromCLI reads the configuration from the flags and variables of c and
// checks it. Every problem is reported at once, each naming its flag, its
// variable and the value given; the error wraps ErrUsage.
func FromCLI(c *cli.Context) (*Config, error) {
	cfg := &Config{}
	var errs []error
	for _, s := range settings {
		v := c.String(s.flag)
		if s.boolean() {
			v = strconv.FormatBool(c.Bool(s.flag))
		}
		if strings.TrimSpace(v) == "" && s.def != "" {
			// Helm renders an unset value as "": that means the default.
			v = s.def
		}
		if err := s.parse(cfg, v); err != nil {
			errs = append(errs, fmt.Errorf("--%s / %s = %q: %w", s.flag, s.env, v, err))
		}
	}
	if cfg.MaxRequestBytes > 0 && cfg.MaxInFlightBytes > 0 && cfg.MaxInFlightBytes < 2*cfg.MaxRequestBytes {
		// A filter call of the largest body holds that body and a reply
		// as large (the Nodes handed back); below twice the body limit it
		// could never be answered.
		errs = append(errs, fmt.Errorf("--max-inflight-bytes / EXTENDER_MAX_INFLIGHT_BYTES = %d is less than twice --max-request-bytes / EXTENDER_MAX_REQUEST_BYTES = %d: a filter call of the largest body holds it and a reply as large; raise the first or lower the second",
			cfg.MaxInFlightBytes, cfg.MaxRequestBytes))
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		errs = append(errs, fmt.Errorf("--tls-cert-file / EXTENDER_TLS_CERT_FILE = %q and --tls-key-file / EXTENDER_TLS_KEY_FILE = %q: give both or neither",
			cfg.TLSCertFile, cfg.TLSKeyFile))
	} else if cfg.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--tls-cert-file / EXTENDER_TLS_CERT_FILE = %q, --tls-key-file / EXTENDER_TLS_KEY_FILE = %q: %w",
				cfg.TLSCertFile, cfg.TLSKeyFile, err))
		} else {
			cfg.Certificate = &cert
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return cfg, nil
}

// RESTConfig is the client configuration for the API server: from the
// kubeconfig file, else the pod's service account.
func (c *Config) RESTConfig() (*rest.Config, error) {
	if c.Kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("%w: --kubeconfig / KUBECONFIG = %q: %w", ErrUsage, c.Kubeconfig, err)
		}
		return rc, nil
	}
	rc, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: no --kubeconfig / KUBECONFIG given and not running in a cluster: %w", ErrUsage, err)
	}
	return rc, nil
}

// Params are the scoring settings.
func (c *Config) Params() scoring.Params {
	return scoring.Params{Coefficients: c.Coefficients, FacilityMetrics: c.FacilityMetrics, StalenessThreshold: c.StalenessThreshold}
}

// ServerOptions are the HTTP server's settings.
func (c *Config) ServerOptions() server.Options {
	return server.Options{
		Params:            c.Params(),
		MaxRequestBytes:   c.MaxRequestBytes,
		MaxInFlightBytes:  c.MaxInFlightBytes,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
	}
}

// LogHandler is the slog handler the settings ask for.
func (c *Config) LogHandler(w io.Writer) slog.Handler {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// LogValue shows the settings in one log line.
func (c *Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("addr", c.Addr),
		slog.String("kubeconfig", c.Kubeconfig),
		slog.Duration("twinStalenessThreshold", c.StalenessThreshold),
		slog.Any("coefficients", c.Coefficients),
		slog.Bool("facilityMetrics", c.FacilityMetrics),
		slog.Bool("tls", c.Certificate != nil),
		slog.Int64("maxRequestBytes", c.MaxRequestBytes),
		slog.Int64("maxInFlightBytes", c.MaxInFlightBytes),
		slog.Duration("readTimeout", c.ReadTimeout),
		slog.Duration("writeTimeout", c.WriteTimeout),
	)
}
