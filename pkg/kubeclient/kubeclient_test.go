package kubeclient

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestConfigFromAFileOrTheCluster(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	file := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: "https://127.0.0.1:6443"}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {Token: "t"}},
		Contexts:       map[string]*clientcmdapi.Context{"x": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "x",
	}
	if err := clientcmd.WriteToFile(file, kc); err != nil {
		t.Fatal(err)
	}
	rc, err := Config(kc, "--kubeconfig / KUBECONFIG", "joulie-test/1")
	if err != nil || rc.Host != "https://127.0.0.1:6443" || rc.UserAgent != "joulie-test/1" {
		t.Errorf("Config = %+v, %v", rc, err)
	}
	missing := filepath.Join(dir, "missing")
	if _, err := Config(missing, "--kubeconfig / KUBECONFIG", "x"); err == nil ||
		!strings.HasPrefix(err.Error(), `--kubeconfig / KUBECONFIG = "`+missing+`": `) {
		t.Errorf("a missing file: %v", err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := Config("", "--kubeconfig / KUBECONFIG", "x"); err == nil ||
		!strings.HasPrefix(err.Error(), "no --kubeconfig / KUBECONFIG given and not running in a cluster: ") {
		t.Errorf("outside a cluster: %v", err)
	}
}
