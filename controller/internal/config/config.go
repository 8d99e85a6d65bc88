// Package config is joulie-controller's configuration: every setting is a
// flag and an environment variable with the seeds' names (NODE_SELECTOR,
// RECONCILE_INTERVAL, POLICY_TYPE, STATIC_HP_FRAC, QUEUE_*, ...), checked
// at start so a bad value stops the controller with a message naming it.
package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/labels"

	"joulie.io/joulie/controller/internal/facility"
	"joulie.io/joulie/pkg/intent"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/twin"
)

// ErrUsage marks configuration errors (exit code 2).
var ErrUsage = errors.New("bad configuration")

// Config is the whole configuration.
type Config struct {
	Kubeconfig  string
	MetricsAddr string
	QPS         float64
	Burst       int

	Settings       plan.Settings
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
}

// Flags are the controller's flags, each with its environment variable.
func Flags() []cli.Flag {
	host, _ := os.Hostname()
	return []cli.Flag{
		&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"KUBECONFIG"}, Usage: "kubeconfig file; empty means in-cluster"},
		&cli.StringFlag{Name: "metrics-address", EnvVars: []string{"METRICS_ADDR"}, Value: ":8080", Usage: "address of /metrics, /healthz and /readyz"},
		&cli.Float64Flag{Name: "kube-api-qps", EnvVars: []string{"KUBE_API_QPS"}, Value: 20, Usage: "client queries per second to the API server"},
		&cli.IntFlag{Name: "kube-api-burst", EnvVars: []string{"KUBE_API_BURST"}, Value: 40, Usage: "client burst to the API server"},
		&cli.StringFlag{Name: "node-selector", EnvVars: []string{"NODE_SELECTOR"}, Value: "joulie.io/managed=true", Usage: "label selector of managed nodes"},
		&cli.StringFlag{Name: "policy", EnvVars: []string{"POLICY_TYPE"}, Value: plan.PolicyQueueAware, Usage: "static_partition, queue_aware_v1 or rule_swap_v1 (debug)"},
		&cli.DurationFlag{Name: "reconcile-interval", EnvVars: []string{"RECONCILE_INTERVAL"}, Value: time.Minute, Usage: "replan at least this often"},
		&cli.Float64Flag{Name: "static-hp-frac", EnvVars: []string{"STATIC_HP_FRAC"}, Value: 0.5, Usage: "static_partition: fraction of performance nodes"},
		&cli.Float64Flag{Name: "queue-hp-base-frac", EnvVars: []string{"QUEUE_HP_BASE_FRAC"}, Value: 0.6, Usage: "queue_aware_v1: base fraction of performance nodes"},
		&cli.IntFlag{Name: "queue-hp-min", EnvVars: []string{"QUEUE_HP_MIN"}, Value: 1, Usage: "queue_aware_v1: minimum performance nodes"},
		&cli.IntFlag{Name: "queue-hp-max", EnvVars: []string{"QUEUE_HP_MAX"}, Value: 0, Usage: "queue_aware_v1: maximum performance nodes (0: unbounded)"},
		&cli.IntFlag{Name: "queue-perf-per-hp-node", EnvVars: []string{"QUEUE_PERF_PER_HP_NODE"}, Value: 10, Usage: "queue_aware_v1: performance pods one performance node absorbs"},
		&cli.DurationFlag{Name: "min-eco-dwell", EnvVars: []string{"MIN_ECO_DWELL"}, Value: 5 * time.Minute, Usage: "time after a change before a node may go (back) to eco; 0 is the seed's behaviour; rule_swap_v1 ignores it"},
		&cli.DurationFlag{Name: "twin-refresh-interval", EnvVars: []string{"TWIN_REFRESH_INTERVAL"}, Value: 2 * time.Minute, Usage: "rewrite an unchanged NodeTwin's lastUpdated this often (below the extender's staleness threshold)"},
		&cli.DurationFlag{Name: "power-trend-window", EnvVars: []string{"POWER_TREND_WINDOW"}, Value: 5 * time.Minute, Usage: "window of the power trend"},
		&cli.DurationFlag{Name: "measurement-max-age", EnvVars: []string{"MEASUREMENT_MAX_AGE"}, Value: 3 * time.Minute, Usage: "oldest agent power reading the twin uses"},
		&cli.Float64Flag{Name: "rack-capacity-watts", EnvVars: []string{"RACK_CAPACITY_WATTS"}, Value: twin.DefaultReferenceRackCapacityW, Usage: "PSU stress reference capacity"},
		&cli.DurationFlag{Name: "debounce", EnvVars: []string{"RECONCILE_DEBOUNCE"}, Value: 500 * time.Millisecond, Usage: "wait after a change so a burst of changes is one reconcile"},
		&cli.BoolFlag{Name: "leader-elect", EnvVars: []string{"LEADER_ELECT"}, Value: true, Usage: "hold a Lease so only one replica writes"},
		&cli.StringFlag{Name: "leader-election-namespace", EnvVars: []string{"POD_NAMESPACE"}, Value: "joulie-system", Usage: "namespace of the Lease"},
		&cli.StringFlag{Name: "leader-election-id", EnvVars: []string{"LEADER_ELECTION_ID"}, Value: "joulie-controller", Usage: "name of the Lease"},
		&cli.StringFlag{Name: "identity", EnvVars: []string{"POD_NAME"}, Value: host, Usage: "this replica's name in the Lease"},
		&cli.DurationFlag{Name: "lease-duration", EnvVars: []string{"LEASE_DURATION"}, Value: 15 * time.Second, Usage: "Lease duration"},
		&cli.DurationFlag{Name: "renew-deadline", EnvVars: []string{"RENEW_DEADLINE"}, Value: 10 * time.Second, Usage: "leader gives up after failing to renew this long"},
		&cli.DurationFlag{Name: "retry-period", EnvVars: []string{"RETRY_PERIOD"}, Value: 2 * time.Second, Usage: "Lease retry period"},
		&cli.StringFlag{Name: "log-level", EnvVars: []string{"LOG_LEVEL"}, Value: "info", Usage: "debug, info, warn or error"},
		&cli.BoolFlag{Name: "enable-kepler-power", EnvVars: []string{"ENABLE_KEPLER_POWER"}, Usage: "read node power from Kepler through the facility Prometheus (FACILITY_PROMETHEUS_URL)"},
		&cli.StringFlag{Name: "kepler-node-power-query", EnvVars: []string{facility.EnvKeplerQuery}, Value: facility.DefaultKeplerQuery, Usage: "PromQL giving watts per node"},
		&cli.StringFlag{Name: "kepler-node-label", EnvVars: []string{facility.EnvKeplerNodeLabel}, Value: facility.DefaultKeplerNodeLabel, Usage: "label of the query's series that names the node"},
	}
}

// FromCLI reads and checks the configuration; the power-intent knobs come
// from the environment (CPU_*, GPU_*, PERFORMANCE_CAP_WATTS, ECO_CAP_WATTS),
// and so do the marginal-power coefficients (MARGINAL_*).
func FromCLI(c *cli.Context, lookup func(string) (string, bool)) (Config, error) {
	cfg := Config{
		Kubeconfig: c.String("kubeconfig"), MetricsAddr: c.String("metrics-address"),
		QPS: c.Float64("kube-api-qps"), Burst: c.Int("kube-api-burst"),
		TwinRefresh: c.Duration("twin-refresh-interval"), TrendWindow: c.Duration("power-trend-window"), Debounce: c.Duration("debounce"),
		LeaderElect: c.Bool("leader-elect"), LeaseNamespace: c.String("leader-election-namespace"), LeaseName: c.String("leader-election-id"),
		Identity: c.String("identity"), LeaseDuration: c.Duration("lease-duration"), RenewDeadline: c.Duration("renew-deadline"),
		RetryPeriod: c.Duration("retry-period"), LogLevel: c.String("log-level"),
	}
	bad := func(key string, v any, why string) (Config, error) {
		return cfg, fmt.Errorf("%w: %s=%v: %s", ErrUsage, key, v, why)
	}
	sel, err := labels.Parse(c.String("node-selector"))
	if err != nil {
		return bad("NODE_SELECTOR", fmt.Sprintf("%q", c.String("node-selector")), err.Error())
	}
	s := plan.Settings{NodeSelector: sel, Policy: c.String("policy"), StaticHPFrac: c.Float64("static-hp-frac"),
		Queue: policy.QueueAware{BaseFrac: c.Float64("queue-hp-base-frac"), Min: c.Int("queue-hp-min"), Max: c.Int("queue-hp-max"),
			PerfPerHPNode: c.Int("queue-perf-per-hp-node")},
		Interval: c.Duration("reconcile-interval"), MinEcoDwell: c.Duration("min-eco-dwell"),
		Cooling: twin.DefaultLinearCoolingModel(), RackCapacityW: c.Float64("rack-capacity-watts"),
		MeasurementMaxAge: c.Duration("measurement-max-age")}
	switch s.Policy {
	case plan.PolicyStaticPartition, plan.PolicyQueueAware, plan.PolicyRuleSwap:
	default:
		return bad("POLICY_TYPE", fmt.Sprintf("%q", s.Policy), "want static_partition, queue_aware_v1 or rule_swap_v1")
	}
	frac := func(key string, v float64) bool { return !math.IsNaN(v) && v >= 0 && v <= 1 }
	switch {
	case s.Interval <= 0:
		return bad("RECONCILE_INTERVAL", s.Interval, "must be positive")
	case !frac("STATIC_HP_FRAC", s.StaticHPFrac):
		return bad("STATIC_HP_FRAC", s.StaticHPFrac, "want a fraction in [0, 1]")
	case !frac("QUEUE_HP_BASE_FRAC", s.Queue.BaseFrac):
		return bad("QUEUE_HP_BASE_FRAC", s.Queue.BaseFrac, "want a fraction in [0, 1]")
	case s.Queue.Min < 0:
		return bad("QUEUE_HP_MIN", s.Queue.Min, "must not be negative")
	case s.Queue.Max < 0 || (s.Queue.Max > 0 && s.Queue.Max < s.Queue.Min):
		return bad("QUEUE_HP_MAX", s.Queue.Max, "want 0 (unbounded) or at least QUEUE_HP_MIN")
	case s.Queue.PerfPerHPNode <= 0:
		return bad("QUEUE_PERF_PER_HP_NODE", s.Queue.PerfPerHPNode, "must be positive")
	case s.MinEcoDwell < 0:
		return bad("MIN_ECO_DWELL", s.MinEcoDwell, "must not be negative")
	case !(s.RackCapacityW > 0) || math.IsInf(s.RackCapacityW, 0):
		return bad("RACK_CAPACITY_WATTS", s.RackCapacityW, "must be positive")
	case cfg.TwinRefresh <= 0:
		return bad("TWIN_REFRESH_INTERVAL", cfg.TwinRefresh, "must be positive")
	case cfg.QPS <= 0 || cfg.Burst <= 0:
		return bad("KUBE_API_QPS/KUBE_API_BURST", fmt.Sprintf("%v/%v", cfg.QPS, cfg.Burst), "must be positive")
	case cfg.LeaderElect && !(cfg.LeaseDuration > cfg.RenewDeadline && cfg.RenewDeadline > cfg.RetryPeriod && cfg.RetryPeriod > 0):
		return bad("LEASE_DURATION/RENEW_DEADLINE/RETRY_PERIOD", fmt.Sprintf("%v/%v/%v", cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod),
			"want lease duration > renew deadline > retry period > 0")
	}
	if s.Intent, err = intent.FromEnv(lookup); err != nil {
		return cfg, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	// The utilization model estimates each pod's power as the extender
	// does, with the same MARGINAL_* coefficients.
	if s.Coefficients, err = powerest.CoefficientsFromEnv(lookup); err != nil {
		return cfg, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if cfg.Facility, err = facility.ConfigFromEnv(lookup); err != nil {
		return cfg, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	cfg.Kepler, cfg.KeplerQuery, cfg.KeplerNodeLabel = c.Bool("enable-kepler-power"), c.String("kepler-node-power-query"), c.String("kepler-node-label")
	if cfg.Kepler {
		withURL := cfg.Facility
		withURL.Enabled = true // Kepler needs the Prometheus URL even without facility metrics
		if err := withURL.Validate(); err != nil {
			return cfg, fmt.Errorf("%w: ENABLE_KEPLER_POWER needs the facility Prometheus: %v", ErrUsage, err)
		}
		if cfg.KeplerQuery == "" || cfg.KeplerNodeLabel == "" {
			return bad(facility.EnvKeplerQuery+"/"+facility.EnvKeplerNodeLabel, fmt.Sprintf("%q/%q", cfg.KeplerQuery, cfg.KeplerNodeLabel), "must not be empty")
		}
	}
	cfg.Settings = s
	return cfg, nil
}
