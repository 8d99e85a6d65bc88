// Command joulie-demo runs Joulie for real on a cluster in a box: an
// embedded etcd, kube-apiserver and kube-scheduler from test/harness, the
// Helm chart installed as an operator would, the real joulie-controller
// and joulie-extender under the chart's ServiceAccounts, and a fleet of
// simulated hosts (test/demo/fleet) each enforced by a real joulie-agentd.
// A workload from the energy benchmark's generator runs over it while a
// live view shows each node's profile, caps, power and pods; at the end
// it writes report.json and report.html (test/demo/report) into --out.
//
// make demo builds everything and runs it; test/README.md ("make demo")
// describes the flags, what runs, and the caveats of --kubeconfig.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/term"
)

// errUsage marks a bad command line (exit code 2).
var errUsage = errors.New("bad usage")

func main() {
	// A copy of the terminal's stderr, for the demo's own messages after
	// strayOutput has moved fd 2.
	stderr := os.Stderr
	if fd, err := syscall.Dup(2); err == nil {
		stderr = os.NewFile(uintptr(fd), "stderr")
	}
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "joulie-demo: %v\n", err)
		os.Exit(2)
	default:
		fmt.Fprintf(stderr, "joulie-demo: %v\n", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	duration    time.Duration
	nodes       int
	daemonNodes int
	seed        int64
	maxPods     int
	out         string
	compare     bool
	kubeconfig  string
	binDir      string
	helm        string
	chart       string
	refresh     time.Duration
	step        time.Duration
	plain       bool
	parking     bool
	bootTime    time.Duration
	bmcNodes    int
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("joulie-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 5*time.Minute, "how long a run lasts (pods arrive over the first half); Ctrl-C ends it early and still reports")
	fs.IntVar(&o.nodes, "nodes", 16, "simulated nodes, in at least three hardware families")
	fs.IntVar(&o.daemonNodes, "daemon-nodes", 2, "of which this many run their own joulie-agentd on a fixture sysfs tree and fake NVML (the rest share one pool-mode agent)")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the workload generator")
	fs.IntVar(&o.maxPods, "max-pods", 600, "stop generating pods after this many")
	fs.StringVar(&o.out, "out", "demo-report", "directory the report is written to")
	fs.BoolVar(&o.compare, "compare", false, "run the same workload a second time without Joulie (no caps, no extender) and compare")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "run the simulated fleet on this existing cluster instead of an embedded one (see test/README.md for the caveats)")
	fs.StringVar(&o.binDir, "bin-dir", "", "directory of joulie-agentd, joulie-controller and joulie-extender (default: this program's own directory; make demo builds them into bin/)")
	fs.StringVar(&o.helm, "helm", "", "the pinned helm (default: $JOULIE_HELM, else what make print-helm says)")
	fs.StringVar(&o.chart, "chart", "", "the Helm chart (default: packaging/helm/joulie of the repository)")
	fs.DurationVar(&o.refresh, "refresh", time.Second, "how often the live view refreshes and the report samples")
	fs.DurationVar(&o.step, "step", time.Second, "the fleet's physics step")
	fs.BoolVar(&o.plain, "plain", false, "plain periodic lines even on a terminal")
	fs.BoolVar(&o.parking, "parking", true, "let the controller park the pool nodes (switch them off while idle) and wake them by Wake-on-LAN")
	fs.IntVar(&o.bmcNodes, "bmc-nodes", 1, "of the parkable pool nodes, this many are woken through a BMC (Debian's ipmi_sim on loopback) over IPMI, the rest by Wake-on-LAN")
	fs.DurationVar(&o.bootTime, "boot-time", 20*time.Second, "how long a simulated node takes from its magic packet to Ready (the physics' measured boot is 151 s, compressed for a short demo)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	case o.bootTime < time.Second:
		return nil, fmt.Errorf("%w: --boot-time=%s: at least 1s", errUsage, o.bootTime)
	case o.duration < 20*time.Second:
		return nil, fmt.Errorf("%w: --duration=%s: at least 20s, so the controller can act", errUsage, o.duration)
	case o.nodes < 3:
		return nil, fmt.Errorf("%w: --nodes=%d: at least 3, one per hardware family", errUsage, o.nodes)
	case o.daemonNodes < 0 || o.daemonNodes > o.nodes:
		return nil, fmt.Errorf("%w: --daemon-nodes=%d: between 0 and --nodes (%d)", errUsage, o.daemonNodes, o.nodes)
	case o.refresh <= 0 || o.step <= 0:
		return nil, fmt.Errorf("%w: --refresh=%s, --step=%s: both must be positive", errUsage, o.refresh, o.step)
	case o.maxPods <= 0:
		return nil, fmt.Errorf("%w: --max-pods=%d: must be positive", errUsage, o.maxPods)
	case o.compare && o.kubeconfig != "":
		return nil, fmt.Errorf("%w: --compare needs the embedded cluster: it turns Joulie off, which the demo cannot do on a cluster it does not run", errUsage)
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	began := time.Now()
	// A signal ends the runs, not the teardown: the report is still
	// written and everything started is stopped. A second signal kills
	// the demo outright (the programs it started die with it).
	runCtx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	go func() {
		<-runCtx.Done()
		stopSignals()
	}()

	work, err := os.MkdirTemp("", "joulie-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// The embedded etcd's client logs to the process's stderr at shutdown
	// whatever the harness configures; send fd 2 to a file so the live
	// view stays clean. The demo's own errors still reach the terminal.
	if f, ok := stderr.(*os.File); ok && f.Fd() == 2 {
		restore, err := strayOutput(filepath.Join(work, "stray.log"))
		if err != nil {
			return err
		}
		defer restore()
	}

	terminal := !o.plain
	if f, ok := stdout.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		terminal = false
	}
	d := &demo{opts: o, work: work, out: stdout, began: began,
		view: &liveView{w: stdout, terminal: terminal, plainEvery: 10 * time.Second}}
	err = d.run(runCtx)
	if d.reportDir != "" {
		fmt.Fprintf(stdout, "\nreport: %s (open %s in a browser; the data is in %s)\n",
			d.reportDir, filepath.Join(d.reportDir, "report.html"), filepath.Join(d.reportDir, "report.json"))
	}
	return err
}

// strayOutput points fd 2 at path until restore is called.
func strayOutput(path string) (restore func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	saved, err := syscall.Dup(2)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := syscall.Dup3(int(f.Fd()), 2, 0); err != nil {
		f.Close()
		syscall.Close(saved)
		return nil, fmt.Errorf("redirect stderr: %w", err)
	}
	return func() {
		_ = syscall.Dup3(saved, 2, 0)
		syscall.Close(saved)
		f.Close()
	}, nil
}
