package harness

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// Options configure Start.
type Options struct {
	// Dir receives the logs, certificates and etcd's data. Empty means a
	// new temporary directory, which Stop removes unless KeepDir was
	// called.
	Dir string
	// APIServerFlags are added after the harness's own kube-apiserver
	// flags, so they can override them.
	APIServerFlags []string
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	dir     string
	ownsDir bool
	logFile *os.File
	tb      *suiteTB

	etcd      *embed.Etcd
	apiserver kubeapiservertesting.TestServer

	host     string
	serverCA []byte
	ca       *authority
	admin    *rest.Config
	writes   *writeLog

	mu         sync.Mutex
	namespaces map[string]bool

	buildMu  sync.Mutex
	programs map[string]string // package path to built binary

	keep     bool
	stopOnce sync.Once
}

// Admin is the user the harness's admin client authenticates as; it is in
// group system:masters.
const Admin = "joulie:admin"

// Start launches embedded etcd and kube-apiserver and waits until the API
// server is healthy and its default namespace exists.
func Start(opts Options) (cp *ControlPlane, err error) {
	cp = &ControlPlane{dir: opts.Dir, namespaces: map[string]bool{}, programs: map[string]string{}}
	if cp.dir == "" {
		cp.dir, err = os.MkdirTemp("", "joulie-harness-")
		if err != nil {
			return nil, fmt.Errorf("create control plane dir: %w", err)
		}
		cp.ownsDir = true
	} else if err := os.MkdirAll(cp.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create control plane dir: %w", err)
	}
	defer func() {
		if err != nil {
			cp.keep = true // leave the logs for whoever reads the error
			cp.Stop()
			err = fmt.Errorf("%w (logs in %s)", err, cp.dir)
			cp = nil
		}
	}()

	cp.logFile, err = os.Create(filepath.Join(cp.dir, "apiserver.log"))
	if err != nil {
		return cp, fmt.Errorf("create log file: %w", err)
	}
	if err := redirectKlog(cp.logFile); err != nil {
		return cp, err
	}
	cp.tb = newSuiteTB(cp.logFile, cp.dir)

	var etcdURL string
	cp.etcd, etcdURL, err = startEtcd(cp.dir, filepath.Join(cp.dir, "etcd.log"))
	if err != nil {
		return cp, err
	}

	cp.ca, err = newAuthority()
	if err != nil {
		return cp, err
	}
	caFile := filepath.Join(cp.dir, "client-ca.crt")
	policyFile := filepath.Join(cp.dir, "audit-policy.yaml")
	auditFile := filepath.Join(cp.dir, "audit.log")
	if err := os.WriteFile(caFile, cp.ca.certPEM, 0o600); err != nil {
		return cp, fmt.Errorf("write client CA: %w", err)
	}
	if err := os.WriteFile(policyFile, []byte(auditPolicy), 0o600); err != nil {
		return cp, fmt.Errorf("write audit policy: %w", err)
	}
	cp.writes = newWriteLog(auditFile)

	flags := []string{
		"--authorization-mode=Node,RBAC",
		// No node lifecycle controller runs to lift the not-ready taints
		// this plugin puts on new nodes.
		"--disable-admission-plugins=TaintNodesByCondition",
		"--client-ca-file=" + caFile,
		"--audit-policy-file=" + policyFile,
		"--audit-log-path=" + auditFile,
		"--audit-log-format=json",
		"--audit-log-mode=blocking-strict",
	}
	flags = append(flags, opts.APIServerFlags...)

	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{etcdURL}

	if err := cp.startAPIServer(flags, storage); err != nil {
		return cp, err
	}
	cp.host = cp.apiserver.ClientConfig.Host
	certFile := cp.apiserver.ServerOpts.SecureServing.ServerCert.CertKey.CertFile
	cp.serverCA, err = os.ReadFile(certFile)
	if err != nil {
		return cp, fmt.Errorf("read API server serving certificate: %w", err)
	}
	cp.admin, err = cp.userConfig(Admin, []string{"system:masters"})
	if err != nil {
		return cp, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// With no kube-controller-manager, nothing creates the default
	// ServiceAccount that the ServiceAccount admission plugin wants.
	if err := cp.ensureNamespace(ctx, metav1.NamespaceDefault); err != nil {
		return cp, err
	}
	return cp, nil
}

func (cp *ControlPlane) startAPIServer(flags []string, storage *storagebackend.Config) (err error) {
	defer func() {
		if r := recover(); r != nil {
			fatal, ok := r.(errSuiteFatal)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("start kube-apiserver: %w", fatal)
		}
	}()
	opts := kubeapiservertesting.NewDefaultTestServerOptions()
	// The invariant check scrapes metrics at teardown and complains about
	// things a test suite does on purpose (refused requests).
	opts.DisableInvariantChecks = true
	cp.apiserver, err = kubeapiservertesting.StartTestServer(cp.tb, opts, flags, storage)
	if err != nil {
		return fmt.Errorf("start kube-apiserver: %w", err)
	}
	return nil
}

// Dir is the directory holding the control plane's logs and data.
func (cp *ControlPlane) Dir() string { return cp.dir }

// Host is the API server's URL.
func (cp *ControlPlane) Host() string { return cp.host }

// KeepDir makes Stop leave the control plane's directory in place.
func (cp *ControlPlane) KeepDir() { cp.keep = true }

// Stop shuts the API server and etcd down and removes the control plane's
// directory unless it was given in Options or KeepDir was called.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		if cp.apiserver.TearDownFn != nil {
			cp.apiserver.TearDownFn()
		}
		if cp.tb != nil {
			cp.tb.cleanup()
		}
		if cp.etcd != nil {
			cp.etcd.Close()
		}
		if cp.logFile != nil {
			klog.Flush()
			// Goroutines that outlive the shutdown may still log.
			klog.SetOutput(io.Discard)
			_ = cp.logFile.Close()
		}
		if cp.ownsDir && !cp.keep {
			_ = os.RemoveAll(cp.dir)
		}
	})
}

// redirectKlog sends klog, which is process-wide, to w: everything the
// in-process components log without a contextual logger ends up there. By
// default klog also copies errors to stderr; the threshold is raised so
// the console stays clean.
func redirectKlog(w io.Writer) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range map[string]string{
		"logtostderr":     "false",
		"alsologtostderr": "false",
		"stderrthreshold": "FATAL",
		"one_output":      "true",
	} {
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("configure klog: %w", err)
		}
	}
	klog.SetOutput(w)
	return nil
}

// RunSuite is the body of a TestMain: it starts a control plane, lets
// setup prepare it (install CRDs, policies), runs the tests and stops it.
// When setup or a test fails, the control plane's directory is kept and
// its path printed, so the logs can be read. It returns the exit code.
func RunSuite(m *testing.M, opts Options, setup func(*ControlPlane) error) int {
	start := time.Now()
	cp, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "harness: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "harness: control plane up in %s, logs in %s\n", time.Since(start).Round(time.Millisecond), cp.Dir())
	code := 1
	defer func() {
		if code != 0 {
			cp.KeepDir()
			fmt.Fprintf(os.Stderr, "harness: keeping logs in %s\n", cp.Dir())
		}
		cp.Stop()
	}()
	if setup != nil {
		if err := setup(cp); err != nil {
			fmt.Fprintf(os.Stderr, "harness: suite setup: %v\n", err)
			return code
		}
	}
	code = m.Run()
	return code
}

// EnsureNamespace creates a namespace and its default ServiceAccount (no
// kube-controller-manager runs to create it) if they do not exist yet.
func (cp *ControlPlane) EnsureNamespace(ctx context.Context, name string) error {
	return cp.ensureNamespace(ctx, name)
}

func (cp *ControlPlane) ensureNamespace(ctx context.Context, name string) error {
	cp.mu.Lock()
	done := cp.namespaces[name]
	cp.mu.Unlock()
	if done {
		return nil
	}
	cs, err := kubernetes.NewForConfig(cp.admin)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
	if _, err := cs.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create default ServiceAccount in %s: %w", name, err)
	}
	cp.mu.Lock()
	cp.namespaces[name] = true
	cp.mu.Unlock()
	return nil
}
