package catalog

import (
	"strings"
	"testing"
)

// A small valid catalog that the error cases below break one rule at a
// time. Its figures are test data, not vendor figures.
const (
	testCPUHead = `
cpu:
  densityReference: acme-9654
  families:
    - id: acme-9004
      vendor: AMD
      name: Acme 9004
      requireAny: [epyc]
      modelPatterns: ["9##4*"]
      source: test
  models:
    - id: acme-9654
      family: acme-9004
      name: AMD EPYC 9654
      aliases: ["AMD EPYC 9654 96-Core Processor"]
      cores: 96
      threads: 192
      baseMHz: 2400
      boostMHz: 3700
      tdpWatts: 360
      capMinWatts: 320
      capMaxWatts: 400
    - id: acme-9554
      family: acme-9004
      name: AMD EPYC 9554
      cores: 64
      threads: 128
      baseMHz: 3100
      boostMHz: 3750
      tdpWatts: 360
      capMinWatts: 300
      capMaxWatts: 400
`
	testCPUGeneric = `  generic:
    - id: generic-x86
      vendor: x86
      name: Generic x86
      cores: 16
      threads: 32
      baseMHz: 2000
      boostMHz: 3500
      tdpWatts: 150
      capMinWatts: 75
      capMaxWatts: 150
      source: test
`
	testGPU = `gpu:
  densityReference: acme-h100
  families:
    - id: acme-hopper
      vendor: NVIDIA
      name: Acme Hopper
      modelPatterns: ["h100"]
      source: hopper datasheet
  models:
    - id: acme-h100
      family: acme-hopper
      name: NVIDIA H100 SXM
      aliases: ["NVIDIA H100 80GB HBM3"]
      memoryGiB: 80
      tdpWatts: 700
      capMinWatts: 200
      capMaxWatts: 700
      fp16TFLOPS: 989.5
  generic:
    - id: generic-gpu
      vendor: any
      name: Generic GPU
      memoryGiB: 32
      tdpWatts: 300
      capMinWatts: 150
      capMaxWatts: 300
      fp16TFLOPS: 180
      source: test
`
	testCatalog = testCPUHead + testCPUGeneric + testGPU
)

func TestParseSmallCatalog(t *testing.T) {
	c, err := Parse([]byte(testCatalog))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	e, ex := c.ResolveCPU("AMD EPYC 9554 64-Core Processor")
	if e.ID != "acme-9554" || ex != ExactnessExact {
		t.Errorf("ResolveCPU = %s, %s; want acme-9554, exact", e.ID, ex)
	}
	if e.Vendor != "AMD" || e.Source != "test" || e.Family != "acme-9004" {
		t.Errorf("the model did not inherit vendor, source and family: %+v", e)
	}
	if want := 0.861; e.Density != want { // 64 × 3100 / (96 × 2400), rounded
		t.Errorf("density = %v, want %v", e.Density, want)
	}
	if g, ex := c.ResolveGPU("NVIDIA L4"); g.ID != "generic-gpu" || ex != ExactnessGeneric || g.Density != 0.182 {
		t.Errorf("ResolveGPU(NVIDIA L4) = %s, %s, density %v", g.ID, ex, g.Density)
	}
}

// Idle figures are the class's idleFractionOfTdp × TDP for models; generic
// entries, and a class without the fraction, have none.
func TestParseIdleFigures(t *testing.T) {
	withCPU := strings.Replace(testCatalog, "  densityReference: acme-9654\n", "  densityReference: acme-9654\n  idleFractionOfTdp: 0.3\n", 1)
	c, err := Parse([]byte(withCPU))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if e, _ := c.ResolveCPU("acme-9654"); e.IdleWatts != 108 { // 0.3 × 360
		t.Errorf("acme-9654 idle %v W, want 108", e.IdleWatts)
	}
	if e, _ := c.ResolveCPU("Pentium"); !e.Generic || e.IdleWatts != 0 {
		t.Errorf("generic CPU %s idle %v W, want none", e.ID, e.IdleWatts)
	}
	if g, _ := c.ResolveGPU("NVIDIA H100 SXM"); g.IdleWatts != 0 {
		t.Errorf("GPU idle %v W without a GPU idleFractionOfTdp, want none", g.IdleWatts)
	}
	for _, bad := range []string{"1", "-0.1", "1.5"} {
		broken := strings.Replace(withCPU, "idleFractionOfTdp: 0.3", "idleFractionOfTdp: "+bad, 1)
		if _, err := Parse([]byte(broken)); err == nil || !strings.Contains(err.Error(), "cpu idleFractionOfTdp must lie between 0 and 1") {
			t.Errorf("idleFractionOfTdp %s: error %v", bad, err)
		}
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name     string
		old, new string // the one edit that breaks the catalog
		want     []string
	}{
		{"unknown key", "      cores: 96\n", "      cores: 96\n      coreCount: 96\n",
			[]string{`unknown field "coreCount"`}},
		{"repeated key", "      cores: 96\n", "      cores: 96\n      cores: 95\n",
			[]string{`"cores" already set`}},
		{"vendor on a model, which takes its family's", "      name: AMD EPYC 9554\n", "      name: AMD EPYC 9554\n      vendor: AMD\n",
			[]string{`unknown field "vendor"`}},
		{"fractional core count", "cores: 64", "cores: 64.5",
			[]string{"cannot unmarshal number 64.5"}},
		{"duplicate id", "id: acme-9554", "id: acme-9654",
			[]string{`cpu "acme-9654": duplicate id`}},
		{"id that is no label value", "id: acme-9554", "id: Acme_9554",
			[]string{`cpu "Acme_9554": id must be lower-case letters, digits and dashes`}},
		{"alias that another entry already owns", "      name: AMD EPYC 9554\n",
			"      name: AMD EPYC 9554\n      aliases: [\"AMD-EPYC-9654\"]\n",
			[]string{`cpu "acme-9554": alias "AMD-EPYC-9654" matches the same strings as entry "acme-9654"`}},
		{"alias listed twice", `aliases: ["AMD EPYC 9654 96-Core Processor"]`,
			`aliases: ["AMD EPYC 9654 96-Core Processor", "AMD EPYC 9654 96-Core Processor"]`,
			[]string{`cpu "acme-9654": alias "AMD EPYC 9654 96-Core Processor" is listed twice`}},
		{"alias that is only noise", `aliases: ["NVIDIA H100 80GB HBM3"]`, `aliases: ["NVIDIA H100 80GB HBM3", "NVIDIA"]`,
			[]string{`gpu "acme-h100": alias "NVIDIA" has nothing left to match once normalized`}},
		{"zero TDP", "tdpWatts: 700", "tdpWatts: 0",
			[]string{`gpu "acme-h100": tdpWatts must be positive, got 0`}},
		{"negative cap minimum", "capMinWatts: 75", "capMinWatts: -5",
			[]string{`cpu "generic-x86": capMinWatts must be positive, got -5`}},
		{"cap minimum above maximum", "capMinWatts: 300", "capMinWatts: 450",
			[]string{`cpu "acme-9554": capMinWatts 450 is above capMaxWatts 400`}},
		{"TDP outside the cap range", "capMaxWatts: 700", "capMaxWatts: 600",
			[]string{`gpu "acme-h100": tdpWatts 700 lies outside the cap range 200..600`}},
		{"fewer threads than cores", "threads: 192", "threads: 48",
			[]string{`cpu "acme-9654": threads 48 is below cores 96`}},
		{"no cores", "cores: 16", "cores: 0",
			[]string{`cpu "generic-x86": cores must be positive, got 0`}},
		{"boost below base", "boostMHz: 3700", "boostMHz: 2000",
			[]string{`cpu "acme-9654": boostMHz 2000 is below baseMHz 2400`}},
		{"no memory", "memoryGiB: 80", "memoryGiB: 0",
			[]string{`gpu "acme-h100": memoryGiB must be positive, got 0`}},
		{"negative throughput", "fp16TFLOPS: 989.5", "fp16TFLOPS: -1",
			[]string{`gpu "acme-h100": fp16TFLOPS must be positive, got -1`}},
		{"no source on entry or family", "      source: hopper datasheet\n", "",
			[]string{`gpu "acme-h100": source is missing`}},
		{"undefined family", "family: acme-9004\n      name: AMD EPYC 9554", "family: acme-9005\n      name: AMD EPYC 9554",
			[]string{`cpu "acme-9554": family "acme-9005" is not defined`}},
		{"name outside its family's patterns", "name: AMD EPYC 9554", "name: AMD EPYC 7554",
			[]string{`cpu "acme-9554": name "AMD EPYC 7554" has no word matching the modelPatterns of family "acme-9004"`}},
		{"malformed pattern", `modelPatterns: ["9##4*"]`, `modelPatterns: ["9*#4"]`,
			[]string{`cpu family "acme-9004": modelPatterns "9*#4": '*' may only end a pattern`}},
		{"pattern in capitals", `modelPatterns: ["h100"]`, `modelPatterns: ["H100"]`,
			[]string{`gpu family "acme-hopper": modelPatterns "H100": byte 'H' is not a lower-case letter`}},
		{"family without patterns", `modelPatterns: ["h100"]`, `modelPatterns: []`,
			[]string{`gpu family "acme-hopper": modelPatterns is empty`}},
		{"requireAny that is no word", "requireAny: [epyc]", "requireAny: [EPYC]",
			[]string{`cpu family "acme-9004": requireAny "EPYC" must be one lower-case word`}},
		{"duplicate family", "    - id: acme-hopper\n", "    - id: acme-hopper\n      vendor: NVIDIA\n      name: again\n      modelPatterns: [\"h200\"]\n    - id: acme-hopper\n",
			[]string{`gpu family "acme-hopper": duplicate id`}},
		{"family without models", "    - id: acme-hopper\n", "    - id: acme-ampere\n      vendor: NVIDIA\n      name: Acme Ampere\n      modelPatterns: [\"a100\"]\n      source: test\n    - id: acme-hopper\n",
			[]string{`gpu family "acme-ampere" has no models`}},
		{"missing density reference", "  densityReference: acme-9654\n", "",
			[]string{"cpu densityReference is missing"}},
		{"density reference to nothing", "densityReference: acme-h100", "densityReference: acme-h200",
			[]string{`gpu densityReference "acme-h200" names no model`}},
		{"density reference to a generic entry", "densityReference: acme-9654", "densityReference: generic-x86",
			[]string{`cpu densityReference "generic-x86" names no model`}},
		{"no generic entries", testCPUGeneric, "",
			[]string{"cpu has no generic entries"}},
		{"catch-all not last", testCPUGeneric, testCPUGeneric + strings.ReplaceAll(testCPUGeneric[len("  generic:\n"):], "id: generic-x86", "id: generic-xeon\n      requireAny: [xeon]"),
			[]string{`cpu "generic-x86": requireAny is empty, but only the last generic entry may be the catch-all`,
				`cpu "generic-xeon": the last generic entry must have no requireAny`}},
		{"generic without vendor", "      vendor: any\n", "",
			[]string{`gpu "generic-gpu": vendor is missing`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := strings.Count(testCatalog, tt.old); n != 1 {
				t.Fatalf("the edit's old text occurs %d times in the test catalog, want once", n)
			}
			_, err := Parse([]byte(strings.Replace(testCatalog, tt.old, tt.new, 1)))
			if err == nil {
				t.Fatal("Parse accepted the broken catalog")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestParseReportsEveryValidationProblem(t *testing.T) {
	broken := strings.NewReplacer(
		"threads: 192", "threads: 48",
		"memoryGiB: 80", "memoryGiB: 0",
	).Replace(testCatalog)
	_, err := Parse([]byte(broken))
	if err == nil {
		t.Fatal("Parse accepted the broken catalog")
	}
	for _, w := range []string{`cpu "acme-9654": threads 48`, `gpu "acme-h100": memoryGiB must be positive`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not mention %q:\n%v", w, err)
		}
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	for _, data := range []string{"", "cpu: [", "just text", "cpu: {}\ngpu: {}\n"} {
		if _, err := Parse([]byte(data)); err == nil {
			t.Errorf("Parse(%q) succeeded", data)
		}
	}
}
