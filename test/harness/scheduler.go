package harness

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
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
