package workload

import (
	"os"
	"strings"
	"testing"
	"time"
)

// FuzzParsePods feeds arbitrary pod lists to the reader: it must never
// panic, every error must name the file, and every list it accepts must
// keep the promises the simulator relies on. Seeds are in
// testdata/fuzz/FuzzParsePods; run it with
// go test -fuzz FuzzParsePods ./energy/workload/.
func FuzzParsePods(f *testing.F) {
	if data, err := os.ReadFile(podsFile); err == nil {
		f.Add(data, int64(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, end int64) {
		opts := TraceOptions{End: time.Duration(max(0, min(end, maxSeconds))) * time.Second}
		jobs, stats, err := ParsePods(strings.NewReader(string(data)), "fuzz.csv", opts)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if stats.Rows != stats.Jobs+stats.NeverScheduled+stats.ZeroWork+stats.AfterEnd {
			t.Fatalf("stats do not add up: %+v", stats)
		}
		if len(jobs) != stats.Jobs {
			t.Fatalf("%d jobs, stats say %d", len(jobs), stats.Jobs)
		}
		ids := map[string]bool{}
		for i, j := range jobs {
			switch {
			case ids[j.ID]:
				t.Fatalf("duplicate ID %q", j.ID)
			case j.Work <= 0 || j.Arrival < 0 || j.GPUs < 0 || j.CPUMilli < 0 || j.MemoryMiB < 0:
				t.Fatalf("job %+v", j)
			case i > 0 && j.Arrival < jobs[i-1].Arrival:
				t.Fatalf("jobs out of order at %d", i)
			case !j.Boundness.Valid() || j.Boundness.GPU() != (j.GPUs > 0):
				t.Fatalf("%s: boundness %q with %d GPUs", j.ID, j.Boundness, j.GPUs)
			case j.Arrival+stats.Origin > stats.End || j.Work > stats.End:
				t.Fatalf("%s arrives or runs past the end %v: %+v", j.ID, stats.End, j)
			}
			ids[j.ID] = true
		}
		Hash(jobs)
	})
}

// FuzzParseNodes does the same for node lists.
func FuzzParseNodes(f *testing.F) {
	if data, err := os.ReadFile(nodesFile); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, warnings, err := ParseNodes(strings.NewReader(string(data)), "fuzz.csv", nil)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, n := range nodes {
			if n.CPUMilli <= 0 || n.MemoryMiB < 0 || n.GPUs < 0 || (n.GPUs > 0) != (n.GPU.ID != "") {
				t.Fatalf("node %+v", n)
			}
		}
		for _, w := range warnings {
			if !strings.HasPrefix(w, "fuzz.csv: ") {
				t.Fatalf("warning does not name the file: %s", w)
			}
		}
	})
}
