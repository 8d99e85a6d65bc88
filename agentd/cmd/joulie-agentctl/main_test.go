package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/<name>.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// testNow is the clock of every run in these tests, so ages in tables
// are fixed.
var testNow = time.Date(2026, 3, 14, 9, 27, 5, 0, time.UTC)

func runCtl(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = runAt(append([]string{"joulie-agentctl"}, args...), &out, &errOut, func() time.Time { return testNow })
	return out.String(), errOut.String(), code
}

func TestCatalogResolvesHostCPUFromFixture(t *testing.T) {
	out, errOut, code := runCtl("catalog", "--host-root", "testdata/host-2s-epyc")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "catalog-host-2s-epyc", out)
}

func TestCatalogJSONUsesAPIFieldNames(t *testing.T) {
	out, errOut, code := runCtl("catalog", "-o", "json",
		"--cpu", "Intel(R) Xeon(R) Platinum 8480+", "--gpu", "NVIDIA H100 80GB HBM3", "--gpu", "Some Future Accelerator")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(rows) != 3 {
		t.Fatalf("want 3 rows, got %d", len(rows))
	}
	for i, want := range []struct{ kind, exactness string }{
		{"cpu", "exact"}, {"gpu", "exact"}, {"gpu", "generic"},
	} {
		if rows[i]["kind"] != want.kind || rows[i]["exactness"] != want.exactness {
			t.Errorf("row %d = %v, want kind %s exactness %s", i, rows[i], want.kind, want.exactness)
		}
		if _, ok := rows[i]["catalogModel"]; !ok {
			t.Errorf("row %d lacks catalogModel: %v", i, rows[i])
		}
	}
}

func TestCatalogExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		message string
	}{
		{"unknown flag is bad usage", []string{"catalog", "--bogus"}, exitUsage, "flag provided but not defined"},
		{"unknown output is bad usage", []string{"catalog", "-o", "yaml"}, exitUsage, `--output must be table or json, not "yaml"`},
		{"stray argument is bad usage", []string{"catalog", "EPYC"}, exitUsage, "catalog takes no arguments"},
		{"missing host root is a runtime failure", []string{"catalog", "--host-root", "testdata/no-such-host"}, exitFailure, "is --host-root right?"},
		{"cpuinfo without a model name", []string{"catalog", "--host-root", "testdata/host-no-model"}, exitFailure, "names no CPU model; pass one with --cpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCtl(tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			if !strings.Contains(errOut, tc.message) {
				t.Errorf("stderr %q lacks %q", errOut, tc.message)
			}
		})
	}
}

func TestManPageCoversEveryVisibleCommand(t *testing.T) {
	out, errOut, code := runCtl("--man-page")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{".TH joulie-agentctl 1", ".SH status", ".SH restore", "--offline", "--forget", ".SH catalog", "Exit status", "3 needs an operator"} {
		if !strings.Contains(out, want) {
			t.Errorf("manual page lacks %q", want)
		}
	}
	if strings.Contains(out, "man-page") {
		t.Error("the manual page shows the hidden --man-page flag")
	}
}

func TestUnknownCommandIsBadUsage(t *testing.T) {
	_, errOut, code := runCtl("stauts")
	if code != exitUsage || !strings.Contains(errOut, `unknown command "stauts"`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
