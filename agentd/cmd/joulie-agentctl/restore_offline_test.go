package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/cpufreq"
	"joulie.io/joulie/agentd/internal/cpufreq/cpufreqtest"
	"joulie.io/joulie/agentd/internal/cpuinfo/cpuinfotest"
	"joulie.io/joulie/agentd/internal/host"
	"joulie.io/joulie/agentd/internal/localapi"
	"joulie.io/joulie/agentd/internal/rapl/rapltest"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/cliapp"
)

// killedHost is a fixture host (2-socket Xeon, 350 W RAPL packages,
// cpufreq up to 3.8 GHz) as a joulie-agentd killed by SIGKILL leaves it:
// both packages capped to 210 W and CPU 3's ceiling lowered, with the
// originals in the journal of the state directory.
type killedHost struct {
	root, stateDir, config string
	cpus                   *cpufreqtest.Tree
}

func newKilledHost(t *testing.T, extraConfig string) *killedHost {
	t.Helper()
	k := &killedHost{root: t.TempDir(), stateDir: filepath.Join(t.TempDir(), "state")}
	cpuinfotest.Write(t, k.root, cpuinfotest.Xeon2S())
	rapltest.TwoSocketXeon(t, k.root, 350)
	k.cpus = cpufreqtest.Build(t, k.root, cpufreqtest.Spec{Packages: 2, CoresPerPackage: 4, ThreadsPerCore: 1, MinKHz: 800000, MaxKHz: 3800000})

	// What the daemon did before it died, through the same backends.
	h, err := host.Open(host.Config{Root: k.root, StateDir: k.stateDir, NVMLLibraryPath: host.Skip, AMDSMILibraryPath: host.Skip})
	if err != nil {
		t.Fatal(err)
	}
	pct := 60.0
	cpu := h.Enforce(time.Now(), &joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco,
		CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: &pct}}).CPU
	if cpu.Result != joulie.ResultApplied {
		t.Fatalf("fixture: CPU cap not applied: %+v", cpu)
	}
	journal, err := state.Open(k.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	fs := sysfs.New(k.root)
	if _, err := cpufreq.NewSetter(fs, journal, cpufreq.Discover(fs)).SetMaxFreq([]cpufreq.Target{{CPU: 3, KHz: 2000000}}); err != nil {
		t.Fatal(err)
	}
	_ = h.Close() // no Restore: the process died

	k.config = filepath.Join(t.TempDir(), "agentd.yaml")
	cfg := fmt.Sprintf("nodeName: node-a\nhostRoot: %s\nstateDir: %s\nnvmlLibraryPath: none\namdsmiLibraryPath: none\n%s",
		k.root, k.stateDir, extraConfig)
	if err := os.WriteFile(k.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	k.check(t, 210, 2000000)
	return k
}

// check asserts both packages' long-term limits (W) and CPU 3's ceiling.
func (k *killedHost) check(t *testing.T, watts, khz int64) {
	t.Helper()
	for _, zone := range []string{"intel-rapl:0", "intel-rapl:1"} {
		if got := rapltest.Attr(t, k.root, zone, "constraint_0_power_limit_uw"); got != fmt.Sprint(watts*1_000_000) {
			t.Errorf("%s limit = %s µW, want %d W", zone, got, watts)
		}
	}
	if got := k.cpus.ScalingMax(t, 3); got != khz {
		t.Errorf("cpu3 scaling_max_freq = %d, want %d", got, khz)
	}
}

func (k *killedHost) journaled(t *testing.T) int {
	t.Helper()
	j, err := state.Open(k.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	return j.Len()
}

func TestOfflineRestoreAfterKill9PutsOriginalsBack(t *testing.T) {
	k := newKilledHost(t, "")
	out, errOut, code := runCtl("restore", "--offline", "--config", k.config)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	k.check(t, 350, 3800000)
	if n := k.journaled(t); n != 0 {
		t.Errorf("%d originals still journaled after a full restore", n)
	}
	golden(t, "restore-offline", out)

	// Run again, as ExecStopPost= does after every clean stop: nothing
	// left is success.
	out, errOut, code = runCtl("restore", "--offline", "--config", k.config)
	if code != 0 || out != "Nothing to restore: joulie-agentd had changed no control.\n" {
		t.Fatalf("second run: exit %d, %q, %q", code, out, errOut)
	}
}

func TestOfflineRestoreWithNothingRecordedCreatesNothing(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "never-started")
	cfg := filepath.Join(t.TempDir(), "agentd.yaml")
	if err := os.WriteFile(cfg, []byte("nodeName: node-a\nstateDir: "+stateDir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCtl("restore", "--offline", "--config", cfg, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r localapi.RestoreReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Restored != 0 || r.Kept != 0 {
		t.Fatalf("report %+v, %v", r, err)
	}
	if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
		t.Fatalf("the state directory was created: %v", err)
	}
}

func TestOfflineRestoreHonoursKeepCapsOnStop(t *testing.T) {
	k := newKilledHost(t, "keepCapsOnStop: true\n")
	out, errOut, code := runCtl("restore", "--offline", "--config", k.config)
	if code != 0 || !strings.Contains(out, "keepCapsOnStop is set") {
		t.Fatalf("exit %d: %q %q", code, out, errOut)
	}
	k.check(t, 210, 2000000)
	if n := k.journaled(t); n != 3 {
		t.Fatalf("journal holds %d originals, want the 3 kept", n)
	}

	// The variable beats the file, as for the daemon.
	t.Setenv("JOULIE_KEEP_CAPS_ON_STOP", "false")
	if _, errOut, code := runCtl("restore", "--offline", "--config", k.config); code != 0 {
		t.Fatalf("with JOULIE_KEEP_CAPS_ON_STOP=false: exit %d: %s", code, errOut)
	}
	k.check(t, 350, 3800000)
}

func TestOfflineRestoreRefusesBesideARunningDaemon(t *testing.T) {
	k := newKilledHost(t, "")
	release, err := state.Lock(k.stateDir) // what a live joulie-agentd holds
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	_, errOut, code := runCtl("restore", "--offline", "--config", k.config)
	if code != exitFailure || !strings.Contains(errOut, "joulie-agentd is running") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	k.check(t, 210, 2000000)
}

func TestOfflineRestoreKeepsWhatItCannotWrite(t *testing.T) {
	k := newKilledHost(t, "")
	// The kernel made CPU 3's ceiling read-only in the meantime.
	if err := os.Chmod(k.cpus.ScalingMaxPath(3), 0o444); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCtl("restore", "--offline", "--config", k.config)
	if code != exitFailure || !strings.Contains(errOut, "read-only attribute") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Restored 2 controls") || !strings.Contains(out, "Could not restore 1 control") || !strings.Contains(out, "read-only attribute") {
		t.Errorf("output:\n%s", out)
	}
	if n := k.journaled(t); n != 1 {
		t.Errorf("journal holds %d originals, want the one not restored", n)
	}
}

func TestOfflineRestoreUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "agentd.yaml")
	if err := os.WriteFile(bad, []byte("stateDirr: /tmp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		message string
	}{
		{"bad config is bad usage", []string{"restore", "--offline", "--config", bad}, "stateDirr"},
		{"missing named config", []string{"restore", "--offline", "--config", bad + ".missing"}, "no such file"},
		{"--config needs --offline", []string{"restore", "--config", bad}, "only used with --offline"},
		{"--state-dir needs --offline", []string{"restore", "--state-dir", "/var/lib/joulie"}, "--state-dir is only used with --offline"},
		{"stray argument", []string{"restore", "--offline", "now"}, "takes no arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCtl(tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.message) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, exitUsage, tc.message)
			}
		})
	}
}

func TestOfflineRestoreOfACorruptJournalNeedsAnOperator(t *testing.T) {
	k := newKilledHost(t, "")
	journal := filepath.Join(k.stateDir, state.FileName)
	if err := os.WriteFile(journal, []byte(`{"version":1,"entries":[`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCtl("restore", "--offline", "--config", k.config)
	if code != cliapp.ExitNeedsOperator || !strings.Contains(errOut, "mv "+journal+" "+journal+".bad") {
		t.Fatalf("exit %d, stderr %q; want %d and what to do with %s", code, errOut, cliapp.ExitNeedsOperator, journal)
	}
	k.check(t, 210, 2000000)
}

// A configuration joulie-agentd refuses (the reason it died, or refuses
// to start again) must not keep the host capped: restore --offline reads
// only the state directory, the host root, the library paths and
// keepCapsOnStop, and warns about the rest.
func TestOfflineRestoreDespiteProblemsElsewhereInTheConfig(t *testing.T) {
	k := newKilledHost(t, "reconcileInterval: 5\nfancyKey: true\ndvfs:\n  stepPct: 500\n"+
		"standalone:\n  profile:\n    cpu:\n      packagePowerCapWatts: .nan\n")
	out, errOut, code := runCtl("restore", "--offline", "--config", k.config)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	k.check(t, 350, 3800000)
	if !strings.Contains(out, "Restored 3 controls") {
		t.Errorf("output:\n%s", out)
	}
	for _, want := range []string{
		"warning: " + k.config + ": reconcileInterval: 5 is not a duration",
		"warning: " + k.config + `: unknown key "fancyKey"`,
		"warning: dvfs.stepPct: must be in (0, 100], got 500 (from " + k.config + ")",
		"warning: " + k.config + ": standalone.profile.cpu.packagePowerCapWatts: .nan is not a number",
		"restoring anyway, as restore --offline reads only stateDir, hostRoot",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// What restore --offline does read must be right: restoring from the
// wrong place would report nothing to restore and leave the caps.
func TestOfflineRestoreRefusesABadStateDirOrHostRoot(t *testing.T) {
	k := newKilledHost(t, "")
	missing := filepath.Join(t.TempDir(), "no-such-host")
	for _, tc := range []struct {
		name, config string
		want         []string
	}{
		{"relative state directory", "stateDir: var/lib/joulie\nhostRoot: " + k.root,
			[]string{`stateDir: "var/lib/joulie" is not an absolute path`}},
		{"state directory not a string", "stateDir: [" + k.stateDir + "]\nhostRoot: " + k.root,
			[]string{"stateDir: a list is not a string"}},
		{"misspelt state directory", "statedir: " + k.stateDir + "\nhostRoot: " + k.root,
			[]string{`unknown key "statedir" (did you mean "stateDir"?)`}},
		{"missing host root", "stateDir: " + k.stateDir + "\nhostRoot: " + missing,
			[]string{fmt.Sprintf("hostRoot: %q does not exist", missing)}},
		{"keepCapsOnStop unreadable", "stateDir: " + k.stateDir + "\nhostRoot: " + k.root + "\nkeepCapsOnStop: perhaps",
			[]string{`keepCapsOnStop: "perhaps" is not true or false`}},
		{"not YAML at all", "stateDir: " + k.stateDir + "\n  hostRoot: " + k.root,
			[]string{": yaml: line 2", `--config "" --state-dir DIR --host-root DIR`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "agentd.yaml")
			if err := os.WriteFile(cfg, []byte(tc.config+"\ndvfs: {stepPct: 500}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, errOut, code := runCtl("restore", "--offline", "--config", cfg)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			for _, want := range append(tc.want, cfg, "reads only stateDir, hostRoot") {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			k.check(t, 210, 2000000)
		})
	}
}

// The way out that the refusal of an unreadable file suggests works.
func TestOfflineRestoreWithoutTheConfigFile(t *testing.T) {
	k := newKilledHost(t, "")
	if err := os.WriteFile(k.config, []byte("stateDir: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCtl("restore", "--offline", "--config", k.config); code != exitUsage {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	t.Setenv("JOULIE_NVML_LIBRARY_PATH", "none")
	t.Setenv("JOULIE_AMDSMI_LIBRARY_PATH", "none")
	_, errOut, code := runCtl("restore", "--offline", "--config", "", "--state-dir", k.stateDir, "--host-root", k.root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	k.check(t, 350, 3800000)
}
