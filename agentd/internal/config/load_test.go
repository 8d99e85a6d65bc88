package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/dvfs"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

const fileWithEverything = `
nodeName: node-7
kubeconfig: /etc/joulie/kubeconfig
hostRoot: /srv/fixture
stateDir: /var/lib/joulie-test
socket: /run/joulie/test.sock
metricsAddress: "127.0.0.1:9999"
reconcileInterval: 2s
failsafe: restore
failsafeTimeout: 1m
keepCapsOnStop: true
nvmlLibraryPath: none
amdsmiLibraryPath: /opt/rocm/lib/libamd_smi.so
logLevel: debug
logFormat: json
dvfs:
  emaAlpha: 0.5
  highMarginW: 8
  lowMarginW: 12.5
  tripCount: 3
  cooldown: 30s
  stepPct: 2.5
  minFreqKHz: 1200000
backend: http
http:
  telemetryURL: http://sim:8080/{node}
  controlURL: http://sim:8081/{node}
  timeout: 3s
standalone:
  profile:
    profile: eco
    cpu:
      packagePowerCapPctOfMax: 60
    gpu:
      powerCap:
        capWattsPerGpu: 250
pool:
  enabled: true
  nodeSelector: "joulie.io/managed=true,kwok"
  shards: 3
  shardIndex: 2
`

func everything() Config {
	c := defaults()
	c.NodeName = "node-7"
	c.Kubeconfig = "/etc/joulie/kubeconfig"
	c.HostRoot = "/srv/fixture"
	c.StateDir = "/var/lib/joulie-test"
	c.Socket = "/run/joulie/test.sock"
	c.MetricsAddress = "127.0.0.1:9999"
	c.ReconcileInterval = metav1.Duration{Duration: 2 * time.Second}
	c.Failsafe = agent.FailsafeRestore
	c.FailsafeTimeout = metav1.Duration{Duration: time.Minute}
	c.KeepCapsOnStop = true
	c.NVMLLibraryPath = "none"
	c.AMDSMILibraryPath = "/opt/rocm/lib/libamd_smi.so"
	c.LogLevel, c.LogFormat = "debug", "json"
	c.DVFS = dvfs.Config{EMAAlpha: 0.5, HighMarginW: 8, LowMarginW: 12.5, TripCount: 3,
		Cooldown: 30 * time.Second, StepPct: 2.5, MinFreqKHz: 1200000}
	c.Backend = joulie.EndpointHTTP
	c.HTTP = HTTP{TelemetryURL: "http://sim:8080/{node}", ControlURL: "http://sim:8081/{node}",
		Timeout: metav1.Duration{Duration: 3 * time.Second}}
	c.StandaloneMode.Profile = joulie.NodePowerProfileSpec{
		Profile: joulie.ProfileEco,
		CPU:     &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: f64(60)},
		GPU:     &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapWattsPerGpu: f64(250)}},
	}
	c.Pool = Pool{Enabled: true, NodeSelector: "joulie.io/managed=true,kwok", Shards: 3, ShardIndex: 2}
	return c
}

func TestLoadLayers(t *testing.T) {
	file := writeFile(t, fileWithEverything)
	for _, tc := range []struct {
		name string
		file string // "" for none
		env  map[string]string
		args []string
		want func(*Config)
	}{
		{name: "defaults", want: func(*Config) {}},
		{name: "file only", file: file, want: func(c *Config) { *c = everything() }},
		{name: "empty file", file: writeFile(t, "# nothing\n"), want: func(*Config) {}},
		{
			name: "env over file", file: file,
			env: map[string]string{"JOULIE_RECONCILE_INTERVAL": "7s", "JOULIE_DVFS_STEP_PCT": "4",
				"JOULIE_STANDALONE_PROFILE_PROFILE": "performance", "JOULIE_KEEP_CAPS_ON_STOP": "false"},
			want: func(c *Config) {
				*c = everything()
				c.ReconcileInterval.Duration = 7 * time.Second
				c.DVFS.StepPct = 4
				c.StandaloneMode.Profile.Profile = joulie.ProfilePerformance
				c.KeepCapsOnStop = false
			},
		},
		{
			name: "flag over env", file: file,
			env:  map[string]string{"JOULIE_RECONCILE_INTERVAL": "7s", "JOULIE_HOST_ROOT": "/from-env"},
			args: []string{"--reconcile-interval", "9s", "--pool-enabled=false", "--standalone-profile-cpu-package-power-cap-watts", "180"},
			want: func(c *Config) {
				*c = everything()
				c.ReconcileInterval.Duration = 9 * time.Second
				c.HostRoot = "/from-env"
				c.Pool.Enabled = false
				c.StandaloneMode.Profile.CPU.PackagePowerCapWatts = f64(180)
			},
		},
		{
			name: "empty variables count as unset", file: file,
			env:  map[string]string{"JOULIE_METRICS_ADDRESS": "", "JOULIE_RECONCILE_INTERVAL": "  "},
			want: func(c *Config) { *c = everything() },
		},
		{
			name: "an empty flag unsets an optional cap", file: file,
			args: []string{"--standalone-profile-cpu-package-power-cap-pct-of-max="},
			want: func(c *Config) { *c = everything(); c.StandaloneMode.Profile.CPU = nil },
		},
		{
			name: "an empty flag empties a string",
			args: []string{"--metrics-address="},
			want: func(c *Config) { c.MetricsAddress = "" },
		},
		{
			name: "JOULIE_CONFIG names the file",
			env:  map[string]string{"JOULIE_CONFIG": file},
			want: func(c *Config) { *c = everything() },
		},
		{
			name: "--config wins over JOULIE_CONFIG",
			env:  map[string]string{"JOULIE_CONFIG": "/nonexistent.yaml"},
			args: []string{"--config", file},
			want: func(c *Config) { *c = everything() },
		},
		{
			name: "seed variables", env: map[string]string{"POOL_NODE_SELECTOR": "sim=true", "DVFS_COOLDOWN": "20"},
			want: func(c *Config) { c.Pool.NodeSelector = "sim=true"; c.DVFS.Cooldown = 20 * time.Second },
		},
		{
			name: "JOULIE_ names win over the seed's",
			env: map[string]string{"POOL_NODE_SELECTOR": "sim=true", "JOULIE_POOL_NODE_SELECTOR": "sim=false",
				"DVFS_TRIP_COUNT": "5", "JOULIE_DVFS_TRIP_COUNT": "6"},
			want: func(c *Config) { c.Pool.NodeSelector = "sim=false"; c.DVFS.TripCount = 6 },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := defaults()
			tc.want(&want)
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", tc.file}, args...)
			}
			// The default path must not leak in from this machine.
			if tc.file == "" && tc.env["JOULIE_CONFIG"] == "" && !strings.Contains(strings.Join(args, " "), "--config") {
				args = append([]string{"--config", ""}, args...)
			}
			got, err := runCLI(t, env(tc.env), args...)
			if err != nil {
				t.Fatal(err)
			}
			wantEqual(t, got, want)

			if len(tc.args) == 0 && tc.env["JOULIE_CONFIG"] == "" {
				got, err := Load(tc.file, env(tc.env))
				if err != nil {
					t.Fatal(err)
				}
				wantEqual(t, got, want)
			}
		})
	}
}

func TestDVFSVariablesOfTheSeed(t *testing.T) {
	c, err := Load("", env(map[string]string{
		"DVFS_EMA_ALPHA": "0.5", "DVFS_HIGH_MARGIN_W": "8", "DVFS_LOW_MARGIN_W": " 12.5 ", "DVFS_TRIP_COUNT": "3",
		"DVFS_COOLDOWN": "30s", "DVFS_STEP_PCT": "2.5", "DVFS_MIN_FREQ_KHZ": "1200000",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.DVFS != everything().DVFS {
		t.Errorf("dvfs = %+v, want %+v", c.DVFS, everything().DVFS)
	}

	// A bad seed variable names itself and the key; a value the dvfs
	// package parses but refuses is reported once, under the key.
	_, err = Load("", env(map[string]string{"DVFS_TRIP_COUNT": "two", "DVFS_EMA_ALPHA": "1.5"}))
	wantErr(t, err, `dvfs.tripCount: DVFS_TRIP_COUNT="two" is not a whole number`,
		"dvfs.emaAlpha: must be in (0, 1], got 1.5 (from DVFS_EMA_ALPHA)")
	if n := strings.Count(err.Error(), "emaAlpha"); n != 1 {
		t.Errorf("emaAlpha reported %d times:\n%s", n, err)
	}
}

func TestBadValuesNameKeyValueAndSource(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		env  map[string]string
		args []string
		want []string
	}{
		{name: "duration without unit in the file", file: "reconcileInterval: 5\n",
			want: []string{": reconcileInterval: 5 is not a duration: give a unit"}},
		{name: "quoted number in the file", file: "dvfs:\n  stepPct: \"5\"\n",
			want: []string{`: dvfs.stepPct: "5" is not a number`}},
		{name: "string for a bool", file: "keepCapsOnStop: sometimes\n",
			want: []string{`: keepCapsOnStop: "sometimes" is not true or false`}},
		{name: "number for a string", file: "nodeName: 12\n",
			want: []string{`: nodeName: 12 is not a string (quote it)`}},
		{name: "fraction for a count", file: "pool:\n  shards: 2.5\n",
			want: []string{`: pool.shards: "2.5" is not a whole number`}},
		{name: "block for a leaf", file: "socket: {a: 1}\n",
			want: []string{`: socket: a block of keys is not a string`}},
		{name: "leaf for a block", file: "dvfs: 3\n",
			want: []string{`: dvfs: 3 is not a block of keys`}},
		{name: "list as the file", file: "- a\n- b\n",
			want: []string{`: the file must be a block of keys, not a list`}},
		{name: "bad variable", env: map[string]string{"JOULIE_RECONCILE_INTERVAL": "often"},
			want: []string{`reconcileInterval: JOULIE_RECONCILE_INTERVAL="often" is not a duration`}},
		{name: "bad flag", args: []string{"--pool-shards", "many"},
			want: []string{`pool.shards: --pool-shards="many" is not a whole number`}},
		{name: "NaN flag", args: []string{"--dvfs-ema-alpha", "NaN"},
			want: []string{`dvfs.emaAlpha: --dvfs-ema-alpha="NaN" is not a number`}},
		{name: "validation names where the value came from", env: map[string]string{"JOULIE_RECONCILE_INTERVAL": "500ms"},
			want: []string{`reconcileInterval: "500ms" is below the minimum 1s (from JOULIE_RECONCILE_INTERVAL)`}},
		{name: "all problems at once", file: "reconcileInterval: 100ms\nfailsafe: panic\n", args: []string{"--log-level", "loud"},
			want: []string{`reconcileInterval: "100ms" is below the minimum 1s (from `, `failsafe: "panic" is not one of keep, performance, restore`,
				`logLevel: "loud" is not one of debug, info, warn, error (from --log-level)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--config", ""}, tc.args...)
			if tc.file != "" {
				path := writeFile(t, tc.file)
				args = append([]string{"--config", path}, tc.args...)
				for i := range tc.want {
					if strings.HasPrefix(tc.want[i], ": ") {
						tc.want[i] = path + tc.want[i]
					}
				}
			}
			_, err := runCLI(t, env(tc.env), args...)
			wantErr(t, err, tc.want...)
		})
	}
}

func TestUnknownKeys(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"reconcileIntervall: 5s\n", `unknown key "reconcileIntervall" (did you mean "reconcileInterval"?)`},
		{"NodeName: x\n", `unknown key "NodeName" (did you mean "nodeName"?)`},
		{"dvfs:\n  emaAlpa: 0.3\n", `unknown key "dvfs.emaAlpa" (did you mean "dvfs.emaAlpha"?)`},
		{"standalone:\n  profile:\n    cpu:\n      watts: 100\n", `unknown key "standalone.profile.cpu.watts"`},
		{"telemetry: {}\n", `unknown key "telemetry"`},
	} {
		path := writeFile(t, tc.file)
		_, err := Load(path, env(nil))
		wantErr(t, err, path+": "+tc.want)
	}
	// Far from every key: no guess.
	_, err := Load(writeFile(t, "completelyDifferent: 1\n"), env(nil))
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("error %v", err)
	}
}

func TestMalformedYAMLNamesFileAndLine(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"bad indentation", "nodeName: a\n  hostRoot: /\n", "line 2"},
		{"tab", "dvfs:\n\temaAlpha: 0.3\n", "line 2"},
		{"unclosed quote", "nodeName: \"a\n", "line 2: found unexpected end of stream"},
		{"duplicate key", "hostRoot: /a\nhostRoot: /b\n", "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.file)
			_, err := Load(path, env(nil))
			wantErr(t, err, path+": ", tc.want)
		})
	}
}

func TestMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "agentd.yaml")

	// The default path may be absent: defaults apply.
	c, err := table.NewSource(missing, "", env(nil)).Load()
	if err != nil {
		t.Fatalf("missing default file: %v", err)
	}
	wantEqual(t, c, defaults())

	// A file someone named must exist.
	_, err = runCLI(t, env(nil), "--config", missing)
	wantErr(t, err, "--config: open "+missing)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%v does not wrap ErrNotExist", err)
	}
	_, err = runCLI(t, env(map[string]string{"JOULIE_CONFIG": missing}))
	wantErr(t, err, "JOULIE_CONFIG: open "+missing)
	_, err = Load(missing, env(nil))
	wantErr(t, err, "config file: open "+missing)

	// A directory is no file either.
	_, err = Load(t.TempDir(), env(nil))
	wantErr(t, err, "is a directory")
}

func TestHugeFileRefused(t *testing.T) {
	path := writeFile(t, "# "+strings.Repeat("x", 1<<20)+"\n")
	_, err := Load(path, env(nil))
	wantErr(t, err, "is larger than")
}

// Flags given at start win over an edited file on reload; the file's
// other keys follow the edit.
func TestReloadKeepsStartFlags(t *testing.T) {
	path := writeFile(t, "reconcileInterval: 2s\nlogLevel: info\n")
	c, err := runCLI(t, env(nil), "--config", path, "--log-level", "debug")
	if err != nil {
		t.Fatal(err)
	}
	if c.LogLevel != "debug" || c.ReconcileInterval.Duration != 2*time.Second {
		t.Fatalf("start: %s", c)
	}
	if err := os.WriteFile(path, []byte("reconcileInterval: 3s\nlogLevel: warn\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := c.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if r.LogLevel != "debug" || r.ReconcileInterval.Duration != 3*time.Second {
		t.Errorf("reload: %s", r)
	}

	// A broken edit is refused; the caller keeps what it has.
	if err := os.WriteFile(path, []byte("reconcileInterval: never\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reload(); err == nil {
		t.Error("reload accepted a broken file")
	}
}

// NaN and the infinities parse as floats in YAML (.nan, .inf), in Go's
// strconv (NaN, Inf) and so on every source, but no key means them: each
// is refused under its key, with the value and where it came from.
func TestNonFiniteNumbersNameKeyValueAndSource(t *testing.T) {
	var floats []*key
	for i := range keys {
		switch keys[i].Ref(&Config{}).(type) {
		case *float64, **float64:
			floats = append(floats, &keys[i])
		}
	}
	if len(floats) < 8 {
		t.Fatalf("found %d float keys; the dvfs and standalone ones are missing", len(floats))
	}
	for _, k := range floats {
		for i, v := range []struct{ yaml, shown, str string }{{".nan", ".nan", "NaN"}, {".inf", ".inf", "inf"}, {"-.Inf", "-.inf", "-Infinity"}} {
			t.Run(k.Path+"/file/"+v.yaml, func(t *testing.T) {
				path := writeFile(t, nested(k.Path, v.yaml))
				_, err := Load(path, env(nil))
				wantErr(t, err, path+": "+k.Path+": "+v.shown+" is not a number")
			})
			t.Run(k.Path+"/env/"+v.str, func(t *testing.T) {
				_, err := Load("", env(map[string]string{envName(*k): v.str}))
				wantErr(t, err, fmt.Sprintf("%s: %s=%q is not a number", k.Path, envName(*k), v.str))
			})
			t.Run(k.Path+"/flag/"+v.str, func(t *testing.T) {
				_, err := runCLI(t, env(nil), "--config", "", "--"+k.FlagName(), v.str)
				wantErr(t, err, fmt.Sprintf("%s: --%s=%q is not a number", k.Path, k.FlagName(), v.str))
			})
			if alias(*k) != "" && i == 0 {
				// The seed's DVFS_* variables are read like every other
				// variable, so they refuse the same values.
				t.Run(k.Path+"/seed-env", func(t *testing.T) {
					_, err := Load("", env(map[string]string{alias(*k): v.str}))
					wantErr(t, err, fmt.Sprintf("%s: %s=%q is not a number", k.Path, alias(*k), v.str))
				})
			}
		}
	}

	// Keys of other kinds name the key too, and one bad value does not
	// hide the file's other problems.
	path := writeFile(t, "nodeName: .nan\ndvfs:\n  tripCount: .inf\n  stepPct: -.inf\nlogLevel: loud\n")
	_, err := Load(path, env(nil))
	wantErr(t, err, path+": nodeName: .nan is not a string (quote it)",
		path+": dvfs.tripCount: .inf is not a whole number",
		path+": dvfs.stepPct: -.inf is not a number",
		`logLevel: "loud" is not one of debug, info, warn, error (from `+path+")")
}

// nested writes value at a dotted key path as a YAML document.
func nested(path, value string) string {
	var b strings.Builder
	segs := strings.Split(path, ".")
	for i, s := range segs {
		b.WriteString(strings.Repeat("  ", i) + s + ":")
		if i < len(segs)-1 {
			b.WriteString("\n")
		}
	}
	b.WriteString(" " + value + "\n")
	return b.String()
}

// The host backend reads and writes everything under hostRoot, so one
// that is not a directory stops the start; with a typo the agent would
// otherwise run and find no hardware.
func TestHostRootMustBeADirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-host")
	notDir := writeFile(t, "not a host\n")
	gone := fmt.Sprintf("hostRoot: %q does not exist; it must be the directory holding the host's sys/ and proc/ (\"/\" on the host itself)", missing)
	for _, tc := range []struct {
		name string
		file string
		env  map[string]string
		args []string
		want string // "" for accepted
	}{
		{name: "missing, in the file", file: "hostRoot: " + missing + "\n", want: gone},
		{name: "missing, from the variable", env: map[string]string{"JOULIE_HOST_ROOT": missing}, want: gone + " (from JOULIE_HOST_ROOT)"},
		{name: "missing, from the flag", args: []string{"--host-root", missing}, want: gone + " (from --host-root)"},
		{name: "a file, not a directory", args: []string{"--host-root", notDir},
			want: fmt.Sprintf("hostRoot: %q is not a directory (from --host-root)", notDir)},
		{name: "a fixture tree", args: []string{"--host-root", t.TempDir()}},
		{name: "unused by the http backend", args: []string{"--host-root", missing, "--backend", "http", "--http-control-url", "http://sim/{node}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--config", ""}, tc.args...)
			want := tc.want
			if tc.file != "" {
				path := writeFile(t, tc.file)
				args = append([]string{"--config", path}, tc.args...)
				if want != "" {
					want += " (from " + path + ")"
				}
			}
			_, err := runCLI(t, env(tc.env), args...)
			if want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, want)
		})
	}
}

// A command that reads a few keys (restore --offline) is held only to
// those: other problems are warnings, and never hide a needed key's.
func TestLoadForHoldsOnlyTheNeededKeys(t *testing.T) {
	need := []string{"stateDir", "hostRoot"}
	load := func(t *testing.T, file string, lookup map[string]string) (Config, []error, error) {
		t.Helper()
		return table.NewSource(writeFile(t, file), "--config", env(lookup)).LoadFor(need)
	}
	messages := func(errs []error) string {
		var s []string
		for _, e := range errs {
			s = append(s, e.Error())
		}
		return strings.Join(s, "\n")
	}

	t.Run("problems elsewhere are warnings", func(t *testing.T) {
		c, warnings, err := load(t, "stateDir: /srv/state\nhostRoot: /\nreconcileInterval: 5\nfancyKey: 1\n"+
			"dvfs: {stepPct: 500, emaAlpa: 0.1}\nstandalone: {profile: {gpu: {powerCap: {capWattsPerGpu: .inf}}}}\n",
			map[string]string{"JOULIE_LOG_LEVEL": "loud"})
		if err != nil {
			t.Fatal(err)
		}
		if c.StateDir != "/srv/state" || c.HostRoot != "/" {
			t.Errorf("stateDir %q, hostRoot %q", c.StateDir, c.HostRoot)
		}
		got := messages(warnings)
		for _, want := range []string{"reconcileInterval: 5 is not a duration", `unknown key "fancyKey"`,
			`unknown key "dvfs.emaAlpa" (did you mean "dvfs.emaAlpha"?)`, "dvfs.stepPct: must be in (0, 100], got 500",
			"standalone.profile.gpu.powerCap.capWattsPerGpu: .inf is not a number", `logLevel: "loud" is not one of`} {
			if !strings.Contains(got, want) {
				t.Errorf("warnings lack %q:\n%s", want, got)
			}
		}
		if len(warnings) != 6 {
			t.Errorf("%d warnings, want 6:\n%s", len(warnings), got)
		}
	})
	for _, tc := range []struct{ name, file, want string }{
		{"bad needed key", "stateDir: state\nfancyKey: 1\n", `stateDir: "state" is not an absolute path`},
		{"needed key of the wrong type", "hostRoot: 5\n", "hostRoot: 5 is not a string"},
		{"misspelt needed key", "hostroot: /srv/host\n", `unknown key "hostroot" (did you mean "hostRoot"?)`},
		{"not YAML", "stateDir: /a\n stateDir: /b\n", "yaml: line 2"},
		{"duplicate needed key", "stateDir: /a\nstateDir: /b\n", `line 2: key "stateDir" already set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, warnings, err := load(t, tc.file, nil)
			wantErr(t, err, tc.want)
			// A needed key's problem does not turn the others into errors.
			if strings.Contains(err.Error(), "fancyKey") {
				t.Errorf("the unknown fancyKey is in the error: %v", err)
			}
			if strings.Contains(tc.file, "fancyKey") && !strings.Contains(messages(warnings), "fancyKey") {
				t.Errorf("the unknown fancyKey is not among the warnings: %v", warnings)
			}
		})
	}
}
