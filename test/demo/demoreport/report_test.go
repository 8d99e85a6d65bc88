package demoreport

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC)

// fakeFleet stands in for the simulated hosts: four nodes, two per path,
// stepped once a second. At step k each node draws its power for
// [k, k+1) and the energy counts the steps before k, as the fleet
// integrates. From step 10 on, node pool-b and daemon-b are eco with their
// agents' caps applied; pool-a is draining from step 20 to 25; daemon-a
// is being parked at 28, parked (off) from 30, waking at 40, booting from
// 42 and awake again from 46.
type fakeFleet struct {
	energyJ, capsJ, parkingJ float64
}

func (f *fakeFleet) observation(k int) Observation {
	nodes := []NodeState{
		{Name: "pool-a", Family: "epyc-9654", Path: "pool", Profile: ProfilePerformance, CPUCapPct: 100, GPUCapPct: 100},
		{Name: "pool-b", Family: "epyc-9654", Path: "pool", Profile: ProfilePerformance, CPUCapPct: 100, GPUCapPct: 100},
		{Name: "daemon-a", Family: "xeon-h100", Path: "daemon", Profile: ProfilePerformance, CPUCapPct: 100, GPUCapPct: 100},
		{Name: "daemon-b", Family: "xeon-h100", Path: "daemon", Profile: ProfilePerformance, CPUCapPct: 100, GPUCapPct: 100},
	}
	if k >= 10 {
		for _, i := range []int{1, 3} {
			nodes[i].Profile, nodes[i].CPUCapPct, nodes[i].GPUCapPct = ProfileEco, 60, 60
		}
	}
	if k >= 20 && k < 25 {
		// Draining: eco published, its performance pod still running.
		nodes[0].Profile, nodes[0].Draining = ProfileEco, true
	}
	switch {
	case k >= 28 && k < 30:
		nodes[2].PowerState = StateParking
	case k >= 30 && k < 40:
		nodes[2].PowerState, nodes[2].Host = StateParked, "off"
	case k >= 40 && k < 42:
		nodes[2].PowerState, nodes[2].Host = StateWaking, "off"
	case k >= 42 && k < 46:
		nodes[2].PowerState, nodes[2].Host, nodes[2].BootPct, nodes[2].WokenBy = StateWaking, "booting", float64(k-42)*25, WokenByBMC
	}
	o := Observation{Time: t0.Add(time.Duration(k) * time.Second), EnergyJ: f.energyJ, CapsSavedJ: f.capsJ, ParkingSavedJ: f.parkingJ}
	for i := range nodes {
		// Power rises and falls with the load, less on the capped nodes.
		nodes[i].Watts = 300 + 200*math.Sin(float64(k+5*i)/20)*math.Sin(float64(k+5*i)/20)
		if nodes[i].CPUCapPct < 100 {
			nodes[i].Watts *= 0.7
		}
		switch nodes[i].Host {
		case "off":
			nodes[i].Watts = 9.75
		case "booting":
			nodes[i].Watts = 125
		}
		nodes[i].RunningPerf = 1
		if nodes[i].Profile == ProfileEco && !nodes[i].Draining {
			nodes[i].RunningPerf = 0
		}
		nodes[i].RunningStd = 2
		o.PowerW += nodes[i].Watts
	}
	o.Nodes = nodes
	o.Running, o.Done, o.Pending = 12, k, max(0, 5-k)
	f.energyJ += o.PowerW // one second
	for _, n := range nodes {
		switch {
		case n.Host == "off" || n.Host == "booting":
			f.parkingJ += 300 - n.Watts
		case n.CPUCapPct < 100:
			f.capsJ += n.Watts/0.7 - n.Watts
		}
	}
	return o
}

func samplePods() []Pod {
	return []Pod{
		{Name: "job-000001", Class: ClassPerformance, Boundness: "cpu-compute", Node: "pool-a", ProfileAtStart: ProfilePerformance,
			Created: 1, Started: 2, Finished: 32, WorkSeconds: 30, Phase: PodSucceeded},
		{Name: "job-000000", Class: ClassStandard, Boundness: "gpu-compute", GPUs: 1, Node: "daemon-b", ProfileAtStart: ProfileEco,
			Created: 0, Started: 12, Finished: 48, WorkSeconds: 30, Phase: PodSucceeded},
		{Name: "job-000002", Class: ClassStandard, Boundness: "cpu-low", Node: "pool-b", ProfileAtStart: ProfileEco,
			Created: 3, Started: 4, Finished: 24, WorkSeconds: 20, Phase: PodSucceeded},
	}
}

func recordRun(name string, steps int) Run {
	f := &fakeFleet{}
	rec := NewRecorder(name, t0)
	for k := range steps {
		rec.Observe(f.observation(k))
	}
	return rec.Finish(samplePods())
}

func TestRecorderKeepsChangesOnlyAndSummarizes(t *testing.T) {
	run := recordRun(RunJoulie, 60)
	if len(run.Samples) != 60 {
		t.Fatalf("%d samples, want 60", len(run.Samples))
	}
	byName := map[string]Node{}
	for _, n := range run.Nodes {
		byName[n.Name] = n
	}
	// pool-a: performance, draining at 20, back at 25.
	var got []string
	for _, c := range byName["pool-a"].Timeline {
		got = append(got, secs(c.T)+":"+changeProfile(c))
	}
	if want := []string{"0:performance", "20:draining", "25:performance"}; !slices.Equal(got, want) {
		t.Errorf("pool-a timeline %v, want %v", got, want)
	}
	got = nil
	for _, c := range byName["daemon-a"].Timeline {
		got = append(got, secs(c.T)+":"+c.PowerState)
	}
	if want := []string{"0:awake", "28:parking", "30:parked", "40:waking", "42:booting", "46:awake"}; !slices.Equal(got, want) {
		t.Errorf("daemon-a timeline %v, want %v", got, want)
	}
	if st := run.Samples[35].States; st[StateParked] != 1 || st[StateAwake] != 3 || run.Samples[43].States[StateBooting] != 1 {
		t.Errorf("states at 35 s %v and at 43 s %v, want 1 parked and 3 awake, then 1 booting", st, run.Samples[43].States)
	}
	eco := byName["daemon-b"].Timeline
	if len(eco) != 2 || eco[1].T != 10 || eco[1].Profile != ProfileEco || eco[1].CPUCapPct != 60 || eco[1].GPUCapPct != 60 {
		t.Errorf("daemon-b timeline %+v, want performance then eco with 60%% caps at 10 s", eco)
	}
	if !byName["daemon-b"].EcoCapped || !byName["pool-b"].EcoCapped || byName["pool-a"].EcoCapped {
		t.Errorf("eco capped: pool-a %v pool-b %v daemon-b %v, want false true true",
			byName["pool-a"].EcoCapped, byName["pool-b"].EcoCapped, byName["daemon-b"].EcoCapped)
	}
	if n := byName["pool-a"]; n.PerfPods != 1 || n.StdPods != 0 {
		t.Errorf("pool-a ran %d performance and %d standard pods, want 1 and 0", n.PerfPods, n.StdPods)
	}

	s := run.Summary
	if s.EnergyJ <= 0 || math.Abs(s.EnergyJ-s.IntegralJ) > 1e-6*s.EnergyJ {
		t.Errorf("energy %v J, integral of the samples %v J: with samples on the steps they are equal", s.EnergyJ, s.IntegralJ)
	}
	var nodesJ float64
	for _, n := range run.Nodes {
		nodesJ += n.EnergyJ
	}
	if math.Abs(nodesJ-s.IntegralJ) > 1e-6*s.IntegralJ {
		t.Errorf("the nodes' energies add up to %v J, the cluster's to %v J", nodesJ, s.IntegralJ)
	}
	if s.DurationSeconds != 59 || s.Done != 3 || s.Pods != 3 {
		t.Errorf("duration %v s, %d of %d pods done; want 59 s, 3 of 3", s.DurationSeconds, s.Done, s.Pods)
	}
	std := s.Classes[1]
	if std.Class != ClassStandard || std.Pods != 2 || std.MeanRanSeconds != 28 || std.MeanStretch != 1.1 || std.MeanWaitSeconds != 6.5 {
		t.Errorf("standard pods: %+v, want 2 pods, mean run 28 s, stretch 1.1, wait 6.5 s", std)
	}
	if s.Parks != 1 || s.Wakes != 1 || s.WakesByBMC != 1 || s.ParkedNodeSeconds != 10 {
		t.Errorf("parks %d, wakes %d (%d by BMC), parked %v node-seconds; want 1, 1 (1), 10", s.Parks, s.Wakes, s.WakesByBMC, s.ParkedNodeSeconds)
	}
	if run.Pods[0].Name != "job-000000" {
		t.Errorf("pods not in creation order: first is %s", run.Pods[0].Name)
	}
	if errs := run.Check(Expect{CappedPaths: []string{"pool", "daemon"}, AllDone: true, ParkAndWake: true, EcoCapWithin: 5}); errs != nil {
		t.Errorf("a good run fails its checks: %v", errs)
	}
}

func TestCheckCatchesBrokenPromises(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(*Run)
		want  string
	}{
		{"performance pod started on an eco node", func(r *Run) {
			podNamed(r, "job-000000").Class = ClassPerformance
		}, "performance pod job-000000 started on daemon-b, which was eco"},
		{"performance pods running on eco nodes", func(r *Run) {
			r.Summary.PerfOnEcoMax = 2
		}, "up to 2 performance pods ran on eco nodes"},
		{"no daemon node capped", func(r *Run) {
			delete(r.Summary.EcoCappedNodes, "daemon")
		}, `no eco node of path "daemon"`},
		{"a pod still running", func(r *Run) {
			p := podNamed(r, "job-000002")
			p.Finished, p.Phase = -1, "Running"
		}, "pod job-000002 did not complete"},
		{"energy in the wrong unit", func(r *Run) {
			r.Summary.EnergyJ *= 1.05
		}, "differs from the integral of its reported power"},
		{"an eco node left uncapped", func(r *Run) {
			n := nodeNamed(r, "daemon-b")
			n.Timeline = append(n.Timeline, NodeChange{T: 20, Profile: ProfileEco, CPUCapPct: 100, GPUCapPct: 100, PowerState: StateAwake},
				NodeChange{T: 30, Profile: ProfileEco, CPUCapPct: 60, GPUCapPct: 60, PowerState: StateAwake})
		}, "node daemon-b (path daemon) was eco without a cap for 10.0 s from 20.0 s"},
		{"an eco node uncapped to the end", func(r *Run) {
			n := nodeNamed(r, "daemon-b")
			n.Timeline = append(n.Timeline, NodeChange{T: r.Summary.DurationSeconds - 8, Profile: ProfileEco, CPUCapPct: 100, GPUCapPct: 100, PowerState: StateAwake})
		}, "was eco without a cap for 8.0 s"},
		{"no park", func(r *Run) {
			r.Summary.Parks = 0
		}, "no node was parked"},
		{"no wake", func(r *Run) {
			r.Summary.Wakes = 0
		}, "no parked node was woken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := recordRun(RunJoulie, 60)
			tc.spoil(&run)
			errs := run.Check(Expect{CappedPaths: []string{"pool", "daemon"}, AllDone: true, ParkAndWake: true, EcoCapWithin: 5})
			if !slices.ContainsFunc(errs, func(e error) bool { return strings.Contains(e.Error(), tc.want) }) {
				t.Errorf("errors %v, want one saying %q", errs, tc.want)
			}
		})
	}
}

// A performance pod that starts on a draining node (placed there just
// before the drain began; the node keeps its performance caps) breaks
// no promise, and the summary counts it apart from one on an eco node.
func TestPerformancePodOnADrainingNodeIsCountedNotFailed(t *testing.T) {
	f := &fakeFleet{}
	rec := NewRecorder(RunJoulie, t0)
	for k := range 60 {
		rec.Observe(f.observation(k))
	}
	pods := samplePods()
	pods[0].ProfileAtStart = ProfileDraining
	run := rec.Finish(pods)
	if s := run.Summary; s.PerfStartedDraining != 1 || s.PerfStartedOnEco != 0 {
		t.Errorf("performance pods started on draining nodes %d, on eco nodes %d; want 1 and 0", s.PerfStartedDraining, s.PerfStartedOnEco)
	}
	if errs := run.Check(Expect{CappedPaths: []string{"pool", "daemon"}, AllDone: true, ParkAndWake: true, EcoCapWithin: 5}); errs != nil {
		t.Errorf("a pod started on a draining node fails the checks: %v", errs)
	}
}

func nodeNamed(r *Run, name string) *Node {
	for i := range r.Nodes {
		if r.Nodes[i].Name == name {
			return &r.Nodes[i]
		}
	}
	panic("no node " + name)
}

func podNamed(r *Run, name string) *Pod {
	for i := range r.Pods {
		if r.Pods[i].Name == name {
			return &r.Pods[i]
		}
	}
	panic("no pod " + name)
}

// The energy check allows for samples that fall between the fleet's steps,
// and no more: the fleet's figure then lags the sampled power by part of
// a step.
func TestEnergyToleranceCoversSamplesBetweenSteps(t *testing.T) {
	f := &fakeFleet{}
	rec := NewRecorder(RunJoulie, t0)
	for k := range 60 {
		o := f.observation(k)
		o.Time = o.Time.Add(time.Duration(k%3) * 300 * time.Millisecond) // jitter within a step
		rec.Observe(o)
	}
	run := rec.Finish(samplePods())
	if errs := run.Check(Expect{}); errs != nil {
		t.Errorf("samples jittered within a step fail the energy check: %v", errs)
	}
}

func sampleReport() *Report {
	r := &Report{
		Version: Version, Started: t0, Cluster: "embedded",
		Workload: Workload{Seed: 1, Jobs: 3, Hash: "abc", ArrivalsSeconds: 3},
		Settings: []Setting{{"joulie-controller", "RECONCILE_INTERVAL", "5s"}},
		Runs:     []Run{recordRun(RunJoulie, 60), recordRun(RunBaseline, 50)},
	}
	c := Compare(r.Runs[0], r.Runs[1])
	r.Comparison = &c
	return r
}

func TestWriteAndReadBack(t *testing.T) {
	dir := t.TempDir()
	r := sampleReport()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Runs) != 2 || back.Runs[0].Summary.EnergyJ != r.Runs[0].Summary.EnergyJ || len(back.Runs[1].Samples) != 50 {
		t.Errorf("report.json does not hold what was written")
	}
	html, err := os.ReadFile(filepath.Join(dir, FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	// Offline: nothing fetched, every plot inline.
	for _, bad := range []string{"http://", "https://", "<link", "src=\"//"} {
		if strings.Contains(page, bad) {
			t.Errorf("report.html contains %q: it must open offline", bad)
		}
	}
	if n := strings.Count(page, `src="data:image/svg`); n != 8 {
		t.Errorf("report.html embeds %d plots, want 8 (power, durations, and profiles, power states and pods of each run)", n)
	}
	for _, want := range []string{"job-000002", "pool-b", "RECONCILE_INTERVAL", "Energy saved with Joulie", "by parking", "by placement and the rest", "waited for a boot", "Nodes per power state",
		`<span class="parked">parked</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html does not mention %q", want)
		}
	}
}

// The page as a reader sees it: Debian's Chromium renders it headless.
func TestReportRendersInABrowser(t *testing.T) {
	dir := t.TempDir()
	if err := sampleReport().Write(dir); err != nil {
		t.Fatal(err)
	}
	problems, err := BrowserCheck(t.Context(), filepath.Join(dir, FileHTML), filepath.Join(dir, "report.png"))
	if err != nil {
		t.Fatal(err)
	}
	if problems != nil {
		t.Errorf("the browser finds the report broken: %v", problems)
	}
}

// The browser check itself fails on what it is there to catch.
func TestBrowserCheckCatchesBrokenPages(t *testing.T) {
	i := strings.Index(pageTemplate, "<script>")
	mark := pageTemplate[i : strings.Index(pageTemplate, "</script>")+len("</script>")]
	for _, tc := range []struct {
		name, html, want string
	}{
		{"blank page", "<!DOCTYPE html><html><body>" + mark + "</body></html>", "blank"},
		{"image that does not decode", `<!DOCTYPE html><html><body><h1>Report</h1><p>text text text</p>` +
			`<img src="data:image/svg+xml;base64,PHN2Zz4=">` + mark + `</body></html>`, "did not decode: broken:1"},
		{"script error", `<!DOCTYPE html><html><body><h1>Report</h1><p>text text text</p>` + mark +
			`<script>undefinedFunction();</script></body></html>`, "console"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			html := filepath.Join(dir, "page.html")
			if err := os.WriteFile(html, []byte(tc.html), 0o644); err != nil {
				t.Fatal(err)
			}
			problems, err := BrowserCheck(t.Context(), html, filepath.Join(dir, "page.png"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("problems %q, want one saying %q", problems, tc.want)
			}
		})
	}
}
