// Command joulie-demo runs Joulie for real on a cluster in a box: an
// embedded etcd, kube-apiserver and kube-scheduler from test/harness, the
// Helm chart installed as an operator would, the real joulie-controller
// and joulie-extender under the chart's ServiceAccounts, and a fleet of
// simulated hosts (test/demo/fleet) each enforced by a real joulie-agentd.
// A workload from the energy benchmark's generator runs over it while a
// live view shows each node's profile, caps, power and pods; at the end
// it writes report.json and report.html (test/demo/demoreport) into --out.
// The demo itself is package test/demo; this command is its flags.
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
	"syscall"
	"time"

	"joulie.io/joulie/test/demo"
)

func main() {
	// A copy of the terminal's stderr, for the demo's own messages after
	// demo.Run has moved fd 2.
	stderr := os.Stderr
	if fd, err := syscall.Dup(2); err == nil {
		stderr = os.NewFile(uintptr(fd), "stderr")
	}
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, demo.ErrUsage):
		fmt.Fprintf(stderr, "joulie-demo: %v\n", err)
		os.Exit(2)
	default:
		fmt.Fprintf(stderr, "joulie-demo: %v\n", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (demo.Options, error) {
	var o demo.Options
	fs := flag.NewFlagSet("joulie-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.Duration, "duration", 4*time.Minute, "the longest a run lasts (a compressed day of pods arrives over the first half; a run ends when its last pod finishes); Ctrl-C ends it early and still reports")
	fs.IntVar(&o.Nodes, "nodes", 16, "simulated nodes, in at least three hardware families")
	fs.IntVar(&o.DaemonNodes, "daemon-nodes", 2, "of which this many run their own joulie-agentd on a fixture sysfs tree and fake NVML (the rest share one pool-mode agent)")
	fs.Int64Var(&o.Seed, "seed", 1, "seed of the workload generator")
	fs.IntVar(&o.MaxPods, "max-pods", 1000, "the most pods a run creates: a day that would hold more is drawn at a lower load")
	fs.StringVar(&o.Out, "out", "demo-report", "directory the report is written to")
	fs.BoolVar(&o.Compare, "compare", true, "run the same workload a second time without Joulie (no caps, no extender, every node on) and say what Joulie saved; --compare=false runs Joulie only (the default with --kubeconfig)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "run the simulated fleet on this existing cluster instead of an embedded one (see test/README.md for the caveats)")
	fs.StringVar(&o.BinDir, "bin-dir", "", "directory of joulie-agentd, joulie-controller and joulie-extender (default: this program's own directory; make demo builds them into bin/)")
	fs.StringVar(&o.Helm, "helm", "", "the pinned helm (default: $JOULIE_HELM, else what make print-helm says)")
	fs.StringVar(&o.Chart, "chart", "", "the Helm chart (default: packaging/helm/joulie of the repository)")
	fs.DurationVar(&o.Refresh, "refresh", time.Second, "how often the live view refreshes and the report samples")
	fs.DurationVar(&o.Step, "step", time.Second, "the fleet's physics step")
	fs.BoolVar(&o.Plain, "plain", false, "plain periodic lines even on a terminal")
	fs.BoolVar(&o.Parking, "parking", true, "let the controller park the pool nodes (switch them off while idle) and wake them by Wake-on-LAN")
	fs.IntVar(&o.BMCNodes, "bmc-nodes", 1, "of the parkable pool nodes, this many are woken through a BMC (Debian's ipmi_sim on loopback) over IPMI, the rest by Wake-on-LAN")
	fs.DurationVar(&o.BootTime, "boot-time", 20*time.Second, "how long a simulated node takes from its magic packet to Ready (the physics' measured boot is 151 s, compressed for a short demo)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %v", demo.ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", demo.ErrUsage, fs.Args())
	}
	// The comparison turns Joulie off, which the demo can do only on its
	// own cluster: on another it is off unless asked for (and Validate
	// then says why it cannot be).
	compareSet := false
	fs.Visit(func(f *flag.Flag) { compareSet = compareSet || f.Name == "compare" })
	if o.Kubeconfig != "" && !compareSet {
		o.Compare = false
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	// A signal ends the runs, not the teardown: the report is still
	// written and everything started is stopped. A second signal kills
	// the demo outright (the programs it started die with it).
	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	go func() {
		<-ctx.Done()
		stopSignals()
	}()
	return demo.Run(ctx, o, stdout, stderr)
}
