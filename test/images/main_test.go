package images

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"joulie.io/joulie/test/harness"
)

const (
	repoRoot = "../.."
	chartDir = repoRoot + "/packaging/helm/joulie"
)

var (
	// cp is the control plane the images run against; nil when the
	// layouts were not given.
	cp *harness.ControlPlane
	// layouts is $JOULIE_IMAGES; programs is $JOULIE_IMAGE_PROGRAMS.
	layouts  string
	programs []string
	// ports are the controller's metrics port and the extender's port
	// the chart is rendered with: the containers share the host's network
	// with everything else on the machine, so they take free ports rather
	// than the chart's defaults.
	ports = map[string]int{}
)

func TestMain(m *testing.M) {
	layouts = os.Getenv("JOULIE_IMAGES")
	programs = strings.Fields(os.Getenv("JOULIE_IMAGE_PROGRAMS"))
	if layouts == "" {
		// go test ./... in test/ (make test-integration) passes by here:
		// every test skips, and no control plane is started for nothing.
		os.Exit(m.Run())
	}
	for _, key := range []string{"controller.metricsPort", "extender.port"} {
		p, err := freePort()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ports[key] = p
	}
	os.Exit(harness.RunSuite(m, harness.Options{Dir: os.Getenv("JOULIE_HARNESS_DIR")}, func(c *harness.ControlPlane) error {
		cp = c
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		helm, err := harness.PinnedHelm(repoRoot)
		if err != nil {
			return err
		}
		if err := c.InstallChart(ctx, helm, chartDir, harness.ChartRelease, portArgs()...); err != nil {
			return fmt.Errorf("install the Helm chart: %w", err)
		}
		return nil
	}))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portArgs() []string {
	var args []string
	for key, p := range ports {
		args = append(args, "--set", fmt.Sprintf("%s=%d", key, p))
	}
	return args
}

// need skips t unless make test-images gave the layouts, and reads them.
func need(t *testing.T) []built {
	t.Helper()
	if layouts == "" {
		t.Skip("JOULIE_IMAGES is not set: make test-images builds the images and runs these tests")
	}
	if len(programs) == 0 {
		t.Fatal("JOULIE_IMAGE_PROGRAMS is empty: make test-images sets it to the Makefile's IMAGE_PROGRAMS")
	}
	readOnce.Do(func() {
		for _, p := range programs {
			b, err := readBuilt(layouts, p)
			if err != nil {
				readErr = fmt.Errorf("read the layout of %s in %s: %w", p, layouts, err)
				return
			}
			builtImages = append(builtImages, b)
		}
	})
	if readErr != nil {
		t.Fatal(readErr)
	}
	return builtImages
}

// The layouts are read once: unpacking every layer of every platform is
// most of the static tests' time under the race detector.
var (
	readOnce    sync.Once
	builtImages []built
	readErr     error
)

// render is the chart rendered with args (and the tests' ports), split
// into its objects.
func render(t *testing.T, args ...string) []rendered {
	t.Helper()
	helm, err := harness.PinnedHelm(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	out, err := harness.RenderChart(t.Context(), helm, chartDir, harness.ChartRelease, append(portArgs(), args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var objs []rendered
	for _, doc := range bytes.Split(out, []byte("\n---")) {
		var r rendered
		if err := yaml.Unmarshal(doc, &r.meta); err != nil {
			t.Fatalf("rendered chart: %v\n%s", err, doc)
		}
		if r.meta.Kind == "" {
			continue
		}
		r.raw = doc
		objs = append(objs, r)
	}
	return objs
}

type rendered struct {
	meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	raw []byte
}

// chartAppVersion is Chart.yaml's appVersion, the chart's default tag.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c.AppVersion
}
