package podenergy

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

var (
	train = Key{"ml", "train"}
	infer = Key{"ml", "infer"}
	web   = Key{"web", "front"}
)

func whole(k Key, container string) Claim { return Claim{Pod: k, Container: container, Replicas: 1} }

func counter(id string, joules float64) GPU {
	return GPU{ID: id, EnergyJoules: joules, HasEnergy: true}
}

func find(t *testing.T, l *Ledger, k Key) PodEnergy {
	t.Helper()
	for _, p := range l.Pods() {
		if p.Key == k {
			return p
		}
	}
	t.Fatalf("no pod %s in %+v", k, l.Pods())
	return PodEnergy{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestGPUEnergyGoesToTheHolder(t *testing.T) {
	l := NewLedger(time.Hour)
	holders := map[string][]Claim{"GPU-a": {whole(train, "trainer")}}
	for i, e := range []float64{1000, 3000, 5500} {
		l.Observe(Tick{Now: at(5 * i), GPUs: []GPU{counter("GPU-a", e), counter("GPU-b", 100*float64(i))}, Holders: holders})
	}
	p := find(t, l, train)
	if !near(p.GPUJoules, 4500) || p.GPUEstimated {
		t.Errorf("train: %v J (estimated %v), want 4500 J read from the counter", p.GPUJoules, p.GPUEstimated)
	}
	if !near(p.GPUWatts, 500) {
		t.Errorf("train: %v W over the last interval, want 500", p.GPUWatts)
	}
	if len(p.Containers) != 1 || p.Containers[0].Name != "trainer" || p.Containers[0].GPUs[0] != "GPU-a" {
		t.Errorf("containers %+v, want trainer holding GPU-a", p.Containers)
	}
	if u := l.Unattributed(); !near(u["GPU-b"], 200) || u["GPU-a"] != 0 {
		t.Errorf("unattributed %v, want GPU-b's 200 J and none of GPU-a", u)
	}
}

func TestAChangeOfHandsIsSplitAtTheIntervalsMiddle(t *testing.T) {
	l := NewLedger(time.Hour)
	a := map[string][]Claim{"GPU-a": {whole(train, "c")}}
	b := map[string][]Claim{"GPU-a": {whole(infer, "c")}}
	l.Observe(Tick{Now: at(0), GPUs: []GPU{counter("GPU-a", 0)}, Holders: a})
	l.Observe(Tick{Now: at(5), GPUs: []GPU{counter("GPU-a", 1000)}, Holders: a})
	l.Observe(Tick{Now: at(10), GPUs: []GPU{counter("GPU-a", 2000)}, Holders: b})
	l.Observe(Tick{Now: at(15), GPUs: []GPU{counter("GPU-a", 3000)}, Holders: b})
	if p := find(t, l, train); !near(p.GPUJoules, 1500) || !p.Ended {
		t.Errorf("train: %v J, ended %v; want 1000 J + half of the changing interval, ended", p.GPUJoules, p.Ended)
	}
	if p := find(t, l, infer); !near(p.GPUJoules, 1500) || p.Ended {
		t.Errorf("infer: %v J, ended %v; want half of the changing interval + 1000 J, running", p.GPUJoules, p.Ended)
	}
}

func TestASharedGPUIsSplitByReplicas(t *testing.T) {
	l := NewLedger(time.Hour)
	h := map[string][]Claim{"GPU-a": {{Pod: train, Container: "c", Replicas: 3}, {Pod: infer, Container: "c", Replicas: 1}}}
	l.Observe(Tick{Now: at(0), GPUs: []GPU{counter("GPU-a", 0)}, Holders: h})
	l.Observe(Tick{Now: at(10), GPUs: []GPU{counter("GPU-a", 4000)}, Holders: h})
	if a, b := find(t, l, train).GPUJoules, find(t, l, infer).GPUJoules; !near(a, 3000) || !near(b, 1000) {
		t.Errorf("train %v J, infer %v J; want 3000 and 1000 (3 and 1 of 4 replicas)", a, b)
	}
}

func TestCounterResetAndMissingCounter(t *testing.T) {
	l := NewLedger(time.Hour)
	h := map[string][]Claim{"GPU-a": {whole(train, "c")}, "GPU-b": {whole(infer, "c")}}
	ticks := []Tick{
		{Now: at(0), GPUs: []GPU{counter("GPU-a", 90_000), {ID: "GPU-b", PowerWatts: 100, HasPower: true}}},
		{Now: at(10), GPUs: []GPU{counter("GPU-a", 92_000), {ID: "GPU-b", PowerWatts: 300, HasPower: true}}},
		// Driver reload: the counter starts again from near zero.
		{Now: at(20), GPUs: []GPU{{ID: "GPU-a", EnergyJoules: 50, HasEnergy: true, PowerWatts: 250, HasPower: true}, {ID: "GPU-b", PowerWatts: 300, HasPower: true}}},
		{Now: at(30), GPUs: []GPU{counter("GPU-a", 2050), {ID: "GPU-b", PowerWatts: 300, HasPower: true}}},
	}
	for _, tk := range ticks {
		tk.Holders = h
		l.Observe(tk)
	}
	a := find(t, l, train)
	// 2000 from the counter, 250 W × 10 s over the reset, 2000 after it.
	if !near(a.GPUJoules, 6500) || !a.GPUEstimated {
		t.Errorf("train: %v J (estimated %v), want 6500 J, partly estimated", a.GPUJoules, a.GPUEstimated)
	}
	if l.CounterResets() != 1 {
		t.Errorf("%d resets counted, want 1", l.CounterResets())
	}
	// Trapezoids: (100+300)/2×10 + 300×10 + 300×10.
	if b := find(t, l, infer); !near(b.GPUJoules, 8000) || !b.GPUEstimated {
		t.Errorf("infer: %v J (estimated %v), want 8000 J integrated from power", b.GPUJoules, b.GPUEstimated)
	}
}

func TestAGPUMissingFromATickStartsAfresh(t *testing.T) {
	l := NewLedger(time.Hour)
	h := map[string][]Claim{"GPU-a": {whole(train, "c")}}
	l.Observe(Tick{Now: at(0), GPUs: []GPU{counter("GPU-a", 0)}, Holders: h})
	l.Observe(Tick{Now: at(5), Holders: h})
	l.Observe(Tick{Now: at(10), GPUs: []GPU{counter("GPU-a", 9000)}, Holders: h})
	l.Observe(Tick{Now: at(15), GPUs: []GPU{counter("GPU-a", 9500)}, Holders: h})
	if p := find(t, l, train); !near(p.GPUJoules, 500) {
		t.Errorf("train: %v J, want only the 500 J after the device came back", p.GPUJoules)
	}
}

func TestCPUEnergyIsSharedByCPUTime(t *testing.T) {
	l := NewLedger(time.Hour)
	pods := []Pod{{Key: train, UID: "u1"}, {Key: web, UID: "u2"}}
	l.Observe(Tick{Now: at(0), Pods: pods, HasCPU: true, HasHostCPU: true, HostCPU: 100 * time.Second,
		PodCPU: map[Key]time.Duration{train: 10 * time.Second, web: 50 * time.Second}})
	// Over 10 s the host was busy 40 CPU-seconds: train 30, web 6, the
	// rest outside pods. The packages used 2000 J.
	l.Observe(Tick{Now: at(10), Pods: pods, CPUJoules: 2000, HasCPU: true, HasHostCPU: true, HostCPU: 140 * time.Second,
		PodCPU: map[Key]time.Duration{train: 40 * time.Second, web: 56 * time.Second}})
	tr, w := find(t, l, train), find(t, l, web)
	if !tr.HasCPU || !near(tr.CPUJoules, 1500) || !near(tr.CPUWatts, 150) {
		t.Errorf("train: %+v, want 1500 J at 150 W", tr)
	}
	if !near(w.CPUJoules, 300) {
		t.Errorf("web: %v J, want 300", w.CPUJoules)
	}
	// No RAPL reading: nothing estimated for the interval.
	l.Observe(Tick{Now: at(20), Pods: pods, HasHostCPU: true, HostCPU: 150 * time.Second,
		PodCPU: map[Key]time.Duration{train: 45 * time.Second, web: 57 * time.Second}})
	if tr := find(t, l, train); !near(tr.CPUJoules, 1500) {
		t.Errorf("train: %v J after an interval without RAPL, want still 1500", tr.CPUJoules)
	}
}

func TestEndedPodsAreReportedOnceAndDroppedAfterRetention(t *testing.T) {
	l := NewLedger(time.Minute)
	h := map[string][]Claim{"GPU-a": {whole(train, "c")}}
	l.Observe(Tick{Now: at(0), GPUs: []GPU{counter("GPU-a", 0)}, Holders: h, Pods: []Pod{{Key: web}}})
	l.Observe(Tick{Now: at(5), GPUs: []GPU{counter("GPU-a", 700)}, Holders: h, Pods: []Pod{{Key: web}}})
	if e := l.Ended(); len(e) != 0 {
		t.Fatalf("ended %+v before anything ended", e)
	}
	l.Observe(Tick{Now: at(10), GPUs: []GPU{counter("GPU-a", 900)}, Pods: []Pod{{Key: web}}})
	e := l.Ended()
	// train held the GPU at the start of the last interval: half of it.
	if len(e) != 1 || e[0].Key != train || !near(e[0].GPUJoules, 800) || !e[0].Until.Equal(at(10)) || !e[0].Since.Equal(at(0)) {
		t.Fatalf("ended %+v, want train alone with 800 J over 0–10 s", e)
	}
	if e := l.Ended(); len(e) != 0 {
		t.Errorf("ended reported twice: %+v", e)
	}
	if !near(l.Unattributed()["GPU-a"], 100) {
		t.Errorf("unattributed %v, want the other half of the last interval", l.Unattributed())
	}
	l.Observe(Tick{Now: at(60), Pods: []Pod{{Key: web}}})
	if len(l.Pods()) != 2 {
		t.Errorf("pods %+v, want train kept within the retention", l.Pods())
	}
	l.Observe(Tick{Now: at(80), Pods: []Pod{{Key: web}}})
	if len(l.Pods()) != 1 {
		t.Errorf("pods %+v, want train dropped after the retention", l.Pods())
	}
}

func TestANewUIDUnderTheSameNameIsANewPod(t *testing.T) {
	l := NewLedger(time.Hour)
	h := map[string][]Claim{"GPU-a": {whole(train, "c")}}
	l.Observe(Tick{Now: at(0), GPUs: []GPU{counter("GPU-a", 0)}, Holders: h, Pods: []Pod{{Key: train, UID: "old"}}})
	l.Observe(Tick{Now: at(5), GPUs: []GPU{counter("GPU-a", 500)}, Holders: h, Pods: []Pod{{Key: train, UID: "old"}}})
	l.Observe(Tick{Now: at(10), GPUs: []GPU{counter("GPU-a", 1000)}, Holders: h, Pods: []Pod{{Key: train, UID: "new"}}})
	e := l.Ended()
	if len(e) != 1 || e[0].UID != "old" || !near(e[0].GPUJoules, 500) {
		t.Fatalf("ended %+v, want the old pod with 500 J", e)
	}
	if p := find(t, l, train); p.UID != "new" || p.Ended {
		t.Errorf("pod %+v, want the new one running", p)
	}
}

func TestTicksOutOfOrderAreIgnored(t *testing.T) {
	l := NewLedger(time.Hour)
	h := map[string][]Claim{"GPU-a": {whole(train, "c")}}
	l.Observe(Tick{Now: at(10), GPUs: []GPU{counter("GPU-a", 1000)}, Holders: h})
	l.Observe(Tick{Now: at(5), GPUs: []GPU{counter("GPU-a", 0)}, Holders: h})
	l.Observe(Tick{Now: at(20), GPUs: []GPU{counter("GPU-a", 2000)}, Holders: h})
	if p := find(t, l, train); !near(p.GPUJoules, 1000) {
		t.Errorf("train: %v J, want 1000", p.GPUJoules)
	}
}

// A GPU split into MIG devices: each holder gets its MIG devices' share of
// the parent's energy, and the idle MIG devices' share stays unattributed.
func TestAGPUSplitIntoSharesKeepsTheIdleSharesUnattributed(t *testing.T) {
	l := NewLedger(time.Hour)
	h := map[string][]Claim{"GPU-a": {{Pod: train, Container: "c", Replicas: 2}, {Pod: infer, Container: "c", Replicas: 1}}}
	split := func(j float64) GPU { g := counter("GPU-a", j); g.Shares = 7; return g }
	l.Observe(Tick{Now: at(0), GPUs: []GPU{split(0)}, Holders: h})
	l.Observe(Tick{Now: at(10), GPUs: []GPU{split(7000)}, Holders: h})
	if a, b := find(t, l, train).GPUJoules, find(t, l, infer).GPUJoules; !near(a, 2000) || !near(b, 1000) {
		t.Errorf("train %v J, infer %v J; want 2000 and 1000 (2 and 1 of 7 MIG devices)", a, b)
	}
	if u := l.Unattributed()["GPU-a"]; !near(u, 4000) {
		t.Errorf("unattributed %v J, want the 4 idle MIG devices' 4000 J", u)
	}
}
