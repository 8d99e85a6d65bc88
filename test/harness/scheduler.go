package harness

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// ProfileLabel is the pprof label key the harness puts on the goroutines
// of the kube-scheduler it runs in the test process, with the value
// ProfileScheduler: a CPU profile's samples so labelled are the
// scheduler's own CPU.
const (
	ProfileLabel     = "joulie.harness/component"
	ProfileScheduler = "kube-scheduler"
)

// SchedulerUser is the user the harness's kube-scheduler authenticates
// as; Kubernetes' bootstrap RBAC grants it what a scheduler needs.
const SchedulerUser = "system:kube-scheduler"

// StartScheduler runs a kube-scheduler for the duration of t, with cfg as
// its KubeSchedulerConfiguration (nil means the defaults). The harness
// fills in the client connection and turns leader election off; the rest,
// extenders included, is taken as given. The scheduler logs to
// scheduler.log in t's artifact directory, and the end of that log is
// copied into t's output if t fails.
//
// Only one scheduler may run at a time in a process: the scheduler
// registers process-wide configuration endpoints. The returned function
// stops the scheduler before t ends, for a benchmark that starts one per
// iteration; calling it is optional and more than once is harmless.
//
// plugins are out-of-tree plugins (app.WithPlugin) the scheduler
// registers, for cfg's profiles to enable.
//
// It logs at verbosity 4, which shows every extender call and plugin
// verdict a failing test may need, and costs the scheduler CPU on every
// node of every cycle; a benchmark uses StartSchedulerVerbosity.
func (cp *ControlPlane) StartScheduler(t testing.TB, cfg *schedulerconfigv1.KubeSchedulerConfiguration, plugins ...app.Option) (stop func()) {
	t.Helper()
	return cp.StartSchedulerVerbosity(t, 4, cfg, plugins...)
}

// StartSchedulerVerbosity is StartScheduler logging at verbosity v. At 4
// and above kube-scheduler names a logger for every plugin it runs on
// every node, a quarter of its CPU in the throughput benchmark; clusters
// commonly run it at 2 or below, which a benchmark should measure.
func (cp *ControlPlane) StartSchedulerVerbosity(t testing.TB, v int, cfg *schedulerconfigv1.KubeSchedulerConfiguration, plugins ...app.Option) (stop func()) {
	t.Helper()
	dir := t.ArtifactDir()
	logPath := filepath.Join(dir, "scheduler.log")
	stop, err := cp.runScheduler(context.Background(), cfg, dir, v, plugins...)
	if err != nil {
		t.Fatalf("%v\n%s", err, tail(logPath, 40))
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("end of %s:\n%s", logPath, tail(logPath, 60))
		}
	})
	return stop
}

// writeSchedulerConfig writes cfg (nil: the defaults) into dir as a
// KubeSchedulerConfiguration file, with the client connection filled in
// (user system:kube-scheduler, whose rights Kubernetes' bootstrap RBAC
// grants) and leader election off, and returns the file's path.
func (cp *ControlPlane) writeSchedulerConfig(dir string, cfg *schedulerconfigv1.KubeSchedulerConfiguration) (string, error) {
	if cfg == nil {
		cfg = &schedulerconfigv1.KubeSchedulerConfiguration{}
	} else {
		cfg = cfg.DeepCopy()
	}
	cfg.APIVersion = schedulerconfigv1.SchemeGroupVersion.String()
	cfg.Kind = "KubeSchedulerConfiguration"
	kubeconfig := filepath.Join(dir, "scheduler.kubeconfig")
	restCfg, err := cp.userConfig(SchedulerUser, nil)
	if err != nil {
		return "", err
	}
	if err := WriteKubeconfigFile(kubeconfig, restCfg); err != nil {
		return "", err
	}
	cfg.ClientConnection.Kubeconfig = kubeconfig
	cfg.LeaderElection.LeaderElect = ptr.To(false)
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("encode scheduler configuration: %w", err)
	}
	configFile := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(configFile, data, 0o600); err != nil {
		return "", fmt.Errorf("write scheduler configuration: %w", err)
	}
	return configFile, nil
}

// RunScheduler runs a kube-scheduler outside of a test, for programs
// such as joulie-demo, until the returned stop is called (or ctx ends;
// stop must still be called to wait for it). cfg is as for
// StartScheduler; its files and the scheduler's log (scheduler.log) go
// into dir. The scheduler serves no port of its own: nothing here reads
// its health or metrics, and a port it does not open cannot be left
// behind. As with StartScheduler, one scheduler at a time per process.
func (cp *ControlPlane) RunScheduler(ctx context.Context, cfg *schedulerconfigv1.KubeSchedulerConfiguration, dir string) (stop func(), err error) {
	return cp.runScheduler(ctx, cfg, dir, 2)
}

// runScheduler is kube-scheduler's own setup and run, as its command does
// them, without its test server: that one wants a *testing.T, and
// benchmarks and the demo start schedulers too. The secure port stays
// off; nothing here reads it. Each scheduler gets its own feature-gate
// registry, as in the test server, so that restarts in one process do not
// meet an already set global one.
func (cp *ControlPlane) runScheduler(ctx context.Context, cfg *schedulerconfigv1.KubeSchedulerConfiguration, dir string, verbosity int, plugins ...app.Option) (stop func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create scheduler dir: %w", err)
	}
	configFile, err := cp.writeSchedulerConfig(dir, cfg)
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "scheduler.log"))
	if err != nil {
		return nil, err
	}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logFile), textlogger.Verbosity(verbosity)))
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	fail := func(what string, err error) (func(), error) {
		cancel()
		_ = logFile.Close()
		return nil, fmt.Errorf("start kube-scheduler: %s: %w (log in %s)", what, err, logFile.Name())
	}

	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	version := utilcompatibility.DefaultKubeEffectiveVersionForTest()
	version.SetEmulationVersion(featureGate.EmulationVersion())
	version.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	registry := compatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(compatibility.DefaultKubeComponent, version, featureGate); err != nil {
		return fail("feature gates", err)
	}
	opts := options.NewOptionsWithComponentGlobalsRegistry(registry)
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{"--config=" + configFile, "--secure-port=0"}); err != nil {
		return fail("flags", err)
	}
	if err := registry.Set(); err != nil {
		return fail("feature gates", err)
	}
	// Every goroutine the scheduler starts inherits this label, so that
	// a CPU profile of the process can tell the scheduler's CPU from the
	// API server's and the test's, which share the process.
	var (
		cc    *schedulerserverconfig.CompletedConfig
		sched *scheduler.Scheduler
	)
	pprof.Do(ctx, pprof.Labels(ProfileLabel, ProfileScheduler), func(ctx context.Context) {
		cc, sched, err = app.Setup(ctx, opts, plugins...)
	})
	if err != nil {
		return fail("setup", err)
	}
	done := make(chan struct{})
	go pprof.Do(ctx, pprof.Labels(ProfileLabel, ProfileScheduler), func(ctx context.Context) {
		defer close(done)
		// Run returns only when ctx ends, always with an error; one
		// before that is a failed start, and the log says why.
		if err := app.Run(ctx, cc, sched); ctx.Err() == nil {
			logger.Error(err, "kube-scheduler stopped")
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			// Run registered the configuration endpoint the next
			// scheduler of the process registers again.
			configz.Delete("componentconfig")
			_ = logFile.Close()
		})
	}, nil
}

// tail returns the last n lines of a file, for failure messages.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
