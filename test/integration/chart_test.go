package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedulervalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"sigs.k8s.io/yaml"

	"joulie.io/joulie/test/harness"
)

// The suite installs the Helm chart the way an operator would, and every
// test runs under the identities and permissions it creates.
const (
	chartDir = "../../packaging/helm/joulie"
	// crdDir holds the CRDs the chart installs; the tests check those,
	// not copies.
	crdDir = chartDir + "/crds"
	// chartRelease installed in harness.ControllerNamespace gives the
	// object names below; the controller's ServiceAccount is then
	// harness.ControllerServiceAccount.
	chartRelease = harness.ChartRelease

	chartControllerRole     = "joulie-controller"                 // ClusterRole
	chartLeaderElectionRole = "joulie-controller-leader-election" // Role in the release namespace
	chartNodeLeaseRole      = "joulie-controller-node-leases"     // Role in kube-node-lease
	chartBMCRole            = "joulie-controller-bmc-credentials" // Role in chartBMCNamespace
	// chartBMCNamespace holds the BMC Secrets (the chart's
	// controller.parking.ipmi.secretNamespace, created by the chart).
	chartBMCNamespace    = "joulie-bmc"
	chartExtenderAccount = "joulie-extender"                  // ServiceAccount
	chartExtenderService = "joulie-extender"                  // Service
	chartSchedulerConfig = "joulie-extender-scheduler-config" // ConfigMap
)

// installChart renders the chart with the pinned helm and applies it to
// the control plane: the CRDs first (waiting until they are served), then
// a server-side dry run of everything else, then the real thing. A second
// rendering, with the extender's TLS on, goes through the dry run only. The
// ServiceMonitor stays off: the harness has no Prometheus Operator CRDs
// (make test-helm lints and renders it).
func installChart(ctx context.Context, c *harness.ControlPlane) error {
	helm, err := harness.PinnedHelm("../..")
	if err != nil {
		return err
	}
	installed, err := harness.RenderChart(ctx, helm, chartDir, chartRelease, "--set", "grafanaDashboard.enabled=true", "--set", "agents.pool.enabled=true", "--set", "viewer.enabled=true")
	if err != nil {
		return err
	}
	withTLS, err := harness.RenderChart(ctx, helm, chartDir, chartRelease, "--set", "extender.tls.secretName=joulie-extender-tls")
	if err != nil {
		return err
	}
	if err := c.ApplyCRDs(ctx, crdDir); err != nil {
		return fmt.Errorf("install the chart's CRDs: %w", err)
	}
	if err := c.ApplyDryRun(ctx, withTLS); err != nil {
		return fmt.Errorf("the chart rendered with TLS, dry run: %w", err)
	}
	if err := c.ApplyDryRun(ctx, installed); err != nil {
		return fmt.Errorf("the chart, dry run: %w", err)
	}
	if err := c.Apply(ctx, installed); err != nil {
		return fmt.Errorf("install the chart: %w", err)
	}
	return nil
}

// chartSchedulerExtender is the extender block of the
// KubeSchedulerConfiguration the chart installs (see
// chartSchedulerConfiguration).
func chartSchedulerExtender(t testing.TB) schedulerconfigv1.Extender {
	t.Helper()
	cfg := chartSchedulerConfiguration(t)
	if len(cfg.Extenders) != 1 {
		t.Fatalf("the chart's configuration has %d extenders, want 1", len(cfg.Extenders))
	}
	return cfg.Extenders[0]
}

// chartSchedulerConfiguration is the KubeSchedulerConfiguration the chart
// installs, after checking that it is one kube-scheduler itself accepts:
// strictly decoded, defaulted and validated by the scheduler's own code.
func chartSchedulerConfiguration(t testing.TB) *schedulerconfigv1.KubeSchedulerConfiguration {
	t.Helper()
	cm, err := cp.AdminClient(t).CoreV1().ConfigMaps(harness.ControllerNamespace).Get(t.Context(), chartSchedulerConfig, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's scheduler configuration: %v", err)
	}
	data := []byte(cm.Data["kube-scheduler-config.yaml"])
	obj, _, err := schedulerscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("kube-scheduler cannot decode the chart's configuration: %v\n%s", err, data)
	}
	internal, ok := obj.(*schedulerconfig.KubeSchedulerConfiguration)
	if !ok {
		t.Fatalf("the chart's configuration decodes to %T", obj)
	}
	if err := schedulervalidation.ValidateKubeSchedulerConfiguration(internal); err != nil {
		t.Fatalf("kube-scheduler refuses the chart's configuration: %v", err)
	}
	var cfg schedulerconfigv1.KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

// bindChartControllerRoles grants ServiceAccount joulie-system/<sa> the
// chart's controller ClusterRole and its Roles (leader election, node
// Leases, BMC Secrets), as the chart's own bindings do for its ServiceAccount. The chart binds only that one;
// the failover test runs its replicas under distinct accounts so the audit
// log tells them apart, and those get exactly the chart's permissions.
func bindChartControllerRoles(t *testing.T, sa string) {
	t.Helper()
	name := "test-" + sa
	subject := fmt.Sprintf("subjects:\n- {kind: ServiceAccount, namespace: %s, name: %s}\n", harness.ControllerNamespace, sa)
	manifest := fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: %s}\n"+
		"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %s}\n%s", name, chartControllerRole, subject)
	// The chart's Roles, each in its namespace.
	roles := []struct{ namespace, role string }{
		{harness.ControllerNamespace, chartLeaderElectionRole},
		{"kube-node-lease", chartNodeLeaseRole},
		{chartBMCNamespace, chartBMCRole},
	}
	for _, r := range roles {
		manifest += fmt.Sprintf("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: %s, namespace: %s}\n"+
			"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: %s}\n%s", name, r.namespace, r.role, subject)
	}
	if err := cp.Apply(t.Context(), []byte(manifest)); err != nil {
		t.Fatalf("bind the chart's controller roles to %s: %v", sa, err)
	}
	rbac := cp.AdminClient(t).RbacV1()
	t.Cleanup(func() {
		ctx := context.Background()
		errs := []error{rbac.ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})}
		for _, r := range roles {
			errs = append(errs, rbac.RoleBindings(r.namespace).Delete(ctx, name, metav1.DeleteOptions{}))
		}
		for _, err := range errs {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("remove the bindings of %s: %v", sa, err)
			}
		}
	})
}

// The README's install, TLS and dashboard commands, run against the real
// API server, then its uninstall. (Its ServiceMonitor command needs the
// Prometheus Operator's CRDs, which the harness lacks; make test-helm
// lints and renders that.) The suite's own installation already holds
// release joulie in joulie-system, so this one is joulie-readme in a
// namespace of its own; helm finds the CRDs installed and leaves them.
func TestHelmInstallAndUninstall(t *testing.T) {
	helm, err := harness.PinnedHelm("../..")
	if err != nil {
		t.Fatal(err)
	}
	const release, namespace = "joulie-readme", "joulie-readme"
	kubeconfig := cp.WriteKubeconfig(t, stampedVersionProxy(t))
	state := t.TempDir()
	command := func(args ...string) *exec.Cmd {
		cmd := exec.Command(helm, append(args, "--kubeconfig", kubeconfig)...)
		// helm keeps a cache and configuration under $HOME; the test's
		// stay in its own directory.
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+state+"/cache", "HELM_CONFIG_HOME="+state+"/config", "HELM_DATA_HOME="+state+"/data")
		return cmd
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := command(args...).CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	kube := cp.AdminClient(t)
	ctx := t.Context()

	out := run("install", release, chartDir, "--namespace", namespace, "--create-namespace")
	t.Cleanup(func() {
		if t.Failed() {
			// Leave nothing behind that would confuse the tests after this one.
			_, _ = command("uninstall", release, "--namespace", namespace).CombinedOutput()
		}
	})
	if !strings.Contains(out, "STATUS: deployed") {
		t.Errorf("helm install did not report the release deployed:\n%s", out)
	}
	if !strings.Contains(out, release+"-extender-scheduler-config") {
		t.Errorf("the install notes do not say how to configure kube-scheduler:\n%s", out)
	}
	// The README's two upgrades, each keeping the values before it.
	run("upgrade", release, chartDir, "-n", namespace, "--reuse-values", "--set", "extender.tls.secretName=joulie-extender-tls")
	run("upgrade", release, chartDir, "-n", namespace, "--reuse-values", "--set", "grafanaDashboard.enabled=true")

	if _, err := kube.AppsV1().Deployments(namespace).Get(ctx, release+"-controller", metav1.GetOptions{}); err != nil {
		t.Errorf("the controller's Deployment: %v", err)
	}
	dep, err := kube.AppsV1().Deployments(namespace).Get(ctx, release+"-extender", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the extender's Deployment: %v", err)
	}
	// Two volumes: the configuration file's ConfigMap and the TLS Secret.
	if v := dep.Spec.Template.Spec.Volumes; len(v) != 2 || v[0].ConfigMap == nil || v[0].ConfigMap.Name != release+"-extender-config" ||
		v[1].Secret == nil || v[1].Secret.SecretName != "joulie-extender-tls" {
		t.Errorf("the extender does not mount its configuration and the TLS Secret: %+v", v)
	}
	if cfg, err := kube.CoreV1().ConfigMaps(namespace).Get(ctx, release+"-extender-config", metav1.GetOptions{}); err != nil {
		t.Errorf("the extender's configuration: %v", err)
	} else if !strings.Contains(cfg.Data["extender.yaml"], "certFile: /etc/joulie-extender/tls/tls.crt") {
		t.Errorf("the extender's configuration does not name the mounted key pair:\n%s", cfg.Data["extender.yaml"])
	}
	cm, err := kube.CoreV1().ConfigMaps(namespace).Get(ctx, release+"-extender-scheduler-config", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the scheduler configuration: %v", err)
	}
	if s := cm.Data["kube-scheduler-config.yaml"]; !strings.Contains(s, `"https://`+release+`-extender.`+namespace+`.svc:9876"`) || !strings.Contains(s, "enableHTTPS: true") {
		t.Errorf("with TLS, the scheduler configuration does not call the extender over HTTPS:\n%s", s)
	}
	dash, err := kube.CoreV1().ConfigMaps(namespace).Get(ctx, release+"-grafana-dashboard", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the dashboard: %v", err)
	}
	if dash.Labels["grafana_dashboard"] != "1" || !strings.Contains(dash.Data["joulie.json"], "joulie_extender_request_duration_seconds_bucket") {
		t.Errorf("the dashboard ConfigMap is not one Grafana's sidecar would load: labels %v", dash.Labels)
	}
	admission := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	if _, err := admission.Get(ctx, release+"-agent-own-node", metav1.GetOptions{}); err != nil {
		t.Errorf("the agents' admission policy: %v", err)
	}

	run("uninstall", release, "--namespace", namespace)
	if _, err := admission.Get(ctx, release+"-agent-own-node", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after helm uninstall the admission policy is still there: %v", err)
	}
	if _, err := kube.RbacV1().ClusterRoles().Get(ctx, release+"-agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after helm uninstall the agents' ClusterRole is still there: %v", err)
	}
	// The BMC Secrets' namespace outlives the release, Secrets and all:
	// an administrator wrote them and deletes them.
	if _, err := kube.CoreV1().Namespaces().Get(ctx, release+"-bmc", metav1.GetOptions{}); err != nil {
		t.Errorf("after helm uninstall the BMC namespace %s-bmc is gone: %v", release, err)
	}
	_ = kube.CoreV1().Namespaces().Delete(ctx, release+"-bmc", metav1.DeleteOptions{})
	// The suite's own installation is untouched, CRDs included.
	if _, err := admission.Get(ctx, chartAgentPolicy, metav1.GetOptions{}); err != nil {
		t.Errorf("the suite's admission policy after uninstalling another release: %v", err)
	}
	crds := apiextensionsclient.NewForConfigOrDie(cp.AdminConfig()).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Get(ctx, "nodepowerprofiles.joulie.io", metav1.GetOptions{}); err != nil {
		t.Errorf("the CRDs after helm uninstall: %v", err)
	}
}

// stampedVersionProxy is an admin client configuration for programs that
// check the server's version, helm among them. The in-process
// kube-apiserver is built as a library, without the ldflags a release
// build stamps its version with, so /version says v0.0.0-master and helm
// refuses any chart with a kubeVersion. The proxy passes every request
// through to the API server as joulie:admin and only corrects gitVersion
// in /version to the k8s.io/kubernetes version this module builds (major
// and minor are already right).
func stampedVersionProxy(t *testing.T) *rest.Config {
	t.Helper()
	// A test binary carries no module versions; the go command knows them.
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes").Output()
	kubeVersion := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(kubeVersion, "v1.") {
		t.Fatalf("the k8s.io/kubernetes version this module builds: %q, %v", kubeVersion, err)
	}
	admin := cp.AdminConfig()
	transport, err := rest.TransportFor(admin)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(admin.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Path != "/version" || resp.StatusCode != http.StatusOK {
			return nil
		}
		var info map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
			return err
		}
		resp.Body.Close()
		info["gitVersion"] = kubeVersion
		body, err := json.Marshal(info)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}
