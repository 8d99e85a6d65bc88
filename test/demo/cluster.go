package demo

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/demo/demoreport"
	"joulie.io/joulie/test/harness"
)

// The chart's object names for release harness.ChartRelease.
const (
	controllerName      = "joulie-controller"
	extenderName        = "joulie-extender"
	schedulerConfigName = "joulie-extender-scheduler-config"
)

// demoValues are the chart values the demo changes, so that a few minutes
// show what a cluster does in hours. They are shown on screen and in the
// demoreport. The extender's address is added at run time. A demo cluster is
// small and runs few performance pods at once, so the queue-aware policy
// starts from fewer performance nodes and adds one per three performance
// pods: the plan then follows the workload's bursts within the run. The
// demo shows caps enforced through both agent paths (daemon and pool), so
// it keeps the seeds' fixed eco caps: its short run rarely loads a CPU
// node past the point where the cap that pays (the chart's default,
// caps.mode pays) would cap it.
var demoValues = []demoreport.Setting{
	{Component: "chart", Name: "controller.caps.mode", Value: "fixed"},
	{Component: "chart", Name: "controller.policy.reconcileInterval", Value: "5s"},
	{Component: "chart", Name: "controller.policy.queueHpBaseFrac", Value: "0.3"},
	{Component: "chart", Name: "controller.policy.queuePerfPerHpNode", Value: "3"},
	{Component: "chart", Name: "controller.policy.minEcoDwell", Value: "20s"},
	{Component: "chart", Name: "controller.policy.drainDwell", Value: "2s"},
	{Component: "chart", Name: "controller.twin.refreshInterval", Value: "10s"},
	{Component: "chart", Name: "controller.leaderElection.leaseDuration", Value: "15s"},
}

// parkingValues turn parking on for the demo's parkable nodes (the pool
// nodes the fleet labels), on the demo's clock: a node empty for 10 s is
// parked, and the controller expects a boot to take the fleet's boot
// time. The reserve keeps the chart's floor of one idle node per family.
func parkingValues(boot time.Duration) []demoreport.Setting {
	return []demoreport.Setting{
		{Component: "chart", Name: "controller.parking.enabled", Value: "true"},
		{Component: "chart", Name: "controller.parking.settleTime", Value: "10s"},
		{Component: "chart", Name: "controller.parking.grace", Value: "3s"},
		{Component: "chart", Name: "controller.parking.bootTime", Value: boot.String()},
		// Three boots before a wake is tried again: a slow boot on a
		// busy machine is not a failed one.
		{Component: "chart", Name: "controller.parking.resumeTimeout", Value: (3*boot + 10*time.Second).String()},
		{Component: "chart", Name: "controller.parking.syncInterval", Value: "2s"},
	}
}

// cluster is the embedded control plane with Joulie's cluster side: the
// chart installed, joulie-controller and joulie-extender as processes
// under the chart's ServiceAccounts, and kube-scheduler following the
// chart's extender configuration.
type cluster struct {
	cp       *harness.ControlPlane
	dir      string
	bins     string
	render   *rendered
	extAddr  string
	settings []demoreport.Setting

	controller, extender *process
	stopScheduler        func()
}

// startCluster starts the control plane and installs the chart as an
// operator would (CRDs, RBAC, the agents' admission policy, the
// scheduler configuration), rendered with the demo's values.
func startCluster(ctx context.Context, dir, bins, helm, chart string, extra []demoreport.Setting) (_ *cluster, err error) {
	c := &cluster{dir: dir, bins: bins}
	if c.extAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	c.cp, err = harness.Start(harness.Options{Dir: filepath.Join(dir, "controlplane")})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = c.stop()
		}
	}()
	values := append(slices.Clone(demoValues), extra...)
	values = append(values, demoreport.Setting{Component: "chart", Name: "extender.scheduler.urlPrefix", Value: "http://" + c.extAddr})
	var args []string
	for _, v := range values {
		args = append(args, "--set-json", v.Name+"="+jsonValue(v.Value))
	}
	c.settings = append(c.settings, values...)
	manifests, err := harness.RenderChart(ctx, helm, chart, harness.ChartRelease, args...)
	if err != nil {
		return nil, err
	}
	if c.render, err = parseRendering(manifests); err != nil {
		return nil, err
	}
	if err := c.cp.InstallChart(ctx, helm, chart, harness.ChartRelease, args...); err != nil {
		return nil, err
	}
	return c, nil
}

// jsonValue is a chart value as --set-json takes it: a number as a
// number (--set would make 0.3 a string, which the chart's schema
// refuses), anything else as a string.
func jsonValue(v string) string {
	if _, err := strconv.ParseFloat(v, 64); err == nil || v == "true" || v == "false" {
		return v
	}
	return strconv.Quote(v)
}

// startJoulie runs joulie-controller, joulie-extender and a
// kube-scheduler that asks the extender.
func (c *cluster) startJoulie(ctx context.Context) error {
	metrics, err := freeAddr()
	if err != nil {
		return err
	}
	c.settings = append(c.settings,
		demoreport.Setting{Component: controllerName, Name: "METRICS_ADDR", Value: metrics},
		demoreport.Setting{Component: extenderName, Name: "EXTENDER_ADDR", Value: c.extAddr})
	if c.controller, err = c.startProgram(ctx, controllerName, "joulie-controller", map[string]string{"METRICS_ADDR": metrics}); err != nil {
		return err
	}
	if c.extender, err = c.startProgram(ctx, extenderName, "joulie-extender", map[string]string{"EXTENDER_ADDR": c.extAddr}); err != nil {
		return err
	}
	if err := waitHealthy(ctx, c.extender, "http://"+c.extAddr+"/healthz"); err != nil {
		return err
	}
	if err := waitHealthy(ctx, c.controller, "http://"+metrics+"/readyz"); err != nil {
		return err
	}
	cfg, err := c.render.schedulerConfig(schedulerConfigName)
	if err != nil {
		return err
	}
	return c.startScheduler(ctx, cfg, "scheduler-joulie")
}

// startProgram runs one of the chart's Deployments as a process: its
// binary from the bin directory, its arguments (the configuration file
// of its ConfigMap) and environment as the chart renders them,
// and its ServiceAccount's token in a kubeconfig.
func (c *cluster) startProgram(ctx context.Context, deployment, binary string, override map[string]string) (*process, error) {
	d := c.render.deployments[deployment]
	if d == nil {
		return nil, fmt.Errorf("the chart's rendering has no Deployment %s", deployment)
	}
	sa := d.Spec.Template.Spec.ServiceAccountName
	cfg, err := c.cp.NewServiceAccountConfig(ctx, d.Namespace, sa)
	if err != nil {
		return nil, fmt.Errorf("identity of ServiceAccount %s/%s: %w", d.Namespace, sa, err)
	}
	kubeconfig := filepath.Join(c.dir, deployment+".kubeconfig")
	if err := harness.WriteKubeconfigFile(kubeconfig, cfg); err != nil {
		return nil, err
	}
	override["KUBECONFIG"] = kubeconfig
	env, err := c.render.env(deployment, deployment+"-demo", override)
	if err != nil {
		return nil, err
	}
	args, err := c.render.args(deployment, c.dir)
	if err != nil {
		return nil, err
	}
	c.settings = append(c.settings, demoreport.Setting{Component: deployment, Name: "identity", Value: harness.ServiceAccountUser(d.Namespace, sa)})
	return startProcess(deployment, filepath.Join(c.bins, binary), args, env, filepath.Join(c.dir, deployment+".log"))
}

// waitHealthy waits until url answers 200, failing early if the program
// exits.
func waitHealthy(ctx context.Context, p *process, url string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if done, werr := p.exited(); done {
			return fmt.Errorf("%s exited (%v) before it was ready:\n%s", p.name, werr, tailLog(p.log, 20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready at %s within 60 s (last error %v); its log is %s", p.name, url, err, p.log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *cluster) startScheduler(ctx context.Context, cfg *schedulerconfigv1.KubeSchedulerConfiguration, name string) error {
	stop, err := c.cp.RunScheduler(context.WithoutCancel(ctx), cfg, filepath.Join(c.dir, name))
	if err != nil {
		return err
	}
	c.stopScheduler = stop
	return nil
}

// stopJoulie stops the scheduler, the extender and the controller.
func (c *cluster) stopJoulie() error {
	if c.stopScheduler != nil {
		c.stopScheduler()
		c.stopScheduler = nil
	}
	var errs []error
	for _, p := range []*process{c.extender, c.controller} {
		if err := p.stop(20 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	c.extender, c.controller = nil, nil
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// withoutJoulie turns the cluster into the comparison's: no controller,
// no extender, the default scheduler, and every node's profile set to
// performance with no caps, so the agents lift what Joulie applied.
func (c *cluster) withoutJoulie(ctx context.Context) error {
	if err := c.stopJoulie(); err != nil {
		return err
	}
	jc, err := versioned.NewForConfig(c.cp.AdminConfig())
	if err != nil {
		return err
	}
	kc, err := kubernetes.NewForConfig(c.cp.AdminConfig())
	if err != nil {
		return err
	}
	profiles, err := jc.JoulieV1alpha1().NodePowerProfiles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list NodePowerProfiles: %w", err)
	}
	full := 100.0
	for _, p := range profiles.Items {
		p.Spec = joulie.NodePowerProfileSpec{
			Profile: joulie.ProfilePerformance,
			CPU:     &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: &full},
			GPU:     &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: &full}},
		}
		if _, err := jc.JoulieV1alpha1().NodePowerProfiles().Update(ctx, &p, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("lift the caps of node %s: %w", p.Name, err)
		}
	}
	nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	for _, n := range nodes.Items {
		parked := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == joulie.TaintParked })
		if _, ok := n.Labels[joulie.LabelPowerProfile]; !ok && !parked {
			continue
		}
		// The parked taint goes with the labels: the comparison runs on
		// every node, switched on again (the fleet's WakeAll).
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == joulie.TaintParked })
		delete(n.Labels, joulie.LabelPowerProfile)
		delete(n.Labels, joulie.LabelDraining)
		if _, err := kc.CoreV1().Nodes().Update(ctx, &n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("remove Joulie's labels and parked taint from node %s: %w", n.Name, err)
		}
	}
	return c.startScheduler(ctx, nil, "scheduler-baseline")
}

// adminConfig is the identity the demo itself and the fleet use.
func (c *cluster) adminConfig() *rest.Config { return c.cp.AdminConfig() }

// agentConfig is the identity of the agent on node: joulie:agent:<node>
// in joulie:agents, which the chart's RBAC and admission policy govern.
func (c *cluster) agentConfig(node string) (*rest.Config, error) {
	return c.cp.NewUserConfig(harness.AgentUser(node), harness.AgentGroup)
}

// kubeletConfig is node's kubelet identity, which its agent reads the
// node's pods with (podsKubeconfig), as on a host.
func (c *cluster) kubeletConfig(node string) (*rest.Config, error) {
	return c.cp.NewUserConfig(harness.KubeletUser(node), harness.KubeletGroup)
}

func (c *cluster) stop() error {
	err := c.stopJoulie()
	if c.cp != nil {
		c.cp.Stop()
	}
	return err
}
