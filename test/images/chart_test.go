package images

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// workload is a container of one of the chart's Deployments.
type workload struct {
	deployment appsv1.Deployment
	container  corev1.Container
}

// splitImage splits repository:tag.
func splitImage(ref string) (repo, tag string) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ref, ""
	}
	return ref[:i], ref[i+1:]
}

// workloads are the chart's containers by the program their image holds
// (the last element of the image's repository).
func workloads(t *testing.T, objs []rendered) map[string][]workload {
	t.Helper()
	out := map[string][]workload{}
	for _, o := range objs {
		if o.meta.Kind != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := yaml.Unmarshal(o.raw, &d); err != nil {
			t.Fatalf("Deployment %s: %v", o.meta.Metadata.Name, err)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			repo, _ := splitImage(c.Image)
			out[path.Base(repo)] = append(out[path.Base(repo)], workload{deployment: d, container: c})
		}
	}
	return out
}

// valuesKeys are the chart values' top-level keys by the program of their
// image.repository (controller → joulie-controller).
func valuesKeys(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for key, v := range values {
		m, _ := v.(map[string]any)
		img, _ := m["image"].(map[string]any)
		if repo, ok := img["repository"].(string); ok {
			keys[path.Base(repo)] = key
		}
	}
	return keys
}

func TestChartPullsTheImagesMakeImagesTagsAndMakePushPushes(t *testing.T) {
	images := need(t)
	appVersion := chartAppVersion(t)
	defaults := workloads(t, render(t))
	keys := valuesKeys(t)
	for prog := range defaults {
		if !slices.Contains(programs, prog) {
			t.Errorf("the chart runs an image of %s, which make images does not build (add it to IMAGE_PROGRAMS)", prog)
		}
	}
	for _, b := range images {
		repo := b.annotation("io.joulie.image.repository")
		ws := defaults[b.program]
		if len(ws) == 0 {
			t.Errorf("%s: no Deployment of the chart runs its image", b.program)
			continue
		}
		if !slices.Contains(b.tags, appVersion) {
			t.Errorf("%s: the layout is tagged %v, not with the chart's appVersion %s that the chart pulls by default", b.program, b.tags, appVersion)
		}
		for _, w := range ws {
			gotRepo, tag := splitImage(w.container.Image)
			if gotRepo != repo {
				t.Errorf("%s: the chart pulls repository %s, the image is built as %s", b.program, gotRepo, repo)
			}
			if !slices.Contains(b.tags, tag) {
				t.Errorf("%s: the chart pulls tag %q, the layout holds %v", b.program, tag, b.tags)
			}
		}

		// The README's install: make push REGISTRY=<registry>, then
		// helm install --set <key>.image.repository=<registry>/<program>.
		key := keys[b.program]
		if key == "" {
			t.Errorf("%s: no top-level key of values.yaml has an image.repository ending in it", b.program)
			continue
		}
		const registry = "registry.example.com/site/joulie"
		pushed := registry + "/" + b.program + ":" + appVersion
		for _, w := range workloads(t, render(t, "--set", key+".image.repository="+registry+"/"+b.program))[b.program] {
			if w.container.Image != pushed {
				t.Errorf("%s: with --set %s.image.repository=%s/%s the chart pulls %s; make push REGISTRY=%s pushes %s", b.program, key, registry, b.program, w.container.Image, registry, pushed)
			}
		}
	}
}

// gitHead is the commit the repository is at.
func gitHead(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	return strings.TrimSpace(string(out))
}

var shells = []string{"sh", "bash", "dash", "ash", "zsh", "ksh", "busybox"}
var packageManagers = []string{"apt", "apt-get", "dpkg", "apk", "rpm", "dnf", "yum", "microdnf", "pip"}

func TestImageConfigIsWhatTheChartAssumes(t *testing.T) {
	images := need(t)
	head := gitHead(t)
	byProgram := workloads(t, render(t))
	for _, b := range images {
		var plats []string
		for _, img := range b.images {
			plats = append(plats, img.platform.String())
		}
		if !slices.Equal(plats, []string{"linux/amd64", "linux/arm64"}) {
			t.Errorf("%s: platforms %v, want linux/amd64 and linux/arm64", b.program, plats)
		}
		for _, key := range []string{"org.opencontainers.image.source", "org.opencontainers.image.revision", "org.opencontainers.image.version", "org.opencontainers.image.created"} {
			if b.annotation(key) == "" {
				t.Errorf("%s: the index has no %s", b.program, key)
			}
		}
		if rev := b.annotation("org.opencontainers.image.revision"); rev != head {
			t.Errorf("%s: built from %s, the repository is at %s: run make images again", b.program, rev, head)
		}
		for _, img := range b.images {
			c := img.config.Config
			where := b.program + " " + img.platform.String()
			if img.config.OS != img.platform.OS || img.config.Architecture != img.platform.Architecture {
				t.Errorf("%s: config says %s/%s", where, img.config.OS, img.config.Architecture)
			}
			for key, v := range b.index.Annotations {
				if strings.HasPrefix(key, "org.opencontainers.image.") && c.Labels[key] != v {
					t.Errorf("%s: label %s is %q, the index says %q", where, key, c.Labels[key], v)
				}
			}
			uid, gid, err := parseUser(c.User)
			if err != nil {
				t.Errorf("%s: %v", where, err)
			}
			if !strings.Contains(string(img.files["/etc/passwd"].data), fmt.Sprintf(":x:%d:%d:", uid, gid)) {
				t.Errorf("%s: /etc/passwd names no user %d:%d:\n%s", where, uid, gid, img.files["/etc/passwd"].data)
			}
			checkFiles(t, where, img)
			for _, w := range byProgram[b.program] {
				checkChartRuns(t, where, img, uid, gid, w)
			}
		}
	}
}

func parseUser(user string) (uid, gid int64, err error) {
	u, g, ok := strings.Cut(user, ":")
	uid, err1 := strconv.ParseInt(u, 10, 64)
	gid, err2 := strconv.ParseInt(g, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		// A name would make the kubelet refuse runAsNonRoot without runAsUser.
		return 0, 0, fmt.Errorf("image user %q is not numeric uid:gid", user)
	}
	return uid, gid, nil
}

// checkFiles: the entrypoint is the only executable, a static binary for
// the platform; no shell, no package manager; Debian's CA certificates
// where Go looks for them.
func checkFiles(t *testing.T, where string, img image) {
	t.Helper()
	entry := img.config.Config.Entrypoint
	if len(entry) != 1 || !path.IsAbs(entry[0]) {
		t.Errorf("%s: entrypoint %q is not one absolute path (the chart gives only args)", where, entry)
		return
	}
	for name, f := range img.files {
		base := path.Base(name)
		if slices.Contains(shells, base) || slices.Contains(packageManagers, base) {
			t.Errorf("%s: the image holds %s", where, name)
		}
		if f.header.Typeflag == '2' || f.header.Typeflag == '1' {
			t.Errorf("%s: the image holds the link %s → %s", where, name, f.header.Linkname)
		}
		if f.header.Typeflag == '0' && f.header.Mode&0o111 != 0 && name != entry[0] {
			t.Errorf("%s: %s is executable; the program should be the only one", where, name)
		}
	}
	bin, ok := img.files[entry[0]]
	if !ok {
		t.Errorf("%s: the entrypoint %s is not in the image", where, entry[0])
	} else if err := staticFor(bin.data, img.platform.Architecture); err != nil {
		t.Errorf("%s: entrypoint %s: %v", where, entry[0], err)
	} else if bin.header.Mode&0o005 != 0o005 {
		t.Errorf("%s: entrypoint mode %o: others (the pod's user) cannot run it", where, bin.header.Mode)
	}
	n := 0
	rest := img.files["/etc/ssl/certs/ca-certificates.crt"].data
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Errorf("%s: CA bundle: %v", where, err)
		}
		n++
	}
	// Debian 12's ca-certificates holds 140 or so of Mozilla's roots.
	if n < 100 {
		t.Errorf("%s: the CA bundle holds %d certificates", where, n)
	}
}

// checkChartRuns: the chart's pod runs the image as its user, the program
// as entrypoint.
func checkChartRuns(t *testing.T, where string, img image, uid, gid int64, w workload) {
	t.Helper()
	pod := w.deployment.Spec.Template.Spec.SecurityContext
	sc := w.container.SecurityContext
	where += " in Deployment " + w.deployment.Name
	if pod == nil || sc == nil {
		t.Errorf("%s: no security context", where)
		return
	}
	if pod.RunAsUser == nil || *pod.RunAsUser != uid || pod.RunAsGroup == nil || *pod.RunAsGroup != gid {
		t.Errorf("%s: the chart runs as %v:%v, the image's user is %d:%d", where, deref(pod.RunAsUser), deref(pod.RunAsGroup), uid, gid)
	}
	if pod.RunAsNonRoot == nil || !*pod.RunAsNonRoot || uid == 0 {
		t.Errorf("%s: runAsNonRoot %v with the image's user %d", where, pod.RunAsNonRoot, uid)
	}
	if home := img.files["/home/nonroot"]; home.header == nil || int64(home.header.Uid) != uid {
		t.Errorf("%s: the user's home is not the user's", where)
	}
	if len(w.container.Command) > 0 && !slices.Equal(w.container.Command, img.config.Config.Entrypoint) {
		t.Errorf("%s: the chart's command %q is not the image's entrypoint %q", where, w.container.Command, img.config.Config.Entrypoint)
	}
	if len(img.config.Config.Cmd) > 0 {
		t.Errorf("%s: the image has a Cmd %q, which the chart's args replace", where, img.config.Config.Cmd)
	}
}

func deref(p *int64) any {
	if p == nil {
		return "unset"
	}
	return *p
}
