// Package config is joulie-controller's configuration: its struct, its
// key table and its checks. Every setting is a key of the YAML file
// (--config), a command-line flag and an environment variable with the
// seeds' names (NODE_SELECTOR, RECONCILE_INTERVAL, POLICY_TYPE,
// STATIC_HP_FRAC, QUEUE_*, CPU_*, GPU_*, MARGINAL_*, FACILITY_*, ...),
// read by pkg/settings and checked here, once, so that a bad value stops
// the controller with a message naming the key, the value and its source.
package config

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"joulie.io/joulie/controller/internal/bmc"
	"joulie.io/joulie/controller/internal/facility"
	"joulie.io/joulie/controller/internal/parking"
	"joulie.io/joulie/pkg/cliapp"
	"joulie.io/joulie/pkg/intent"
	"joulie.io/joulie/pkg/kubeclient"
	"joulie.io/joulie/pkg/park"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/settings"
	"joulie.io/joulie/pkg/version"
)

// ErrUsage marks configuration errors (exit code 2).
var ErrUsage = settings.ErrUsage

// ConfigEnv names the configuration file when --config is not given.
const ConfigEnv = "JOULIE_CONTROLLER_CONFIG"

// Config is the whole configuration.
type Config struct {
	Kubeconfig  string
	MetricsAddr string
	QPS         float64
	Burst       int

	// NodeSelector is the label selector as written; Plan holds it
	// parsed.
	NodeSelector string
	// Plan holds the planning keys, for plan.Compute.
	Plan           plan.Params
	TwinRefresh    time.Duration
	TrendWindow    time.Duration
	Debounce       time.Duration
	LeaderElect    bool
	LeaseNamespace string
	LeaseName      string
	Identity       string
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration
	LogLevel       string
	// Facility is the facility poller's configuration (ENABLE_FACILITY_METRICS
	// and FACILITY_*); its Prometheus also serves the Kepler query.
	Facility facility.Config
	// Kepler enables node power from Kepler (ENABLE_KEPLER_POWER) with
	// KEPLER_NODE_POWER_QUERY and KEPLER_NODE_LABEL.
	Kepler          bool
	KeplerQuery     string
	KeplerNodeLabel string
	// IPMI is how parked nodes are woken through their BMCs
	// (parking.ipmi.*), the BMC Secrets' namespace included.
	IPMI bmc.Config
	// Parking switches idle parkable nodes off and wakes them (parking.*).
	Parking Parking
}

// Parking is the configuration of parking: off unless Enabled, and then
// only for nodes labelled joulie.io/parkable=true.
type Parking struct {
	Enabled bool
	// NodeSelector is the parkable nodes' label selector as written;
	// Settings.Parkable holds it parsed.
	NodeSelector string
	Params       park.Params
	SyncInterval time.Duration
	// MaxConcurrentWakes bounds the wake calls in flight.
	MaxConcurrentWakes int
	// PowerCycleOnRetry power cycles a host that is on when a wake is
	// retried (parking.ipmi.powerCycleOnRetry).
	PowerCycleOnRetry bool
}

// Default is the configuration with nothing set. Its planning parameters,
// node selector and twin refresh are pkg/plan's defaults.
func Default() Config {
	host, _ := os.Hostname()
	return Config{
		MetricsAddr: ":8080", QPS: 20, Burst: 40,
		// pkg/plan's, which the energy simulator plans with too.
		NodeSelector: plan.DefaultNodeSelector, Plan: plan.DefaultParams(), TwinRefresh: plan.DefaultTwinRefresh,
		TrendWindow: 5 * time.Minute, Debounce: 500 * time.Millisecond,
		LeaderElect: true, LeaseNamespace: "joulie-system", LeaseName: "joulie-controller", Identity: host,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		LogLevel:    "info",
		Facility:    facility.DefaultConfig(),
		KeplerQuery: facility.DefaultKeplerQuery, KeplerNodeLabel: facility.DefaultKeplerNodeLabel,
		IPMI: bmc.DefaultConfig(),
		// pkg/park's, which the energy simulator parks with too.
		Parking: Parking{NodeSelector: park.DefaultParkable, Params: park.DefaultParams(), SyncInterval: 5 * time.Second,
			MaxConcurrentWakes: parking.DefaultMaxConcurrentWakes, PowerCycleOnRetry: true},
	}
}

// Flags are the controller's flags: --config and one per key, each naming
// its variable.
func Flags() []cli.Flag { return table.Flags() }

// FromCLI reads the file, the variables lookup finds (os.LookupEnv in the
// program) and the flags of c, and checks the result. Every problem is
// reported at once; the error wraps ErrUsage.
func FromCLI(c *cli.Context, lookup func(string) (string, bool)) (Config, error) {
	return table.CLISource(c, lookup).Load()
}

// RESTConfig is the client configuration for the API server: from the
// kubeconfig file, else the pod's service account, at the configured
// rate limits. Its error does not wrap ErrUsage: joulie-controller has
// always exited 1 on a kubeconfig that does not load (its main test
// holds it to that), where joulie-extender exits 2.
func (c Config) RESTConfig() (*rest.Config, error) {
	rc, err := kubeclient.Config(c.Kubeconfig, "--kubeconfig / KUBECONFIG", "joulie-controller/"+version.Version)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = float32(c.QPS), c.Burst
	return rc, nil
}

// LogHandler is the slog handler logLevel asks for, writing text to w.
func (c Config) LogHandler(w io.Writer) slog.Handler {
	return cliapp.LogHandler(w, c.LogLevel, "text")
}

// modelCaps writes GPU_MODEL_CAPS_JSON, a JSON object, into its map.
type modelCaps struct{ m *map[string]intent.ModelCaps }

func (w modelCaps) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*w.m = nil
		return nil
	}
	m, err := intent.ParseModelCaps(b)
	if err != nil {
		return err
	}
	*w.m = m
	return nil
}

func (w modelCaps) MarshalText() ([]byte, error) {
	if len(*w.m) == 0 {
		return nil, nil
	}
	return json.Marshal(*w.m)
}

// labelKeys writes a comma-separated list (GPU_PRODUCT_LABEL_KEYS).
type labelKeys struct{ l *[]string }

func (w labelKeys) UnmarshalText(b []byte) error {
	*w.l = nil
	for _, k := range strings.Split(string(b), ",") {
		if k = strings.TrimSpace(k); k != "" {
			*w.l = append(*w.l, k)
		}
	}
	return nil
}

func (w labelKeys) MarshalText() ([]byte, error) { return []byte(strings.Join(*w.l, ",")), nil }

// check reports every problem of c, in key order.
func check(c Config) []settings.Problem {
	var ps []settings.Problem
	add := func(key, format string, a ...any) {
		ps = append(ps, settings.Problem{Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	positive := func(key string, d time.Duration) {
		if d <= 0 {
			add(key, "%q must be positive", d.String())
		}
	}
	fraction := func(key string, v float64) {
		if !(v >= 0 && v <= 1) { // also refuses NaN
			add(key, "%s is not a fraction in [0, 1]", settings.FormatFloat(v))
		}
	}
	pct := func(key string, v float64) {
		if !(v > 0 && v <= 100) {
			add(key, "%s is not a percentage in (0, 100]", settings.FormatFloat(v))
		}
	}
	watts := func(key string, v float64) {
		// 0 is the default: no absolute cap given.
		if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			add(key, "%s is not a number of watts per CPU package above 0", settings.FormatFloat(v))
		}
	}
	s := c.Plan

	if c.QPS <= 0 {
		add("kubeApiQps", "%s must be positive", settings.FormatFloat(c.QPS))
	}
	if c.Burst <= 0 {
		add("kubeApiBurst", "%d must be positive", c.Burst)
	}
	if _, err := selector(c.NodeSelector); err != nil {
		add("nodeSelector", "%v", err)
	}
	switch s.Policy {
	case plan.PolicyStaticPartition, plan.PolicyQueueAware, plan.PolicyRuleSwap:
	default:
		add("policy", "%q is not one of static_partition, queue_aware_v1, rule_swap_v1", s.Policy)
	}
	switch s.Spread {
	case policy.SpreadDemand, policy.SpreadDensity:
	default:
		add("performanceSpread", "%q is not one of demand, density", s.Spread)
	}
	positive("reconcileInterval", s.Interval)
	fraction("staticHpFrac", s.StaticHPFrac)
	fraction("queue.hpBaseFrac", s.Queue.BaseFrac)
	if s.Queue.Min < 0 {
		add("queue.hpMin", "%d must not be negative", s.Queue.Min)
	}
	if s.Queue.Max < 0 || (s.Queue.Max > 0 && s.Queue.Max < s.Queue.Min) {
		add("queue.hpMax", "%d is neither 0 (unbounded) nor at least queue.hpMin %d", s.Queue.Max, s.Queue.Min)
	}
	if s.Queue.PerfPerHPNode <= 0 {
		add("queue.perfPerHpNode", "%d must be positive", s.Queue.PerfPerHPNode)
	}
	if s.MinEcoDwell < 0 {
		add("minEcoDwell", "%q must not be negative", s.MinEcoDwell.String())
	}
	switch s.Guard {
	case policy.GuardDrain:
		if s.DrainDwell <= 0 {
			add("drainDwell", "%q must be positive with guardMode drain: a scheduler that has not seen the draining label yet would place performance pods on a node capped at once", s.DrainDwell.String())
		}
	case policy.GuardSeed:
	default:
		add("guardMode", "%q is not one of drain, seed", s.Guard)
	}
	positive("twinRefreshInterval", c.TwinRefresh)
	if !(s.RackCapacityW > 0) || math.IsInf(s.RackCapacityW, 0) {
		add("rackCapacityWatts", "%s must be positive", settings.FormatFloat(s.RackCapacityW))
	}
	if c.LeaderElect && !(c.LeaseDuration > c.RenewDeadline && c.RenewDeadline > c.RetryPeriod && c.RetryPeriod > 0) {
		add("renewDeadline", "leaseDuration %v, renewDeadline %v, retryPeriod %v: want lease duration > renew deadline > retry period > 0",
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	}
	var level slog.Level
	if level.UnmarshalText([]byte(c.LogLevel)) != nil {
		add("logLevel", "%q is not one of debug, info, warn, error", c.LogLevel)
	}

	in := s.Intent
	pct("cpu.performanceCapPctOfMax", in.CPUPerformanceCapPctOfMax)
	pct("cpu.ecoCapPctOfMax", in.CPUEcoCapPctOfMax)
	watts("cpu.performanceCapWatts", in.PerformanceCapWatts)
	watts("cpu.ecoCapWatts", in.EcoCapWatts)
	if in.CPUWriteAbsoluteCaps && (in.PerformanceCapWatts == 0 || in.EcoCapWatts == 0) {
		add("cpu.writeAbsoluteCaps", "true needs cpu.performanceCapWatts and cpu.ecoCapWatts")
	}
	pct("gpu.performanceCapPctOfMax", in.GPUPerformanceCapPctOfMax)
	pct("gpu.ecoCapPctOfMax", in.GPUEcoCapPctOfMax)
	switch s.CapMode {
	case plan.CapModePays, plan.CapModeFixed:
	default:
		add("capMode", "%q is not one of pays, fixed", s.CapMode)
	}
	switch s.GPUCapScope {
	case plan.GPUScopeNode, plan.GPUScopePod:
	default:
		add("gpuCapScope", "%q is not one of node, pod", s.GPUCapScope)
	}

	for _, p := range s.Coefficients.Problems() {
		add(p.Key, "%s", p.Msg)
	}

	// Kepler needs the Prometheus URL even without facility metrics.
	ps = append(ps, c.Facility.Problems(c.Facility.Enabled || c.Kepler)...)
	if c.Kepler && c.KeplerQuery == "" {
		add("kepler.nodePowerQuery", "is empty: Kepler power needs a PromQL query giving watts per node")
	}
	if c.Kepler && c.KeplerNodeLabel == "" {
		add("kepler.nodeLabel", "is empty: Kepler power needs the label naming the node")
	}

	ipmi := c.IPMI.Problems()
	for _, f := range []struct{ field, key string }{
		{"CipherSuites", "parking.ipmi.cipherSuites"},
		{"Privilege", "parking.ipmi.privilege"},
		{"Timeout", "parking.ipmi.timeout"},
		{"Retries", "parking.ipmi.retries"},
		{"CallTimeout", "parking.ipmi.callTimeout"},
		{"SecretNamespace", "parking.ipmi.secretNamespace"},
	} {
		if msg, ok := ipmi[f.field]; ok {
			add(f.key, "%s", msg)
		}
	}
	// An empty selector would select every node, the control plane's
	// included (Decide still refuses those, but an operator who cleared
	// the key most likely meant "none"): it is refused, not guessed.
	switch sel, err := selector(c.Parking.NodeSelector); {
	case err != nil:
		add("parking.nodeSelector", "%v", err)
	case sel.Empty():
		add("parking.nodeSelector", "is empty, which selects every node: give the parkable nodes' labels (default %s), or set parking.enabled false", park.DefaultParkable)
	}
	pk := c.Parking.Params
	nonNegative := func(key string, d time.Duration) {
		if d < 0 {
			add(key, "%q must not be negative", d.String())
		}
	}
	nonNegative("parking.settleTime", pk.SettleTime)
	if pk.ReserveFloor < 0 {
		add("parking.reserveFloor", "%d must not be negative", pk.ReserveFloor)
	}
	if pk.ReserveSizing != park.ReservePeak && pk.ReserveSizing != park.ReserveMean {
		add("parking.reserveSizing", "%q is not one of %s, %s", pk.ReserveSizing, park.ReservePeak, park.ReserveMean)
	}
	if pk.ReserveFor != park.ReserveForAny && pk.ReserveFor != park.ReserveForPerformance {
		add("parking.reserveFor", "%q is not one of %s, %s", pk.ReserveFor, park.ReserveForAny, park.ReserveForPerformance)
	}
	nonNegative("parking.reserveMaxGap", pk.ReserveMaxGap)
	nonNegative("parking.bootTime", pk.BootTime)
	positive("parking.lookback", pk.Lookback)
	if pk.ParksPerMinute < 0 {
		add("parking.parksPerMinute", "%d must not be negative (0 parks nothing)", pk.ParksPerMinute)
	}
	if pk.WakesPerMinute < 0 {
		add("parking.wakesPerMinute", "%d must not be negative (0 wakes nothing)", pk.WakesPerMinute)
	}
	nonNegative("parking.grace", pk.ParkGrace)
	positive("parking.resumeTimeout", pk.ResumeTimeout)
	if pk.MaxWakeAttempts < 1 {
		add("parking.maxWakeAttempts", "%d must be at least 1", pk.MaxWakeAttempts)
	}
	positive("parking.syncInterval", c.Parking.SyncInterval)
	if c.Parking.MaxConcurrentWakes < 1 {
		add("parking.maxConcurrentWakes", "%d must be at least 1", c.Parking.MaxConcurrentWakes)
	}
	return ps
}

// complete parses the two node selectors, which check has found sound,
// into Plan and Parking.Params, which planning and parking read.
func complete(c *Config) []settings.Problem {
	var ps []settings.Problem
	for _, s := range []struct {
		key, text string
		dst       *labels.Selector
	}{
		{"nodeSelector", c.NodeSelector, &c.Plan.NodeSelector},
		{"parking.nodeSelector", c.Parking.NodeSelector, &c.Parking.Params.Parkable},
	} {
		sel, err := selector(s.text)
		if err != nil {
			ps = append(ps, settings.Problem{Key: s.key, Msg: err.Error()})
			continue
		}
		*s.dst = sel
	}
	return ps
}

// selector parses a label selector as written; its error is the message
// of a bad one.
func selector(text string) (labels.Selector, error) {
	sel, err := labels.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%q is not a label selector: %v", text, err)
	}
	return sel, nil
}
