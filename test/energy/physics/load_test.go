package physics

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestEmbeddedFileHoldsTheIssueFigures(t *testing.T) {
	f := Embedded()
	if got, want := f.Names(), []string{"default", "cpu-clock-bound", "hgx-power-states", "nominal", "sensitivity"}; !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	m := f.Base()
	want := []Point{{0, 128}, {0.1, 257}, {0.5, 410}, {1, 817}}
	if !slices.Equal(m.CPUNode.Points(), want) {
		t.Errorf("cpuNode points %v, want the SPECpower figures %v", m.CPUNode.Points(), want)
	}
	if g := m.GPUNode; g.GPUIdleWatts != 70 || g.GPUDynamicWatts != 630 {
		t.Errorf("GPU %v W idle + %v W dynamic, want 70 + 630", g.GPUIdleWatts, g.GPUDynamicWatts)
	}
	for b, s := range map[Boundness]float64{GPUCompute: 1.20, GPUMixed: 1.12, GPULow: 1} {
		if got := m.Class(b).StretchAtTableCap; got != s {
			t.Errorf("%s: stretch %v at the table cap, want %v", b, got, s)
		}
	}
	for b, beta := range map[Boundness]float64{GPULow: 0, CPUCompute: 1, CPUMemory: 0.2, CPULow: 0.3} {
		if got := m.Class(b).ClockSensitivity; got != beta {
			t.Errorf("%s: clock sensitivity %v, want %v", b, got, beta)
		}
	}
	if m.Name != "default" || m.Source != EmbeddedName || Sensitivity().Name != "sensitivity" {
		t.Errorf("names: %q from %q, %q", m.Name, m.Source, Sensitivity().Name)
	}
}

// Every number of the embedded file has a source: each block that holds
// numbers has a source field, or, for the classes' utilizations, the
// comment above them.
func TestEmbeddedFileNamesASourceForEveryBlock(t *testing.T) {
	text := string(embedded)
	for _, key := range []string{"cpuNode:", "gpuNode:", "host:", "capping:", "clock:", "powerStates:", "gpu-compute:", "gpu-mixed:", "gpu-low:", "cpu-compute:", "cpu-memory:", "cpu-low:"} {
		i := strings.Index(text, "\n"+key)
		if i < 0 {
			i = strings.Index(text, " "+key)
		}
		if i < 0 {
			t.Errorf("%s not found", key)
			continue
		}
		rest := text[i+len(key)+1:]
		if src := strings.Index(rest, "source:"); src < 0 || strings.Contains(rest[:src], "watts:") || strings.Contains(rest[:src], "Fraction:") || strings.Contains(rest[:src], "Watts:") {
			t.Errorf("block %s has numbers before its source", key)
		}
	}
}

func TestLoadReadsAFileLikeTheEmbeddedOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "physics.yaml")
	if err := os.WriteFile(path, embedded, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Embedded().Names() {
		got, err := f.Variant(name)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Embedded().Variant(name)
		g, w := *got, *want
		g.Source, w.Source = "", ""
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: loaded %+v, embedded %+v", name, g, w)
		}
		if got.Source != path {
			t.Errorf("%s: Source %q, want %q", name, got.Source, path)
		}
	}
	if _, err := f.Variant("pessimistic"); err == nil || !strings.Contains(err.Error(), "default, cpu-clock-bound, hgx-power-states, nominal, sensitivity") {
		t.Errorf("unknown variant: %v, want an error listing every variant", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

// minimal is a complete physics file with round numbers, and the base of
// the bad files below.
const minimal = `cpuNode:
  points:
    - {load: 0, watts: 100}
    - {load: 1, watts: 500}
gpuNode:
  host:
    points:
      - {load: 0, watts: 100}
      - {load: 1, watts: 300}
  gpuIdleWatts: 50
  gpuDynamicWatts: 350
capping:
  tableCapFraction: 0.6
  minCapFraction: 0.5
classes:
  gpu-compute: {utilization: 1, stretchAtTableCap: 1.4}
  gpu-mixed: {utilization: 0.8, stretchAtTableCap: 1.2}
  gpu-low: {utilization: 0.1, stretchAtTableCap: 1}
  cpu-compute: {utilization: 1, clockSensitivity: 1}
  cpu-memory: {utilization: 0.5, clockSensitivity: 0.2}
  cpu-low: {utilization: 0.2, clockSensitivity: 0.3}
clock:
  idleWatts: 0
  points: [{ghz: 1, watts: 10, seconds: 8}, {ghz: 2, watts: 20, seconds: 4}, {ghz: 4, watts: 40, seconds: 2}]
powerStates: {offWatts: 10, bootSeconds: 100, bootJoules: 10000, shutdownSeconds: 10, shutdownJoules: 1000, gpuDriverStartSeconds: 60}
`

func TestOverrideFileReplacesEveryNumber(t *testing.T) {
	f, err := Parse([]byte(minimal+`variants:
  hot:
    gpuNode: {gpuIdleWatts: 80}
    classes:
      gpu-mixed: {stretchAtTableCap: 1.3}
    cpuNode:
      points:
        - {load: 0, watts: 200}
        - {load: 0.5, watts: 260}
        - {load: 1, watts: 500}
`), "site.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := f.Base()
	if got := m.CPUNodeWatts(0.5, 1); got != 300 {
		t.Errorf("base CPU node at half load: %v W, want 300", got)
	}
	if got := m.Stretch(GPUCompute, m.GPUDevice(1, 1), 0.6); !near(got, 1.4) {
		t.Errorf("base stretch %v, want 1.4", got)
	}
	hot, err := f.Variant("hot")
	if err != nil {
		t.Fatal(err)
	}
	if got := hot.CPUNodeWatts(0.5, 1); got != 260 {
		t.Errorf("variant CPU node at half load: %v W, want 260 (its list replaces the base's)", got)
	}
	if hot.GPUNode.GPUIdleWatts != 80 || hot.GPUNode.GPUDynamicWatts != 350 {
		t.Errorf("variant GPU %+v, want idle 80 and the base's dynamic 350", hot.GPUNode)
	}
	if c := hot.Class(GPUMixed); c.StretchAtTableCap != 1.3 || c.Utilization != 0.8 {
		t.Errorf("variant gpu-mixed %+v, want stretch 1.3 and the base's utilization 0.8", c)
	}
	if m.GPUNode.GPUIdleWatts != 50 || m.Class(GPUMixed).StretchAtTableCap != 1.2 {
		t.Error("the variant changed the base model")
	}
}

// A variant that gives a class the other stretch key replaces the base's
// way for that class, rather than giving it both.
func TestVariantSwitchesAClassBetweenStretchAndSensitivity(t *testing.T) {
	f, err := Parse([]byte(minimal+`variants:
  switched:
    classes:
      gpu-compute: {clockSensitivity: 0.5}
      cpu-low: {stretchAtTableCap: 1}
`), "site.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.Variant("switched")
	if err != nil {
		t.Fatal(err)
	}
	// One 400 W GPU capped at 240 W: clock 190/350 on the table's k = 1.
	r := 190.0 / 350
	if c := m.Class(GPUCompute); c.ClockSensitivity != 0.5 || !near(c.StretchAtTableCap, 1+0.5*(1/r-1)) {
		t.Errorf("gpu-compute %+v, want beta 0.5 and stretch %v", c, 1+0.5*(1/r-1))
	}
	// A node at load 0.2 draws 180 W, under 300 W: beta 0.
	if c := m.Class(CPULow); c.ClockSensitivity != 0 || c.StretchAtTableCap != 1 {
		t.Errorf("cpu-low %+v, want beta 0 and stretch 1", c)
	}
	if c := f.Base().Class(GPUCompute); c.StretchAtTableCap != 1.4 {
		t.Errorf("the variant changed the base: %+v", c)
	}
}

func TestBadFilesAreRefusedWithFileLineAndKey(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old, new_ string // replace old by new_ in minimal; old "" appends new_
		want      []string
	}{
		{"unknown top-level key", "capping:", "cappin:",
			[]string{"bad.yaml:12:1: cappin: unknown key", "bad.yaml:1:1: capping: missing key"}},
		{"misspelt nested key", "  gpuIdleWatts: 50", "  gpuIdleWats: 50",
			[]string{"bad.yaml:10:3: gpuNode.gpuIdleWats: unknown key; the keys here are source, host, gpuIdleWatts, gpuDynamicWatts"}},
		{"missing key", "  minCapFraction: 0.5\n", "",
			[]string{"bad.yaml:13:3: capping.minCapFraction: missing key"}},
		{"number as text", "watts: 500}", "watts: lots}",
			[]string{"bad.yaml:4:24: cpuNode.points[1].watts: want a number, got \"lots\""}},
		{"null number", "gpuDynamicWatts: 350", "gpuDynamicWatts:",
			[]string{"gpuNode.gpuDynamicWatts: want a number, got nothing (null)"}},
		{"loads not increasing", "    - {load: 1, watts: 500}", "    - {load: 0.5, watts: 300}\n    - {load: 0.4, watts: 400}\n    - {load: 1, watts: 500}",
			[]string{"bad.yaml:5:14: cpuNode.points[2].load: 0.4 does not rise above the previous point's 0.5"}},
		{"power falling", "    - {load: 1, watts: 500}", "    - {load: 0.5, watts: 600}\n    - {load: 1, watts: 500}",
			[]string{"cpuNode.points[2].watts: 500 W is below the previous point's 600 W"}},
		{"curve not starting at idle", "{load: 0, watts: 100}\n    -", "{load: 0.1, watts: 100}\n    -",
			[]string{"bad.yaml:3:14: cpuNode.points[0].load: 0.1: the first point must be at load 0"}},
		{"curve not reaching full load", "{load: 1, watts: 300}", "{load: 0.9, watts: 300}",
			[]string{"gpuNode.host.points[1].load: 0.9: the last point must be at load 1"}},
		{"load out of range", "{load: 1, watts: 500}", "{load: 1.2, watts: 500}",
			[]string{"cpuNode.points[1].load: 1.2 must lie in [0,1]"}},
		{"one point", "    - {load: 1, watts: 500}\n", "",
			[]string{"bad.yaml:3:5: cpuNode.points: has 1 points"}},
		{"NaN watts", "watts: 500}", "watts: .nan}",
			[]string{"cpuNode.points[1].watts: NaN must be a number of watts"}},
		{"negative GPU idle", "gpuIdleWatts: 50", "gpuIdleWatts: -5",
			[]string{"bad.yaml:10:17: gpuNode.gpuIdleWatts: -5 must be a number of watts, 0 or more"}},
		{"utilization above 1", "gpu-low: {utilization: 0.1", "gpu-low: {utilization: 1.5",
			[]string{"bad.yaml:18:26: classes.gpu-low.utilization: 1.5 must lie in [0,1]"}},
		{"stretch below 1", "stretchAtTableCap: 1.4}", "stretchAtTableCap: 0.9}",
			[]string{"classes.gpu-compute.stretchAtTableCap: 0.9 must be 1 or more"}},
		{"table cap at 1", "tableCapFraction: 0.6", "tableCapFraction: 1",
			[]string{"capping.tableCapFraction: 1 must lie in (0,1)"}},
		{"floor above the table cap", "minCapFraction: 0.5", "minCapFraction: 0.7",
			[]string{"capping.minCapFraction: 0.7 is above tableCapFraction 0.6"}},
		{"floor below idle", "minCapFraction: 0.5", "minCapFraction: 0.1",
			[]string{"bad.yaml:14:19: capping.minCapFraction: 0.1 × cpuNode's maximum 500 W = 50 W is below its idle draw 100 W",
				"0.1 × a GPU's maximum 400 W = 40 W is below its idle draw 50 W"}},
		{"unknown class", "  cpu-low:", "  cpu-idle:",
			[]string{"bad.yaml:21:3: classes.cpu-idle: unknown key; the keys here are gpu-compute, gpu-mixed, gpu-low, cpu-compute, cpu-memory, cpu-low",
				"classes.cpu-low: missing key"}},
		{"duplicate key", "capping:\n", "capping:\n  tableCapFraction: 0.5\n",
			[]string{"bad.yaml:14:3: capping.tableCapFraction: duplicate key"}},
		{"alias", "gpuDynamicWatts: 350", "gpuDynamicWatts: &w 350\n  gpuIdleWattz: *w",
			[]string{"gpuNode.gpuIdleWattz: unknown key"}},
		{"text that is a number", "", "description: 42\n",
			[]string{"description: want text, got \"42\"; quote it"}},
		{"list instead of block", "capping:\n  tableCapFraction: 0.6\n  minCapFraction: 0.5\n", "capping: [0.6, 0.5]\n",
			[]string{"bad.yaml:12:10: capping: want a block of keys, got a list"}},
		{"variant with an unknown key", "", "variants:\n  hot:\n    cpuNode: {pointz: []}\n",
			[]string{"bad.yaml:28:15: variants.hot.cpuNode.pointz: unknown key"}},
		{"variant with a bad value", "", "variants:\n  hot:\n    gpuNode:\n      gpuIdleWatts: -1\n",
			[]string{"bad.yaml:29:21: variants.hot.gpuNode.gpuIdleWatts: -1 must be a number of watts"}},
		{"variant breaking a kept value", "", "variants:\n  hot:\n    capping: {minCapFraction: 0.8}\n",
			[]string{"variants.hot.capping.minCapFraction: 0.8 is above tableCapFraction 0.6"}},
		{"variant whose curve breaks the base's floor", "", "variants:\n  hot:\n    cpuNode:\n      points: [{load: 0, watts: 100}, {load: 1, watts: 150}]\n",
			[]string{"bad.yaml:14:19: capping.minCapFraction (kept by variants.hot from the base): 0.5 × cpuNode's maximum 150 W = 75 W is below its idle draw 100 W"}},
		{"variant changing a block around a kept value", "", "variants:\n  hot:\n    capping: {tableCapFraction: 0.4}\n",
			[]string{"bad.yaml:14:19: capping.minCapFraction (kept by variants.hot from the base): 0.5 is above tableCapFraction 0.4"}},
		{"variant named default", "", "variants:\n  default: {}\n",
			[]string{"bad.yaml:27:3: variants.default: a variant needs a name other than \"default\""}},
		{"duplicate variant after a bad one", "", "variants:\n  hot: {gpuNode: {gpuIdleWatts: -1}}\n  hot: {}\n",
			[]string{"variants.hot.gpuNode.gpuIdleWatts: -1 must be", "bad.yaml:28:3: variants.hot: duplicate variant"}},
		{"two variants blocks", "", "variants: {}\nvariants: {}\n",
			[]string{"bad.yaml:27:1: variants: duplicate key"}},
		{"variants not a block", "", "variants: [hot]\n",
			[]string{"bad.yaml:26:11: variants: want a block of named variants"}},
		{"aliases refused", "", "variants:\n  a: &a {}\n  b: *a\n",
			[]string{"variants.b: anchors and aliases are not supported"}},
		{"second document", "", "---\nextra: doc\n",
			[]string{"bad.yaml:26:1: the file holds more than one YAML document"}},
		{"syntax error", "capping:", "capping: : :",
			[]string{"bad.yaml: yaml: line 12"}},
		{"clock with two points", ", {ghz: 4, watts: 40, seconds: 2}]", "]",
			[]string{"bad.yaml:24:11: clock.points: has 2 points; give at least 3"}},
		{"clocks not rising", "{ghz: 2,", "{ghz: 0.5,",
			[]string{"bad.yaml:24:51: clock.points[1].ghz: 0.5 does not rise above the previous point's 1"}},
		{"clock watts at idle", "watts: 20,", "watts: 0,",
			[]string{"bad.yaml:24:61: clock.points[1].watts: 0 must be a number of watts above idleWatts 0"}},
		{"clock seconds negative", "seconds: 4}", "seconds: -4}",
			[]string{"bad.yaml:24:74: clock.points[1].seconds: -4 must be a number of seconds above 0"}},
		{"clock idle NaN", "idleWatts: 0", "idleWatts: .nan",
			[]string{"bad.yaml:23:14: clock.idleWatts: NaN must be a number of watts"}},
		{"runtime rising with the clock", "seconds: 8}, {ghz: 2, watts: 20, seconds: 4}, {ghz: 4, watts: 40, seconds: 2}",
			"seconds: 2}, {ghz: 2, watts: 20, seconds: 4}, {ghz: 4, watts: 40, seconds: 8}",
			[]string{"bad.yaml:24:11: clock.points: the fitted time exponent a = -1 is not above 0"}},
		{"clock point with an unknown key", "seconds: 4}", "secs: 4}",
			[]string{"clock.points[1].secs: unknown key; the keys here are ghz, watts, seconds", "clock.points[1].seconds: missing key"}},
		{"no clock block", "clock:\n  idleWatts: 0\n  points: [{ghz: 1, watts: 10, seconds: 8}, {ghz: 2, watts: 20, seconds: 4}, {ghz: 4, watts: 40, seconds: 2}]\n", "",
			[]string{"bad.yaml:1:1: clock: missing key"}},
		{"class with both stretch keys", "stretchAtTableCap: 1}", "stretchAtTableCap: 1, clockSensitivity: 0}",
			[]string{"bad.yaml:18:12: classes.gpu-low: give exactly one of stretchAtTableCap (measured) and clockSensitivity (β); it gives both"}},
		{"class with neither stretch key", "{utilization: 0.2, clockSensitivity: 0.3}", "{utilization: 0.2}",
			[]string{"bad.yaml:21:12: classes.cpu-low: give exactly one of stretchAtTableCap (measured) and clockSensitivity (β); it gives neither"}},
		{"clock sensitivity above 1", "clockSensitivity: 0.2}", "clockSensitivity: 1.5}",
			[]string{"bad.yaml:20:52: classes.cpu-memory.clockSensitivity: 1.5 must lie in [0,1]"}},
		{"a stretch where the table cap does not bind", "stretchAtTableCap: 1}", "stretchAtTableCap: 1.05}",
			[]string{"bad.yaml:18:50: classes.gpu-low.stretchAtTableCap: 1.05, but the class's device (natural 85 W) stays under the table cap (0.6 × 400 W)"}},
		{"a stretch beyond a clock-bound job's", "stretchAtTableCap: 1.4}", "stretchAtTableCap: 3}",
			[]string{"classes.gpu-compute.stretchAtTableCap: 3 would make the class 2.37 times as clock-sensitive as a clock-bound job"}},
		{"off above idle", "offWatts: 10", "offWatts: 150",
			[]string{"bad.yaml:25:25: powerStates.offWatts: 150 W is not below the lowest idle draw of the nodes, 100 W"}},
		{"boot of no time", "bootSeconds: 100", "bootSeconds: 0",
			[]string{"bad.yaml:25:42: powerStates.bootSeconds: 0 must be a number of seconds above 0"}},
		{"boot energy NaN", "bootJoules: 10000", "bootJoules: .nan",
			[]string{"bad.yaml:25:59: powerStates.bootJoules: NaN must be a number of joules above 0"}},
		{"power states missing a key", ", gpuDriverStartSeconds: 60}", "}",
			[]string{"powerStates.gpuDriverStartSeconds: missing key"}},
		{"variant with a one-point clock", "", "variants:\n  hot:\n    clock: {points: [{ghz: 1, watts: 10, seconds: 1}]}\n",
			[]string{"bad.yaml:28:21: variants.hot.clock.points: has 1 points; give at least 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := minimal + tc.new_
			if tc.old != "" {
				if !strings.Contains(minimal, tc.old) {
					t.Fatalf("%q is not in the minimal file", tc.old)
				}
				text = strings.Replace(minimal, tc.old, tc.new_, 1)
			}
			_, err := Parse([]byte(text), "bad.yaml")
			if err == nil {
				t.Fatalf("accepted:\n%s", text)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
		})
	}
}

func TestEmptyAndNonBlockFilesAreRefused(t *testing.T) {
	for text, want := range map[string]string{
		"":           "e.yaml: the file is empty",
		"# only\n":   "e.yaml: the file is empty",
		"- a\n- b\n": "e.yaml:1:1: the file must be a block of keys, not a list",
		"hello\n":    "e.yaml:1:1: the file must be a block of keys, not \"hello\"",
	} {
		if _, err := Parse([]byte(text), "e.yaml"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}
