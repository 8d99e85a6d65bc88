// Package config is joulie-extender's one configuration: its struct, its
// key table and its checks. Every setting is a key of the YAML file
// (--config), a command-line flag and an environment variable (the
// scheduler-extender design's names where it has one: EXTENDER_ADDR,
// TWIN_STALENESS_THRESHOLD, MARGINAL_*, ENABLE_FACILITY_METRICS), read by
// pkg/settings and checked here, once, so that a bad value stops the
// program at start with a message naming the key, the value and its
// source.
package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"slices"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"

	"joulie.io/joulie/extender/internal/server"
	"joulie.io/joulie/pkg/cliapp"
	"joulie.io/joulie/pkg/kubeclient"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/pkg/settings"
	"joulie.io/joulie/pkg/version"
)

// ErrUsage marks errors of configuration, which exit with status 2.
var ErrUsage = settings.ErrUsage

// Config is the extender's configuration.
type Config struct {
	Addr               string
	Kubeconfig         string
	ScoringMode        scoring.Mode
	StalenessThreshold time.Duration
	Coefficients       powerest.Coefficients
	FacilityMetrics    bool
	TLSCertFile        string
	TLSKeyFile         string
	// Certificate is the loaded key pair; nil without TLS.
	Certificate       *tls.Certificate
	MaxRequestBytes   ByteSize
	MaxInFlightBytes  ByteSize
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	LogLevel          slog.Level
	LogFormat         string
}

// ByteSize is a byte count written as a Kubernetes quantity ("64Mi",
// "100M").
type ByteSize int64

// UnmarshalText parses a quantity between 1Ki and 2Gi.
func (b *ByteSize) UnmarshalText(text []byte) error {
	q, err := resource.ParseQuantity(string(text))
	if err != nil {
		return errors.New(`not a size (such as "64Mi" or "100M")`)
	}
	if n := q.Value(); n < 1024 || n > math.MaxInt32 {
		return errors.New("must be between 1Ki and 2Gi")
	}
	*b = ByteSize(q.Value())
	return nil
}

// MarshalText writes the size as a quantity, in binary units when exact.
func (b ByteSize) MarshalText() ([]byte, error) {
	return []byte(resource.NewQuantity(int64(b), resource.BinarySI).String()), nil
}

// ConfigEnv names the configuration file when --config is not given.
const ConfigEnv = "JOULIE_EXTENDER_CONFIG"

// table lists every key, in the order of --help and the README, with the
// variable each had before the file existed (the scheduler-extender
// design's names where it has one).
var table = settings.New(settings.Table[Config]{
	Keys: slices.Concat([]settings.Key[Config]{
		{Path: "addr", Env: []string{"EXTENDER_ADDR"}, Usage: "host:port to serve on",
			Ref: func(c *Config) any { return &c.Addr }},
		{Path: "kubeconfig", Env: []string{"KUBECONFIG"}, Usage: "kubeconfig file; empty uses the in-cluster service account", DefaultText: "in-cluster",
			Ref: func(c *Config) any { return &c.Kubeconfig }},
		{Path: "scoringMode", Env: []string{"SCORING_MODE"}, Usage: "pack: every pod fills the fullest node that fits it, pods without GPUs off GPU nodes; pack-standard: standard pods pack, performance pods by power headroom; headroom: the design's power-headroom formula for every pod",
			Ref: func(c *Config) any { return &c.ScoringMode }},
		{Path: "twinStalenessThreshold", Env: []string{"TWIN_STALENESS_THRESHOLD"}, Usage: "age beyond which a NodeTwin scores a neutral 50",
			Ref: func(c *Config) any { return &c.StalenessThreshold }},
	}, marginalKeys(), []settings.Key[Config]{
		{Path: "enableFacilityMetrics", Env: []string{"ENABLE_FACILITY_METRICS"}, Usage: "weight marginal power by the twin's estimatedPUE",
			Ref: func(c *Config) any { return &c.FacilityMetrics }},
		{Path: "tls.certFile", Env: []string{"EXTENDER_TLS_CERT_FILE"}, Usage: "PEM certificate to serve HTTPS with (needs --tls-key-file)",
			Ref: func(c *Config) any { return &c.TLSCertFile }},
		{Path: "tls.keyFile", Env: []string{"EXTENDER_TLS_KEY_FILE"}, Usage: "PEM private key of --tls-cert-file",
			Ref: func(c *Config) any { return &c.TLSKeyFile }},
		{Path: "maxRequestBytes", Env: []string{"EXTENDER_MAX_REQUEST_BYTES"}, Usage: "largest request body accepted (5,000 full Nodes are up to about 60M)",
			Ref: func(c *Config) any { return &c.MaxRequestBytes }},
		{Path: "maxInflightBytes", Env: []string{"EXTENDER_MAX_INFLIGHT_BYTES"}, Usage: "memory all calls in flight may hold together (bodies, decoded nodes, replies); calls beyond it get a 503",
			Ref: func(c *Config) any { return &c.MaxInFlightBytes }},
		{Path: "readHeaderTimeout", Env: []string{"EXTENDER_READ_HEADER_TIMEOUT"}, Usage: "time to read a request's headers",
			Ref: func(c *Config) any { return &c.ReadHeaderTimeout }},
		{Path: "readTimeout", Env: []string{"EXTENDER_READ_TIMEOUT"}, Usage: "time to read a whole request",
			Ref: func(c *Config) any { return &c.ReadTimeout }},
		{Path: "writeTimeout", Env: []string{"EXTENDER_WRITE_TIMEOUT"}, Usage: "time from the end of a request's headers to the end of its reply",
			Ref: func(c *Config) any { return &c.WriteTimeout }},
		{Path: "idleTimeout", Env: []string{"EXTENDER_IDLE_TIMEOUT"}, Usage: "time a kept-alive connection may stay idle",
			Ref: func(c *Config) any { return &c.IdleTimeout }},
		{Path: "logLevel", Env: []string{"EXTENDER_LOG_LEVEL"}, Usage: "debug, info, warn or error", DefaultText: "info",
			Ref: func(c *Config) any { return &c.LogLevel }},
		{Path: "logFormat", Env: []string{"EXTENDER_LOG_FORMAT"}, Usage: "text or json",
			Ref: func(c *Config) any { return &c.LogFormat }},
	}),
	ConfigEnv: ConfigEnv,
	Default:   Default,
	Check:     check,
	Complete:  loadKeyPair,
})

// marginalKeys are the scoring coefficients' keys (marginal.*), which
// pkg/powerest declares for this program and the controller alike.
func marginalKeys() []settings.Key[Config] {
	var ks []settings.Key[Config]
	for _, m := range powerest.CoefficientKeys() {
		ks = append(ks, settings.Key[Config]{Path: m.Path, Env: []string{m.Env}, Usage: m.Usage, Ref: func(c *Config) any { return m.Field(&c.Coefficients) }})
	}
	return ks
}

// Default is the configuration with nothing set. Its scoring settings are
// pkg/scoring's defaults, which the energy simulator scores with too.
func Default() Config {
	p := scoring.DefaultParams()
	return Config{
		Addr:               ":9876",
		ScoringMode:        p.Mode,
		StalenessThreshold: p.StalenessThreshold,
		Coefficients:       p.Coefficients,
		FacilityMetrics:    p.FacilityMetrics,
		MaxRequestBytes:    64 << 20,
		MaxInFlightBytes:   160 << 20,
		ReadHeaderTimeout:  10 * time.Second,
		ReadTimeout:        30 * time.Second,
		WriteTimeout:       30 * time.Second,
		IdleTimeout:        2 * time.Minute,
		LogLevel:           slog.LevelInfo,
		LogFormat:          "text",
	}
}

// check reports every problem, in key order.
func check(c Config) []settings.Problem {
	var ps []settings.Problem
	add := func(key, format string, a ...any) {
		ps = append(ps, settings.Problem{Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		add("addr", `%q is not a host:port (such as ":9876")`, c.Addr)
	}
	positive := func(key string, d time.Duration) {
		if d <= 0 {
			add(key, "%q must be positive", d.String())
		}
	}
	positive("twinStalenessThreshold", c.StalenessThreshold)
	for _, p := range c.Coefficients.Problems() {
		add(p.Key, "%s", p.Msg)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		add("tls.keyFile", "tls.certFile %q and tls.keyFile %q: give both or neither", c.TLSCertFile, c.TLSKeyFile)
	}
	if need := ByteSize(server.MinInFlightBytes(int64(c.MaxRequestBytes))); c.MaxInFlightBytes < need {
		add("maxInflightBytes", "%d is less than %d, maxRequestBytes %d and a quarter: a filter call of the largest body holds the body and what is decoded from it while its reply streams the kept Nodes from the body; raise the first or lower the second",
			c.MaxInFlightBytes, need, c.MaxRequestBytes)
	}
	positive("readHeaderTimeout", c.ReadHeaderTimeout)
	positive("readTimeout", c.ReadTimeout)
	positive("writeTimeout", c.WriteTimeout)
	positive("idleTimeout", c.IdleTimeout)
	switch c.LogFormat {
	case "text", "json":
	default:
		add("logFormat", "%q is not text or json", c.LogFormat)
	}
	return ps
}

// loadKeyPair reads the TLS certificate and key, once check has found
// the rest sound; a pair that does not load is reported like check's
// problems, under tls.certFile.
func loadKeyPair(c *Config) []settings.Problem {
	if c.TLSCertFile == "" {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return []settings.Problem{{Key: "tls.certFile", Msg: fmt.Sprintf("tls.certFile %q, tls.keyFile %q: %v", c.TLSCertFile, c.TLSKeyFile, err)}}
	}
	c.Certificate = &cert
	return nil
}

// Flags are the command-line flags: --config and one per key, each
// naming its variable.
func Flags() []cli.Flag { return table.Flags() }

// FromCLI reads the configuration from the file, the variables lookup
// finds (os.LookupEnv in the program) and the flags of c, and checks it.
// Every problem is reported at once, each naming its key, the value and
// where it came from; the error wraps ErrUsage.
func FromCLI(c *cli.Context, lookup func(string) (string, bool)) (Config, error) {
	return table.CLISource(c, lookup).Load()
}

// RESTConfig is the client configuration for the API server: from the
// kubeconfig file, else the pod's service account. A kubeconfig that
// does not load is bad configuration: the error wraps ErrUsage.
func (c Config) RESTConfig() (*rest.Config, error) {
	rc, err := kubeclient.Config(c.Kubeconfig, "--kubeconfig / KUBECONFIG", "joulie-extender/"+version.Version)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return rc, nil
}

// Params are the scoring settings.
func (c Config) Params() scoring.Params {
	return scoring.Params{Mode: c.ScoringMode, Coefficients: c.Coefficients, FacilityMetrics: c.FacilityMetrics, StalenessThreshold: c.StalenessThreshold}
}

// ServerOptions are the HTTP server's settings.
func (c Config) ServerOptions() server.Options {
	return server.Options{
		Params:            c.Params(),
		MaxRequestBytes:   int64(c.MaxRequestBytes),
		MaxInFlightBytes:  int64(c.MaxInFlightBytes),
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
	}
}

// LogHandler is the slog handler logLevel and logFormat ask for, writing
// to w.
func (c Config) LogHandler(w io.Writer) slog.Handler {
	return cliapp.LogHandler(w, c.LogLevel.String(), c.LogFormat)
}

// LogValue shows the settings in one log line.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("addr", c.Addr),
		slog.String("kubeconfig", c.Kubeconfig),
		slog.String("scoringMode", string(c.ScoringMode)),
		slog.Duration("twinStalenessThreshold", c.StalenessThreshold),
		slog.Any("coefficients", c.Coefficients),
		slog.Bool("facilityMetrics", c.FacilityMetrics),
		slog.Bool("tls", c.Certificate != nil),
		slog.Int64("maxRequestBytes", int64(c.MaxRequestBytes)),
		slog.Int64("maxInFlightBytes", int64(c.MaxInFlightBytes)),
		slog.Duration("readTimeout", c.ReadTimeout),
		slog.Duration("writeTimeout", c.WriteTimeout),
	)
}
