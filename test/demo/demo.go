package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"joulie.io/joulie/test/demo/demoreport"
	"joulie.io/joulie/test/demo/fleet"
	"joulie.io/joulie/test/energy/workload"
	"joulie.io/joulie/test/harness"
)

// Namespaces of the workload's pods, one per run.
const (
	namespaceJoulie   = "joulie-demo"
	namespaceBaseline = "joulie-demo-baseline"
)

// demo is one invocation: the cluster, the fleet, the runs, the demoreport.
type demo struct {
	opts  *Options
	work  string
	out   io.Writer
	view  *liveView
	began time.Time

	cluster   *cluster // nil with --kubeconfig
	admin     *rest.Config
	kc        kubernetes.Interface
	fleet     *fleet.Fleet
	nodes     []demoNode
	jobs      []workload.Job
	arrivals  time.Duration
	settings  []demoreport.Setting
	reportDir string
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, "[%5.1fs] "+format+"\n", append([]any{time.Since(d.began).Seconds()}, args...)...)
}

func (d *demo) run(ctx context.Context) (err error) {
	o := d.opts
	bins, err := binDir(o.BinDir)
	if err != nil {
		return err
	}
	for _, b := range []string{"joulie-agentd", "joulie-controller", "joulie-extender"} {
		if _, err := os.Stat(filepath.Join(bins, b)); err != nil {
			return fmt.Errorf("%w: %s is not in %s: run `make build` first (make demo does), or point --bin-dir at the binaries", ErrUsage, b, bins)
		}
	}
	// Setup and teardown must not be cut short by Ctrl-C: only the runs are.
	bg := context.WithoutCancel(ctx)
	setupCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	clusterName := "embedded"
	agentConfig := func(string) (*rest.Config, error) { return rest.CopyConfig(d.admin), nil }
	kubeletConfig := agentConfig
	if o.Kubeconfig == "" {
		chart, helm, err := chartAndHelm(o)
		if err != nil {
			return err
		}
		d.say("starting etcd, kube-apiserver 1.37 and installing the chart %s (CRDs, RBAC, admission policy)", chart)
		var extra []demoreport.Setting
		if o.Parking {
			extra = parkingValues(o.BootTime)
		}
		if d.cluster, err = startCluster(setupCtx, d.work, bins, helm, chart, extra); err != nil {
			return err
		}
		defer func() {
			if e := d.cluster.stop(); e != nil && err == nil {
				err = e
			}
		}()
		d.admin = d.cluster.adminConfig()
		agentConfig, kubeletConfig = d.cluster.agentConfig, d.cluster.kubeletConfig
	} else {
		if d.admin, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig); err != nil {
			return fmt.Errorf("%w: --kubeconfig=%s: %v", ErrUsage, o.Kubeconfig, err)
		}
		clusterName = d.admin.Host
		d.say("using the cluster at %s: Joulie must already run there (see test/README.md)", d.admin.Host)
	}
	if d.kc, err = kubernetes.NewForConfig(d.admin); err != nil {
		return err
	}

	if d.cluster != nil {
		d.say("starting joulie-controller and joulie-extender under the chart's ServiceAccounts, and kube-scheduler with the chart's extender configuration")
		if err := d.cluster.startJoulie(setupCtx); err != nil {
			return err
		}
	}

	d.say("starting %d simulated nodes (%d with their own joulie-agentd on sysfs and a fake NVML, the rest through one pool-mode agent)", o.Nodes, o.DaemonNodes)
	d.fleet, err = fleet.Start(bg, fleet.Config{
		Nodes: o.Nodes, DaemonNodes: o.DaemonNodes,
		Kube: d.admin, AgentConfig: agentConfig, KubeletConfig: kubeletConfig,
		AgentBinary: filepath.Join(bins, "joulie-agentd"),
		Dir:         filepath.Join(d.work, "fleet"),
		Tick:        o.Step,
		Log:         io.Discard,
		// Parkable only where Joulie's controller runs here: on a
		// cluster of the user's, parking is the operator's choice.
		ParkablePool: o.Parking && o.Kubeconfig == "",
		BootTime:     o.BootTime,
		BMCNodes:     bmcNodes(o),
	})
	if err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		if e := d.fleet.Stop(stopCtx); e != nil && err == nil {
			err = fmt.Errorf("stop the fleet: %w", e)
		}
	}()

	snap := d.fleet.Snapshot()
	var names []string
	for _, n := range snap.Nodes {
		names = append(names, n.Name)
	}
	if d.nodes, err = clusterNodes(setupCtx, d.kc, names); err != nil {
		return err
	}
	var level float64
	if d.jobs, d.arrivals, level, err = demoJobs(o.Seed, d.nodes, o.Duration, o.MaxPods); err != nil {
		return err
	}
	d.settings = append(d.settings, demoreport.Setting{Component: "joulie-demo", Name: "--duration", Value: o.Duration.String()},
		demoreport.Setting{Component: "joulie-demo", Name: "load level", Value: fmt.Sprintf("%.2f (requested share of CPUs and GPUs; the benchmark's headline is %.1f)", level, workload.DefaultLoadLevel)},
		demoreport.Setting{Component: "joulie-demo", Name: "--step", Value: o.Step.String()},
		demoreport.Setting{Component: "joulie-demo", Name: "--boot-time", Value: o.BootTime.String()})
	if d.cluster != nil {
		d.settings = append(d.cluster.settings, d.settings...)
	}
	d.say("up in %s; %d pods will arrive over %s", time.Since(d.began).Round(100*time.Millisecond), len(d.jobs), d.arrivals)
	for _, s := range d.settings {
		d.view.header = append(d.view.header, fmt.Sprintf("  %s %s=%s", s.Component, s.Name, s.Value))
	}

	rep := &demoreport.Report{
		Version: demoreport.Version, Started: d.began.UTC(), Cluster: clusterName, Settings: d.settings,
		Workload: demoreport.Workload{Seed: o.Seed, Jobs: len(d.jobs), Hash: workload.Hash(d.jobs), ArrivalsSeconds: d.arrivals.Seconds()},
	}
	// Whatever happens from here on, the runs recorded so far are written.
	defer func() {
		if len(rep.Runs) == 0 {
			return
		}
		if e := rep.Write(o.Out); e != nil {
			err = errors.Join(err, e)
			return
		}
		d.reportDir = o.Out
		for _, r := range rep.Runs {
			if r.Name != demoreport.RunJoulie {
				continue
			}
			for _, e := range r.Check(demoreport.Expect{CappedPaths: d.cappedPaths()}) {
				fmt.Fprintf(d.out, "check: %v\n", e)
			}
		}
	}()

	if err := d.waitSteady(ctx); err != nil {
		return err
	}
	if o.Parking && d.cluster != nil {
		d.waitParked(ctx)
	}
	r, err := d.runOnce(ctx, demoreport.RunJoulie, namespaceJoulie)
	if r.Name != "" { // a run that started is reported even if it failed
		rep.Runs = append(rep.Runs, r)
		rep.KubectlJoulieStatus = d.kubectlJoulieStatus(bg, bins)
	}
	if err != nil {
		return err
	}
	if o.Compare && ctx.Err() == nil {
		d.say("run %s done; turning Joulie off (controller, extender and caps) for the comparison", demoreport.RunJoulie)
		// Its own deadline: setupCtx's began with the demo, a run ago.
		offCtx, cancel := context.WithTimeout(bg, 2*time.Minute)
		defer cancel()
		if err := d.cluster.withoutJoulie(offCtx); err != nil {
			return err
		}
		// Every node runs the comparison: the parked ones are switched
		// on, as an operator would without Joulie.
		d.fleet.WakeAll()
		if err := d.waitUncapped(ctx); err != nil {
			return err
		}
		r, err := d.runOnce(ctx, demoreport.RunBaseline, namespaceBaseline)
		if r.Name != "" {
			rep.Runs = append(rep.Runs, r)
		}
		if err != nil {
			return err
		}
		if ctx.Err() == nil {
			c := demoreport.Compare(rep.Runs[0], rep.Runs[1])
			rep.Comparison = &c
			fmt.Fprintf(d.out, "\n%s", c.Text())
		}
	}
	if o.Kubeconfig != "" {
		for _, ns := range []string{namespaceJoulie} {
			if err := d.kc.CoreV1().Namespaces().Delete(bg, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("remove namespace %s: %w", ns, err)
			}
		}
	}
	return nil
}

// bmcNodes is how many pool nodes get a BMC: none without parking or on
// a cluster of the user's (the controller there could not reach a BMC on
// this machine's loopback), and never more than there are pool nodes.
func bmcNodes(o *Options) int {
	if !o.Parking || o.Kubeconfig != "" {
		return 0
	}
	return max(0, min(o.BMCNodes, o.Nodes-o.DaemonNodes))
}

// cappedPaths are the paths the fleet has nodes on, each of which must
// see an eco node capped.
func (d *demo) cappedPaths() []string {
	var paths []string
	for _, n := range d.fleet.Snapshot().Nodes {
		if !slices.Contains(paths, n.Path) {
			paths = append(paths, n.Path)
		}
	}
	slices.Sort(paths)
	return paths
}

func chartAndHelm(o *Options) (chart, helm string, err error) {
	chart = o.Chart
	if chart == "" {
		chart = filepath.Join("packaging", "helm", "joulie")
	}
	if _, err := os.Stat(filepath.Join(chart, "Chart.yaml")); err != nil {
		return "", "", fmt.Errorf("%w: no Helm chart at %s: run from the repository's root or give --chart", ErrUsage, chart)
	}
	helm = o.Helm
	if helm == "" {
		if helm, err = harness.PinnedHelm(filepath.Join(chart, "..", "..", "..")); err != nil {
			return "", "", err
		}
	}
	return chart, helm, nil
}

// ensureNamespace creates a run's namespace (and, on the embedded
// cluster, its default ServiceAccount, which no controller-manager makes).
func (d *demo) ensureNamespace(ctx context.Context, ns string) error {
	if d.cluster != nil {
		return d.cluster.cp.EnsureNamespace(ctx, ns)
	}
	_, err := d.kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	// A cluster's controller-manager makes the default ServiceAccount
	// soon; one without it never does, and pods are refused until then.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := d.kc.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the default ServiceAccount of namespace %s: %w", ns, err)
	}
	return nil
}

// runOnce submits the workload into namespace ns and records the fleet
// until every pod is done, the duration is over or ctx ends.
func (d *demo) runOnce(ctx context.Context, name, ns string) (demoreport.Run, error) {
	if err := d.ensureNamespace(context.WithoutCancel(ctx), ns); err != nil {
		return demoreport.Run{}, err
	}
	// The run starts at the fleet's clock, so the first sample is at 0.
	start := d.fleet.Snapshot().Time
	if start.IsZero() {
		start = time.Now()
	}
	sub := &submitter{kc: d.kc, namespace: ns, jobs: d.jobs, nodes: d.nodes}
	subCtx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	go sub.run(subCtx, start)

	rec := demoreport.NewRecorder(name, start)
	tick := time.NewTicker(d.opts.Refresh)
	defer tick.Stop()
	var snap fleet.Snapshot
	var firstEnergy float64
	for i := 0; ; i++ {
		snap = d.fleet.Snapshot()
		if i == 0 {
			firstEnergy = snap.EnergyJ
		}
		submitted := int(sub.submitted.Load())
		obs := observation(snap, ns, submitted)
		rec.Observe(obs)
		elapsed := time.Since(start)
		d.view.draw(frame{Run: name, Elapsed: elapsed, Duration: d.opts.Duration, Submitted: submitted,
			Jobs: len(d.jobs), Obs: obs, EnergyJ: obs.EnergyJ - firstEnergy})
		if err := sub.err(); err != nil {
			return rec.Finish(podRecords(snap, ns, d.jobs, start, sub)), err
		}
		if submitted == len(d.jobs) && obs.Done == len(d.jobs) {
			d.say("run %s: all %d pods done after %s", name, len(d.jobs), elapsed.Round(time.Second))
			break
		}
		if elapsed >= d.opts.Duration {
			d.say("run %s: %s is over, %d of %d pods done", name, d.opts.Duration, obs.Done, len(d.jobs))
			break
		}
		select {
		case <-ctx.Done():
			d.say("run %s: interrupted after %s, writing the report", name, elapsed.Round(time.Second))
			return rec.Finish(podRecords(snap, ns, d.jobs, start, sub)), nil
		case <-tick.C:
		}
	}
	return rec.Finish(podRecords(snap, ns, d.jobs, start, sub)), nil
}

// steadyFor is how long the controller's plan must hold before the
// workload starts: longer than its reconcile interval (5s).
const steadyFor = 8 * time.Second

// waitSteady waits until the controller has planned every node and the
// plan has held for steadyFor, as a cluster is before work arrives. Its
// first plans come while the agents are still publishing the hardware,
// and a pod placed in that minute meets a plan about to change.
func (d *demo) waitSteady(ctx context.Context) error {
	d.say("waiting for the controller's plan to settle (every node labelled, unchanged for %s)", steadyFor)
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	var since time.Time
	for {
		var plan strings.Builder
		labelled := true
		for _, n := range d.fleet.Snapshot().Nodes {
			labelled = labelled && n.Profile != ""
			fmt.Fprintf(&plan, "%s=%s/%v ", n.Name, n.Profile, n.Draining)
		}
		if p := plan.String(); p != last || !labelled {
			last, since = p, time.Now()
		} else if time.Since(since) >= steadyFor {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the controller's plan did not settle within 2 minutes (last: %s); its log is %s", last, d.controllerLog())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// waitParked lets the idle cluster park what it parks before work
// arrives, as a cluster idle overnight has by morning: until some node
// is switched off and no park is in flight for parkedFor, or parkLimit
// has passed (the reserve may keep every node awake; the run then starts
// with none parked, and the report shows it).
func (d *demo) waitParked(ctx context.Context) {
	const parkedFor, parkLimit = 3 * time.Second, 45 * time.Second
	d.say("waiting for the idle cluster to park its idle nodes (nodes empty for the settle time, beyond each family's reserve)")
	deadline := time.Now().Add(parkLimit)
	var quiet time.Time
	for time.Now().Before(deadline) {
		off, moving := 0, 0
		for _, n := range d.fleet.Snapshot().Nodes {
			switch {
			case n.PowerState == demoreport.StateParked && n.Host == fleet.HostOff:
				off++
			case n.PowerState != "" && n.PowerState != demoreport.StateAwake, n.Host != fleet.HostOn:
				moving++
			}
		}
		switch {
		case off == 0 || moving > 0:
			quiet = time.Time{}
		case quiet.IsZero():
			quiet = time.Now()
		case time.Since(quiet) >= parkedFor:
			d.say("%d nodes parked before the workload", off)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	d.say("no park settled within %s; the workload starts now", parkLimit)
}

func (d *demo) controllerLog() string {
	if d.cluster == nil || d.cluster.controller == nil {
		return "in the cluster"
	}
	return d.cluster.controller.log
}

// waitUncapped waits until every agent has lifted its caps and every
// node is on.
func (d *demo) waitUncapped(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		capped := 0
		for _, n := range d.fleet.Snapshot().Nodes {
			if n.CPUCapPct < 100 || n.GPUCapPct < 100 || n.Host != fleet.HostOn {
				capped++
			}
		}
		if capped == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d nodes still capped or not on 2 minutes after Joulie was turned off", capped)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d.opts.Refresh):
		}
	}
}

// observation is a fleet snapshot as the report records it, with the
// pods of namespace ns counted: pending from what was submitted.
func observation(s fleet.Snapshot, ns string, submitted int) demoreport.Observation {
	o := demoreport.Observation{Time: s.Time, PowerW: s.PowerW, EnergyJ: s.EnergyJ, CapsSavedJ: s.CapsSavedJ, ParkingSavedJ: s.ParkingSavedJ}
	for _, n := range s.Nodes {
		o.Nodes = append(o.Nodes, demoreport.NodeState{
			Name: n.Name, Family: n.Family, Path: n.Path, Profile: n.Profile, Draining: n.Draining,
			CPUCapPct: n.CPUCapPct, GPUCapPct: n.GPUCapPct, Watts: n.Watts,
			RunningPerf: n.RunningPerf, RunningStd: n.RunningStd,
			PowerState: n.PowerState, Host: n.Host, BootPct: n.BootPct, WokenBy: n.WokenBy,
		})
	}
	started := 0
	for _, p := range s.Pods {
		if p.Namespace != ns || p.Started.IsZero() {
			continue
		}
		started++
		if p.Finished.IsZero() {
			o.Running++
		} else {
			o.Done++
		}
	}
	o.Pending = max(0, submitted-started)
	return o
}

// podRecords are the run's pods as the report keeps them: every job,
// with what the fleet saw of its pod.
func podRecords(s fleet.Snapshot, ns string, jobs []workload.Job, start time.Time, sub *submitter) []demoreport.Pod {
	seen := map[string]fleet.PodRecord{}
	for _, p := range s.Pods {
		if p.Namespace == ns {
			seen[p.Name] = p
		}
	}
	rel := func(t time.Time) float64 {
		if t.IsZero() {
			return -1
		}
		return t.Sub(start).Seconds()
	}
	var pods []demoreport.Pod
	for _, j := range jobs {
		name := podName(j)
		p := demoreport.Pod{Name: name, Class: string(j.Class), Boundness: string(j.Boundness), GPUs: j.GPUs,
			WorkSeconds: j.Work.Seconds(), Created: rel(sub.createdAt(name)), Started: -1, Finished: -1, Phase: "NotSubmitted"}
		if p.Created >= 0 {
			p.Phase = "Pending"
		}
		if r, ok := seen[name]; ok {
			p.Node, p.ProfileAtStart, p.Phase = r.Node, r.ProfileAtStart, r.Phase
			p.Started, p.Finished = rel(r.Started), rel(r.Finished)
		}
		pods = append(pods, p)
	}
	return pods
}

// settleStatus is how long the final status waits for the agents to
// apply the controller's last change: a few of their sync intervals.
const settleStatus = 30 * time.Second

// agentBehindWarning is what kubectl joulie status warns of a node whose
// agent has not applied its profile's generation.
const agentBehindWarning = "the agent has not applied generation"

// kubectlJoulieStatus runs the kubectl plugin's status against the
// cluster, as an operator would at the end of the run, shows it and
// returns it for the report; a plugin that is missing or fails is said
// and leaves the report without it.
func (d *demo) kubectlJoulieStatus(ctx context.Context, bins string) string {
	bin := filepath.Join(bins, "kubectl-joulie")
	if _, err := os.Stat(bin); err != nil {
		d.say("kubectl joulie: %s is not there (make build builds it); its status is left out of the report", bin)
		return ""
	}
	kubeconfig := filepath.Join(d.work, "kubectl-joulie.kubeconfig")
	if err := harness.WriteKubeconfigFile(kubeconfig, d.admin); err != nil {
		d.say("kubectl joulie: %v", err)
		return ""
	}
	// The controller may have changed a profile in the run's last
	// seconds (a node parked once the work was done); the status is
	// taken once every agent has answered the profile it was last given,
	// as an operator would look after the cluster settles, or says the
	// change is in flight.
	deadline := time.Now().Add(settleStatus)
	var out, errOut bytes.Buffer
	for {
		out.Reset()
		errOut.Reset()
		runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cmd := exec.CommandContext(runCtx, bin, "status", "--kubeconfig", kubeconfig)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		cancel()
		if err != nil {
			d.say("kubectl joulie status: %v: %s", err, strings.TrimSpace(errOut.String()))
			return ""
		}
		if !strings.Contains(out.String()+errOut.String(), agentBehindWarning) {
			break
		}
		if time.Now().After(deadline) {
			d.say("kubectl joulie status: an agent has still not applied the profile the controller last wrote, %s after the run; the status below shows that change in flight", settleStatus)
			break
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(time.Second):
		}
	}
	text := out.String() + errOut.String()
	d.say("kubectl joulie status (the plugin, against this cluster):\n%s", strings.TrimRight(text, "\n"))
	return text
}
