package images

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"joulie.io/joulie/test/harness"
)

// podman runs Debian's podman on a store of the test's own, so that
// nothing is left behind and nothing another user loaded is seen. runc:
// crun refuses this machine's hybrid cgroup layout; cgroupfs and a file
// event log: no systemd is needed.
type podman struct {
	base []string
}

func newPodman(t *testing.T) *podman {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatalf("podman is not installed: run hack/install-deps.sh (make test-images does)")
	}
	dir, err := os.MkdirTemp("", "joulie-images-podman")
	if err != nil {
		t.Fatal(err)
	}
	p := &podman{base: []string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"),
		"--storage-driver", "vfs", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file"}}
	t.Cleanup(func() {
		// vfs leaves copies of the layers that only podman may remove.
		exec.Command("podman", append(p.base, "system", "reset", "--force")...).Run()
		os.RemoveAll(dir)
	})
	return p
}

func (p *podman) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "podman", append(p.base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("podman %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func (p *podman) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := p.run(t.Context(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// securityFlags are podman's spelling of the chart's security context.
// The test asks the chart for what the images were made for: a non-root
// numeric user, a read-only root filesystem, no privilege escalation, no
// capabilities; a chart that drops one of them is a change to review
// here, not one to run silently.
func securityFlags(t *testing.T, w workload) []string {
	t.Helper()
	pod := w.deployment.Spec.Template.Spec.SecurityContext
	sc := w.container.SecurityContext
	if pod == nil || sc == nil || pod.RunAsUser == nil || pod.RunAsGroup == nil {
		t.Fatalf("Deployment %s: no user in its security context", w.deployment.Name)
	}
	if pod.RunAsNonRoot == nil || !*pod.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Fatalf("Deployment %s: the security context is no longer non-root, read-only root filesystem, no privilege escalation, no capabilities: %+v %+v", w.deployment.Name, pod, sc)
	}
	flags := []string{
		"--user", fmt.Sprintf("%d:%d", *pod.RunAsUser, *pod.RunAsGroup),
		// Kubernetes mounts no tmpfs on a read-only root; podman would.
		"--read-only", "--read-only-tmpfs=false",
		"--security-opt", "no-new-privileges",
		"--cap-drop", "all",
		// Under the machine's hard limits (podman's defaults are above).
		"--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096",
	}
	if pod.FSGroup != nil {
		flags = append(flags, "--group-add", fmt.Sprint(*pod.FSGroup))
	}
	return flags
}

// loadImage pulls the layout's platform image into p and names it as the
// chart does, so that the container runs the chart's own reference.
func loadImage(t *testing.T, p *podman, b built, arch, ref string) {
	t.Helper()
	// podman pull prints the image's ID last.
	out := strings.Fields(p.must(t, "pull", "--quiet", "--arch", arch, "oci:"+b.dir+":"+b.tags[0]))
	if len(out) == 0 {
		t.Fatalf("%s: podman pull printed no image ID", b.program)
	}
	p.must(t, "tag", out[len(out)-1], ref)
	want := ""
	for _, img := range b.images {
		if img.platform.Architecture == arch {
			want = arch + " " + img.config.Config.User
		}
	}
	if got := strings.TrimSpace(p.must(t, "image", "inspect", "--format", "{{.Architecture}} {{.User}}", ref)); got != want {
		t.Errorf("%s: podman sees %q, the layout says %q", ref, got, want)
	}
}

func TestImagesRunUnderTheChartsSecurityContext(t *testing.T) {
	images := need(t)
	p := newPodman(t)
	objs := render(t)
	byProgram := workloads(t, objs)
	configMaps := map[string]corev1.ConfigMap{}
	for _, o := range objs {
		if o.meta.Kind == "ConfigMap" {
			var cm corev1.ConfigMap
			if err := yaml.Unmarshal(o.raw, &cm); err != nil {
				t.Fatal(err)
			}
			configMaps[cm.Name] = cm
		}
	}
	for _, b := range images {
		ws := byProgram[b.program]
		if len(ws) == 0 {
			t.Errorf("%s: no Deployment of the chart runs it", b.program)
			continue
		}
		w := ws[0]
		loadImage(t, p, b, runtime.GOARCH, w.container.Image)
		t.Run(b.program, func(t *testing.T) {
			runProgram(t, p, b, w, configMaps)
		})
	}
	// The other platform's image loads too, though it cannot run here.
	for _, b := range images {
		for _, img := range b.images {
			if img.platform.Architecture != runtime.GOARCH {
				loadImage(t, p, b, img.platform.Architecture, "localhost/"+b.program+"-"+img.platform.Architecture+":test")
			}
		}
	}
}

func runProgram(t *testing.T, p *podman, b built, w workload, configMaps map[string]corev1.ConfigMap) {
	sec := securityFlags(t, w)
	ref := w.container.Image
	version := b.annotation("org.opencontainers.image.version")

	// --version prints the version it was built as, and that version
	// describes the commit the image names.
	out := p.must(t, append(append([]string{"run", "--rm", "--pull", "never"}, sec...), ref, "--version")...)
	if want := b.program + " version " + version; strings.TrimSpace(out) != want {
		t.Errorf("--version printed %q, want %q", strings.TrimSpace(out), want)
	}
	rev := b.annotation("org.opencontainers.image.revision")
	described, err := exec.Command("git", "-C", repoRoot, "describe", "--tags", "--always", rev).Output()
	if err != nil {
		t.Errorf("git describe %s: %v", rev, err)
	} else if d := strings.TrimSpace(string(described)); strings.TrimSuffix(version, "-dirty") != d {
		t.Errorf("the image's version %q does not describe its revision %s (%s)", version, rev, d)
	}

	// No shell to run anything else with.
	if out, err := p.run(t.Context(), append(append([]string{"run", "--rm", "--pull", "never", "--entrypoint", "/bin/sh"}, sec...), ref, "-c", "true")...); err == nil {
		t.Errorf("/bin/sh ran in the image: %s", out)
	}

	// The pod as the chart writes it: its arguments, its environment, its
	// configuration mounted read-only; its ServiceAccount's token in a
	// kubeconfig, since there is no in-cluster service here.
	dir, err := os.MkdirTemp("", "joulie-images-"+b.program)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The container's user reads what is mounted, as fsGroup gives it.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	podName := w.deployment.Name + "-image-test"
	ns := w.deployment.Namespace
	kubeconfig := filepath.Join(dir, "kubeconfig")
	sa := cp.ServiceAccountConfig(t, ns, w.deployment.Spec.Template.Spec.ServiceAccountName)
	if err := harness.WriteKubeconfigFile(kubeconfig, sa); err != nil {
		t.Fatal(err)
	}
	fsGroup := int(*w.deployment.Spec.Template.Spec.SecurityContext.FSGroup)
	if err := os.Chown(kubeconfig, 0, fsGroup); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(kubeconfig, 0o440); err != nil {
		t.Fatal(err)
	}
	const kubeconfigPath = "/var/run/joulie-test/kubeconfig"
	args := append([]string{"run", "--detach", "--pull", "never", "--name", podName, "--network", "host",
		"--env", "KUBECONFIG=" + kubeconfigPath, "--volume", kubeconfig + ":" + kubeconfigPath + ":ro"}, sec...)
	for _, e := range w.container.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil && f.FieldRef != nil {
			switch f.FieldRef.FieldPath {
			case "metadata.name":
				v = podName
			case "metadata.namespace":
				v = ns
			default:
				t.Fatalf("env %s from %s: the test does not know that field", e.Name, f.FieldRef.FieldPath)
			}
		} else if e.ValueFrom != nil {
			t.Fatalf("env %s: the test knows only fieldRef", e.Name)
		}
		args = append(args, "--env", e.Name+"="+v)
	}
	for _, m := range w.container.VolumeMounts {
		src := mountSource(t, dir, w, m, configMaps)
		opt := "ro"
		if !m.ReadOnly {
			opt = "rw"
		}
		args = append(args, "--volume", src+":"+m.MountPath+":"+opt)
	}
	args = append(args, ref)
	args = append(args, w.container.Args...)
	p.must(t, args...)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := p.run(context.Background(), "logs", podName)
			t.Logf("%s's log:\n%s", podName, logs)
		}
		p.run(context.Background(), "rm", "--force", "--time", "2", podName)
	})

	probe := w.container.ReadinessProbe
	if probe == nil || probe.HTTPGet == nil {
		t.Fatalf("Deployment %s has no HTTP readiness probe", w.deployment.Name)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d%s", probePort(t, w.container, probe.HTTPGet.Port), probe.HTTPGet.Path)
	if err := waitReady(t.Context(), p, podName, url, 90*time.Second); err != nil {
		t.Fatalf("%s (the chart's readiness probe): %v", url, err)
	}
	if b.program == "joulie-controller" {
		// Ready as a standby proves little: the replica holds the Lease
		// under its pod name, so it talked to the API server as its
		// ServiceAccount.
		waitLease(t, ns, podName)
		if err := waitReady(t.Context(), p, podName, url, 60*time.Second); err != nil {
			t.Fatalf("%s once leading: %v", url, err)
		}
	}
}

// mountSource writes the volume m mounts (a ConfigMap the chart renders)
// into dir and returns its path.
func mountSource(t *testing.T, dir string, w workload, m corev1.VolumeMount, configMaps map[string]corev1.ConfigMap) string {
	t.Helper()
	for _, v := range w.deployment.Spec.Template.Spec.Volumes {
		if v.Name != m.Name {
			continue
		}
		if v.ConfigMap == nil {
			t.Fatalf("volume %s of %s: the test mounts ConfigMaps only", v.Name, w.deployment.Name)
		}
		cm, ok := configMaps[v.ConfigMap.Name]
		if !ok {
			t.Fatalf("volume %s of %s: the chart renders no ConfigMap %s", v.Name, w.deployment.Name, v.ConfigMap.Name)
		}
		src := filepath.Join(dir, "volume-"+v.Name)
		if err := os.Mkdir(src, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range cm.Data {
			if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return src
	}
	t.Fatalf("%s mounts %s, which is no volume of its pod", w.deployment.Name, m.Name)
	return ""
}

func probePort(t *testing.T, c corev1.Container, port intstr.IntOrString) int32 {
	t.Helper()
	if port.Type == intstr.Int {
		return port.IntVal
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return p.ContainerPort
		}
	}
	t.Fatalf("the probe's port %q is none of the container's", port.StrVal)
	return 0
}

// waitReady polls url until it answers 200, failing early when the
// container has exited.
func waitReady(ctx context.Context, p *podman, name, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	last := "no answer"
	for {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if state, err := p.run(ctx, "inspect", "--format", "{{.State.Status}}", name); err == nil && strings.TrimSpace(state) != "running" {
			return fmt.Errorf("the container is %s (last answer: %s)", strings.TrimSpace(state), last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s: %s", timeout, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func waitLease(t *testing.T, ns, holder string) {
	t.Helper()
	kube := cp.AdminClient(t)
	deadline := time.Now().Add(60 * time.Second)
	for {
		leases, err := kube.CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range leases.Items {
			if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == holder {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Lease of %s is held by %s within a minute", ns, holder)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
