package demo

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"joulie.io/joulie/test/harness"
)

// The programs run with the configuration file and environment the chart
// gives their pods: the demo's values rendered by the pinned helm, the
// downward API filled in, and only the listen addresses and the
// kubeconfig changed (by variable, which wins over the file).
func TestProgramsGetTheChartsEnvironment(t *testing.T) {
	helm, err := harness.PinnedHelm("../..")
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := harness.RenderChart(t.Context(), helm, "../../packaging/helm/joulie", harness.ChartRelease,
		"--set", "controller.policy.reconcileInterval=5s", "--set", "extender.scheduler.urlPrefix=http://127.0.0.1:4321")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseRendering(manifests)
	if err != nil {
		t.Fatal(err)
	}
	env, err := r.env(controllerName, "joulie-controller-demo", map[string]string{"METRICS_ADDR": "127.0.0.1:1234", "KUBECONFIG": "/k"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"POD_NAME=joulie-controller-demo", "POD_NAMESPACE=joulie-system", "METRICS_ADDR=127.0.0.1:1234", "KUBECONFIG=/k"} {
		if !slices.Contains(env, want) {
			t.Errorf("controller environment lacks %s: %v", want, env)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(env), func(e string) bool { return !strings.HasPrefix(e, "METRICS_ADDR=") })); n != 1 {
		t.Errorf("METRICS_ADDR appears %d times", n)
	}
	dir := t.TempDir()
	args, err := r.args(controllerName, dir)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, controllerName+"-config", "controller.yaml")
	if !slices.Equal(args, []string{"--config=" + file}) {
		t.Errorf("controller arguments %q, want --config=%s", args, file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`reconcileInterval: "5s"`, `nodeSelector: "joulie.io/managed=true"`, "leaderElect: true"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("controller configuration lacks %s:\n%s", want, data)
		}
	}
	ext, err := r.env(extenderName, "joulie-extender-demo", map[string]string{"EXTENDER_ADDR": "127.0.0.1:4321"})
	if err != nil {
		t.Fatal(err)
	}
	extArgs, err := r.args(extenderName, dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile(filepath.Join(dir, extenderName+"-config", "extender.yaml"))
	if !slices.Contains(ext, "EXTENDER_ADDR=127.0.0.1:4321") || len(extArgs) != 1 || err != nil || !strings.Contains(string(data), "twinStalenessThreshold: ") {
		t.Errorf("extender environment %v, arguments %q or configuration (%v) lack its address or the chart's settings:\n%s", ext, extArgs, err, data)
	}
	cfg, err := r.schedulerConfig(schedulerConfigName)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Extenders) != 1 || cfg.Extenders[0].URLPrefix != "http://127.0.0.1:4321" || !cfg.Extenders[0].NodeCacheCapable || cfg.Extenders[0].FilterVerb == "" {
		t.Errorf("scheduler configuration's extenders %+v, want the chart's one at the demo's address", cfg.Extenders)
	}
	if _, err := r.env("joulie-nothing", "x", nil); err == nil {
		t.Error("a Deployment the chart does not render gives no error")
	}
}

func TestStopEndsAProgramAndKillsOneThatIgnoresSIGTERM(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "prog")
	// Exits 0 on SIGTERM, as Joulie's programs do.
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntrap 'kill $!; exit 0' TERM\nsleep 30 &\nwait\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := startProcess("polite", script, nil, nil, filepath.Join(dir, "polite.log"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the shell set its trap
	if err := p.stop(10 * time.Second); err != nil {
		t.Errorf("a program that exits on SIGTERM: %v", err)
	}

	stubborn := filepath.Join(dir, "stubborn")
	if err := os.WriteFile(stubborn, []byte("#!/bin/sh\ntrap '' TERM\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err = startProcess("stubborn", stubborn, nil, nil, filepath.Join(dir, "stubborn.log"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	err = p.stop(300 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "was killed") {
		t.Errorf("a program that ignores SIGTERM: %v, want it killed", err)
	}
	if done, _ := p.exited(); !done {
		t.Error("the stubborn program still runs")
	}
}

// A chart that does not render stops the start: the control plane it had
// started is stopped again and the error says why, with no panic.
func TestStartClusterStopsWhatItStartedOnError(t *testing.T) {
	helm, err := harness.PinnedHelm("../..")
	if err != nil {
		t.Fatal(err)
	}
	_, err = startCluster(t.Context(), t.TempDir(), t.TempDir(), helm, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "Chart.yaml") {
		t.Errorf("start with an empty chart directory: %v, want helm's complaint about Chart.yaml", err)
	}
}

// Chart values go to helm as JSON: numbers stay numbers, as the chart's
// schema wants, and everything else is a string.
func TestJSONValue(t *testing.T) {
	for in, want := range map[string]string{
		"0.3": "0.3", "3": "3", "5s": `"5s"`, "http://127.0.0.1:80": `"http://127.0.0.1:80"`,
	} {
		if got := jsonValue(in); got != want {
			t.Errorf("jsonValue(%q) = %s, want %s", in, got, want)
		}
	}
}
