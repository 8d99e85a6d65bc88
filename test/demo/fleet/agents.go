package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"joulie.io/joulie/test/harness"
)

// agent is one joulie-agentd process.
type agent struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// startDaemon runs a daemon node's own agent in Kubernetes mode, as its
// node's identity, on its fixture tree and fake NVML.
func (f *Fleet) startDaemon(ctx context.Context, node, nvmlLib string) (*agent, error) {
	rc, err := f.cfg.AgentConfig(node)
	if err != nil {
		return nil, fmt.Errorf("fleet: identity of the agent of %s: %w", node, err)
	}
	base := filepath.Join(f.cfg.Dir, "hosts", node)
	kubeconfig := filepath.Join(base, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, rc); err != nil {
		return nil, err
	}
	args := f.commonArgs(node, kubeconfig)
	pods := "none"
	if f.cfg.KubeletConfig != nil {
		krc, err := f.cfg.KubeletConfig(node)
		if err != nil {
			return nil, fmt.Errorf("fleet: kubelet identity of %s: %w", node, err)
		}
		pods = filepath.Join(base, "kubelet.kubeconfig")
		if err := writeKubeconfig(pods, krc); err != nil {
			return nil, err
		}
	}
	args = append(args, "--pods-kubeconfig", pods)
	// This agent runs on this machine's host path, where a park would
	// ask logind to power the machine off: it may never.
	args = append(args, "--host-root", filepath.Join(base, "root"), "--nvml-library-path", nvmlLib,
		"--parking-allow-power-off=false")
	return f.run(node, args, "FAKE_NVML_DIR="+filepath.Join(base, "nvml"))
}

// PoolServiceAccount is the identity the pool agent runs as, in
// namespace PoolNamespace; Start creates it with a ClusterRole of that
// name granting the agent's calls on every node's objects (the chart's
// agent role is for one node each) and Stop deletes them.
const (
	PoolNamespace      = "joulie-system"
	PoolServiceAccount = "joulie-demo-pool"
)

// startPool runs the one pool-mode agent for every pool node of the
// fleet, with the HTTP backend at url.
func (f *Fleet) startPool(ctx context.Context, url string) (*agent, error) {
	rc, err := f.poolIdentity(ctx)
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(f.cfg.Dir, "run", "pool.kubeconfig")
	if err := writeKubeconfig(kubeconfig, rc); err != nil {
		return nil, err
	}
	args := f.commonArgs("pool", kubeconfig)
	args = append(args, "--pool-enabled",
		"--pool-node-selector", fmt.Sprintf("%s=%s,%s=%s", LabelFleet, f.cfg.NodePrefix, LabelPath, PathPool),
		"--backend", "http", "--http-telemetry-url", url, "--http-control-url", url,
		// The host's consent (false by default): a pool park switches
		// off a simulated node through the contract, never this
		// machine, so a parkable pool consents.
		"--parking-allow-power-off="+strconv.FormatBool(f.cfg.ParkablePool))
	return f.run("pool", args)
}

// writeKubeconfig writes rc for an agent's --kubeconfig. Certificates
// given as files (a kubeconfig's certificate-authority path, say) are
// read in first, since the file holds them inline.
func writeKubeconfig(path string, rc *rest.Config) error {
	rc = rest.CopyConfig(rc)
	if err := rest.LoadTLSFiles(rc); err != nil {
		return fmt.Errorf("fleet: kubeconfig %s: %w", path, err)
	}
	if err := harness.WriteKubeconfigFile(path, rc); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	return nil
}

func (f *Fleet) commonArgs(name, kubeconfig string) []string {
	state := filepath.Join(f.cfg.Dir, "state", name)
	return []string{"--config", "", "--node-name", name, "--kubeconfig", kubeconfig,
		"--state-dir", state, "--socket", f.socket(name),
		"--metrics-address", "", "--reconcile-interval", f.cfg.AgentInterval.String(),
		"--nvml-library-path", "none", "--amdsmi-library-path", "none",
		// Magic packets go to the fleet's listener, not the LAN.
		"--parking-wake-address", f.WakeAddress()}
}

// socket is the agent's local socket path. sun_path holds 108 bytes, so
// a long Dir gets a short directory of its own, removed by Stop.
func (f *Fleet) socket(name string) string {
	p := filepath.Join(f.cfg.Dir, "run", name+".sock")
	if len(p) < 100 {
		return p
	}
	if f.sockDir == "" {
		d, err := os.MkdirTemp("", "jfleet")
		if err != nil {
			return p // the agent will say what is wrong with it
		}
		f.sockDir = d
	}
	return filepath.Join(f.sockDir, name+".sock")
}

// run starts joulie-agentd with args (later flags win over earlier ones)
// and its output in Dir/logs/<name>.log.
func (f *Fleet) run(name string, args []string, env ...string) (*agent, error) {
	logPath := filepath.Join(f.cfg.Dir, "logs", "agentd-"+name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(f.cfg.AgentBinary, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("fleet: start joulie-agentd for %s: %w", name, err)
	}
	a := &agent{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		close(a.done)
	}()
	f.log.Info("agent started", "agent", name, "pid", cmd.Process.Pid, "log", logPath)
	return a, nil
}

// terminate sends SIGTERM, on which the agent restores what it changed.
func (a *agent) terminate() {
	select {
	case <-a.done:
	default:
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
	}
}

// wait waits for the agent to end after terminate; when ctx ends first
// it kills it. An agent that had died before Stop is an error.
func (a *agent) wait(ctx context.Context) error {
	select {
	case <-a.done:
		if st := a.cmd.ProcessState; !st.Success() {
			return fmt.Errorf("fleet: joulie-agentd for %s ended with %v; see %s", a.name, st, a.log)
		}
		return nil
	case <-ctx.Done():
		_ = a.cmd.Process.Kill()
		<-a.done
		return fmt.Errorf("fleet: joulie-agentd for %s did not stop on SIGTERM in time and was killed; see %s", a.name, a.log)
	}
}

// poolRules are the agent's calls on every node's objects, listing nodes,
// which the pool does to find its members, and following the pods bound
// to them for the eco guard: the chart's pool role's rules
// (TestPoolRulesAreTheCharts).
var poolRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
	{APIGroups: []string{"joulie.io"}, Resources: []string{"nodehardwares"}, Verbs: []string{"get", "create"}},
	{APIGroups: []string{"joulie.io"}, Resources: []string{"nodehardwares/status", "nodepowerprofiles/status"}, Verbs: []string{"update"}},
	{APIGroups: []string{"joulie.io"}, Resources: []string{"nodepowerprofiles"}, Verbs: []string{"get", "list", "watch"}},
}

// poolIdentity creates the pool's ServiceAccount, its ClusterRole and
// binding, and returns a client configuration with a bound token of it.
func (f *Fleet) poolIdentity(ctx context.Context) (*rest.Config, error) {
	core := f.kube.CoreV1()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: PoolNamespace}}
	if _, err := core.Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("fleet: create namespace %s for the pool agent: %w", PoolNamespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: PoolServiceAccount, Namespace: PoolNamespace}}
	if _, err := core.ServiceAccounts(PoolNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("fleet: create ServiceAccount %s/%s for the pool agent: %w", PoolNamespace, PoolServiceAccount, err)
	}
	f.poolCreated = true
	rbac := f.kube.RbacV1()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: PoolServiceAccount}, Rules: poolRules}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("fleet: create ClusterRole %s for the pool agent: %w", PoolServiceAccount, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: PoolServiceAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: PoolServiceAccount},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: PoolServiceAccount, Namespace: PoolNamespace}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("fleet: create ClusterRoleBinding %s for the pool agent: %w", PoolServiceAccount, err)
	}
	expiry := int64((24 * time.Hour).Seconds())
	tr, err := core.ServiceAccounts(PoolNamespace).CreateToken(ctx, PoolServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("fleet: request a token of ServiceAccount %s/%s for the pool agent: %w", PoolNamespace, PoolServiceAccount, err)
	}
	rc := rest.AnonymousClientConfig(f.cfg.Kube)
	rc.BearerToken = tr.Status.Token
	return rc, nil
}

// deletePoolIdentity removes what poolIdentity created (the namespace
// stays: the chart's objects may live there).
func (f *Fleet) deletePoolIdentity(ctx context.Context) error {
	if !f.poolCreated {
		return nil
	}
	var errs []error
	keep := func(err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	keep(f.kube.RbacV1().ClusterRoleBindings().Delete(ctx, PoolServiceAccount, metav1.DeleteOptions{}))
	keep(f.kube.RbacV1().ClusterRoles().Delete(ctx, PoolServiceAccount, metav1.DeleteOptions{}))
	keep(f.kube.CoreV1().ServiceAccounts(PoolNamespace).Delete(ctx, PoolServiceAccount, metav1.DeleteOptions{}))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fleet: delete the pool agent's identity: %w", err)
	}
	return nil
}
