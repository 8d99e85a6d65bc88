package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/physics"
)

const (
	podsFile  = "testdata/openb_pod_list_small.csv"
	nodesFile = "testdata/openb_node_list_small.csv"
)

// The pods of testdata/openb_pod_list_small.csv, worked out by hand; the
// trace's end is its latest time, 9000 s, and arrivals count from the
// first replayed creation, 1000 s. Boundness is left out: it is drawn.
var wantPods = []Job{
	// LS: performance; 4600 - 1010 s of work.
	{ID: "openb-pod-0001", Arrival: 0, Class: Performance, CPUMilli: 12000, MemoryMiB: 16384, GPUs: 1, Work: 3590 * time.Second},
	// Running with a deletion_time: cut there (9000 - 1150 s); a third of
	// a GPU, given a whole one.
	{ID: "openb-pod-0006", Arrival: 100 * time.Second, Class: Standard, CPUMilli: 8000, MemoryMiB: 30517, GPUs: 1,
		Work: 7850 * time.Second, Truncated: true, SharedGPUMilli: 320},
	{ID: "openb-pod-0002", Arrival: 200 * time.Second, Class: Standard, CPUMilli: 6000, MemoryMiB: 12288, GPUs: 1,
		Work: 740 * time.Second, SharedGPUMilli: 460},
	// Running without deletion_time: runs to the trace's end, 9000 s.
	{ID: "openb-pod-0003", Arrival: 500 * time.Second, Class: Performance, CPUMilli: 88000, MemoryMiB: 327680, GPUs: 8,
		Work: 7470 * time.Second, Truncated: true, GPUModels: []string{"V100M16", "V100M32"}},
	// Burstable is standard; a Failed pod that was scheduled ran.
	{ID: "openb-pod-0004", Arrival: 600 * time.Second, Class: Standard, CPUMilli: 4000, MemoryMiB: 8192, Work: 95 * time.Second},
	{ID: "openb-pod-0009", Arrival: 5000 * time.Second, Class: Performance, CPUMilli: 16000, MemoryMiB: 65536, Work: 490 * time.Second},
}

func TestReadPodsReplaysTheTraceAsDocumented(t *testing.T) {
	jobs, stats, err := ReadPods(podsFile, TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(jobs)
	for i := range got {
		if b := got[i].Boundness; !b.Valid() || b.GPU() != (got[i].GPUs > 0) {
			t.Errorf("%s: boundness %q for %d GPUs", got[i].ID, b, got[i].GPUs)
		}
		if got[i].Source != "trace" {
			t.Errorf("%s: source %q", got[i].ID, got[i].Source)
		}
		got[i].Boundness, got[i].Source = "", ""
	}
	if !reflect.DeepEqual(got, wantPods) {
		t.Errorf("jobs:\n%s\nwant:\n%s", dump(got), dump(wantPods))
	}
	want := PodStats{File: podsFile, Rows: 9, Jobs: 6, NeverScheduled: 2, ZeroWork: 1, Truncated: 2, SharedGPU: 2,
		Origin: 1000 * time.Second, End: 9000 * time.Second}
	if stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	warnings := strings.Join(stats.Warnings(), "\n")
	for _, w := range []string{
		"2 of 6 replayed pods asked for part of a GPU (gpu_milli below 1000) and were given whole GPUs",
		"2 pods still running at the end of the trace, cut there",
		"2 pods never scheduled (no scheduled_time), not replayed",
		"1 pod that ran for 0 s, not replayed",
	} {
		if !strings.Contains(warnings, podsFile+": "+w) {
			t.Errorf("warnings\n%s\nlack %q", warnings, w)
		}
	}
}

func TestReadPodsCutsAtAGivenEnd(t *testing.T) {
	jobs, stats, err := ReadPods(podsFile, TraceOptions{End: 5000 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	work := map[string]time.Duration{}
	for _, j := range jobs {
		work[j.ID] = j.Work
	}
	// pod-0003 runs to 5000 s, pod-0006 (deleted at 9000 s) is cut at
	// 5000 s, and pod-0009, created at 6000 s, is left out.
	want := map[string]time.Duration{
		"openb-pod-0001": 3590 * time.Second, "openb-pod-0006": 3850 * time.Second, "openb-pod-0002": 740 * time.Second,
		"openb-pod-0003": 3470 * time.Second, "openb-pod-0004": 95 * time.Second,
	}
	if !reflect.DeepEqual(work, want) {
		t.Errorf("work %v, want %v", work, want)
	}
	if stats.AfterEnd != 1 || stats.Truncated != 2 || stats.End != 5000*time.Second {
		t.Errorf("stats %+v: want 1 pod after the end, 2 truncated, end 5000 s", stats)
	}
	if w := strings.Join(stats.Warnings(), "\n"); !strings.Contains(w, "1 pod created at or after the end of the trace (1h23m20s), not replayed") {
		t.Errorf("warnings lack the pod after the end:\n%s", w)
	}
}

func TestReadPodsKeepsThePodsCreatedBetweenStartAndEnd(t *testing.T) {
	jobs, stats, err := ReadPods(podsFile, TraceOptions{Start: 1100 * time.Second, End: 1800 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	type job struct {
		arrival, work time.Duration
		truncated     bool
	}
	got := map[string]job{}
	for _, j := range jobs {
		got[j.ID] = job{j.Arrival, j.Work, j.Truncated}
	}
	// pod-0001 (created at 1000 s, running from 1010 s) was running at
	// the start: it arrives at 0 with its run from 1100 s. pod-0007
	// (1800 s) and pod-0009 are at or after the end. pod-0006, created at
	// the start, arrives at 0 too; pods running past 1800 s are cut there.
	want := map[string]job{
		"openb-pod-0001": {0, 700 * time.Second, true},
		"openb-pod-0006": {0, 650 * time.Second, true},
		"openb-pod-0002": {100 * time.Second, 540 * time.Second, true},
		"openb-pod-0003": {400 * time.Second, 270 * time.Second, true},
		"openb-pod-0004": {500 * time.Second, 95 * time.Second, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("jobs %v, want %v", got, want)
	}
	if stats.BeforeStart != 0 || stats.RunningAtStart != 1 || stats.AfterEnd != 2 || stats.NeverScheduled != 2 || stats.Origin != 1100*time.Second || stats.Start != 1100*time.Second {
		t.Errorf("stats %+v: want 1 pod running at the start, 2 after the end, 2 never scheduled, origin and start 1100 s", stats)
	}
	if w := strings.Join(stats.Warnings(), "\n"); !strings.Contains(w, podsFile+": 1 pod created before the chosen start (18m20s) had not ended by then (1 running, 0 waiting to be scheduled)") {
		t.Errorf("warnings lack the pod running at the start:\n%s", w)
	}
	for _, tc := range []struct {
		opts TraceOptions
		want string
	}{
		{TraceOptions{Start: -time.Second}, "TraceOptions.Start -1s is negative"},
		{TraceOptions{End: -time.Second}, "TraceOptions.End -1s is negative"},
		{TraceOptions{Start: time.Hour, End: time.Hour}, "TraceOptions.End 1h0m0s is not after Start 1h0m0s"},
	} {
		if _, _, err := ReadPods(podsFile, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// TestAReplayFromAStartHoldsWhatTheClusterRanThen: a window that starts
// in the middle of a trace starts with the pods a cluster held then, not
// with an empty cluster.
func TestAReplayFromAStartHoldsWhatTheClusterRanThen(t *testing.T) {
	const pods = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
ended,1000,1024,0,0,,BE,Succeeded,0,900,10
ends-at-start,1000,1024,0,0,,BE,Succeeded,0,1000,10
long-running,64000,262144,8,1000,,LS,Running,0,,100
running,2000,2048,0,0,,BE,Succeeded,200,1600,300
waiting,4000,4096,1,1000,,BE,Succeeded,800,2500,1300
never,1000,1024,0,0,,BE,Pending,500,,
later,1000,1024,0,0,,LS,Succeeded,1500,1700,1500
`
	jobs, stats, err := ParsePods(strings.NewReader(pods), "mid.csv", TraceOptions{Start: 1000 * time.Second, End: 3000 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	type job struct {
		arrival, work time.Duration
		truncated     bool
	}
	got := map[string]job{}
	for _, j := range jobs {
		got[j.ID] = job{j.Arrival, j.Work, j.Truncated}
	}
	// Arrivals count from the start. A pod running then keeps the rest of
	// its run; one still waiting keeps all of it; the 8-GPU pod that runs
	// through the whole trace holds its node from the first second.
	want := map[string]job{
		"long-running": {0, 2000 * time.Second, true},
		"running":      {0, 600 * time.Second, false},
		"waiting":      {0, 1200 * time.Second, false},
		"later":        {500 * time.Second, 200 * time.Second, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("jobs %v, want %v", got, want)
	}
	if stats.BeforeStart != 2 || stats.RunningAtStart != 2 || stats.PendingAtStart != 1 || stats.NeverScheduled != 1 || stats.Origin != 1000*time.Second {
		t.Errorf("stats %+v: want 2 ended before the start, 2 running and 1 waiting then, 1 never scheduled, origin 1000 s", stats)
	}
	w := strings.Join(stats.Warnings(), "\n")
	for _, s := range []string{
		"mid.csv: 2 pods created and ended before the chosen start (16m40s), not replayed",
		"mid.csv: 3 pods created before the chosen start (16m40s) had not ended by then (2 running, 1 waiting to be scheduled)",
	} {
		if !strings.Contains(w, s) {
			t.Errorf("warnings\n%s\nlack %q", w, s)
		}
	}
}

func TestTraceBoundnessFollowsSeedAndNameNotRowOrder(t *testing.T) {
	data, err := os.ReadFile(podsFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	reversed := append([]string{lines[0]}, lines[1:]...)
	slices.Reverse(reversed[1:])
	parse := func(text string, seed int64) map[string]physics.Boundness {
		jobs, _, err := ParsePods(strings.NewReader(text), "pods.csv", TraceOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]physics.Boundness{}
		for _, j := range jobs {
			m[j.ID] = j.Boundness
		}
		return m
	}
	a := parse(string(data), 1)
	if b := parse(strings.Join(reversed, "\n"), 1); !reflect.DeepEqual(a, b) {
		t.Errorf("reordering the rows changed the classes: %v, then %v", a, b)
	}
	// Over many names, a seed changes some classes and the mix holds.
	var rows strings.Builder
	rows.WriteString(strings.Join(podColumns, ",") + "\n")
	for i := range 4000 {
		fmt.Fprintf(&rows, "pod-%d,1000,1024,1,1000,,BE,Succeeded,0,10,0\n", i)
	}
	s1, s2 := parse(rows.String(), 1), parse(rows.String(), 2)
	changed, compute := 0, 0
	for id, b := range s1 {
		if s2[id] != b {
			changed++
		}
		if b == physics.GPUCompute {
			compute++
		}
	}
	if changed < 1000 {
		t.Errorf("seed 2 changed %d of 4000 classes; want most of the 2/3 that a new draw changes", changed)
	}
	if share := float64(compute) / 4000; share < 0.37 || share > 0.43 {
		t.Errorf("gpu-compute share %.3f, want the default mix's 0.40", share)
	}
}

func TestReadNodesResolvesModelsAndWarnsAboutUnknownOnes(t *testing.T) {
	nodes, warnings, err := ReadNodes(nodesFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	type node struct {
		name       string
		milli, mib int64
		gpus       int
		model, id  string
		cpuW, gpuW float64
	}
	var got []node
	for _, n := range nodes {
		got = append(got, node{n.Name, n.CPUMilli, n.MemoryMiB, n.GPUs, n.GPUModel, n.GPU.ID, n.CPUTDPWatts, n.GPUMaxWatts})
	}
	// Each node keeps its CPU count and GPU model. The trace names no CPU
	// model: CPU packages take the standard nodes' 2 × 360 W (EPYC 9654)
	// and 2 × 350 W (Xeon 8480+). GPUs the catalog does not know take the
	// H100 SXM's 700 W (the trace's anonymized G1, G2 and G3); known ones,
	// the trace's codes for them included, and a family's nearest their own.
	want := []node{
		{"openb-node-0001", 96000, 786432, 8, "V100M32", "nvidia-v100-sxm2-32gb", 700, 300},
		{"openb-node-0002", 32000, 131072, 4, "V100M16", "nvidia-v100-sxm2-16gb", 700, 300},
		{"openb-node-0003", 96000, 524288, 0, "", "", 720, 0},
		{"openb-node-0004", 128000, 1048576, 1, "A10", "nvidia-a10", 700, 150},
		{"openb-node-0005", 96000, 393216, 8, "G2", "generic-gpu", 700, 700},
		{"openb-node-0006", 96000, 786432, 8, "V100M32", "nvidia-v100-sxm2-32gb", 700, 300},
		{"openb-node-0007", 64000, 262144, 2, "NVIDIA A100-SXM4-80GB", "nvidia-a100-sxm4-80gb", 700, 400},
		{"openb-node-0008", 64000, 262144, 2, "NVIDIA H100 94GB", "nvidia-h100-nvl", 700, 400},
		{"openb-node-0009", 32000, 131072, 4, "T4", "nvidia-t4", 700, 70},
		{"openb-node-0010", 64000, 262144, 8, "P100", "nvidia-p100-sxm2-16gb", 700, 300},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("nodes\n%v\nwant\n%v", got, want)
	}
	unknown := "is not in the hardware catalog; they keep the model's name and their GPU count, take the catalog's generic-gpu entry and the standard NVIDIA H100 SXM's power, 700 W a GPU"
	wantWarnings := []string{
		nodesFile + `: GPU model "G2" on 1 node ` + unknown,
		nodesFile + `: GPU model "NVIDIA H100 94GB" on 1 node is not in the hardware catalog; they take the nearest model of its family, nvidia-h100-nvl (NVIDIA H100 NVL, 400 W)`,
		nodesFile + `: GPU model "P100" on 1 node is not in the hardware catalog; they take the nearest model of its family, nvidia-p100-sxm2-16gb (NVIDIA P100 SXM2 16GB, 300 W)`,
		nodesFile + `: no CPU model on 1 node without GPUs (the node list has no CPU model column); they keep their CPU count and take the standard CPU node's package power, 2 × AMD EPYC 9654, 720 W`,
		nodesFile + `: no CPU model on 9 nodes with GPUs (the node list has no CPU model column); they keep their CPU count and take the standard GPU node's package power, 2 × Intel Xeon Platinum 8480+, 700 W`,
	}
	if !slices.Equal(warnings, wantWarnings) {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(warnings, "\n"), strings.Join(wantWarnings, "\n"))
	}
}

func TestMalformedPodListsAreRefusedWithFileLineAndColumn(t *testing.T) {
	const header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	const good = "p0,1000,1024,1,1000,,LS,Succeeded,0,10,0\n"
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"empty file", "", []string{"pods.csv: the file is empty; its first line must name the columns name,cpu_milli,"}},
		{"missing columns", "name,cpu_milli,memory_mib\np,1,1\n",
			[]string{"pods.csv:1:1: the header lacks the columns num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"}},
		{"duplicate column", strings.Replace(header, "qos", "name", 1), []string{"pods.csv:1:54: column \"name\" appears twice"}},
		{"text for a number", header + good + "p1,lots,1024,1,1000,,BE,Running,0,,0\n",
			[]string{"pods.csv:3:4: cpu_milli: \"lots\" is not a whole number"}},
		{"negative memory", header + "p1,1000,-5,0,0,,BE,Running,0,,0\n", []string{"pods.csv:2:9: memory_mib: -5 is negative"}},
		{"empty creation time", header + "p1,1000,5,0,0,,BE,Running,,,0\n", []string{"pods.csv:2:27: creation_time: empty; want a whole number"}},
		{"deleted before scheduled", header + "p1,1000,5,0,0,,BE,Succeeded,10,15,20\n",
			[]string{"pods.csv:2:32: deletion_time: 15 is before scheduled_time 20"}},
		{"scheduled before created", header + "p1,1000,5,0,0,,BE,Succeeded,10,30,5\n",
			[]string{"pods.csv:2:35: scheduled_time: 5 is before creation_time 10"}},
		{"more than a GPU in milli", header + "p1,1000,5,1,1500,,BE,Succeeded,0,1,0\n",
			[]string{"pods.csv:2:13: gpu_milli: 1500 is more than one GPU (1000)"}},
		{"share without a GPU", header + "p1,1000,5,0,500,,BE,Succeeded,0,1,0\n",
			[]string{"pods.csv:2:13: gpu_milli: 500 with num_gpu 0"}},
		{"too many GPUs", header + "p1,1000,5,5000,1000,,BE,Succeeded,0,1,0\n",
			[]string{"pods.csv:2:11: num_gpu: 5000 is out of range (at most 1024)"}},
		{"time out of range", header + "p1,1000,5,0,0,,BE,Succeeded,0,99999999999,0\n",
			[]string{"pods.csv:2:31: deletion_time: 99999999999 is out of range"}},
		{"duplicate name", header + good + good + good, []string{
			"pods.csv:3:1: name: \"p0\" is also the name of the pod on line 2",
			"pods.csv:4:1: name: \"p0\" is also the name of the pod on line 2"}},
		{"empty name", header + ",1,1,0,0,,BE,Running,0,,0\n", []string{"pods.csv:2:1: name: empty"}},
		{"short row, then a good one, then a bad number", header + "p1,1000\n" + good + "p2,1,1,0,0,,BE,Running,x,,0\n",
			[]string{"pods.csv:2:1: wrong number of fields (the header has 11)", "pods.csv:4:24: creation_time: \"x\" is not a whole number"}},
		{"bad quoting", header + "p1,\"10\"00,1,0,0,,BE,Running,0,,0\n", []string{"pods.csv:2:7: extraneous or missing \" in quoted-field"}},
		{"bad mix", header + good, []string{"TraceOptions.GPUMix: class \"cpu-low\" does not belong here"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := TraceOptions{}
			if tc.name == "bad mix" {
				opts.GPUMix = Mix{physics.CPULow: 1}
			}
			jobs, _, err := ParsePods(strings.NewReader(tc.text), "pods.csv", opts)
			if err == nil {
				t.Fatalf("accepted, %d jobs", len(jobs))
			}
			if jobs != nil {
				t.Errorf("a file with errors yielded %d jobs", len(jobs))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nlacks\n%s", err, w)
				}
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != len(tc.want) {
				t.Errorf("%d errors, want %d:\n%v", n, len(tc.want), err)
			}
		})
	}
}

func TestPodListErrorsStopAfterTwenty(t *testing.T) {
	text := strings.Join(podColumns, ",") + "\n" + strings.Repeat("p,x,1,0,0,,BE,Running,0,,0\n", 50)
	_, _, err := ParsePods(strings.NewReader(text), "pods.csv", TraceOptions{})
	if err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxErrors+1 || lines[maxErrors] != "pods.csv: stopped after 20 errors" {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestPodListColumnsMayComeInAnyOrderWithExtras(t *testing.T) {
	text := "\uFEFFscheduled_time,deletion_time,creation_time,pod_phase,qos,gpu_spec,gpu_milli,num_gpu,memory_mib,cpu_milli,name,user\n" +
		"1010,4600,1000,Succeeded,LS,,1000,1,16384,12000,openb-pod-0001,alice\n"
	jobs, _, err := ParsePods(strings.NewReader(text), "pods.csv", TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := jobs[0]
	got.Boundness, got.Source = "", ""
	if !reflect.DeepEqual(got, wantPods[0]) {
		t.Errorf("got %+v, want %+v", got, wantPods[0])
	}
}

func TestMalformedNodeListsAreRefusedWithFileLineAndColumn(t *testing.T) {
	const header = "sn,cpu_milli,memory_mib,gpu,model\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"missing column", "sn,cpu_milli,memory_mib,gpu\nn,1,1,0\n", "nodes.csv:1:1: the header lacks the columns model"},
		{"fractional GPUs", header + "n1,96000,1024,0.5,T4\n", "nodes.csv:2:15: gpu: \"0.5\" is not a whole number"},
		{"no CPUs", header + "n1,0,1024,0,\n", "nodes.csv:2:4: cpu_milli: 0: a node without CPUs can run nothing"},
		{"duplicate name", header + "n1,1,1,0,\nn1,1,1,0,\n", "nodes.csv:3:1: sn: \"n1\" is also the name of the node on line 2"},
		{"extra field", header + "n1,1,1,0,,x\n", "nodes.csv:2:1: wrong number of fields (the header has 5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseNodes(strings.NewReader(tc.text), "nodes.csv", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReadingMissingFilesSaysWhich(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "pods.csv")
	if _, _, err := ReadPods(missing, TraceOptions{}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("ReadPods: %v", err)
	}
	if _, _, err := ReadNodes(missing, nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("ReadNodes: %v", err)
	}
}

func dump(jobs []Job) string {
	var b strings.Builder
	for _, j := range jobs {
		fmt.Fprintf(&b, "%+v\n", j)
	}
	return b.String()
}
