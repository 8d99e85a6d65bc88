package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Identities Joulie's components run as.
const (
	// AgentGroup is the group every node agent is in.
	AgentGroup = "joulie:agents"
	// ControllerNamespace and ControllerServiceAccount name the
	// controller's ServiceAccount.
	ControllerNamespace      = "joulie-system"
	ControllerServiceAccount = "joulie-controller"
)

// AgentUser is the user name of the agent on node.
func AgentUser(node string) string { return "joulie:agent:" + node }

// ServiceAccountUser is the user name a ServiceAccount's token
// authenticates as.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// AdminConfig is a client configuration for user joulie:admin in group
// system:masters.
func (cp *ControlPlane) AdminConfig() *rest.Config { return rest.CopyConfig(cp.admin) }

// AdminClient is a typed client for AdminConfig.
func (cp *ControlPlane) AdminClient(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.admin)
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	return cs
}

// UserConfig is a client configuration that authenticates as user in
// groups with a client certificate from the harness's CA. The user has no
// permissions beyond what RBAC grants it.
func (cp *ControlPlane) UserConfig(t testing.TB, user string, groups ...string) *rest.Config {
	t.Helper()
	cfg, err := cp.userConfig(user, groups)
	if err != nil {
		t.Fatalf("client configuration for %s: %v", user, err)
	}
	return cfg
}

// AgentConfig is the client configuration of the agent on node: user
// joulie:agent:<node> in group joulie:agents.
func (cp *ControlPlane) AgentConfig(t testing.TB, node string) *rest.Config {
	t.Helper()
	return cp.UserConfig(t, AgentUser(node), AgentGroup)
}

// KubeletUser is the user name of node's kubelet, as its client
// certificate names it; KubeletGroup is the group of every kubelet. The
// API server's Node authorizer holds these identities to their node.
func KubeletUser(node string) string { return "system:node:" + node }

// KubeletGroup is the group of every kubelet's identity.
const KubeletGroup = "system:nodes"

// KubeletConfig is the client configuration of node's kubelet: the
// identity an agent reads its node's pods with (agentd.yaml
// podsKubeconfig).
func (cp *ControlPlane) KubeletConfig(t testing.TB, node string) *rest.Config {
	t.Helper()
	return cp.UserConfig(t, KubeletUser(node), KubeletGroup)
}

// NewUserConfig is UserConfig for programs outside a test: the error is
// returned instead of failing a test.
func (cp *ControlPlane) NewUserConfig(user string, groups ...string) (*rest.Config, error) {
	return cp.userConfig(user, groups)
}

// NewServiceAccountConfig is ServiceAccountConfig for programs outside a
// test.
func (cp *ControlPlane) NewServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	return cp.serviceAccountConfig(ctx, namespace, name)
}

func (cp *ControlPlane) userConfig(user string, groups []string) (*rest.Config, error) {
	certPEM, keyPEM, err := cp.ca.issue(user, groups)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host: cp.host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   cp.serverCA,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
		// The server's own rate limits stay in force; the client's
		// defaults (5 QPS) would only slow tests down.
		QPS:   200,
		Burst: 400,
	}, nil
}

// ServiceAccountConfig is a client configuration carrying a bound token of
// the ServiceAccount namespace/name, which it creates (with its namespace)
// if missing. The API server checks the token like any in-cluster client's.
func (cp *ControlPlane) ServiceAccountConfig(t testing.TB, namespace, name string) *rest.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := cp.serviceAccountConfig(ctx, namespace, name)
	if err != nil {
		t.Fatalf("client configuration for ServiceAccount %s/%s: %v", namespace, name, err)
	}
	return cfg
}

// ControllerConfig is ServiceAccountConfig for the controller's
// ServiceAccount, joulie-system/joulie-controller.
func (cp *ControlPlane) ControllerConfig(t testing.TB) *rest.Config {
	t.Helper()
	return cp.ServiceAccountConfig(t, ControllerNamespace, ControllerServiceAccount)
}

func (cp *ControlPlane) serviceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	if err := cp.ensureNamespace(ctx, namespace); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cp.admin)
	if err != nil {
		return nil, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create ServiceAccount: %w", err)
	}
	expiry := int64((24 * time.Hour).Seconds())
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request token: %w", err)
	}
	return &rest.Config{
		Host:            cp.host,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.serverCA},
		BearerToken:     tr.Status.Token,
		QPS:             200,
		Burst:           400,
	}, nil
}

// WriteKubeconfig writes cfg as a kubeconfig file in a temporary
// directory of t and returns its path, for programs that take
// --kubeconfig.
func (cp *ControlPlane) WriteKubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfigFile(path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

// ServerCA is the PEM certificate that the API server's serving
// certificate verifies against, for clients configured by hand.
func (cp *ControlPlane) ServerCA() []byte { return append([]byte(nil), cp.serverCA...) }

// WriteKubeconfigFile writes cfg as a kubeconfig file at path, readable
// by its owner only.
func WriteKubeconfigFile(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["harness"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos["harness"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts["harness"] = &clientcmdapi.Context{Cluster: "harness", AuthInfo: "harness"}
	kc.CurrentContext = "harness"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// Writes returns the write requests user sent to the API server since it
// started, in the order the server received them, including those it
// refused (see the package documentation).
func (cp *ControlPlane) Writes(t testing.TB, user string) []Write {
	t.Helper()
	ws, err := cp.writes.forUser(user, 5*time.Second)
	if err != nil {
		t.Fatalf("read audit log: %v", err)
	}
	return ws
}

// WriteLines is Writes(t, user)[from:] as lines without the user's
// name, "verb resource name -> code", the form the tests compare.
func (cp *ControlPlane) WriteLines(t testing.TB, user string, from int) []string {
	t.Helper()
	var lines []string
	for _, w := range cp.Writes(t, user)[from:] {
		lines = append(lines, strings.TrimPrefix(w.String(), user+" "))
	}
	return lines
}

// WriteCount is len(Writes(t, user)).
func (cp *ControlPlane) WriteCount(t testing.TB, user string) int {
	t.Helper()
	return len(cp.Writes(t, user))
}
