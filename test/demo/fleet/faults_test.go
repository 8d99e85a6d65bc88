package fleet

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"joulie.io/joulie/test/energy/physics"
)

// A switch-off is reported with the pods the stand-in ran on that host
// at the instant, and by what switched it off; a host already off is not
// switched off again, so it is not reported again.
func TestPowerOffIsReportedWithThePodsRunningThere(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := newSim(physics.Default(), 3*time.Second, t0)
	s.addNode("n", family(t, "epyc"), nil)
	s.addNode("other", family(t, "epyc"), nil)
	for _, p := range []struct{ name, node string }{{"a", "n"}, {"b", "n"}, {"c", "other"}} {
		pod := testPod(p.name, p.node, 1, 0, 0, physics.CPUCompute, "")
		pod.UID = types.UID("uid-" + p.name)
		if ok, err := s.start(pod, t0); !ok || err != nil {
			t.Fatalf("start %s on %s: %v, %v", p.name, p.node, ok, err)
		}
	}
	got := make(chan PowerOff, 4)
	s.poweredOff = func(ev PowerOff) { got <- ev }
	s.mu.Lock()
	s.switchOff(s.nodes["n"], PowerOffByAgent)
	s.switchOff(s.nodes["n"], PowerOffByBMC) // already off
	s.mu.Unlock()
	ev := <-got
	var names []string
	for _, p := range ev.Running {
		names = append(names, p.Name+"/"+p.UID)
	}
	slices.Sort(names)
	if ev.Node != "n" || ev.By != PowerOffByAgent || ev.Host != HostOn || !slices.Equal(names, []string{"a/uid-a", "b/uid-b"}) {
		t.Errorf("reported %+v with running %v, want n switched off by the agent while on, running a and b", ev, names)
	}
	select {
	case ev := <-got:
		t.Errorf("a host already off was reported switched off again: %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
}

// No kubelet runs on a host that is off or booting: a pod bound there
// is not run until the host is on.
func TestStandInRunsNothingOnAHostThatIsNotOn(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := newSim(physics.Default(), 3*time.Second, t0)
	s.addNode("n", family(t, "epyc"), nil)
	s.mu.Lock()
	s.switchOff(s.nodes["n"], PowerOffByAgent)
	s.mu.Unlock()
	pod := testPod("late", "n", 1, 0, time.Second, physics.CPUCompute, "")
	if ok, _ := s.start(pod, t0); ok {
		t.Fatal("the stand-in ran a pod on a host that is off")
	}
	s.wake(nodeMAC("n"), t0)
	if ok, _ := s.start(pod, t0); ok {
		t.Fatal("the stand-in ran a pod on a host still booting")
	}
	s.step(t0.Add(4 * time.Second))
	if ok, err := s.start(pod, t0.Add(4*time.Second)); !ok || err != nil {
		t.Fatalf("the booted host does not run the pod: %v, %v", ok, err)
	}
	if got := s.phase("ns/late"); got != "Running" {
		t.Errorf("phase %q, want Running", got)
	}
}
