package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/extender/internal/server"
	"joulie.io/joulie/pkg/settings/settingstest"

	"joulie.io/joulie/extender/internal/fixture"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
)

// load runs a cli app with the flags and env given and returns what
// FromCLI made of them.
func load(t *testing.T, args []string, env map[string]string) (*Config, error) {
	t.Helper()
	var cfg Config
	var loadErr error
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := settingstest.RunCLI("joulie-extender", Flags(), args, func(c *cli.Context) { cfg, loadErr = FromCLI(c, lookup) }); err != nil {
		return nil, err
	}
	return &cfg, loadErr
}

func TestDefaults(t *testing.T) {
	cfg, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != ":9876" || cfg.ScoringMode != scoring.ModePack || cfg.StalenessThreshold != 5*time.Minute || cfg.Coefficients != powerest.DefaultCoefficients() ||
		cfg.FacilityMetrics || cfg.Certificate != nil || cfg.MaxRequestBytes != 64<<20 || cfg.MaxInFlightBytes != 160<<20 || cfg.Kubeconfig != "" ||
		cfg.ReadTimeout != 30*time.Second || cfg.WriteTimeout != 30*time.Second || cfg.ReadHeaderTimeout != 10*time.Second || cfg.IdleTimeout != 2*time.Minute {
		t.Errorf("defaults: %+v", cfg)
	}
}

func TestTheDesignsVariables(t *testing.T) {
	cfg, err := load(t, nil, map[string]string{
		"EXTENDER_ADDR":                       "127.0.0.1:8443",
		"TWIN_STALENESS_THRESHOLD":            "90s",
		"MARGINAL_CPU_UTIL_COEFF":             "0.5",
		"MARGINAL_GPU_UTIL_COEFF_STANDARD":    " 0.4 ",
		"MARGINAL_GPU_UTIL_COEFF_PERFORMANCE": "1",
		"ENABLE_FACILITY_METRICS":             "true",
		"EXTENDER_MAX_REQUEST_BYTES":          "100M",
		"EXTENDER_MAX_INFLIGHT_BYTES":         "256Mi",
		"EXTENDER_READ_TIMEOUT":               "1m",
		"SCORING_MODE":                        "headroom",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := powerest.Coefficients{CPUUtil: 0.5, GPUUtilStandard: 0.4, GPUUtilPerformance: 1}
	if cfg.Addr != "127.0.0.1:8443" || cfg.StalenessThreshold != 90*time.Second || cfg.Coefficients != want ||
		!cfg.FacilityMetrics || cfg.MaxRequestBytes != 100_000_000 || cfg.MaxInFlightBytes != 256<<20 || cfg.ReadTimeout != time.Minute {
		t.Errorf("from variables: %+v", cfg)
	}
	p := cfg.Params()
	if p.Mode != scoring.ModeHeadroom || p.Coefficients != want || !p.FacilityMetrics || p.StalenessThreshold != 90*time.Second {
		t.Errorf("Params = %+v", p)
	}
}

func TestFlagsWinOverVariables(t *testing.T) {
	cfg, err := load(t, []string{"--twin-staleness-threshold", "2m", "--enable-facility-metrics=false"},
		map[string]string{"TWIN_STALENESS_THRESHOLD": "10m", "ENABLE_FACILITY_METRICS": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StalenessThreshold != 2*time.Minute || cfg.FacilityMetrics {
		t.Errorf("threshold %s, facility metrics %v", cfg.StalenessThreshold, cfg.FacilityMetrics)
	}
}

// A variable set to "" (how Helm renders an unset value) keeps the default.
func TestEmptyVariablesKeepTheDefaults(t *testing.T) {
	cfg, err := load(t, nil, map[string]string{"TWIN_STALENESS_THRESHOLD": "", "MARGINAL_CPU_UTIL_COEFF": "  ", "EXTENDER_ADDR": ""})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StalenessThreshold != 5*time.Minute || cfg.Coefficients.CPUUtil != 0.8 || cfg.Addr != ":9876" {
		t.Errorf("%+v", cfg)
	}
}

func TestBadValuesNameTheKeyAndTheValue(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"duration", nil, map[string]string{"TWIN_STALENESS_THRESHOLD": "5 minutes"}, []string{"twinStalenessThreshold: TWIN_STALENESS_THRESHOLD=", `"5 minutes"`}},
		{"zero duration", []string{"--twin-staleness-threshold", "0s"}, nil, []string{"twinStalenessThreshold", `"0s"`, "positive", "--twin-staleness-threshold"}},
		{"coefficient above 1", nil, map[string]string{"MARGINAL_GPU_UTIL_COEFF_STANDARD": "1.5"}, []string{"marginal.gpuUtilCoeffStandard: 1.5", "MARGINAL_GPU_UTIL_COEFF_STANDARD"}},
		{"coefficient NaN", nil, map[string]string{"MARGINAL_CPU_UTIL_COEFF": "NaN"}, []string{"MARGINAL_CPU_UTIL_COEFF", `"NaN"`}},
		{"address", nil, map[string]string{"EXTENDER_ADDR": "9876"}, []string{"addr", "EXTENDER_ADDR", `"9876"`}},
		{"size", []string{"--max-request-bytes", "lots"}, nil, []string{"maxRequestBytes", "--max-request-bytes", `"lots"`}},
		{"tiny size", []string{"--max-request-bytes", "10"}, nil, []string{"maxRequestBytes", `"10"`}},
		{"in-flight size", nil, map[string]string{"EXTENDER_MAX_INFLIGHT_BYTES": "a lot"}, []string{"EXTENDER_MAX_INFLIGHT_BYTES", "maxInflightBytes", `"a lot"`}},
		// The default budget (160Mi) cannot hold a filter call of a 130Mi
		// body and what is decoded from it.
		{"budget below a body and a quarter", []string{"--max-request-bytes", "130Mi"}, nil,
			[]string{"maxInflightBytes: 167772160 is less than 170393600", "maxRequestBytes 136314880"}},
		{"timeout", nil, map[string]string{"EXTENDER_WRITE_TIMEOUT": "-1s"}, []string{"writeTimeout", "EXTENDER_WRITE_TIMEOUT", `"-1s"`}},
		{"log level", []string{"--log-level", "loud"}, nil, []string{"logLevel", "--log-level", `"loud"`}},
		{"log format", []string{"--log-format", "xml"}, nil, []string{"logFormat", "--log-format", `"xml"`}},
		{"scoring mode", nil, map[string]string{"SCORING_MODE": "binpack"}, []string{"scoringMode", "SCORING_MODE", `"binpack"`, "use pack", "or headroom"}},
		{"scoring mode flag", []string{"--scoring-mode", "MostAllocated"}, nil, []string{"scoringMode", "--scoring-mode", `"MostAllocated"`}},
		{"cert without key", []string{"--tls-cert-file", "/tmp/c.pem"}, nil, []string{"tls.keyFile", "/tmp/c.pem", "both or neither"}},
		{"missing cert files", []string{"--tls-cert-file", "/nonexistent/c.pem", "--tls-key-file", "/nonexistent/k.pem"}, nil,
			[]string{"tls.certFile", "/nonexistent/c.pem", "/nonexistent/k.pem"}},
		{"all problems at once", nil, map[string]string{"TWIN_STALENESS_THRESHOLD": "x", "MARGINAL_CPU_UTIL_COEFF": "-1"},
			[]string{"TWIN_STALENESS_THRESHOLD", "MARGINAL_CPU_UTIL_COEFF"}},
		{"unknown key in the file", []string{"--config", "testdata/typo.yaml"}, nil,
			[]string{`testdata/typo.yaml: unknown key "twinStalenesThreshold" (did you mean "twinStalenessThreshold"?)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.args, tt.env)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrUsage) {
				t.Errorf("error %q does not wrap ErrUsage", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
}

func TestTLSKeyPairIsLoaded(t *testing.T) {
	certPEM, keyPEM, err := fixture.SelfSignedPEM()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(cert, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := load(t, nil, map[string]string{"EXTENDER_TLS_CERT_FILE": cert, "EXTENDER_TLS_KEY_FILE": key})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Certificate == nil {
		t.Error("no certificate loaded")
	}
	if _, err := load(t, nil, map[string]string{"EXTENDER_TLS_CERT_FILE": key, "EXTENDER_TLS_KEY_FILE": cert}); err == nil {
		t.Error("swapped certificate and key accepted")
	}
}

func TestRESTConfig(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := (&Config{Kubeconfig: kc}).RESTConfig()
	if err != nil || rc.Host != "https://127.0.0.1:6443" {
		t.Errorf("RESTConfig = %v, %v", rc, err)
	}
	if _, err := (&Config{Kubeconfig: filepath.Join(dir, "missing")}).RESTConfig(); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "KUBECONFIG") {
		t.Errorf("missing kubeconfig: %v", err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := (&Config{}).RESTConfig(); !errors.Is(err, ErrUsage) {
		t.Errorf("outside a cluster: %v", err)
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
		settingstest.CheckMentions(table, "../../../packaging/helm/joulie/README.md", "### Extender (`extender.*`)"),
	}
	if dir := os.Getenv("JOULIE_CHART_CONFIGS"); dir != "" {
		errs = append(errs, settingstest.CheckFiles(table, filepath.Join(dir, "extender-*.yaml")))
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}

// TestKeyTableDefaultsArePkgDefaults: the key table's scoring defaults are
// pkg/scoring's DefaultParams, which the energy simulator also scores
// with; a value restated here that drifts from them fails, key by key.
func TestKeyTableDefaultsArePkgDefaults(t *testing.T) {
	p := scoring.DefaultParams()
	fromPkg := Default()
	fromPkg.ScoringMode, fromPkg.StalenessThreshold, fromPkg.Coefficients, fromPkg.FacilityMetrics = p.Mode, p.StalenessThreshold, p.Coefficients, p.FacilityMetrics
	want := map[string]string{}
	table.Each(fromPkg, func(path, v string) { want[path] = v })
	got := map[string]string{}
	table.Each(Default(), func(path, v string) { got[path] = v })
	for _, k := range table.Keys {
		if got[k.Path] != want[k.Path] {
			t.Errorf("%s: the key table's default is %q, pkg/scoring's %q", k.Path, got[k.Path], want[k.Path])
		}
	}
	cfg, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Params() != p {
		t.Errorf("loaded defaults give Params %+v, want scoring.DefaultParams() %+v", cfg.Params(), p)
	}
}

// A filter reply streams the kept Nodes from the body, so a body limit of
// 100Mi fits the default 160Mi budget, which twice the body once did not.
func TestBudgetNeedsOneBodyAndAQuarter(t *testing.T) {
	cfg, err := load(t, []string{"--max-request-bytes", "100Mi"}, nil)
	if err != nil {
		t.Fatalf("a 100Mi body limit in the default 160Mi budget: %v", err)
	}
	if got := server.MinInFlightBytes(int64(cfg.MaxRequestBytes)); got != 125<<20 {
		t.Errorf("MinInFlightBytes(100Mi) = %d, want 125Mi", got)
	}
}
