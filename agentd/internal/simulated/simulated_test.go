package simulated

import (
	"fmt"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/simulated/httpbackend"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// The configuration refuses exactly the base URLs the client refuses, so
// that a bad http.controlURL stops the start instead of failing every
// tick.
func TestConfigAcceptsTheURLsTheClientAccepts(t *testing.T) {
	for _, u := range []string{
		"http://sim:8080", "https://sim/{node}/", "http://sim/a/{node}", "http://u:p@sim",
		"sim:8080", "ftp://sim", "http://", "http:///x", "http://sim/?a=b", "http://sim/#x", "http://sim/?",
		"http://[::1", "://x", "http://sim/%zz", "http://{node}:8080/",
	} {
		cfg := config.Default()
		cfg.NodeName, cfg.Backend, cfg.HTTP.ControlURL = "node-1", joulie.EndpointHTTP, u
		verr := cfg.Validate()
		mine := verr == nil || !strings.Contains(verr.Error(), "http.controlURL")
		_, err := httpbackend.New(Endpoints(cfg.HTTP, cfg.NodeName))
		if theirs := err == nil; mine != theirs {
			t.Errorf("%q: config accepts %v (%v), httpbackend accepts %v (%v)", u, mine, verr, theirs, err)
		}
	}
}

func TestEndpointsCarryTheURLsAndTimeoutToBothHalves(t *testing.T) {
	cfg := config.Default()
	cfg.HTTP.TelemetryURL, cfg.HTTP.ControlURL = "http://sim/t/{node}", "http://sim/c/{node}"
	got := Endpoints(cfg.HTTP, "node-1")
	if got.Node != "node-1" || got.Telemetry.URL != cfg.HTTP.TelemetryURL || got.Control.URL != cfg.HTTP.ControlURL ||
		got.Telemetry.Timeout != joulie.DefaultEndpointTimeout || got.Control.Timeout != joulie.DefaultEndpointTimeout {
		t.Errorf("Endpoints = %+v", got)
	}
}

// TestOnlyTheDaemonsSeamImportsTheSimulator keeps the boundary this
// package draws: outside simulated/ itself, the one file of agentd that
// may import it is daemon/simulated.go, so a reader of the host path never
// meets the simulator.
func TestOnlyTheDaemonsSeamImportsTheSimulator(t *testing.T) {
	const self = "joulie.io/joulie/agentd/internal/simulated"
	out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}`,
		"joulie.io/joulie/agentd/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var files int
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		dir := fields[0]
		if strings.Contains(filepath.ToSlash(dir)+"/", "/agentd/internal/simulated/") {
			continue
		}
		for _, name := range fields[1:] {
			files++
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			seam := filepath.Base(dir) == "daemon" && name == "simulated.go"
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if (p == self || strings.HasPrefix(p, self+"/")) && !seam {
					t.Errorf("%s imports %s: only daemon/simulated.go may", filepath.Join(dir, name), p)
				}
			}
		}
	}
	if files < 50 {
		t.Fatalf("go list named only %d files of agentd:\n%s", files, out)
	}
}

func TestNetworkReadsTheMACAnnotation(t *testing.T) {
	for _, tc := range []struct {
		name, annotation string
		want             []string
	}{
		{"none", "", nil},
		{"one", "02:4A:00:00:00:01", []string{"02:4a:00:00:00:01"}},
		{"two with spaces", "02:4a:00:00:00:01, 02-4a-00-00-00-02", []string{"02:4a:00:00:00:01", "02:4a:00:00:00:02"}},
		{"a bad one is left out", "not-a-mac,02:4a:00:00:00:03", []string{"02:4a:00:00:00:03"}},
		{"a 20-byte InfiniBand address is left out", "00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:01", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for i, ni := range Network(tc.annotation) {
				if !ni.WakeOnLAN || ni.Name != fmt.Sprintf("sim%d", i) {
					t.Errorf("interface %d = %+v, want sim%d armed for Wake-on-LAN", i, ni, i)
				}
				got = append(got, ni.MAC)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("MACs = %v, want %v", got, tc.want)
			}
		})
	}
}
