package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// authRegistry is an in-memory OCI registry that answers 401 to any
// request without the basic credentials user:secret.
func authRegistry(t *testing.T) (host string, writes *atomic.Int64) {
	t.Helper()
	reg := registry.New()
	writes = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "secret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "credentials required", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writes.Add(1)
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), writes
}

// dockerConfig points the default keychain at a Docker config file with
// credentials for host, as docker login writes it.
func dockerConfig(t *testing.T, host, user, password string) {
	t.Helper()
	dir := t.TempDir()
	cfg := map[string]any{"auths": map[string]any{host: map[string]string{
		"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password)),
	}}}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("REGISTRY_AUTH_FILE", "")
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("XDG_CONFIG_HOME", "")
}

func TestPushSendsEveryTagWithTheDockerConfigCredentials(t *testing.T) {
	host, _ := authRegistry(t)
	dockerConfig(t, host, "user", "secret")
	s := testSpec(t, t.TempDir())
	built := buildDigest(t, s)

	var log strings.Builder
	err := push(t.Context(), pushSpec{programs: []string{"hello"}, layouts: s.out, registry: host + "/site/joulie", insecure: true, keychain: authn.DefaultKeychain}, &log)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	for _, tag := range s.tags {
		ref, err := name.NewTag(host+"/site/joulie/hello:"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(ref, remote.WithAuthFromKeychain(authn.DefaultKeychain))
		if err != nil {
			t.Fatalf("read back %s: %v", ref, err)
		}
		if d, _ := idx.Digest(); d != built {
			t.Errorf("%s is %s, built %s", ref, d, built)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Manifests) != 2 {
			t.Errorf("%s lists %d platforms, want 2", ref, len(im.Manifests))
		}
		// Every platform's image and its layers came along.
		for _, desc := range im.Manifests {
			img, err := idx.Image(desc.Digest)
			if err != nil {
				t.Fatal(err)
			}
			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range layers {
				rc, err := l.Compressed()
				if err != nil {
					t.Fatalf("%s %s: layer: %v", ref, desc.Platform, err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					t.Fatalf("%s %s: layer: %v", ref, desc.Platform, err)
				}
				rc.Close()
			}
		}
		if !strings.Contains(log.String(), "pushed "+ref.String()+"@"+built.String()) {
			t.Errorf("log does not name %s@%s:\n%s", ref, built, log.String())
		}
	}
}

func TestPushWithWrongCredentialsSaysHowToLogIn(t *testing.T) {
	host, writes := authRegistry(t)
	dockerConfig(t, host, "user", "wrong")
	s := testSpec(t, t.TempDir())
	buildDigest(t, s)
	err := push(t.Context(), pushSpec{programs: []string{"hello"}, layouts: s.out, registry: host + "/joulie", insecure: true, keychain: authn.DefaultKeychain}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "docker login or podman login") {
		t.Fatalf("push with wrong credentials: %v", err)
	}
	if n := writes.Load(); n != 0 {
		t.Errorf("%d writes got through without credentials", n)
	}
}

func TestPushOfAMissingLayoutSendsNothing(t *testing.T) {
	host, writes := authRegistry(t)
	dockerConfig(t, host, "user", "secret")
	s := testSpec(t, t.TempDir())
	buildDigest(t, s)
	err := push(t.Context(), pushSpec{programs: []string{"hello", "joulie-scheduler"}, layouts: s.out, registry: host + "/joulie", insecure: true, keychain: authn.DefaultKeychain}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "joulie-scheduler") || !strings.Contains(err.Error(), "make images") {
		t.Fatalf("push with a program not built: %v", err)
	}
	if n := writes.Load(); n != 0 {
		t.Errorf("%d writes reached the registry before the missing layout was found", n)
	}
}
