package main

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/report"
	"joulie.io/joulie/test/energy/sim"
	"joulie.io/joulie/test/energy/workload"
)

// fakeSim stands in for package sim: every job starts on arrival and runs
// its work times the arm's slowdown; the cluster draws the arm's watts
// throughout. It records what it was asked to run.
type fakeSim struct {
	mu     sync.Mutex
	hashes map[int64]map[sim.Arm]string
	nodes  int
	fail   sim.Arm
	// seedMethod counts the runs asked for the seed document's pass.
	seedMethod int
}

var fakeWatts = map[sim.Arm]float64{sim.ArmDefault: 1000, sim.ArmBinPack: 900, sim.ArmQueueAware: 800}

func (f *fakeSim) run(ctx context.Context, arm sim.Arm, seed int64, nodes []workload.Node, jobs []workload.Job, model *physics.Model, seedMethod bool, progress func(time.Duration, float64)) (sim.Result, error) {
	if arm == f.fail {
		return sim.Result{}, errors.New("the fake simulator fails here")
	}
	f.mu.Lock()
	if f.hashes == nil {
		f.hashes = map[int64]map[sim.Arm]string{}
	}
	if f.hashes[seed] == nil {
		f.hashes[seed] = map[sim.Arm]string{}
	}
	f.hashes[seed][arm] = workload.Hash(jobs)
	f.nodes = len(nodes)
	if seedMethod {
		f.seedMethod++
	}
	f.mu.Unlock()
	r := sim.Result{Arm: arm, Seed: seed, JobsHash: workload.Hash(jobs), Nodes: len(nodes), Power: []sim.Sample{{T: 0, Watts: fakeWatts[arm]}}}
	if seedMethod {
		r.SeedMethod = &sim.SeedMethod{Window: 48 * time.Hour, EnergyJ: fakeWatts[arm] * 3600, Accepted: len(jobs)}
	}
	for i, j := range jobs {
		slow := 1.0
		if arm == sim.ArmQueueAware && j.Class == workload.Class(report.Standard) {
			slow = 1.1
		}
		end := j.Arrival + time.Duration(float64(j.Work)*slow)
		r.Jobs = append(r.Jobs, sim.JobResult{ID: j.ID, Class: string(j.Class), Boundness: string(j.Boundness), GPUs: j.GPUs, CPUMilli: j.CPUMilli,
			Work: j.Work, Arrival: j.Arrival, Start: j.Arrival, End: end, Truncated: j.Truncated})
		r.Makespan = max(r.Makespan, end)
		progress(end, float64(i+1)/float64(len(jobs)))
	}
	return r, nil
}

func TestBenchWritesTheReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "energy")
	f := &fakeSim{}
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--nodes-cpu", "3", "--nodes-gpu", "1", "--jobs", "40", "--seeds", "2", "--first-seed", "7",
		"--arms", "a-default,b-binpack,d-queue-aware", "--out", out, "--parallel", "2"}, &stderr, f.run)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if f.nodes != 4 {
		t.Errorf("simulated %d nodes, want 3 + 1", f.nodes)
	}
	for _, seed := range []int64{7, 8} {
		h := f.hashes[seed]
		if len(h) != 3 || h[sim.ArmDefault] != h[sim.ArmBinPack] || h[sim.ArmDefault] != h[sim.ArmQueueAware] {
			t.Errorf("seed %d: job-list hashes by arm %v, want three arms on one list", seed, h)
		}
	}
	if f.hashes[7][sim.ArmDefault] == f.hashes[8][sim.ArmDefault] {
		t.Error("seeds 7 and 8 ran the same job list")
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| nodes | 4 (3 CPU-only, 1 GPU) |",
		"| seeds | 2: 7, 8 |",
		"| arms | a-default, b-binpack, d-queue-aware |",
		"`" + f.hashes[7][sim.ArmDefault] + "`",
		"sha256 " + physicsHash(physics.Default()),
		// 900 W and 800 W against 1000 W over the same window, each seed.
		"| d-queue-aware | IT energy | 2 | -20.0% | -20.0% … -20.0% |",
		"| b-binpack | IT energy | 2 | -10.0% | -10.0% … -10.0% |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, name := range []string{report.PlotEnergy, report.PlotPower, report.PlotStretch(report.Performance), report.PlotStretch(report.Standard)} {
		fh, err := os.Open(filepath.Join(out, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if _, err := png.Decode(fh); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		fh.Close()
	}
	log := stderr.String()
	for _, want := range []string{"done: arm d-queue-aware, seed 8 (", "of 6 runs)", "wrote " + out + "/report.md", "Against bin-packing"} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "\r") {
		t.Error("progress redraws a line on a buffer that is not a terminal")
	}
}

// TestSeedMethodCanBeLeftOut: --seed-method=false reaches every run and
// the report says the section was not run rather than printing an empty
// table; by default every run does the seed document's pass.
func TestSeedMethodCanBeLeftOut(t *testing.T) {
	for _, tc := range []struct {
		flag     []string
		runs     int
		inReport string
	}{
		{nil, 2, "| a-default | 1 | 48h0m0s |"},
		{[]string{"--seed-method=false"}, 0, "Not run for this report (`--seed-method=false`"},
	} {
		out := filepath.Join(t.TempDir(), "energy")
		f := &fakeSim{}
		var stderr bytes.Buffer
		args := append([]string{"--nodes-cpu", "2", "--nodes-gpu", "1", "--jobs", "20", "--seeds", "1",
			"--arms", "a-default,b-binpack", "--out", out, "--parallel", "1"}, tc.flag...)
		if err := run(context.Background(), args, &stderr, f.run); err != nil {
			t.Fatalf("%v: run: %v\n%s", tc.flag, err, stderr.String())
		}
		if f.seedMethod != tc.runs {
			t.Errorf("%v: %d runs asked for the seed pass, want %d", tc.flag, f.seedMethod, tc.runs)
		}
		md, err := os.ReadFile(filepath.Join(out, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(md), tc.inReport) {
			t.Errorf("%v: report.md lacks %q", tc.flag, tc.inReport)
		}
	}
}

func TestBenchStopsOnAFailedRun(t *testing.T) {
	f := &fakeSim{fail: sim.ArmBinPack}
	var stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "energy")
	err := run(context.Background(), []string{"--nodes-cpu", "2", "--nodes-gpu", "1", "--jobs", "10", "--seeds", "2", "--arms", "a-default,b-binpack", "--out", out}, &stderr, f.run)
	if err == nil || !strings.Contains(err.Error(), "the fake simulator fails here") || !strings.Contains(err.Error(), "arm b-binpack, seed ") {
		t.Errorf("error %v, want the failed arm and seed", err)
	}
	if _, err := os.Stat(filepath.Join(out, "report.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a report was written after a failed run: %v", err)
	}
}

// Without --arms every arm runs, the oracle bound included.
func TestDefaultArmsAreAllSix(t *testing.T) {
	o, err := parse(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := []sim.Arm{sim.ArmDefault, sim.ArmBinPack, sim.ArmStatic, sim.ArmQueueAware, sim.ArmNoCaps, sim.ArmOracle}
	if !slices.Equal(o.arms, want) {
		t.Errorf("default arms %v, want %v", o.arms, want)
	}
}

func TestFlagsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no reference arm", []string{"--arms", "b-binpack,d-queue-aware"}, "include a-default"},
		{"unknown arm", []string{"--arms", "a-default,z-magic"}, `unknown arm "z-magic"`},
		{"no seeds", []string{"--seeds", "0"}, "--seeds 0"},
		{"half a trace", []string{"--trace-pods", "pods.csv"}, "give both"},
		{"no nodes", []string{"--nodes-cpu", "0", "--nodes-gpu", "0"}, "at least one node"},
		{"no horizon nor jobs", []string{"--horizon", "0"}, "positive horizon or number of jobs"},
		{"an argument", []string{"extra"}, `unexpected argument "extra"`},
		{"negative trace start", []string{"--trace-start", "-1h"}, "--trace-start -1h0m0s is negative"},
		{"negative trace end", []string{"--trace-end", "-1h"}, "--trace-end -1h0m0s is negative"},
		{"trace end before start", []string{"--trace-start", "48h", "--trace-end", "24h"}, "--trace-end 24h0m0s is not after --trace-start 48h0m0s"},
		{"trace part without a trace", []string{"--trace-start", "24h"}, "give --trace-pods and --trace-nodes"},
		{"unknown physics variant", []string{"--physics-variant", "cold"}, "--physics-variant cold"},
		{"missing physics file", []string{"--physics", "/nonexistent/physics.yaml"}, "--physics /nonexistent/physics.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, &bytes.Buffer{}, (&fakeSim{}).run)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestBenchReplaysATrace(t *testing.T) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods.csv")
	nodes := filepath.Join(dir, "nodes.csv")
	os.WriteFile(pods, []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"+
		"p1,4000,8192,1,1000,,LS,Succeeded,100,4000,200\n"+
		"p2,2000,4096,0,0,,BE,Running,300,,300\n"+
		"p3,8000,4096,0,0,,BE,Succeeded,500,9000,600\n"), 0o644)
	os.WriteFile(nodes, []byte("sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,8,V100M32\nn2,96000,393216,0,\n"), 0o644)
	out := filepath.Join(dir, "out")
	f := &fakeSim{}
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--trace-pods", pods, "--trace-nodes", nodes, "--seeds", "2", "--arms", "a-default,b-binpack", "--out", out}, &stderr, f.run)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if f.nodes != 2 {
		t.Errorf("simulated %d nodes, want the trace's 2", f.nodes)
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	for _, want := range []string{"| workload | trace " + pods + " |", "| 1 | 3 | 1 |", "| nodes | 2 (1 CPU-only, 1 GPU) |", "Warning: "} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// TestTraceStartAndEndReachTheReader: --trace-start and --trace-end
// replay the pods created in between, as workload.ReadPods reads them.
func TestTraceStartAndEndReachTheReader(t *testing.T) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods.csv")
	nodes := filepath.Join(dir, "nodes.csv")
	os.WriteFile(pods, []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"+
		"p1,4000,8192,1,1000,,LS,Succeeded,100,4000,200\n"+
		"p2,2000,4096,0,0,,BE,Running,300,,300\n"+
		"p3,8000,4096,0,0,,BE,Succeeded,500,9000,600\n"), 0o644)
	os.WriteFile(nodes, []byte("sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,8,V100M32\nn2,96000,393216,0,\n"), 0o644)
	f := &fakeSim{}
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"--trace-pods", pods, "--trace-nodes", nodes, "--trace-start", "200s", "--trace-end", "400s",
		"--seeds", "1", "--arms", "a-default", "--out", filepath.Join(dir, "out")}, &stderr, f.run)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	jobs, _, err := workload.ReadPods(pods, workload.TraceOptions{Seed: 1, Start: 200 * time.Second, End: 400 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != "p2" {
		t.Fatalf("the reader kept %+v, want p2 alone", jobs)
	}
	if got := f.hashes[1][sim.ArmDefault]; got != workload.Hash(jobs) {
		t.Errorf("the run's job list %s is not the reader's p2 alone %s", got, workload.Hash(jobs))
	}
}
