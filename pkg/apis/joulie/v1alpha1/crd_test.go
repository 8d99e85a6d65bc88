package v1alpha1

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	"sigs.k8s.io/yaml"
)

// crdDir is where `make generate` writes the CRDs the Helm chart installs.
const crdDir = "../../../../packaging/helm/joulie/crds"

// crd is the part of a CustomResourceDefinition these tests read.
type crd struct {
	Spec struct {
		Group string `json:"group"`
		Scope string `json:"scope"`
		Names struct {
			Kind   string `json:"kind"`
			Plural string `json:"plural"`
		} `json:"names"`
		Versions []struct {
			Name         string `json:"name"`
			Served       bool   `json:"served"`
			Storage      bool   `json:"storage"`
			Subresources *struct {
				Status *struct{} `json:"status"`
			} `json:"subresources"`
			PrinterColumns []struct {
				Name     string `json:"name"`
				JSONPath string `json:"jsonPath"`
			} `json:"additionalPrinterColumns"`
			Schema struct {
				OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// loadCRD reads the generated CRD of a plural resource and returns it with
// its v1alpha1 schema.
func loadCRD(t *testing.T, plural string) (crd, *spec.Schema) {
	t.Helper()
	path := filepath.Join(crdDir, GroupName+"_"+plural+".yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read generated CRD (run `make generate`): %v", err)
	}
	var c crd
	if err := yaml.UnmarshalStrict(raw, &c, yaml.DisallowUnknownFields); err != nil {
		// The CRD has many fields this struct does not model; only a plain
		// decode is meaningful here.
		if err := yaml.Unmarshal(raw, &c); err != nil {
			t.Fatalf("decode %s: %v", path, err)
		}
	}
	if len(c.Spec.Versions) != 1 || c.Spec.Versions[0].Name != SchemeGroupVersion.Version {
		t.Fatalf("%s: want exactly version %s, got %+v", path, SchemeGroupVersion.Version, c.Spec.Versions)
	}
	var s spec.Schema
	if err := json.Unmarshal(c.Spec.Versions[0].Schema.OpenAPIV3Schema, &s); err != nil {
		t.Fatalf("decode schema of %s: %v", path, err)
	}
	return c, &s
}

// property walks a dotted path of object properties ("spec.cpu.x") and
// array items ("[]") down a schema.
func property(t *testing.T, s *spec.Schema, path string) *spec.Schema {
	t.Helper()
	cur := s
	for _, part := range strings.Split(path, ".") {
		if part == "[]" {
			if cur.Items == nil || cur.Items.Schema == nil {
				t.Fatalf("%s: %q has no item schema", path, part)
			}
			cur = cur.Items.Schema
			continue
		}
		next, ok := cur.Properties[part]
		if !ok {
			t.Fatalf("%s: no property %q", path, part)
		}
		cur = &next
	}
	return cur
}

func enumOf(s *spec.Schema) []string {
	var out []string
	for _, v := range s.Enum {
		out = append(out, v.(string))
	}
	return out
}

func TestCRDsAreClusterScopedWithStatus(t *testing.T) {
	for _, tc := range []struct {
		plural, kind string
		status       bool
	}{
		{"nodehardwares", "NodeHardware", true},
		{"nodepowerprofiles", "NodePowerProfile", true},
		{"nodetwins", "NodeTwin", true},
		{"telemetryprofiles", "TelemetryProfile", false},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			c, _ := loadCRD(t, tc.plural)
			if c.Spec.Group != GroupName || c.Spec.Names.Kind != tc.kind || c.Spec.Scope != "Cluster" {
				t.Errorf("group/kind/scope = %s/%s/%s, want %s/%s/Cluster", c.Spec.Group, c.Spec.Names.Kind, c.Spec.Scope, GroupName, tc.kind)
			}
			v := c.Spec.Versions[0]
			if !v.Served || !v.Storage {
				t.Errorf("version served=%v storage=%v, want both", v.Served, v.Storage)
			}
			hasStatus := v.Subresources != nil && v.Subresources.Status != nil
			if hasStatus != tc.status {
				t.Errorf("status subresource = %v, want %v", hasStatus, tc.status)
			}
			if len(v.PrinterColumns) < 2 {
				t.Errorf("only %d printer columns; kubectl get would show too little", len(v.PrinterColumns))
			}
		})
	}
}

func TestCRDEnums(t *testing.T) {
	backends := []string{"none", "rapl", "dvfs", "amdsmi", "nvml", "hwmon", "http"}
	results := []string{"applied", "blocked", "error", "none"}
	for _, tc := range []struct {
		plural, path string
		want         []string
	}{
		{"nodepowerprofiles", "spec.profile", []string{"performance", "eco"}},
		{"nodepowerprofiles", "status.cpu.result", results},
		{"nodepowerprofiles", "status.gpu.result", results},
		{"nodepowerprofiles", "status.gpu.devices.[].result", results},
		{"nodepowerprofiles", "status.cpu.backend", backends},
		{"nodepowerprofiles", "status.gpu.backend", backends},
		{"nodehardwares", "status.cpu.control.backend", backends},
		{"nodehardwares", "status.gpu.control.available.[]", backends},
		{"nodehardwares", "status.cpu.exactness", []string{"exact", "proxy", "generic"}},
		{"nodehardwares", "status.gpu.exactness", []string{"exact", "proxy", "generic"}},
		{"nodehardwares", "status.quality", []string{"complete", "partial", "minimal"}},
		{"nodehardwares", "status.cpu.telemetry.source", []string{"none", "rapl", "nvml", "amdsmi", "hwmon", "http"}},
		{"nodetwins", "status.schedulableClass", []string{"performance", "eco", "draining"}},
		{"nodetwins", "status.powerMeasurement.source", []string{"agent", "kepler", "utilization", "static"}},
		{"telemetryprofiles", "spec.control.type", []string{"host", "http"}},
		{"telemetryprofiles", "spec.telemetry.type", []string{"host", "http"}},
	} {
		t.Run(tc.plural+"/"+tc.path, func(t *testing.T) {
			_, s := loadCRD(t, tc.plural)
			got := enumOf(property(t, s, tc.path))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("enum = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCRDRanges(t *testing.T) {
	pct := [2]float64{0, 100}
	for _, tc := range []struct {
		plural, path string
		min          float64
		max          *float64 // nil: no upper bound
	}{
		{"nodepowerprofiles", "spec.cpu.packagePowerCapWatts", 0, nil},
		{"nodepowerprofiles", "spec.cpu.packagePowerCapPctOfMax", pct[0], &pct[1]},
		{"nodepowerprofiles", "spec.gpu.powerCap.capWattsPerGpu", 0, nil},
		{"nodepowerprofiles", "spec.gpu.powerCap.capPctOfMax", pct[0], &pct[1]},
		{"nodepowerprofiles", "status.cpu.appliedCapWatts", 0, nil},
		{"nodepowerprofiles", "status.cpu.throttlePct", pct[0], &pct[1]},
		{"nodepowerprofiles", "status.measuredPower.nodePowerWatts", 0, nil},
		{"nodehardwares", "status.cpu.capRange.maxWatts", 0, nil},
		{"nodehardwares", "status.gpu.devices.[].capRange.minWatts", 0, nil},
		{"nodetwins", "status.predictedPowerHeadroomScore", pct[0], &pct[1]},
		{"nodetwins", "status.predictedCoolingStressScore", pct[0], &pct[1]},
		{"nodetwins", "status.predictedPsuStressScore", pct[0], &pct[1]},
		{"nodetwins", "status.hardwareDensityScore", pct[0], &pct[1]},
		{"nodetwins", "status.estimatedPUE", 1, nil},
		{"nodetwins", "status.powerMeasurement.nodeCappedPowerW", 0, nil},
	} {
		t.Run(tc.plural+"/"+tc.path, func(t *testing.T) {
			_, s := loadCRD(t, tc.plural)
			p := property(t, s, tc.path)
			if p.Minimum == nil || *p.Minimum != tc.min {
				t.Errorf("minimum = %v, want %v", p.Minimum, tc.min)
			}
			switch {
			case tc.max == nil && p.Maximum != nil:
				t.Errorf("maximum = %v, want none", *p.Maximum)
			case tc.max != nil && (p.Maximum == nil || *p.Maximum != *tc.max):
				t.Errorf("maximum = %v, want %v", p.Maximum, *tc.max)
			}
		})
	}
}

// TestCRDSchemaRejectsBadObjects validates whole objects against the
// generated schema, the way the API server's structural validation does,
// and checks that the message names the offending field.
func TestCRDSchemaRejectsBadObjects(t *testing.T) {
	for _, tc := range []struct {
		name, plural, object string
		wantErr              string // "" for a valid object
	}{
		{"eco profile with percentage caps", "nodepowerprofiles",
			`{"spec":{"profile":"eco","cpu":{"packagePowerCapPctOfMax":60},"gpu":{"powerCap":{"capPctOfMax":60,"capWattsPerGpu":420}}}}`, ""},
		{"unknown profile", "nodepowerprofiles",
			`{"spec":{"profile":"turbo"}}`, "spec.profile"},
		{"missing profile", "nodepowerprofiles",
			`{"spec":{"cpu":{"packagePowerCapWatts":200}}}`, "spec.profile"},
		{"cpu percentage over 100", "nodepowerprofiles",
			`{"spec":{"profile":"eco","cpu":{"packagePowerCapPctOfMax":150}}}`, "spec.cpu.packagePowerCapPctOfMax"},
		{"negative cpu watts", "nodepowerprofiles",
			`{"spec":{"profile":"eco","cpu":{"packagePowerCapWatts":-5}}}`, "spec.cpu.packagePowerCapWatts"},
		{"negative gpu percentage", "nodepowerprofiles",
			`{"spec":{"profile":"eco","gpu":{"powerCap":{"capPctOfMax":-1}}}}`, "spec.gpu.powerCap.capPctOfMax"},
		{"unknown control result", "nodepowerprofiles",
			`{"spec":{"profile":"eco"},"status":{"cpu":{"result":"maybe"}}}`, "status.cpu.result"},
		{"agent status with per-device results", "nodepowerprofiles",
			`{"spec":{"profile":"performance"},"status":{"observedGeneration":3,"cpu":{"backend":"rapl","result":"applied","appliedCapWatts":250,"devices":[{"id":"package-0","result":"applied","appliedCapWatts":250}]},"gpu":{"backend":"nvml","result":"blocked","message":"libnvidia-ml.so.1 not found"},"measuredPower":{"nodePowerWatts":812.5,"time":"2026-11-22T09:00:00Z"}}}`, ""},
		{"twin scores in range", "nodetwins",
			`{"status":{"schedulableClass":"draining","predictedPowerHeadroomScore":41.7,"predictedCoolingStressScore":31.3,"predictedPsuStressScore":60,"hardwareDensityScore":100,"estimatedPUE":1.4,"powerMeasurement":{"source":"static","measuredNodePowerW":300,"cpuCappedPowerW":200,"gpuCappedPowerW":400,"nodeCappedPowerW":600,"cpuTdpW":400,"gpuTdpW":800,"nodeTdpW":1200,"powerTrendWPerMin":-5.2},"lastUpdated":"2026-11-22T09:00:00Z"}}`, ""},
		{"headroom over 100", "nodetwins",
			`{"status":{"predictedPowerHeadroomScore":101}}`, "status.predictedPowerHeadroomScore"},
		{"unknown schedulable class", "nodetwins",
			`{"status":{"schedulableClass":"turbo"}}`, "status.schedulableClass"},
		{"PUE below 1", "nodetwins",
			`{"status":{"estimatedPUE":0.9}}`, "status.estimatedPUE"},
		{"unknown measurement source", "nodetwins",
			`{"status":{"powerMeasurement":{"source":"guess","measuredNodePowerW":1,"cpuCappedPowerW":1,"gpuCappedPowerW":1,"nodeCappedPowerW":1,"cpuTdpW":1,"gpuTdpW":1,"nodeTdpW":1,"powerTrendWPerMin":0}}}`, "status.powerMeasurement.source"},
		{"hardware with unknown backend", "nodehardwares",
			`{"status":{"cpu":{"control":{"backend":"magic"}}}}`, "status.cpu.control.backend"},
		{"hardware with negative sockets", "nodehardwares",
			`{"status":{"cpu":{"sockets":-1}}}`, "status.cpu.sockets"},
		{"http routing", "telemetryprofiles",
			`{"spec":{"nodeSelector":{"matchLabels":{"joulie.io/managed":"true"}},"control":{"type":"http","url":"http://sim:8080/{node}"}}}`, ""},
		{"routing to a non-http url", "telemetryprofiles",
			`{"spec":{"control":{"type":"http","url":"ftp://sim"}}}`, "spec.control.url"},
		{"unknown routing type", "telemetryprofiles",
			`{"spec":{"telemetry":{"type":"carrier-pigeon"}}}`, "spec.telemetry.type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := loadCRD(t, tc.plural)
			var obj map[string]any
			if err := json.Unmarshal([]byte(tc.object), &obj); err != nil {
				t.Fatalf("test object: %v", err)
			}
			res := validate.NewSchemaValidator(s, nil, "", strfmt.Default).Validate(obj)
			var msgs []string
			for _, e := range res.Errors {
				msgs = append(msgs, e.Error())
			}
			if tc.wantErr == "" {
				if len(msgs) > 0 {
					t.Fatalf("valid object rejected: %v", msgs)
				}
				return
			}
			if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, tc.wantErr) }) {
				t.Fatalf("want an error naming %s, got %v", tc.wantErr, msgs)
			}
		})
	}
}

// TestHTTPEndpointNeedsURL guards the CEL rule that the API server (not
// this validator) enforces; the harness tests run it for real.
func TestHTTPEndpointNeedsURL(t *testing.T) {
	_, s := loadCRD(t, "telemetryprofiles")
	raw, err := json.Marshal(property(t, s, "spec.control").Extensions["x-kubernetes-validations"])
	if err != nil || !strings.Contains(string(raw), "has(self.url)") {
		t.Fatalf("spec.control lacks the url-required rule: %s (%v)", raw, err)
	}
}
