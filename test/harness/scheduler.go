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
	"k8s.io/component-base/configz"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	schedulerserver "k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	kubeschedulertesting "k8s.io/kubernetes/cmd/kube-scheduler/app/testing"
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
// registers process-wide configuration endpoints.
func (cp *ControlPlane) StartScheduler(t *testing.T, cfg *schedulerconfigv1.KubeSchedulerConfiguration) {
	t.Helper()
	dir := t.ArtifactDir()
	configFile, err := cp.writeSchedulerConfig(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}

	logPath := filepath.Join(dir, "scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logFile), textlogger.Verbosity(4)))
	ctx := klog.NewContext(context.Background(), logger)

	server, err := kubeschedulertesting.StartTestServer(t, ctx, []string{"--config=" + configFile})
	if err != nil {
		_ = logFile.Close()
		t.Fatalf("start kube-scheduler: %v\n%s", err, tail(logPath, 40))
	}
	t.Cleanup(func() {
		server.TearDownFn()
		_ = logFile.Close()
		if t.Failed() {
			t.Logf("end of %s:\n%s", logPath, tail(logPath, 60))
		}
	})
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
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logFile), textlogger.Verbosity(2)))
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	fail := func(err error) (func(), error) {
		cancel()
		_ = logFile.Close()
		return nil, fmt.Errorf("start kube-scheduler: %w (log in %s)", err, logFile.Name())
	}

	opts := schedulerapp.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{"--config=" + configFile}); err != nil {
		return fail(err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return fail(err)
	}
	opts.SecureServing.BindPort = 0
	cc, sched, err := schedulerserver.Setup(ctx, opts)
	if err != nil {
		return fail(err)
	}
	done := make(chan error, 1)
	go func() { done <- schedulerserver.Run(ctx, cc, sched) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			// Run always ends with an error, "finished without leader
			// elect" after a normal stop; the log has any other.
			<-done
			// Run registers the configuration endpoint process-wide;
			// a later scheduler registers it again.
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
