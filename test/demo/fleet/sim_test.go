package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/test/energy/physics"
)

// The simulator's own behaviour, without an API server or agents: the
// physics per tick, the HTTP contract, and the energy bookkeeping the
// report relies on.

func family(t *testing.T, name string) *Family {
	t.Helper()
	for _, f := range Families(physics.Default()) {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no family %s", name)
	return nil
}

func testPod(name, node string, cpus, gpus int, work time.Duration, b physics.Boundness, class string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: map[string]string{
			AnnotationBoundness: string(b), joulie.AnnotationWorkloadClass: class,
		}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(cpus), resource.DecimalSI)},
		}}}},
	}
	if gpus > 0 {
		p.Spec.Containers[0].Resources.Requests[ResourceNVIDIAGPU] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	if work > 0 {
		p.Annotations[AnnotationWork] = work.String()
	}
	return p
}

// capGPUs caps the first gpus GPUs of node at watts through the HTTP
// contract, as the pool agent does.
func capGPUs(t *testing.T, srv *httptest.Server, node string, gpus int, watts float64) {
	t.Helper()
	for i := range gpus {
		body := fmt.Sprintf(`{"apiVersion":"joulie.io/http-backend/v1","node":%q,"action":"gpu.set_power_cap_watts","gpu":%d,"watts":%g}`, node, i, watts)
		resp, err := http.Post(srv.URL+"/sim/"+node+"/control", "application/json", strings.NewReader(body))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("cap GPU %d of %s: %v %v", i, node, resp, err)
		}
		resp.Body.Close()
	}
}

func control(t *testing.T, srv *httptest.Server, body string) (int, wireAnswer) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/nodes/n/control", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a wireAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, a
}

// A cap set through the contract lowers the node's draw to the physics'
// figure and stretches its pods' runtime by the physics' stretch.
func TestCapThroughHTTPLowersPowerAndStretchesPods(t *testing.T) {
	m := physics.Default()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s := newSim(m, time.Minute, t0)
	s.addNode("capped", family(t, "h100"), nil)
	s.addNode("free", family(t, "h100"), nil)
	srv := httptest.NewServer(s)
	defer srv.Close()
	capGPUs(t, srv, "capped", 8, 420)
	work := 10 * time.Second
	for _, n := range []string{"capped", "free"} {
		if _, err := s.start(testPod("job-"+n, n, 32, 8, work, physics.GPUCompute, "performance"), t0); err != nil {
			t.Fatal(err)
		}
	}
	now := t0
	finished := map[string]time.Time{}
	for range 200 {
		now = now.Add(100 * time.Millisecond)
		done, errs := s.step(now)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		for _, k := range done {
			finished[k] = now
		}
		if now == t0.Add(time.Second) {
			snap := s.snapshot()
			g := m.GPUNode
			host := g.Host.At(32 * m.Class(physics.GPUCompute).Utilization / 224)
			if want := host + 8*0.6*g.GPUMaxWatts(); math.Abs(snap.Nodes[0].Watts-want) > 1e-6 {
				t.Errorf("capped node draws %v W, want %v W", snap.Nodes[0].Watts, want)
			}
			if want := host + 8*g.GPUMaxWatts(); math.Abs(snap.Nodes[1].Watts-want) > 1e-6 {
				t.Errorf("free node draws %v W, want %v W", snap.Nodes[1].Watts, want)
			}
			if snap.Nodes[0].GPUCapPct != 60 || snap.Nodes[0].RunningPerf != 1 || snap.Nodes[1].GPUCapPct != 100 {
				t.Errorf("snapshot nodes %+v", snap.Nodes)
			}
		}
	}
	stretch := m.Stretch(physics.GPUCompute, m.GPUDevice(1, m.Class(physics.GPUCompute).Utilization), 0.6)
	if got, want := finished["ns/job-capped"].Sub(t0), time.Duration(float64(work)*stretch); got < want || got > want+100*time.Millisecond {
		t.Errorf("capped job took %s, want %s (stretch %v) within a tick", got, want, stretch)
	}
	if got := finished["ns/job-free"].Sub(t0); got != work {
		t.Errorf("free job took %s, want %s", got, work)
	}
	if p := s.phase("ns/job-capped"); p != corev1.PodSucceeded {
		t.Errorf("capped job phase %q", p)
	}
}

// The energy a snapshot reports is the left Riemann sum of the power the
// earlier snapshots reported, whatever the ticks' lengths, while pods
// come, go and caps change.
func TestEnergyIsTheSumOfReportedPower(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s := newSim(physics.Default(), time.Minute, t0)
	s.addNode("cpu", family(t, "epyc"), nil)
	s.addNode("gpu", family(t, "l40s"), nil)
	srv := httptest.NewServer(s)
	defer srv.Close()
	prev := s.snapshot()
	var sum float64
	now := t0
	for i := range 60 {
		now = now.Add(time.Duration(50+37*(i%5)) * time.Millisecond)
		switch i {
		case 3:
			_, _ = s.start(testPod("a", "cpu", 96, 0, 2*time.Second, physics.CPUCompute, ""), now)
			_, _ = s.start(testPod("b", "gpu", 8, 2, 0, physics.GPUMixed, ""), now)
		case 20:
			body := `{"apiVersion":"joulie.io/http-backend/v1","node":"cpu","action":"rapl.set_power_cap_watts","watts":216}`
			resp, err := http.Post(srv.URL+"/cpu/control", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		case 40:
			s.forget("ns/b")
		}
		s.step(now)
		snap := s.snapshot()
		sum += prev.PowerW * snap.Time.Sub(prev.Time).Seconds()
		if math.Abs(snap.EnergyJ-sum) > 1e-6*sum {
			t.Fatalf("tick %d: energy %v J, the reported power integrates to %v J", i, snap.EnergyJ, sum)
		}
		var nodes float64
		for _, n := range snap.Nodes {
			nodes += n.Watts
		}
		if math.Abs(nodes-snap.PowerW) > 1e-9 {
			t.Fatalf("tick %d: cluster %v W, nodes sum to %v W", i, snap.PowerW, nodes)
		}
		prev = snap
	}
	if sum == 0 {
		t.Fatal("no energy at all")
	}
}

// Like hardware, the simulator refuses what the agent must have clamped,
// and says what it does not model.
func TestControlRefusals(t *testing.T) {
	s := newSim(physics.Default(), time.Minute, time.Now())
	s.addNode("n", family(t, "l40s"), nil)
	srv := httptest.NewServer(s)
	defer srv.Close()
	const head = `{"apiVersion":"joulie.io/http-backend/v1","node":"n",`
	for _, tc := range []struct {
		name, body string
		status     int
		result     string
	}{
		{"package cap in range", head + `"action":"rapl.set_power_cap_watts","watts":200}`, 200, "applied"},
		{"package cap below the range", head + `"action":"rapl.set_power_cap_watts","watts":100}`, 200, "error"},
		{"GPU cap above the range", head + `"action":"gpu.set_power_cap_watts","gpu":1,"watts":400}`, 200, "error"},
		{"no such GPU", head + `"action":"gpu.set_power_cap_watts","gpu":4,"watts":300}`, 200, "error"},
		{"throttle", head + `"action":"dvfs.set_throttle_pct","pct":30}`, 200, "applied"},
		{"unknown action", head + `"action":"fan.set_speed","pct":30}`, 501, "blocked"},
		{"unknown field", head + `"action":"dvfs.set_throttle_pct","pct":30,"extra":1}`, 400, "error"},
		{"other version", `{"apiVersion":"joulie.io/http-backend/v2","node":"n","action":"dvfs.set_throttle_pct","pct":3}`, 400, "error"},
		{"unknown node", `{"apiVersion":"joulie.io/http-backend/v1","node":"x","action":"dvfs.set_throttle_pct","pct":3}`, 404, "error"},
	} {
		status, a := control(t, srv, tc.body)
		if status != tc.status || a.Result != tc.result {
			t.Errorf("%s: %d %+v, want %d %s", tc.name, status, a, tc.status, tc.result)
		}
	}
	resp, err := http.Post(srv.URL+"/telemetry", "application/json", bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST telemetry: %d", resp.StatusCode)
	}
}

// Deleting pods: a finished pod's record stays for the report, a running
// one frees its GPUs and leaves none, and a new pod under an old name
// runs afresh.
func TestDeletedPods(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s := newSim(physics.Default(), time.Minute, t0)
	s.addNode("n", family(t, "l40s"), nil)
	done := testPod("done", "n", 8, 2, time.Second, physics.GPUMixed, "")
	done.UID = "1"
	running := testPod("running", "n", 8, 2, 0, physics.GPUMixed, "")
	running.UID = "2"
	for _, p := range []*corev1.Pod{done, running} {
		if _, err := s.start(p, t0); err != nil {
			t.Fatal(err)
		}
	}
	s.step(t0.Add(2 * time.Second))
	s.forget("ns/done")
	s.forget("ns/running")
	snap := s.snapshot()
	if len(snap.Pods) != 1 || snap.Pods[0].Name != "done" || snap.Pods[0].Phase != string(corev1.PodSucceeded) {
		t.Fatalf("records after deletion: %+v", snap.Pods)
	}
	// All four GPUs are free again: a pod asking for four gets them.
	again := testPod("done", "n", 8, 4, time.Second, physics.GPUMixed, "")
	again.UID = "3"
	if _, err := s.start(again, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := len(s.pods["ns/done"].gpus); got != 4 {
		t.Errorf("new pod holds %d GPUs, want 4", got)
	}
	if s.phase("ns/done") != corev1.PodRunning || len(s.snapshot().Pods) != 2 {
		t.Errorf("new pod under an old name: phase %q, records %+v", s.phase("ns/done"), s.snapshot().Pods)
	}
}

// A pod that starts between two ticks is credited only the time since
// its start, so it never finishes before its work is done.
func TestPodStartedBetweenTicksWorksFromItsStart(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s := newSim(physics.Default(), time.Minute, t0)
	s.addNode("n", family(t, "epyc"), nil)
	if _, err := s.start(testPod("p", "n", 1, 0, time.Second, physics.CPULow, ""), t0.Add(90*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var finished time.Time
	for now := t0.Add(100 * time.Millisecond); finished.IsZero() && now.Before(t0.Add(3*time.Second)); now = now.Add(100 * time.Millisecond) {
		if done, _ := s.step(now); len(done) > 0 {
			finished = now
		}
	}
	if want := t0.Add(1100 * time.Millisecond); !finished.Equal(want) {
		t.Errorf("finished at +%s, want +%s (the first tick after 90 ms + 1 s)", finished.Sub(t0), want.Sub(t0))
	}
}

// A pod's record names the profile its node had when it started, and
// tells a draining node (labelled eco and draining, on its performance
// caps) from an eco one.
func TestPodRecordTellsDrainingFromEco(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := newSim(physics.Default(), 3*time.Second, t0)
	for _, n := range []struct {
		name, profile string
		draining      bool
	}{
		{"perf", "performance", false}, {"drain", "eco", true}, {"eco", "eco", false},
	} {
		s.addNode(n.name, family(t, "epyc"), nil)
		s.setProfile(n.name, n.profile, n.draining)
		if _, err := s.start(testPod("on-"+n.name, n.name, 1, 0, time.Minute, physics.CPUCompute, "performance"), t0); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	for _, p := range s.snapshot().Pods {
		got[p.Node] = p.ProfileAtStart
	}
	if want := map[string]string{"perf": "performance", "drain": "draining", "eco": "eco"}; !maps.Equal(got, want) {
		t.Errorf("profiles at start %v, want %v", got, want)
	}
}

// The saving's parts are counted against the same ticks as the energy:
// a capped node saves what an identical uncapped one at the same load
// draws beyond it, a switched-off node its idle draw less the BMC's, a
// booting one its idle draw less the boot's (negative when a boot draws
// more). Nothing else saves anything.
func TestCapsAndParkingSavingsAreCountedPerTick(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	m := physics.Default()
	s := newSim(m, time.Hour, t0) // boots outlast the test
	for _, n := range []string{"capped", "free", "idle", "off", "booting"} {
		s.addNode(n, family(t, "h100"), nil)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	capGPUs(t, srv, "capped", 8, 420)
	for _, n := range []string{"capped", "free"} {
		if _, err := s.start(testPod("job-"+n, n, 32, 8, time.Hour, physics.GPUCompute, "performance"), t0); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	s.switchOff(s.nodes["off"], PowerOffByAgent)
	s.switchOff(s.nodes["booting"], PowerOffByAgent)
	s.boot1(s.nodes["booting"], WakeByLAN, t0)
	s.mu.Unlock()

	var caps, parking float64
	now := t0
	for i := range 50 {
		before := s.snapshot()
		watts := map[string]float64{}
		for _, n := range before.Nodes {
			watts[n.Name] = n.Watts
		}
		dt := time.Duration(100+10*(i%3)) * time.Millisecond
		now = now.Add(dt)
		if _, errs := s.step(now); len(errs) > 0 {
			t.Fatal(errs)
		}
		caps += (watts["free"] - watts["capped"]) * dt.Seconds()
		parking += (2*watts["idle"] - watts["off"] - watts["booting"]) * dt.Seconds()
	}
	snap := s.snapshot()
	if caps <= 0 || math.Abs(snap.CapsSavedJ-caps) > 1e-6*caps {
		t.Errorf("caps saved %v J, want the uncapped twin's extra draw %v J", snap.CapsSavedJ, caps)
	}
	if math.Abs(snap.ParkingSavedJ-parking) > 1e-6*math.Abs(parking) || parking == 0 {
		t.Errorf("parking saved %v J, want %v J from the idle twin against the off and booting nodes", snap.ParkingSavedJ, parking)
	}
	t.Logf("over 5 s: caps saved %.0f J, parking %.0f J (off %.0f W, boot %.0f W, idle %.0f W)",
		snap.CapsSavedJ, snap.ParkingSavedJ, m.Power.OffWatts, m.Power.BootWatts, snap.Nodes[2].Watts)
}
