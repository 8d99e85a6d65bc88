package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// hello holds static binaries of a tiny Go program, one per architecture
// (<os>_<arch>/<program> as make images lays them out), built once.
var hello string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "imagebuild-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if err := buildHello(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		hello = dir
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildHello(dir string) error {
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		return err
	}
	for _, arch := range []string{"amd64", "arm64"} {
		out := filepath.Join(dir, "bin", "linux_"+arch, "hello")
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=-buildvcs=false")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build the test program for %s: %v\n%s", arch, err, b)
		}
	}
	return nil
}

// testCADir is a directory like Debian's /usr/share/ca-certificates/mozilla,
// with two certificates from the build host's copy of it.
func testCADir(t *testing.T) string {
	t.Helper()
	src := "/usr/share/ca-certificates/mozilla"
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatalf("this test reads two certificates of Debian's ca-certificates (hack/install-deps.sh installs it): %v", err)
	}
	dir := t.TempDir()
	n := 0
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".crt") || n == 2 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n < 2 {
		t.Fatalf("fewer than two certificates in %s", src)
	}
	return dir
}

func testSpec(t *testing.T, out string) buildSpec {
	t.Helper()
	return buildSpec{
		programs:   []string{"hello"},
		platforms:  []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}},
		binDir:     filepath.Join(hello, "bin"),
		out:        out,
		repoPrefix: "joulie",
		tags:       []string{"0.1.0", "abc1234"},
		caDir:      testCADir(t),
		caVersion:  "20230311+deb12u1",
		source:     "https://joulie.io",
		revision:   "0123456789abcdef0123456789abcdef01234567",
		version:    "abc1234",
		epoch:      time.Unix(1700000000, 0).UTC(),
	}
}

func buildDigest(t *testing.T, s buildSpec) v1.Hash {
	t.Helper()
	if err := build(s, io.Discard); err != nil {
		t.Fatalf("build: %v", err)
	}
	idx, tags, err := readLayout(filepath.Join(s.out, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tags, s.tags) {
		t.Errorf("layout lists tags %v, want %v", tags, s.tags)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSameInputsGiveTheSameDigests(t *testing.T) {
	s := testSpec(t, t.TempDir())
	first := buildDigest(t, s)
	// Another directory, another time of day: the digest only follows
	// the inputs.
	s.out = t.TempDir()
	if again := buildDigest(t, s); again != first {
		t.Fatalf("second build: %s, first: %s", again, first)
	}
	s.out = t.TempDir()
	s.epoch = s.epoch.Add(time.Second)
	if later := buildDigest(t, s); later == first {
		t.Errorf("a different SOURCE_DATE_EPOCH gave the same digest %s: the timestamps are not in the image", later)
	}
	s.epoch = s.epoch.Add(-time.Second)
	s.out = t.TempDir()
	s.revision = strings.Repeat("f", 40)
	if other := buildDigest(t, s); other == first {
		t.Errorf("a different revision gave the same digest %s: the labels are not in the image", other)
	}
}

// layerFiles lists the tar headers of every layer of img, by path.
func layerFiles(t *testing.T, img v1.Image) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]*tar.Header{}
	data := map[string][]byte{}
	for _, l := range layers {
		mt, err := l.MediaType()
		if err != nil {
			t.Fatal(err)
		}
		if mt != "application/vnd.oci.image.layer.v1.tar+gzip" {
			t.Errorf("layer media type %s", mt)
		}
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := "/" + strings.TrimSuffix(h.Name, "/")
			headers[name] = h
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			data[name] = b
		}
		rc.Close()
	}
	return headers, data
}

func TestImageHoldsTheProgramCertificatesAndUserOnly(t *testing.T) {
	s := testSpec(t, t.TempDir())
	buildDigest(t, s)
	idx, _, err := readLayout(filepath.Join(s.out, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("index media type %s", im.MediaType)
	}
	if im.Annotations[annoRevision] != s.revision || im.Annotations[annoVersion] != s.version || im.Annotations[annoSource] != s.source || im.Annotations[annoRepository] != "joulie/hello" {
		t.Errorf("index annotations %v", im.Annotations)
	}
	var platforms []string
	for _, desc := range im.Manifests {
		platforms = append(platforms, desc.Platform.String())
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != desc.Platform.Architecture || cf.OS != "linux" {
			t.Errorf("%s: config says %s/%s", desc.Platform, cf.OS, cf.Architecture)
		}
		c := cf.Config
		if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/hello"}) || len(c.Cmd) != 0 {
			t.Errorf("%s: user %q, entrypoint %q, cmd %q", desc.Platform, c.User, c.Entrypoint, c.Cmd)
		}
		for _, key := range []string{annoSource, annoRevision, annoVersion, annoCreated} {
			if c.Labels[key] != im.Annotations[key] || c.Labels[key] == "" {
				t.Errorf("%s: label %s %q, index annotation %q", desc.Platform, key, c.Labels[key], im.Annotations[key])
			}
		}
		if !cf.Created.Time.Equal(s.epoch) {
			t.Errorf("%s: created %s, want %s", desc.Platform, cf.Created.Time, s.epoch)
		}

		headers, data := layerFiles(t, img)
		var names []string
		for name, h := range headers {
			names = append(names, name)
			if !h.ModTime.Equal(s.epoch) {
				t.Errorf("%s: %s has mtime %s, want SOURCE_DATE_EPOCH %s", desc.Platform, name, h.ModTime, s.epoch)
			}
		}
		slices.Sort(names)
		want := []string{"/etc", "/etc/group", "/etc/nsswitch.conf", "/etc/passwd", "/etc/ssl", "/etc/ssl/certs", "/etc/ssl/certs/ca-certificates.crt",
			"/home", "/home/nonroot", "/tmp", "/usr", "/usr/local", "/usr/local/bin", "/usr/local/bin/hello"}
		if !slices.Equal(names, want) {
			t.Errorf("%s: files\n%q\nwant only\n%q", desc.Platform, names, want)
		}
		bin, err := os.ReadFile(filepath.Join(hello, "bin", "linux_"+desc.Platform.Architecture, "hello"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data["/usr/local/bin/hello"], bin) {
			t.Errorf("%s: the image's binary is not the %s build", desc.Platform, desc.Platform.Architecture)
		}
		if h := headers["/usr/local/bin/hello"]; h.Mode != 0o755 || h.Uid != 0 {
			t.Errorf("%s: binary mode %o owner %d", desc.Platform, h.Mode, h.Uid)
		}
		if n, err := countCertificates(data["/etc/ssl/certs/ca-certificates.crt"]); err != nil || n != 2 {
			t.Errorf("%s: CA bundle holds %d certificates (%v), want the 2 of the CA directory", desc.Platform, n, err)
		}
		if !strings.Contains(string(data["/etc/passwd"]), "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd:\n%s", desc.Platform, data["/etc/passwd"])
		}
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v", platforms)
	}
}

func TestBadInputFailsAndKeepsThePreviousImages(t *testing.T) {
	out := t.TempDir()
	good := testSpec(t, out)
	before := buildDigest(t, good)

	missing := t.TempDir()
	if err := os.MkdirAll(filepath.Join(missing, "linux_amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	amd64, err := os.ReadFile(filepath.Join(hello, "bin", "linux_amd64", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(missing, "linux_amd64", "hello"), amd64, 0o755); err != nil {
		t.Fatal(err)
	}
	// An amd64 binary where the arm64 one should be.
	swapped := t.TempDir()
	for _, arch := range []string{"amd64", "arm64"} {
		if err := os.MkdirAll(filepath.Join(swapped, "linux_"+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(swapped, "linux_"+arch, "hello"), amd64, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	notCerts := t.TempDir()
	if err := os.WriteFile(filepath.Join(notCerts, "a.crt"), []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name   string
		change func(*buildSpec)
		want   []string
	}{
		{"no arm64 binary", func(s *buildSpec) { s.binDir = missing }, []string{"no hello binary for linux/arm64", "CGO_ENABLED=0 GOOS=linux GOARCH=arm64"}},
		{"binary of another architecture", func(s *buildSpec) { s.binDir = swapped }, []string{"EM_X86_64", "not linux/arm64"}},
		{"CA file not a certificate", func(s *buildSpec) { s.caDir = notCerts }, []string{"a.crt", "not PEM certificates"}},
		{"no CA directory", func(s *buildSpec) { s.caDir = filepath.Join(notCerts, "nope") }, []string{"does not exist", "ca-certificates"}},
		{"bad tag", func(s *buildSpec) { s.tags = []string{"0.1.0", "v1:x"} }, []string{`tag "v1:x"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			tc.change(&s)
			err := build(s, io.Discard)
			if err == nil {
				t.Fatal("build succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			idx, _, err := readLayout(filepath.Join(out, "hello"))
			if err != nil {
				t.Fatalf("the previous layout is gone: %v", err)
			}
			if d, _ := idx.Digest(); d != before {
				t.Errorf("the previous layout changed: %s, was %s", d, before)
			}
		})
	}
}

func TestDynamicBinaryIsRefused(t *testing.T) {
	// The host's own tools are dynamically linked against glibc.
	ls, err := os.ReadFile("/bin/ls")
	if err != nil {
		t.Skipf("no /bin/ls to use as a dynamic binary: %v", err)
	}
	err = checkStatic(ls, v1.Platform{OS: "linux", Architecture: "amd64"})
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("checkStatic(/bin/ls) = %v, want a refusal naming CGO_ENABLED=0", err)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"build", "--programs", "x", "--bin-dir", "b", "--tags", "1", "--source", "s", "--revision", "r", "--version", "v"}, nil, "SOURCE_DATE_EPOCH"},
		{[]string{"build", "--programs", "x", "--bin-dir", "b", "--tags", "1", "--source", "s", "--revision", "r", "--version", "v"}, map[string]string{"SOURCE_DATE_EPOCH": "yesterday"}, `"yesterday" is not whole seconds`},
		{[]string{"build", "--programs", "x", "--platforms", "amd64", "--bin-dir", "b", "--tags", "1", "--source", "s", "--revision", "r", "--version", "v", "--source-date-epoch", "1"}, nil, `platform "amd64" is not os/arch`},
		{[]string{"push", "--programs", "x"}, nil, "REGISTRY=host/path"},
		{[]string{"push", "--programs", "x", "--registry", "https://r.example/j"}, nil, "without the scheme"},
		{[]string{"frobnicate"}, nil, `unknown command "frobnicate"`},
	} {
		var stderr bytes.Buffer
		code := run(tc.args, io.Discard, &stderr, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want it to say %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
