package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// runWith runs the plugin against server with args, as a kubeconfig
// pointing at it would.
func runWith(t *testing.T, server string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: work}}]
current-context: c
`, server)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	code = run(append([]string{"--kubeconfig", kubeconfig}, args...), streams)
	return out.String(), errOut.String(), code
}

// An API server that does not serve joulie.io answers 404 to every list of
// it, as kube-apiserver does without the CRDs: the plugin says to install
// them rather than "not found".
func TestWithoutTheCRDsTheErrorSaysToInstallThem(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/apis/joulie.io/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}`)
	}))
	defer srv.Close()
	for _, args := range [][]string{{"status"}, {"status", "-w"}} {
		_, errOut, code := runWith(t, srv.URL, args...)
		if code != 1 || !strings.Contains(errOut, "the API server does not serve nodepowerprofiles.joulie.io: Joulie's CRDs are not installed in this cluster") ||
			!strings.Contains(errOut, "kubectl apply -f packaging/helm/joulie/crds/") {
			t.Errorf("%v without the CRDs: exit %d, %q", args, code, errOut)
		}
	}
}

func TestBadUsageExitsWithTwo(t *testing.T) {
	for _, args := range [][]string{
		{"status", "-o", "xml"},
		{"status", "extra"},
		{"status", "--interval", "0s", "-w"},
		{"explain"},
		{"explain", "a", "b"},
		{"explain", "p", "--scoring-mode", "fastest"},
		{"pods", "-o", "json", "--no-such-flag"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errOut.String())
		}
	}
}
