package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"joulie.io/joulie/pkg/settings/settingstest"

	"joulie.io/joulie/controller/internal/bmc"
	"joulie.io/joulie/controller/internal/facility"
	"joulie.io/joulie/pkg/intent"
	"joulie.io/joulie/pkg/park"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/powerest"
)

// load parses args with Flags() and the variables in env.
func load(t *testing.T, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	var cfg Config
	var loadErr error
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := settingstest.RunCLI("joulie-controller", Flags(), args, func(c *cli.Context) { cfg, loadErr = FromCLI(c, lookup) }); err != nil {
		t.Fatalf("command line %q: %v", args, err)
	}
	return cfg, loadErr
}

// The flags and variables the controller had before the file existed are
// its contract with deployments; every key keeps them.
func TestFlagsAndVariablesOfTheSeeds(t *testing.T) {
	want := map[string][2]string{
		"kubeconfig": {"kubeconfig", "KUBECONFIG"}, "metricsAddress": {"metrics-address", "METRICS_ADDR"},
		"kubeApiQps": {"kube-api-qps", "KUBE_API_QPS"}, "kubeApiBurst": {"kube-api-burst", "KUBE_API_BURST"},
		"nodeSelector": {"node-selector", "NODE_SELECTOR"}, "policy": {"policy", "POLICY_TYPE"},
		"reconcileInterval": {"reconcile-interval", "RECONCILE_INTERVAL"}, "staticHpFrac": {"static-hp-frac", "STATIC_HP_FRAC"},
		"queue.hpBaseFrac": {"queue-hp-base-frac", "QUEUE_HP_BASE_FRAC"}, "queue.hpMin": {"queue-hp-min", "QUEUE_HP_MIN"},
		"queue.hpMax": {"queue-hp-max", "QUEUE_HP_MAX"}, "queue.perfPerHpNode": {"queue-perf-per-hp-node", "QUEUE_PERF_PER_HP_NODE"},
		"minEcoDwell": {"min-eco-dwell", "MIN_ECO_DWELL"}, "twinRefreshInterval": {"twin-refresh-interval", "TWIN_REFRESH_INTERVAL"},
		"powerTrendWindow": {"power-trend-window", "POWER_TREND_WINDOW"}, "measurementMaxAge": {"measurement-max-age", "MEASUREMENT_MAX_AGE"},
		"rackCapacityWatts": {"rack-capacity-watts", "RACK_CAPACITY_WATTS"}, "debounce": {"debounce", "RECONCILE_DEBOUNCE"},
		"leaderElect": {"leader-elect", "LEADER_ELECT"}, "leaderElectionNamespace": {"leader-election-namespace", "POD_NAMESPACE"},
		"leaderElectionId": {"leader-election-id", "LEADER_ELECTION_ID"}, "identity": {"identity", "POD_NAME"},
		"leaseDuration": {"lease-duration", "LEASE_DURATION"}, "renewDeadline": {"renew-deadline", "RENEW_DEADLINE"},
		"retryPeriod": {"retry-period", "RETRY_PERIOD"}, "logLevel": {"log-level", "LOG_LEVEL"},
		"kepler.enabled":          {"enable-kepler-power", "ENABLE_KEPLER_POWER"},
		"kepler.nodePowerQuery":   {"kepler-node-power-query", "KEPLER_NODE_POWER_QUERY"},
		"kepler.nodeLabel":        {"kepler-node-label", "KEPLER_NODE_LABEL"},
		"cpu.performanceCapWatts": {"cpu-performance-cap-watts", "PERFORMANCE_CAP_WATTS"},
		"gpu.modelCapsJSON":       {"gpu-model-caps-json", "GPU_MODEL_CAPS_JSON"},
		"enableFacilityMetrics":   {"enable-facility-metrics", "ENABLE_FACILITY_METRICS"},
		"facility.itPowerMetric":  {"facility-it-power-metric", "FACILITY_IT_POWER_METRIC"},
	}
	for path, w := range want {
		k := table.Key(path)
		if k == nil {
			t.Errorf("no key %s", path)
			continue
		}
		if k.FlagName() != w[0] || len(k.Env) != 1 || k.Env[0] != w[1] {
			t.Errorf("%s: flag %s, variables %v; want %s, %s", path, k.FlagName(), k.Env, w[0], w[1])
		}
	}
}

// The defaults are the flags' former defaults and the seeds'.
func TestDefaults(t *testing.T) {
	c, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	s := c.Plan
	if c.MetricsAddr != ":8080" || c.QPS != 20 || c.Burst != 40 || s.NodeSelector.String() != "joulie.io/managed=true" ||
		s.Policy != "queue_aware_v1" || s.Interval != time.Minute || s.StaticHPFrac != 0.5 || s.Queue.BaseFrac != 0.6 ||
		s.Queue.Min != 1 || s.Queue.Max != 0 || s.Queue.PerfPerHPNode != 10 || s.MinEcoDwell != 5*time.Minute ||
		c.TwinRefresh != 2*time.Minute || c.TrendWindow != 5*time.Minute || s.MeasurementMaxAge != 3*time.Minute ||
		c.Debounce != 500*time.Millisecond || !c.LeaderElect || c.LeaseNamespace != "joulie-system" ||
		c.LeaseName != "joulie-controller" || c.Identity != host || c.LeaseDuration != 15*time.Second ||
		c.RenewDeadline != 10*time.Second || c.RetryPeriod != 2*time.Second || c.LogLevel != "info" || c.Kepler {
		t.Errorf("defaults: %+v", c)
	}
	if !reflect.DeepEqual(s.Intent, intent.Default()) || s.Coefficients != powerest.DefaultCoefficients() || c.Facility != facility.DefaultConfig() {
		t.Errorf("intent, coefficients or facility defaults: %+v %+v %+v", s.Intent, s.Coefficients, c.Facility)
	}
	if !reflect.DeepEqual(c.IPMI, bmc.DefaultConfig()) {
		t.Errorf("IPMI defaults %+v, want bmc.DefaultConfig() %+v", c.IPMI, bmc.DefaultConfig())
	}
}

// The knobs once read by their own packages (intent, powerest, facility)
// are keys like the others: file, variable and flag.
func TestKnobsOfTheSeedsFromEveryLayer(t *testing.T) {
	file := filepath.Join(t.TempDir(), "controller.yaml")
	data := `policy: static_partition
queue:
  hpMin: 2
cpu:
  writeAbsoluteCaps: true
  performanceCapWatts: 350
gpu:
  modelCapsJSON: '{"NVIDIA L4": {"minCapWatts": 40, "maxCapWatts": 72}}'
facility:
  pollInterval: 1m
parking:
  ipmi:
    cipherSuites: "3"
    timeout: 1s
`
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := load(t, map[string]string{
		"ECO_CAP_WATTS": "210", "GPU_PRODUCT_LABEL_KEYS": " a , b ", "MARGINAL_CPU_UTIL_COEFF": "0.5",
		"ENABLE_FACILITY_METRICS": "true", "FACILITY_PROMETHEUS_URL": "https://thanos.example:10902/prom",
		"FACILITY_QUERY_TIMEOUT": " 2s ", "QUEUE_HP_MIN": "3", "PARKING_IPMI_RETRIES": "4",
	}, "--config", file, "--queue-hp-min", "4", "--gpu-eco-cap-pct-of-max", "50", "--parking-ipmi-privilege", "administrator")
	if err != nil {
		t.Fatal(err)
	}
	in := c.Plan.Intent
	if c.Plan.Policy != "static_partition" || c.Plan.Queue.Min != 4 || !in.CPUWriteAbsoluteCaps ||
		in.PerformanceCapWatts != 350 || in.EcoCapWatts != 210 || in.GPUEcoCapPctOfMax != 50 ||
		in.GPUModelCaps["NVIDIA L4"].MaxCapWatts != 72 || !reflect.DeepEqual(in.GPUProductLabelKeys, []string{"a", "b"}) ||
		c.Plan.Coefficients.CPUUtil != 0.5 || !c.Facility.Enabled || c.Facility.Interval != time.Minute ||
		c.Facility.Timeout != 2*time.Second || c.Facility.PrometheusURL != "https://thanos.example:10902/prom" {
		t.Errorf("config %+v", c)
	}
	if ipmi := c.IPMI; !slices.Equal(ipmi.CipherSuites, bmc.CipherSuites{3}) || ipmi.Timeout != time.Second || ipmi.Retries != 4 ||
		ipmi.Privilege != bmc.PrivilegeAdministrator || ipmi.CallTimeout != bmc.DefaultCallTimeout {
		t.Errorf("IPMI config %+v", ipmi)
	}
}

// The parkable nodes are the labelled ones unless parking.nodeSelector
// names others, for instance a node pool.
func TestParkableSelector(t *testing.T) {
	node := func(l map[string]string) park.Node {
		return park.Node{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: l}}, Ready: true, AgentState: "awake"}
	}
	c, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Parking.NodeSelector != "joulie.io/parkable=true" ||
		park.ParkBlocker(c.Parking.Params, ptr.To(node(map[string]string{"joulie.io/parkable": "true"}))) != "" ||
		park.ParkBlocker(c.Parking.Params, ptr.To(node(nil))) == "" {
		t.Errorf("default: selector %q; want the label rule", c.Parking.NodeSelector)
	}
	c, err = load(t, map[string]string{"PARKING_NODE_SELECTOR": "cloud.example/pool=batch"})
	if err != nil {
		t.Fatal(err)
	}
	if park.ParkBlocker(c.Parking.Params, ptr.To(node(map[string]string{"cloud.example/pool": "batch"}))) != "" ||
		park.ParkBlocker(c.Parking.Params, ptr.To(node(map[string]string{"joulie.io/parkable": "true"}))) == "" {
		t.Errorf("selector %q does not decide which nodes park", c.Parking.NodeSelector)
	}
}

// An empty list of product labels in the file is no label at all (what
// the chart writes for an empty gpuProductLabelKeys), not the default.
func TestEmptyProductLabelKeysInTheFile(t *testing.T) {
	c, err := table.Parse("controller.yaml", []byte("gpu:\n  productLabelKeys: \"\"\n"))
	if err != nil || len(c.Plan.Intent.GPUProductLabelKeys) != 0 {
		t.Errorf("productLabelKeys \"\" gives %q, %v; want none", c.Plan.Intent.GPUProductLabelKeys, err)
	}
}

func TestBadValuesNameKeyValueAndSource(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"percentage", map[string]string{"CPU_ECO_CAP_PCT_OF_MAX": "0"}, nil,
			[]string{"cpu.ecoCapPctOfMax: 0 is not a percentage in (0, 100] (from CPU_ECO_CAP_PCT_OF_MAX)"}},
		{"percentage flag", nil, []string{"--gpu-eco-cap-pct-of-max", "101"}, []string{"gpu.ecoCapPctOfMax: 101", "--gpu-eco-cap-pct-of-max"}},
		{"switch", map[string]string{"CPU_WRITE_ABSOLUTE_CAPS": "yes please"}, nil, []string{`cpu.writeAbsoluteCaps: CPU_WRITE_ABSOLUTE_CAPS="yes please" is not true or false`}},
		{"negative watts", map[string]string{"ECO_CAP_WATTS": "-5"}, nil, []string{"cpu.ecoCapWatts: -5", "ECO_CAP_WATTS"}},
		{"absolute caps without watts", map[string]string{"CPU_WRITE_ABSOLUTE_CAPS": "true"}, nil, []string{"cpu.writeAbsoluteCaps: true needs"}},
		{"model range", map[string]string{"GPU_MODEL_CAPS_JSON": `{"H100": {"minCapWatts": 800, "maxCapWatts": 700}}`}, nil, []string{"gpu.modelCapsJSON", "GPU_MODEL_CAPS_JSON", "H100"}},
		{"model JSON", map[string]string{"GPU_MODEL_CAPS_JSON": `[1,2]`}, nil, []string{"GPU_MODEL_CAPS_JSON"}},
		{"cap mode", map[string]string{"CAP_MODE": "always"}, nil, []string{`capMode: "always" is not one of pays, fixed (from CAP_MODE)`}},
		{"gpu cap scope", map[string]string{"GPU_CAP_SCOPE": "device"}, nil, []string{`gpuCapScope: "device" is not one of node, pod (from GPU_CAP_SCOPE)`}},
		{"guard mode", map[string]string{"GUARD_MODE": "eager"}, nil, []string{`guardMode: "eager" is not one of drain, seed (from GUARD_MODE)`}},
		{"drain dwell", nil, []string{"--drain-dwell", "0s"}, []string{`drainDwell: "0s" must be positive with guardMode drain`, "--drain-dwell"}},
		{"spread", nil, []string{"--performance-spread", "random"}, []string{`performanceSpread: "random" is not one of demand, density`, "--performance-spread"}},
		{"coefficient", map[string]string{"MARGINAL_GPU_UTIL_COEFF_PERFORMANCE": "-0.1"}, nil, []string{"marginal.gpuUtilCoeffPerformance: -0.1", "MARGINAL_GPU_UTIL_COEFF_PERFORMANCE"}},
		{"coefficient NaN", map[string]string{"MARGINAL_CPU_UTIL_COEFF": "NaN"}, nil, []string{`MARGINAL_CPU_UTIL_COEFF="NaN" is not a number`}},
		{"poll interval", map[string]string{"FACILITY_POLL_INTERVAL": "30"}, nil, []string{`facility.pollInterval: FACILITY_POLL_INTERVAL="30" is not a duration`}},
		{"zero timeout", map[string]string{"FACILITY_QUERY_TIMEOUT": "0"}, nil, []string{`facility.queryTimeout: "0s" must be positive (from FACILITY_QUERY_TIMEOUT)`}},
		{"url", map[string]string{"ENABLE_FACILITY_METRICS": "true", "FACILITY_PROMETHEUS_URL": "http://p:9090/?x=1"}, nil, []string{`facility.prometheusURL: "http://p:9090/?x=1"`}},
		{"url unused", map[string]string{"FACILITY_PROMETHEUS_URL": "not a url", "FACILITY_IT_POWER_METRIC": " "}, nil, nil},
		{"insecure cipher suite", map[string]string{"PARKING_IPMI_CIPHER_SUITES": "17,0"}, nil,
			[]string{"parking.ipmi.cipherSuites", "cipher suite 0 does not authenticate", "PARKING_IPMI_CIPHER_SUITES"}},
		{"privilege", nil, []string{"--parking-ipmi-privilege", "root"}, []string{`parking.ipmi.privilege: "root" is not one of operator, administrator`}},
		{"call shorter than a message", map[string]string{"PARKING_IPMI_TIMEOUT": "5s", "PARKING_IPMI_CALL_TIMEOUT": "1s"}, nil,
			[]string{`parking.ipmi.callTimeout: "1s" is shorter than one message's timeout "5s"`}},
		{"negative retries", map[string]string{"PARKING_IPMI_RETRIES": "-1"}, nil, []string{"parking.ipmi.retries: -1 must not be negative"}},
		{"BMC Secret namespace", map[string]string{"PARKING_IPMI_SECRET_NAMESPACE": "BMC"}, nil, []string{`parking.ipmi.secretNamespace: "BMC" is not a namespace name`}},
		{"parkable selector", map[string]string{"PARKING_NODE_SELECTOR": "pool in (batch"}, nil,
			[]string{`parking.nodeSelector: "pool in (batch" is not a label selector`, "PARKING_NODE_SELECTOR"}},
		{"empty parkable selector", nil, []string{"--parking-node-selector", ""},
			[]string{"parking.nodeSelector: is empty, which selects every node", "--parking-node-selector"}},
		{"negative settle time", map[string]string{"PARKING_SETTLE_TIME": "-1m"}, nil, []string{`parking.settleTime: "-1m0s" must not be negative`}},
		{"settle time without unit", map[string]string{"PARKING_SETTLE_TIME": "600"}, nil, []string{`parking.settleTime: PARKING_SETTLE_TIME="600" is not a duration`}},
		{"reserve sizing", nil, []string{"--parking-reserve-sizing", "p95"}, []string{`parking.reserveSizing: "p95" is not one of peak, mean`}},
		{"reserve for", map[string]string{"PARKING_RESERVE_FOR": "standard"}, nil,
			[]string{`parking.reserveFor: "standard" is not one of any, performance (from PARKING_RESERVE_FOR)`}},
		{"reserve for, by flag", nil, []string{"--parking-reserve-for", "Performance"}, []string{`parking.reserveFor: "Performance" is not one of any, performance`, "--parking-reserve-for"}},
		{"reserve for performance", map[string]string{"PARKING_RESERVE_FOR": "performance"}, nil, nil},
		{"no wake attempt", map[string]string{"PARKING_MAX_WAKE_ATTEMPTS": "0"}, nil, []string{"parking.maxWakeAttempts: 0 must be at least 1"}},
		{"zero resume timeout", map[string]string{"PARKING_RESUME_TIMEOUT": "0s"}, nil, []string{`parking.resumeTimeout: "0s" must be positive`}},
		{"no concurrent wake", map[string]string{"PARKING_MAX_CONCURRENT_WAKES": "0"}, nil,
			[]string{"parking.maxConcurrentWakes: 0 must be at least 1 (from PARKING_MAX_CONCURRENT_WAKES)"}},
		{"power cycle on retry", map[string]string{"PARKING_IPMI_POWER_CYCLE_ON_RETRY": "sometimes"}, nil,
			[]string{`PARKING_IPMI_POWER_CYCLE_ON_RETRY="sometimes"`}},
		{"every problem at once", map[string]string{"FACILITY_POLL_INTERVAL": "abc", "FACILITY_QUERY_TIMEOUT": "-1s", "ENABLE_FACILITY_METRICS": "on"}, nil,
			[]string{"FACILITY_POLL_INTERVAL=", "facility.queryTimeout", "ENABLE_FACILITY_METRICS="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.env, tc.args...)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUsage) {
				t.Fatalf("error %v does not wrap ErrUsage", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nlacks %q", err, w)
				}
			}
		})
	}
}

// The documents and the chart agree with the key table: the README's
// generated table (JOULIE_UPDATE_README=1 rewrites it), the keys and
// variables the chart's README names and, under make test-helm (which
// puts them in JOULIE_CHART_CONFIGS), the configuration files the chart
// renders.
func TestDocumentsAndChartAgreeWithTheKeyTable(t *testing.T) {
	errs := []error{
		settingstest.CheckMarkdown(table, "../../README.md", os.Getenv("JOULIE_UPDATE_README") == "1"),
		settingstest.CheckMentions(table, "../../../packaging/helm/joulie/README.md", "### Controller (`controller.*`)"),
		settingstest.CheckMentions(table, "../../../packaging/helm/joulie/README.md", "### Facility metrics and Kepler (`facilityMetrics.*`)"),
	}
	if dir := os.Getenv("JOULIE_CHART_CONFIGS"); dir != "" {
		errs = append(errs, settingstest.CheckFiles(table, filepath.Join(dir, "controller-*.yaml")))
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}

// TestEmptyVariablesMeanWhatTheyMeantBefore: the controller's string
// variables were urfave/cli flags, where an empty variable is the empty
// string (METRICS_ADDR= turns /metrics off: the failover test runs two
// replicas that way), and GPU_PRODUCT_LABEL_KEYS= meant no labels; the
// settings that were read by FromEnv functions took empty as unset.
func TestEmptyVariablesMeanWhatTheyMeantBefore(t *testing.T) {
	cfg, err := load(t, map[string]string{"METRICS_ADDR": "", "KUBECONFIG": "", "GPU_PRODUCT_LABEL_KEYS": "", "FACILITY_POLL_INTERVAL": ""})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MetricsAddr != "" {
		t.Errorf("METRICS_ADDR= gave metrics address %q, want none", cfg.MetricsAddr)
	}
	if len(cfg.Plan.Intent.GPUProductLabelKeys) != 0 {
		t.Errorf("GPU_PRODUCT_LABEL_KEYS= gave label keys %q, want none", cfg.Plan.Intent.GPUProductLabelKeys)
	}
	if want := Default().Facility.Interval; cfg.Facility.Interval != want {
		t.Errorf("FACILITY_POLL_INTERVAL= gave %v, want the default %v", cfg.Facility.Interval, want)
	}
}

// TestKeyTableDefaultsArePkgDefaults: the key table's defaults are the
// planning defaults of pkg/plan (DefaultParams, DefaultNodeSelector,
// DefaultTwinRefresh), which the energy simulator also runs with; a value
// restated here that drifts from them fails, key by key.
func TestKeyTableDefaultsArePkgDefaults(t *testing.T) {
	fromPkg := Default()
	fromPkg.NodeSelector = plan.DefaultNodeSelector
	fromPkg.Plan = plan.DefaultParams()
	fromPkg.TwinRefresh = plan.DefaultTwinRefresh
	want := map[string]string{}
	table.Each(fromPkg, func(path, v string) { want[path] = v })
	got := map[string]string{}
	table.Each(Default(), func(path, v string) { got[path] = v })
	for _, k := range keys {
		if got[k.Path] != want[k.Path] {
			t.Errorf("%s: the key table's default is %q, pkg/plan's %q", k.Path, got[k.Path], want[k.Path])
		}
	}
	// Settings without a key (the cooling model) count too, and so does
	// what loading makes of the defaults (the parsed node selector).
	if d := Default().Plan; !reflect.DeepEqual(d, plan.DefaultParams()) {
		t.Errorf("Default().Plan = %+v, want plan.DefaultParams() %+v", d, plan.DefaultParams())
	}
	c, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Plan, plan.DefaultParams()) {
		t.Errorf("loaded defaults %+v, want plan.DefaultParams() %+v", c.Plan, plan.DefaultParams())
	}
}
