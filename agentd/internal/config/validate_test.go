package config

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/host"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  func(*Config)
		want string // "" when the change is valid
	}{
		{"no node name", func(c *Config) { c.NodeName = "" },
			`nodeName: is empty and the host name gave none`},
		{"node name with capitals", func(c *Config) { c.NodeName = "Node_1" },
			`nodeName: "Node_1" is not a valid Kubernetes node name: a lowercase RFC 1123 subdomain`},
		{"FQDN node name", func(c *Config) { c.NodeName = "gpu-1.dc.example.com" }, ""},
		{"relative host root", func(c *Config) { c.HostRoot = "fixture" },
			`hostRoot: "fixture" is not an absolute path`},
		{"empty state dir", func(c *Config) { c.StateDir = "" },
			`stateDir: "" is not an absolute path`},
		{"relative socket", func(c *Config) { c.Socket = "agentd.sock" },
			`socket: "agentd.sock" is not an absolute path`},
		{"long socket", func(c *Config) { c.Socket = "/run/" + strings.Repeat("s", 103) },
			`bytes long; a Unix socket path holds at most 107`},
		{"metrics without port", func(c *Config) { c.MetricsAddress = "9477" },
			`metricsAddress: "9477" is not host:port (such as ":9477"; empty disables metrics)`},
		{"metrics port out of range", func(c *Config) { c.MetricsAddress = ":70000" },
			`metricsAddress: ":70000" does not end in a port number from 1 to 65535`},
		{"metrics port zero", func(c *Config) { c.MetricsAddress = "localhost:0" },
			`metricsAddress: "localhost:0" does not end in a port number`},
		{"metrics on IPv6 loopback", func(c *Config) { c.MetricsAddress = "[::1]:9477" }, ""},
		{"metrics off", func(c *Config) { c.MetricsAddress = "" }, ""},
		{"fast reconcile", func(c *Config) { c.ReconcileInterval.Duration = 500 * time.Millisecond },
			`reconcileInterval: "500ms" is below the minimum 1s`},
		{"reconcile at the minimum", func(c *Config) { c.ReconcileInterval.Duration = time.Second }, ""},
		{"unknown failsafe", func(c *Config) { c.Failsafe = "off" },
			`failsafe: "off" is not one of keep, performance, restore`},
		{"failsafe restore", func(c *Config) { c.Failsafe = agent.FailsafeRestore }, ""},
		{"failsafe before a tick", func(c *Config) { c.FailsafeTimeout.Duration = 2 * time.Second },
			`failsafeTimeout: "2s" is shorter than reconcileInterval "5s"`},
		{"relative library", func(c *Config) { c.NVMLLibraryPath = "lib/libnvidia-ml.so.1" },
			`nvmlLibraryPath: "lib/libnvidia-ml.so.1" is a relative path`},
		{"library by soname", func(c *Config) { c.AMDSMILibraryPath = "libamd_smi.so.26" }, ""},
		{"library off", func(c *Config) { c.AMDSMILibraryPath = host.Skip }, ""},
		{"NUL in library", func(c *Config) { c.AMDSMILibraryPath = "/opt/a\x00b" },
			`amdsmiLibraryPath: "/opt/a\x00b" contains a NUL byte`},
		{"log level", func(c *Config) { c.LogLevel = "trace" },
			`logLevel: "trace" is not one of debug, info, warn, error`},
		{"log format", func(c *Config) { c.LogFormat = "logfmt" },
			`logFormat: "logfmt" is not one of text, json`},
		{"dvfs alpha", func(c *Config) { c.DVFS.EMAAlpha = 0 }, `dvfs.emaAlpha: must be in (0, 1], got 0`},
		{"wake address without port", func(c *Config) { c.Parking.WakeAddress = "255.255.255.255" },
			`parking.wakeAddress: Wake-on-LAN destination "255.255.255.255" is not an IPv4 host:port such as 255.255.255.255:9`},
		{"no wake address", func(c *Config) { c.Parking.WakeAddress = "" },
			`parking.wakeAddress: no Wake-on-LAN destination in ""`},
		{"wake on ports 9 and 7 of a subnet", func(c *Config) { c.Parking.WakeAddress = "10.0.0.255:9,10.0.0.255:7" }, ""},
		{"power-off vetoed", func(c *Config) { c.Parking.AllowPowerOff = false }, ""},
		{"dvfs margin", func(c *Config) { c.DVFS.HighMarginW = -1 }, `dvfs.highMarginW: must be a finite number of watts >= 0, got -1`},
		{"dvfs low margin", func(c *Config) { c.DVFS.LowMarginW = -2 }, `dvfs.lowMarginW: must be a finite number of watts >= 0, got -2`},
		{"dvfs trips", func(c *Config) { c.DVFS.TripCount = 0 }, `dvfs.tripCount: must be at least 1, got 0`},
		{"dvfs cooldown", func(c *Config) { c.DVFS.Cooldown = -time.Second }, `dvfs.cooldown: must not be negative, got -1s`},
		{"dvfs step", func(c *Config) { c.DVFS.StepPct = 150 }, `dvfs.stepPct: must be in (0, 100], got 150`},
		{"dvfs frequency", func(c *Config) { c.DVFS.MinFreqKHz = -5 }, `dvfs.minFreqKHz: must not be negative, got -5`},
		{"pod-resources socket off", func(c *Config) { c.PodResources.Socket = "none" }, ""},
		{"pod-resources socket of another kubelet root", func(c *Config) {
			c.PodResources.Socket = "/var/snap/microk8s/common/var/lib/kubelet/pod-resources/kubelet.sock"
		}, ""},
		{"relative pod-resources socket", func(c *Config) { c.PodResources.Socket = "kubelet.sock" },
			`podResources.socket: "kubelet.sock" is not an absolute path or "none" (the kubelet's is /var/lib/kubelet/pod-resources/kubelet.sock)`},
		{"empty pod-resources socket", func(c *Config) { c.PodResources.Socket = "" },
			`podResources.socket: "" is not an absolute path or "none"`},
		{"pod-resources socket off, in capitals", func(c *Config) { c.PodResources.Socket = "None" },
			`podResources.socket: "None" is not an absolute path or "none"`},
		{"long pod-resources socket", func(c *Config) { c.PodResources.Socket = "/var/lib/" + strings.Repeat("k", 100) },
			`podResources.socket: "/var/lib/kkk` + strings.Repeat("k", 97) + `" is 109 bytes long; a Unix socket path holds at most 107`},
		{"unknown backend", func(c *Config) { c.Backend = "grpc" },
			`backend: "grpc" is not one of host, http`},
		{"http without URLs", func(c *Config) { c.Backend = joulie.EndpointHTTP },
			`backend: "http" needs http.controlURL, http.telemetryURL or both`},
		{"http with control only", func(c *Config) { c.Backend = joulie.EndpointHTTP; c.HTTP.ControlURL = "http://sim/{node}" }, ""},
		{"URL scheme", func(c *Config) { c.HTTP.TelemetryURL = "sim:8080" },
			`http.telemetryURL: "sim:8080" must start with http:// or https://`},
		{"URL query", func(c *Config) { c.HTTP.ControlURL = "http://sim/?node={node}" },
			`http.controlURL: "http://sim/?node={node}" must have no query or fragment`},
		{"URL password redacted", func(c *Config) { c.HTTP.ControlURL = "http://u:secret@/x" },
			`http.controlURL: "http://u:xxxxx@/x" has no host`},
		{"zero timeout", func(c *Config) { c.HTTP.Timeout.Duration = 0 },
			`http.timeout: "0s" must be more than 0`},
		{"pool on the host backend", func(c *Config) { c.Pool.Enabled = true; c.Kubeconfig = "/k" },
			`pool.enabled: pool mode drives simulated nodes and needs backend "http", not "host"`},
		{"pool without kubeconfig", func(c *Config) {
			c.Pool.Enabled, c.Backend, c.HTTP.ControlURL = true, joulie.EndpointHTTP, "http://sim"
		}, `pool.enabled: pool mode selects its nodes through the API server and needs a kubeconfig`},
		{"pool complete", func(c *Config) {
			c.Pool.Enabled, c.Backend, c.HTTP.ControlURL, c.Kubeconfig = true, joulie.EndpointHTTP, "http://sim", "/k"
		}, ""},
		{"bad selector", func(c *Config) { c.Pool.NodeSelector = "a=b=c" },
			`pool.nodeSelector: "a=b=c" is not a label selector`},
		{"no shards", func(c *Config) { c.Pool.Shards = 0 }, `pool.shards: 0 must be at least 1`},
		{"shard out of range", func(c *Config) { c.Pool.Shards, c.Pool.ShardIndex = 3, 3 },
			`pool.shardIndex: 3 is not in [0, 3) (pool.shards is 3)`},
		{"negative shard", func(c *Config) { c.Pool.ShardIndex = -1 }, `pool.shardIndex: -1 is not in [0, 1)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaults()
			tc.bad(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantErr(t, err, tc.want)
			if n := len(c.problems()); n != 1 {
				t.Errorf("%d problems, want 1: %v", n, err)
			}
		})
	}
}

// The standalone target obeys the rules of NodePowerProfile.spec's
// schema: the profile enum, watts >= 0, percentages in 0..100.
func TestValidateStandaloneProfile(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		want []string
	}{
		{"turbo", "profile: turbo", []string{`standalone.profile.profile: "turbo" is not one of performance, eco`}},
		{"no profile", `profile: ""`, []string{`standalone.profile.profile: "" is not one of performance, eco`}},
		{"pct 150", "cpu: {packagePowerCapPctOfMax: 150}", []string{`standalone.profile.cpu.packagePowerCapPctOfMax: 150 is not a percentage in 0..100`}},
		{"negative pct", "gpu: {powerCap: {capPctOfMax: -1}}", []string{`standalone.profile.gpu.powerCap.capPctOfMax: -1 is not a percentage in 0..100`}},
		{"negative watts", "cpu: {packagePowerCapWatts: -10}\ngpu: {powerCap: {capWattsPerGpu: -0.5}}", []string{
			`standalone.profile.cpu.packagePowerCapWatts: -10 must be a number of watts >= 0`,
			`standalone.profile.gpu.powerCap.capWattsPerGpu: -0.5 must be a number of watts >= 0`}},
		{"edges", "profile: eco\ncpu: {packagePowerCapWatts: 0, packagePowerCapPctOfMax: 100}\ngpu: {powerCap: {capPctOfMax: 0}}", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := "standalone:\n  profile:\n    " + strings.ReplaceAll(tc.file, "\n", "\n    ") + "\n"
			path := writeFile(t, file)
			_, err := Load(path, env(nil))
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			want := append([]string{}, tc.want...)
			for i := range want {
				want[i] += " (from " + path + ")"
			}
			wantErr(t, err, want...)
		})
	}
	// Values that never come from YAML still fail.
	c := defaults()
	c.StandaloneMode.Profile.CPU = &joulie.CPUPowerTarget{PackagePowerCapWatts: f64(math.Inf(1))}
	wantErr(t, c.Validate(), "standalone.profile.cpu.packagePowerCapWatts: +Inf must be a number of watts >= 0")
}

func TestValidateReportsEverythingAndWrapsErrUsage(t *testing.T) {
	c := defaults()
	c.HostRoot, c.LogLevel, c.Pool.Shards = "x", "loud", 0
	err := c.Validate()
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("%v does not wrap ErrUsage", err)
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{"hostRoot:", "logLevel:", "pool.shards:"}
	if len(lines) != len(want) {
		t.Fatalf("problems:\n%s", err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d is %q, want it to start with %q (key order)", i, lines[i], w)
		}
	}
}
