package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// PinnedHelm is the helm the Makefile builds: $JOULIE_HELM when make runs
// the tests, else the path `make print-helm` gives in repoRoot. Nothing
// that installs the chart can run without it, so a missing helm is an
// error that says what to do.
func PinnedHelm(repoRoot string) (string, error) {
	path := os.Getenv("JOULIE_HELM")
	if path == "" {
		cmd := exec.Command("make", "-s", "--no-print-directory", "-C", repoRoot, "print-helm")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("ask the Makefile where helm is (make print-helm): %w\n%s", err, stderr.String())
		}
		path = strings.TrimSpace(string(out))
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("helm is not built at %s: run `make tools` in the repository's root (it builds the pinned helm once)", path)
		}
		return "", err
	}
	return path, nil
}

// RenderChart runs helm template on chart for release in
// ControllerNamespace, without the CRDs, and returns the manifests.
func RenderChart(ctx context.Context, helm, chart, release string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, helm, append([]string{"template", release, chart,
		"--namespace", ControllerNamespace}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	return out, nil
}

// InstallChart installs chart as release with helm's values args: its
// CRDs first (waiting until they are served), then the rest, by
// server-side apply.
func (cp *ControlPlane) InstallChart(ctx context.Context, helm, chart, release string, args ...string) error {
	manifests, err := RenderChart(ctx, helm, chart, release, args...)
	if err != nil {
		return err
	}
	if err := cp.ApplyCRDs(ctx, filepath.Join(chart, "crds")); err != nil {
		return fmt.Errorf("install the chart's CRDs: %w", err)
	}
	if err := cp.Apply(ctx, manifests); err != nil {
		return fmt.Errorf("install the chart: %w", err)
	}
	return nil
}

// ChartRelease is the release name tests install the chart as; the
// object names they look up follow from it.
const ChartRelease = "joulie"
