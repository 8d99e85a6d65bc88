package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"joulie.io/joulie/test/energy/report"
)

// The seeds a report is made of and the seeds Joulie's settings are
// chosen on (report.TuningFirstSeed … TuningLastSeed) never meet: a
// setting judged on the seeds it was fitted to would be judged on its own
// noise. Both standard runs as the Makefile runs them, and every
// committed report, are checked.
func TestReportedSeedsAreNotTuningSeeds(t *testing.T) {
	if report.TuningFirstSeed > report.TuningLastSeed {
		t.Fatalf("tuning seeds %d … %d are no range", report.TuningFirstSeed, report.TuningLastSeed)
	}
	for target, args := range makefileRuns(t, "bench-energy", "bench-energy-full") {
		o, err := parse(args, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("make %s: %v", target, err)
		}
		for _, l := range o.levels {
			for seed := o.firstSeed; seed < o.firstSeed+int64(l.seeds); seed++ {
				if report.IsTuningSeed(seed) {
					t.Errorf("make %s runs tuning seed %d at level %v", target, seed, l.level)
				}
			}
		}
	}
	reports, err := filepath.Glob("../../bench/*/report.md")
	if err != nil || len(reports) == 0 {
		t.Fatalf("no committed report under test/bench (%v)", err)
	}
	// The load-level table's rows: "| 0.4 | 10: 1, 2, … |".
	row := regexp.MustCompile(`(?m)^\| (?:[0-9.]+|none \(trace\)) \| [0-9]+: ([0-9, ]+) \|`)
	for _, path := range reports {
		md, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rows := row.FindAllStringSubmatch(string(md), -1)
		if len(rows) == 0 {
			t.Errorf("%s: no load level with its seeds found", path)
		}
		for _, r := range rows {
			for _, f := range strings.Split(r[1], ",") {
				seed, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
				if err != nil {
					t.Fatalf("%s: seed %q: %v", path, f, err)
				}
				if report.IsTuningSeed(seed) {
					t.Errorf("%s reports tuning seed %d", path, seed)
				}
			}
		}
	}
}

// makefileRuns returns the command-line flags each of the Makefile's
// targets passes to joulie-bench-energy, its variables at their defaults.
func makefileRuns(t *testing.T, targets ...string) map[string][]string {
	t.Helper()
	mk, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+) \?=[ \t]*(.*)$`).FindAllStringSubmatch(string(mk), -1) {
		vars[m[1]] = strings.TrimSpace(m[2])
	}
	runs := map[string][]string{}
	for _, target := range targets {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:.*\n\t.*\./cmd/joulie-bench-energy(.*)$`).FindStringSubmatch(string(mk))
		if m == nil {
			t.Fatalf("the Makefile has no target %s running ./cmd/joulie-bench-energy", target)
		}
		line := regexp.MustCompile(`\$\(([A-Z_]+)\)`).ReplaceAllStringFunc(m[1], func(v string) string { return vars[v[2:len(v)-1]] })
		runs[target] = strings.Fields(line)
	}
	return runs
}
