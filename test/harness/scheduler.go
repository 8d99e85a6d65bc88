package harness

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
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
func (cp *ControlPlane) StartScheduler(t testing.TB, cfg *schedulerconfigv1.KubeSchedulerConfiguration) (stop func()) {
	t.Helper()
	dir := t.ArtifactDir()
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
		t.Fatal(err)
	}
	if err := WriteKubeconfigFile(kubeconfig, restCfg); err != nil {
		t.Fatal(err)
	}
	cfg.ClientConnection.Kubeconfig = kubeconfig
	cfg.LeaderElection.LeaderElect = ptr.To(false)
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatalf("encode scheduler configuration: %v", err)
	}
	configFile := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(configFile, data, 0o600); err != nil {
		t.Fatal(err)
	}

	logPath := filepath.Join(dir, "scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logFile), textlogger.Verbosity(4)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))

	// kube-scheduler's own setup and run, as its command does, without
	// its test server: that one wants a *testing.T, and benchmarks start
	// schedulers too. The secure port stays off; nothing here reads it.
	// Each scheduler gets its own feature-gate registry, as in the test
	// server, so that restarts in one process do not meet an already set
	// global one.
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	version := utilcompatibility.DefaultKubeEffectiveVersionForTest()
	version.SetEmulationVersion(featureGate.EmulationVersion())
	version.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	registry := compatibility.NewComponentGlobalsRegistry()
	fail := func(format string, args ...any) {
		cancel()
		_ = logFile.Close()
		t.Fatalf("start kube-scheduler: "+format+"\n%s", append(args, tail(logPath, 40))...)
	}
	if err := registry.Register(compatibility.DefaultKubeComponent, version, featureGate); err != nil {
		fail("%v", err)
	}
	opts := options.NewOptionsWithComponentGlobalsRegistry(registry)
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{"--config=" + configFile, "--secure-port=0"}); err != nil {
		fail("flags: %v", err)
	}
	if err := registry.Set(); err != nil {
		fail("feature gates: %v", err)
	}
	cc, sched, err := app.Setup(ctx, opts)
	if err != nil {
		fail("%v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Run returns only when ctx ends, always with an error; one
		// before that is a failed start, and the log says why.
		if err := app.Run(ctx, cc, sched); ctx.Err() == nil {
			logger.Error(err, "kube-scheduler stopped")
		}
	}()

	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			// Run registered the configuration endpoint the next
			// scheduler of the process registers again.
			configz.Delete("componentconfig")
			_ = logFile.Close()
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("end of %s:\n%s", logPath, tail(logPath, 60))
		}
	})
	return stop
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
