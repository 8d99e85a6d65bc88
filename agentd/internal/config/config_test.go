package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/dvfs"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/settings/settingstest"
)

func TestDefaults(t *testing.T) {
	c := Default()
	for _, tc := range []struct {
		key       string
		got, want any
	}{
		{"nodeName", c.NodeName, hostNodeName()},
		{"kubeconfig", c.Kubeconfig, ""},
		{"hostRoot", c.HostRoot, "/"},
		{"stateDir", c.StateDir, "/var/lib/joulie"},
		{"socket", c.Socket, "/run/joulie/agentd.sock"},
		{"metricsAddress", c.MetricsAddress, ":9477"},
		{"reconcileInterval", c.ReconcileInterval.Duration, 5 * time.Second},
		{"failsafe", c.Failsafe, agent.FailsafeKeep},
		{"failsafeTimeout", c.FailsafeTimeout.Duration, 5 * time.Minute},
		{"keepCapsOnStop", c.KeepCapsOnStop, false},
		{"nvmlLibraryPath", c.NVMLLibraryPath, ""},
		{"amdsmiLibraryPath", c.AMDSMILibraryPath, ""},
		{"logLevel", c.LogLevel, "info"},
		{"logFormat", c.LogFormat, "text"},
		{"dvfs", c.DVFS, dvfs.DefaultConfig()},
		{"podResources.socket", c.PodResources.Socket, "/var/lib/kubelet/pod-resources/kubelet.sock"},
		{"backend", c.Backend, joulie.EndpointHost},
		{"http.timeout", c.HTTP.Timeout.Duration, joulie.DefaultEndpointTimeout},
		{"standalone.profile", fmt.Sprint(c.StandaloneMode.Profile), fmt.Sprint(joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance})},
		{"pool.nodeSelector", c.Pool.NodeSelector, "joulie.io/managed=true"},
		{"pool.shards", c.Pool.Shards, 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s defaults to %v, want %v", tc.key, tc.got, tc.want)
		}
	}
	if !c.Standalone() {
		t.Error("the default is not standalone")
	}
	// The tests that load defaults take the node's name from this
	// machine, as the daemon does.
	if err := defaults().Validate(); err != nil {
		t.Errorf("defaults do not validate (is this machine's host name a valid node name?): %v", err)
	}
}

// The names are part of the command-line contract; this table is what
// operators and the end-to-end tests may rely on.
func TestFlagAndVariableNames(t *testing.T) {
	want := map[string][2]string{
		"nodeName":          {"node-name", "JOULIE_NODE_NAME"},
		"hostRoot":          {"host-root", "JOULIE_HOST_ROOT"},
		"metricsAddress":    {"metrics-address", "JOULIE_METRICS_ADDRESS"},
		"nvmlLibraryPath":   {"nvml-library-path", "JOULIE_NVML_LIBRARY_PATH"},
		"amdsmiLibraryPath": {"amdsmi-library-path", "JOULIE_AMDSMI_LIBRARY_PATH"},
		"keepCapsOnStop":    {"keep-caps-on-stop", "JOULIE_KEEP_CAPS_ON_STOP"},
		"dvfs.emaAlpha":     {"dvfs-ema-alpha", "JOULIE_DVFS_EMA_ALPHA"},
		"dvfs.highMarginW":  {"dvfs-high-margin-w", "JOULIE_DVFS_HIGH_MARGIN_W"},
		"dvfs.minFreqKHz":   {"dvfs-min-freq-khz", "JOULIE_DVFS_MIN_FREQ_KHZ"},
		"http.telemetryURL": {"http-telemetry-url", "JOULIE_HTTP_TELEMETRY_URL"},
		"standalone.profile.cpu.packagePowerCapPctOfMax": {
			"standalone-profile-cpu-package-power-cap-pct-of-max",
			"JOULIE_STANDALONE_PROFILE_CPU_PACKAGE_POWER_CAP_PCT_OF_MAX"},
		"standalone.profile.gpu.powerCap.capWattsPerGpu": {
			"standalone-profile-gpu-power-cap-cap-watts-per-gpu",
			"JOULIE_STANDALONE_PROFILE_GPU_POWER_CAP_CAP_WATTS_PER_GPU"},
		"pool.shardIndex":     {"pool-shard-index", "JOULIE_POOL_SHARD_INDEX"},
		"podResources.socket": {"pod-resources-socket", "JOULIE_POD_RESOURCES_SOCKET"},
	}
	seen := 0
	flags, envs := map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		if flags[k.FlagName()] || envs[envName(k)] {
			t.Errorf("%s: flag or variable name used twice", k.Path)
		}
		flags[k.FlagName()], envs[envName(k)] = true, true
		if w, ok := want[k.Path]; ok {
			seen++
			if k.FlagName() != w[0] || envName(k) != w[1] {
				t.Errorf("%s: flag %s, variable %s; want %s, %s", k.Path, k.FlagName(), envName(k), w[0], w[1])
			}
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d keys of the table", seen, len(want))
	}
}

// Every key has exactly one flag, plus --config, and each flag's help
// names its variable.
func TestFlagsCoverEveryKey(t *testing.T) {
	flags := Flags()
	if len(flags) != len(keys)+1 {
		t.Fatalf("%d flags for %d keys and --config", len(flags), len(keys))
	}
	help := map[string]string{}
	for _, f := range flags {
		help[f.Names()[0]] = fmt.Sprint(f)
	}
	for _, k := range keys {
		h, ok := help[k.FlagName()]
		if !ok {
			t.Errorf("%s has no flag --%s", k.Path, k.FlagName())
			continue
		}
		if !strings.Contains(h, envName(k)) {
			t.Errorf("help of --%s does not name %s: %s", k.FlagName(), envName(k), h)
		}
	}
	if h := help["reconcile-interval"]; !strings.Contains(h, "(default: 5s)") {
		t.Errorf("help of --reconcile-interval does not show its default: %s", h)
	}
}

const exampleFile = "testdata/agentd.yaml"

// The shipped example, everything commented out, is all defaults.
func TestExampleFileIsTheDefaults(t *testing.T) {
	c, err := Load(exampleFile, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	wantEqual(t, c, defaults())
}

// The packaging's copy (installed as /etc/joulie/agentd.yaml) is the
// example the tests check.
func TestPackagedFileIsTheExample(t *testing.T) {
	tested, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile("../../../packaging/etc/agentd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(tested) != string(shipped) {
		t.Error("packaging/etc/agentd.yaml and " + exampleFile + " differ; keep them the same")
	}
}

// With every commented key switched on, the example names every key,
// validates, and shows each default truthfully except for the keys whose
// example is documented as one.
func TestExampleFileShowsEveryKeyAndItsDefault(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	// "#key: value" is a switched-off key; "# words" is prose.
	on := regexp.MustCompile(`(?m)^(\s*)#(\S)`).ReplaceAll(data, []byte("$1$2"))
	if err := settingstest.CheckEveryKeyShown(table, "the example", on); err != nil {
		t.Error(err)
	}
	got, err := table.Parse("example", on)
	if err != nil {
		t.Fatal(err)
	}
	want := defaults()
	want.NodeName = "gpu-node-01"
	want.Kubeconfig = "/etc/joulie/kubeconfig"
	want.HTTP.TelemetryURL = "http://simulator:8080/{node}"
	want.HTTP.ControlURL = "http://simulator:8080/{node}"
	want.StandaloneMode.Profile.CPU = &joulie.CPUPowerTarget{PackagePowerCapWatts: f64(200), PackagePowerCapPctOfMax: f64(60)}
	want.StandaloneMode.Profile.GPU = &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapWattsPerGpu: f64(300), CapPctOfMax: f64(60)}}
	wantEqual(t, got, want)
}

func TestPoolOwnsSplitsNodesAcrossShards(t *testing.T) {
	const shards = 4
	owners := map[string]int{}
	for i := range 200 {
		node := fmt.Sprintf("kwok-node-%d", i)
		for s := range shards {
			if (Pool{Shards: shards, ShardIndex: s}).Owns(node) {
				owners[node]++
			}
		}
		if owners[node] != 1 {
			t.Fatalf("%s is owned by %d shards", node, owners[node])
		}
	}
	if !(Pool{Shards: 1}).Owns("any") || !(Pool{}).Owns("any") {
		t.Error("a single shard must own every node")
	}
}

func TestStringAndLogValueRedactPasswords(t *testing.T) {
	c := defaults()
	c.HTTP.ControlURL = "http://admin:s3cret@sim:8080/{node}"
	s := c.String()
	if strings.Contains(s, "s3cret") || !strings.Contains(s, "http.controlURL=http://admin:xxxxx@sim:8080/{node}") {
		t.Errorf("String() = %s", s)
	}
	if !strings.Contains(s, "reconcileInterval=5s") || !strings.Contains(s, `kubeconfig=""`) {
		t.Errorf("String() lacks settings: %s", s)
	}
	if strings.Contains(s, "packagePowerCapWatts") {
		t.Errorf("String() shows an unset cap: %s", s)
	}
	if v := c.LogValue().String(); strings.Contains(v, "s3cret") {
		t.Errorf("LogValue() = %s", v)
	}
	if c.HTTP.ControlURL != "http://admin:s3cret@sim:8080/{node}" {
		t.Error("Redacted changed the original")
	}
	for in, want := range map[string]string{
		"http://sim:8080/{node}":       "http://sim:8080/{node}",
		"http://user@sim/":             "http://user@sim/",
		"https://u:p@sim/x?y":          "https://u:xxxxx@sim/x?y",
		"not a url":                    "not a url",
		"http://sim/path@with:colon/x": "http://sim/path@with:colon/x",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLogHandler(t *testing.T) {
	c := defaults()
	c.LogLevel, c.LogFormat = "warn", "json"
	h := c.LogHandler(os.Stderr)
	if fmt.Sprintf("%T", h) != "*slog.JSONHandler" {
		t.Errorf("handler %T", h)
	}
	if h.Enabled(t.Context(), -4) || !h.Enabled(t.Context(), 4) {
		t.Error("level warn not honoured")
	}
}

// The README's key table is the key table's rendering, and its DVFS
// table names each tunable's key, seed variable and default truthfully.
func TestREADMETablesAreTheKeyTable(t *testing.T) {
	const readme = "../../README.md"
	if err := settingstest.CheckMarkdown(table, readme, os.Getenv("JOULIE_UPDATE_README") == "1"); err != nil {
		t.Error(err)
	}
	if err := settingstest.CheckMentions(table, readme, "## DVFS tunables"); err != nil {
		t.Error(err)
	}
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(dvfs\\.[a-zA-Z]+)` \\(`[A-Z_]+`\\) \\| ([^|]+) \\|")
	rows := row.FindAllStringSubmatch(string(data), -1)
	if len(rows) != 7 {
		t.Fatalf("the DVFS table has %d rows, want the 7 tunables", len(rows))
	}
	def := map[string]string{}
	table.Each(Default(), func(path, v string) { def[path] = v })
	for _, r := range rows {
		if got := def[r[1]]; got != strings.TrimSpace(r[2]) {
			t.Errorf("README: %s defaults to %s, the key table says %s", r[1], r[2], got)
		}
	}
}
