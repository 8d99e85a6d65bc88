package httpbackend

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDecodeTelemetryReadsEveryField(t *testing.T) {
	got, err := DecodeTelemetry(readTestdata(t, "telemetry.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Node != "node-a" || !got.Time.Equal(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("node/time = %q %v", got.Node, got.Time)
	}
	if got.NodePowerWatts == nil || *got.NodePowerWatts != 1710.5 {
		t.Errorf("nodePowerWatts = %v", got.NodePowerWatts)
	}
	cpu := got.CPU
	if cpu == nil || len(cpu.PackagePowerWatts) != 2 || cpu.CapWatts != 250 || cpu.MinWattsPerPackage != 90 ||
		cpu.MaxWattsPerPackage != 350 || cpu.ThrottlePct != 10 {
		t.Fatalf("cpu = %+v", cpu)
	}
	if cpu.HottestPackageWatts() != 182 || cpu.TotalWatts() != 358.5 {
		t.Errorf("hottest %g total %g", cpu.HottestPackageWatts(), cpu.TotalWatts())
	}
	if len(got.GPUs) != 2 || got.GPUs[0].Index != 0 || got.GPUs[1].Index != 1 {
		t.Fatalf("gpus not sorted by index: %+v", got.GPUs)
	}
	g := got.GPUs[0]
	if g.UUID != "GPU-0000" || g.Name != "NVIDIA H100 80GB HBM3" || g.PCIBusID != "0000:17:00.0" ||
		g.PowerWatts != 402.5 || g.CapWatts != 700 || g.MinWatts != 200 || g.MaxWatts != 700 ||
		g.DefaultWatts != 700 || g.EnergyJoules == nil || *g.EnergyJoules != 1.2e7 {
		t.Errorf("gpu 0 = %+v", g)
	}
	if g1 := got.GPUs[1]; g1.DefaultWatts != g1.MaxWatts || g1.EnergyJoules != nil {
		t.Errorf("gpu 1 defaults: %+v", g1)
	}
	pg := got.PowerGPUs()
	if len(pg) != 2 || !pg[0].HasPower || !pg[0].HasEnergy || pg[1].HasEnergy || pg[0].UUID != "GPU-0000" {
		t.Errorf("PowerGPUs = %+v", pg)
	}
}

func TestMeasuredWattsSumsWhenTheNodeTotalIsAbsent(t *testing.T) {
	tel := &Telemetry{
		CPU:  &CPUTelemetry{PackagePowerWatts: []float64{100, 120}},
		GPUs: []GPUTelemetry{{PowerWatts: 300}, {PowerWatts: 250}},
	}
	if got := tel.MeasuredWatts(); got != 770 {
		t.Errorf("sum = %g, want 770", got)
	}
	total := 900.0
	tel.NodePowerWatts = &total
	if got := tel.MeasuredWatts(); got != 900 {
		t.Errorf("reported total = %g, want 900", got)
	}
}

// valid is a minimal good telemetry body with fragments to splice.
const validHead = `{"apiVersion":"joulie.io/http-backend/v1","node":"n1","time":"2026-03-01T12:00:00Z"`

func gpuJSON(i int, extra string) string {
	idx := string(rune('0' + i))
	return `{"index":` + idx + `,"uuid":"GPU-` + idx + `","powerWatts":100,"capWatts":300,"minWatts":100,"maxWatts":400` + extra + `}`
}

func TestDecodeTelemetryNamesTheBadField(t *testing.T) {
	threeGPUs := func(third string) string {
		return validHead + `,"gpus":[` + gpuJSON(0, "") + `,` + gpuJSON(1, "") + `,` + third + `]}`
	}
	cpu := func(body string) string { return validHead + `,"cpu":{` + body + `}}` }
	const goodCPU = `"packagePowerWatts":[100],"capWatts":200,"minWattsPerPackage":50,"maxWattsPerPackage":300,"throttlePct":0`
	cases := []struct {
		name, body, want string
	}{
		{"gpu power is a string", threeGPUs(`{"index":2,"uuid":"GPU-2","powerWatts":"many","capWatts":300,"minWatts":100,"maxWatts":400}`),
			"field gpus[2].powerWatts: not a number (got a string)"},
		{"gpu power negative", threeGPUs(`{"index":2,"uuid":"GPU-2","powerWatts":-1,"capWatts":300,"minWatts":100,"maxWatts":400}`),
			"field gpus[2].powerWatts: -1 W is outside 0..1e+06 W"},
		{"gpu power absurd", threeGPUs(`{"index":2,"uuid":"GPU-2","powerWatts":1e400,"capWatts":300,"minWatts":100,"maxWatts":400}`),
			"field gpus[2].powerWatts: number 1e400 is out of range"},
		{"gpu cap missing", threeGPUs(`{"index":2,"uuid":"GPU-2","powerWatts":1,"minWatts":100,"maxWatts":400}`),
			"field gpus[2].capWatts: missing"},
		{"gpu cap null", threeGPUs(`{"index":2,"uuid":"GPU-2","powerWatts":1,"capWatts":null,"minWatts":100,"maxWatts":400}`),
			"field gpus[2].capWatts: missing"},
		{"gpu field misspelt", threeGPUs(gpuJSON(2, `,"defaultWatt":300`)),
			"field gpus[2].defaultWatt: unknown field"},
		{"gpu range inverted", threeGPUs(`{"index":2,"uuid":"GPU-2","powerWatts":1,"capWatts":300,"minWatts":500,"maxWatts":400}`),
			"field gpus[2].minWatts: 500 W is above maxWatts 400 W"},
		{"gpu index repeated", threeGPUs(`{"index":1,"uuid":"GPU-9","powerWatts":1,"capWatts":300,"minWatts":100,"maxWatts":400}`),
			"field gpus[2].index: index 1 appears twice"},
		{"gpu uuid repeated", threeGPUs(`{"index":2,"uuid":"GPU-1","powerWatts":1,"capWatts":300,"minWatts":100,"maxWatts":400}`),
			`field gpus[2].uuid: uuid "GPU-1" appears twice`},
		{"gpu index fractional", threeGPUs(`{"index":2.5,"uuid":"GPU-2","powerWatts":1,"capWatts":300,"minWatts":100,"maxWatts":400}`),
			"field gpus[2].index: not a whole number: 2.5"},
		{"gpu not an object", threeGPUs(`7`), "field gpus[2]: not an object (got a number)"},
		{"gpus not an array", validHead + `,"gpus":{}}`, "field gpus: not an array (got an object)"},
		{"gpu energy a string", threeGPUs(`{"index":2,"uuid":"GPU-2","powerWatts":1,"capWatts":300,"minWatts":100,"maxWatts":400,"energyJoules":"1"}`),
			"field gpus[2].energyJoules: not a number (got a string)"},
		{"gpu index out of range", threeGPUs(`{"index":256,"uuid":"GPU-2","powerWatts":1,"capWatts":300,"minWatts":100,"maxWatts":400}`),
			"field gpus[2].index: 256 is outside 0..255"},
		{"gpu null", threeGPUs(`null`), "field gpus[2]: not an object (got null)"},
		{"cpu package reading null", cpu(`"packagePowerWatts":[100,null],"capWatts":200,"minWattsPerPackage":50,"maxWattsPerPackage":300,"throttlePct":0`),
			"field cpu.packagePowerWatts[1]: not a number (got null)"},
		{"too many packages", cpu(`"packagePowerWatts":[` + strings.Repeat("1,", MaxPackages) + `1],"capWatts":200,"minWattsPerPackage":50,"maxWattsPerPackage":300,"throttlePct":0`),
			"field cpu.packagePowerWatts: 65 entries, at most 64 allowed"},
		{"node not a string", `{"apiVersion":"joulie.io/http-backend/v1","node":7,"time":"2026-03-01T12:00:00Z"}`, "field node: not a string (got a number)"},
		{"node power negative", validHead + `,"nodePowerWatts":-3}`, "field nodePowerWatts: -3 W is outside 0..1e+06 W"},
		{"cpu packages empty", cpu(`"packagePowerWatts":[],"capWatts":200,"minWattsPerPackage":50,"maxWattsPerPackage":300,"throttlePct":0`),
			"field cpu.packagePowerWatts: empty"},
		{"cpu package reading bad", cpu(`"packagePowerWatts":[100,true],"capWatts":200,"minWattsPerPackage":50,"maxWattsPerPackage":300,"throttlePct":0`),
			"field cpu.packagePowerWatts[1]: not a number (got a boolean)"},
		{"cpu throttle over 100", cpu(`"packagePowerWatts":[100],"capWatts":200,"minWattsPerPackage":50,"maxWattsPerPackage":300,"throttlePct":101`),
			"field cpu.throttlePct: 101% is outside 0..100%"},
		{"cpu extra field", cpu(goodCPU + `,"dramWatts":3`), "field cpu.dramWatts: unknown field"},
		{"cpu not an object", validHead + `,"cpu":[1]}`, "field cpu: not an object (got an array)"},
		{"time not RFC 3339", `{"apiVersion":"joulie.io/http-backend/v1","node":"n1","time":"yesterday"}`,
			`field time: not an RFC 3339 time: "yesterday"`},
		{"node empty", `{"apiVersion":"joulie.io/http-backend/v1","node":"","time":"2026-03-01T12:00:00Z"}`, "field node: empty"},
		{"other version", `{"apiVersion":"joulie.io/http-backend/v2","node":"n1"}`,
			`field apiVersion: "joulie.io/http-backend/v2" is not supported, this agent speaks joulie.io/http-backend/v1`},
		{"no version", `{"node":"n1"}`, "field apiVersion: missing"},
		{"array at the top", `[1,2]`, "the body is not a JSON object but an array"},
		{"empty", "  \n", "empty body"},
		{"truncated", validHead + `,"gpus":[{"index":0`, "invalid JSON: truncated"},
		{"not JSON", "<html>502 Bad Gateway</html>", "invalid JSON at byte 1"},
		{"trailing data", validHead + `} {}`, "invalid JSON: more data after the value"},
		{"deep nesting in an unknown field", validHead + `,"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, "field x: unknown field"},
		{"a later version with a field this one lacks", `{"apiVersion":"joulie.io/http-backend/v2","node":"n1","fans":[]}`,
			`field apiVersion: "joulie.io/http-backend/v2" is not supported`},
		{"long string", `{"apiVersion":"joulie.io/http-backend/v1","node":"` + strings.Repeat("n", MaxStringBytes+1) + `"}`,
			"field node: longer than 1024 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeTelemetry([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// encoding/json keeps the last of a repeated key; the contract asks
// simulators not to repeat one.
func TestDecodeTelemetryTakesTheLastOfARepeatedKey(t *testing.T) {
	got, err := DecodeTelemetry([]byte(validHead + `,"node":"n2"}`))
	if err != nil || got.Node != "n2" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// JSON has one number type: an index written 1.0 is the whole number 1.
func TestDecodeTelemetryTakesAWholeIndexWrittenAsAFraction(t *testing.T) {
	got, err := DecodeTelemetry([]byte(validHead + `,"gpus":[{"index":1.0,"uuid":"GPU-1","powerWatts":1,"capWatts":3,"minWatts":1,"maxWatts":4}]}`))
	if err != nil || len(got.GPUs) != 1 || got.GPUs[0].Index != 1 || got.GPUs[0].DefaultWatts != 4 {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestDecodeTelemetryAcceptsANodeWithoutCPUOrGPUs(t *testing.T) {
	got, err := DecodeTelemetry([]byte(validHead + `,"gpus":[],"cpu":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.CPU != nil || got.GPUs != nil || got.MeasuredWatts() != 0 {
		t.Errorf("got %+v", got)
	}
}

func TestTelemetryEncodesToWhatItDecodesFrom(t *testing.T) {
	first, err := DecodeTelemetry(readTestdata(t, "telemetry.json"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	second, err := DecodeTelemetry(data)
	if err != nil {
		t.Fatalf("re-decode %s: %v", data, err)
	}
	again, _ := json.Marshal(second)
	if string(again) != string(data) {
		t.Errorf("not a fixed point:\n%s\n%s", data, again)
	}
}

func TestDecodeControlRequest(t *testing.T) {
	const head = `{"apiVersion":"joulie.io/http-backend/v1","node":"n1",`
	good := []struct {
		name, body string
		check      func(*ControlRequest) bool
	}{
		{"rapl", head + `"action":"rapl.set_power_cap_watts","watts":215.5}`,
			func(r *ControlRequest) bool { return *r.Watts == 215.5 && r.Pct == nil && r.GPU == nil }},
		{"dvfs", head + `"action":"dvfs.set_throttle_pct","pct":30}`,
			func(r *ControlRequest) bool { return *r.Pct == 30 && r.Watts == nil }},
		{"gpu", head + `"action":"gpu.set_power_cap_watts","gpu":3,"watts":420}`,
			func(r *ControlRequest) bool { return *r.GPU == 3 && *r.Watts == 420 }},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeControlRequest([]byte(tc.body))
			if err != nil || r.Node != "n1" || !tc.check(r) {
				t.Fatalf("got %+v, %v", r, err)
			}
		})
	}
	bad := []struct{ name, body, want string }{
		{"watts missing", head + `"action":"rapl.set_power_cap_watts"}`, "field watts: missing"},
		{"pct on a watts action", head + `"action":"rapl.set_power_cap_watts","watts":1,"pct":3}`, "field pct: not taken by action rapl.set_power_cap_watts"},
		{"gpu on rapl", head + `"action":"rapl.set_power_cap_watts","watts":1,"gpu":0}`, "field gpu: not taken by action"},
		{"all gpus", head + `"action":"gpu.set_power_cap_watts","gpu":-1,"watts":1}`, "field gpu: -1 is outside 0..255"},
		{"pct over 100", head + `"action":"dvfs.set_throttle_pct","pct":130}`, "field pct: 130% is outside 0..100%"},
		{"unknown field", head + `"action":"dvfs.set_throttle_pct","pct":1,"force":true}`, "field force: unknown field"},
		{"node missing", `{"apiVersion":"joulie.io/http-backend/v1","action":"dvfs.set_throttle_pct","pct":1}`, "field node: missing"},
		{"gpu fractional", head + `"action":"gpu.set_power_cap_watts","gpu":1.5,"watts":1}`, "field gpu: not a whole number: 1.5"},
		{"watts a string", head + `"action":"rapl.set_power_cap_watts","watts":"1"}`, "field watts: not a number (got a string)"},
		{"action missing", head + `"watts":1}`, "field action: missing"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeControlRequest([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrUnknownAction) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	_, err := DecodeControlRequest([]byte(head + `"action":"fan.set_speed","rpm":3000}`))
	if !errors.Is(err, ErrUnknownAction) {
		t.Errorf("unknown action: error = %v, want ErrUnknownAction", err)
	}
}

func TestDecodeControlResponse(t *testing.T) {
	r, err := DecodeControlResponse([]byte(`{"apiVersion":"joulie.io/http-backend/v1","result":"applied","appliedWatts":300}`))
	if err != nil || r.Result != ResultApplied || *r.AppliedWatts != 300 {
		t.Fatalf("got %+v, %v", r, err)
	}
	for body, want := range map[string]string{
		`{"apiVersion":"joulie.io/http-backend/v1","result":"ok"}`:                    `field result: "ok" is none of applied, blocked, error`,
		`{"apiVersion":"joulie.io/http-backend/v1","result":"applied","watts":3}`:     "field watts: unknown field",
		`{"apiVersion":"joulie.io/http-backend/v1","result":"error","message":false}`: "field message: not a string (got a boolean)",
	} {
		if _, err := DecodeControlResponse([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error = %v, want %q", body, err, want)
		}
	}
}
