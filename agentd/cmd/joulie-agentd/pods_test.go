package main

import (
	"math"
	"os"
	"testing"
	"time"

	"joulie.io/joulie/agentd/internal/localapi"
	"joulie.io/joulie/agentd/internal/nvml/fakenvml"
	"joulie.io/joulie/agentd/internal/podresources/fakekubelet"
)

// pods asks the running daemon for its per-pod energy, as an operator
// would, through joulie-agentctl.
func pods(t *testing.T, f *fixture) localapi.PodsReport {
	t.Helper()
	var r localapi.PodsReport
	ctlJSON(t, f, "pods", &r)
	return r
}

func podIn(r localapi.PodsReport, name string) (localapi.PodEnergy, bool) {
	for _, p := range r.Pods {
		if p.Name == name {
			return p, true
		}
	}
	return localapi.PodEnergy{}, false
}

// The real daemon, the fake libnvidia-ml and a fake kubelet serving the
// real pod-resources gRPC API: every GPU's energy lands on the pod holding
// it, a time-sliced GPU is split by replicas, a GPU that changes hands
// loses no energy, a pod's departure freezes its total, and a counter
// reset (driver reload) makes nothing negative.
func TestDaemonAttributesGPUEnergyToPods(t *testing.T) {
	f := newFixture(t)
	k := fakekubelet.Start(t)
	cfg, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, []byte("podResources:\n  socket: "+k.Socket()+"\n")...)
	if err := os.WriteFile(f.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	gpus := fakenvml.DGXH100()
	// GPU 5 runs: its counter advances at 350 W on its own.
	gpus[5].PowerMW, gpus[5].EnergySince = 350_000, time.Now()
	fakenvml.WriteGPU(t, f.gpus, 5, gpus[5])
	id := func(i int) string { return gpus[i].UUID }
	const res = "nvidia.com/gpu"
	k.SetPods(
		fakekubelet.Pod("ml", "train", fakekubelet.Container("trainer", fakekubelet.Devices(res, id(0), id(1)))),
		fakekubelet.Pod("ml", "infer-a", fakekubelet.Container("server", fakekubelet.Devices(res, id(2)+"::0"))),
		fakekubelet.Pod("ml", "infer-b", fakekubelet.Container("server", fakekubelet.Devices(res, id(2)+"::1"))),
		fakekubelet.Pod("web", "front", fakekubelet.Container("nginx")),
		fakekubelet.Pod("ml", "burn", fakekubelet.Container("burner", fakekubelet.Devices(res, id(5)))),
	)
	f.start(t)

	// Wait for two observations with the pods listed: the second sets the
	// baseline every later reading is measured from.
	var first localapi.PodEnergy
	waitFor(t, "the pods in the daemon's report", func() bool {
		var ok bool
		first, ok = podIn(pods(t, f), "train")
		return ok
	})
	waitFor(t, "a second observation", func() bool {
		p, _ := podIn(pods(t, f), "train")
		return p.Until.After(first.Until.Time)
	})
	bump := func(i int, joules uint64) {
		gpus[i].EnergyMJ += joules * 1000
		fakenvml.WriteGPU(t, f.gpus, i, gpus[i])
	}
	bump(0, 1000)
	bump(1, 2000)
	bump(2, 4000)
	bump(3, 500) // held by nobody
	var r localapi.PodsReport
	waitFor(t, "the energy on the pods", func() bool {
		r = pods(t, f)
		p, _ := podIn(r, "train")
		b, _ := podIn(r, "infer-b")
		return p.GPUJoules >= 3000 && b.GPUJoules >= 2000 && r.UnattributedGPUJoules[id(3)] >= 500
	})
	want := map[string]float64{"train": 3000, "infer-a": 2000, "infer-b": 2000, "front": 0}
	for name, j := range want {
		if p, _ := podIn(r, name); math.Abs(p.GPUJoules-j) > 1e-6 {
			t.Errorf("%s: %v J, want %v", name, p.GPUJoules, j)
		}
	}
	if u := r.UnattributedGPUJoules[id(3)]; math.Abs(u-500) > 1e-6 {
		t.Errorf("GPU 3 unattributed: %v J, want 500", u)
	}
	// The running GPU's power over a tick, on its pod: the counter's
	// 350 W, within what the tick's timing blurs.
	if p, _ := podIn(r, "burn"); p.GPUWatts < 300 || p.GPUWatts > 400 || p.GPUJoules < 300 {
		t.Errorf("burn: %v W, %v J; want about 350 W and the joules of a tick at least", p.GPUWatts, p.GPUJoules)
	}

	// GPU 1 goes from train to eval, and infer-b leaves, while GPU 1 and
	// GPU 2 use energy: whatever the tick that sees the change, no joule
	// is lost or counted twice.
	k.SetPods(
		fakekubelet.Pod("ml", "train", fakekubelet.Container("trainer", fakekubelet.Devices(res, id(0)))),
		fakekubelet.Pod("ml", "eval", fakekubelet.Container("eval", fakekubelet.Devices(res, id(1)))),
		fakekubelet.Pod("ml", "infer-a", fakekubelet.Container("server", fakekubelet.Devices(res, id(2)+"::0"))),
		fakekubelet.Pod("web", "front", fakekubelet.Container("nginx")),
		fakekubelet.Pod("ml", "burn", fakekubelet.Container("burner", fakekubelet.Devices(res, id(5)))),
	)
	bump(1, 1000)
	bump(2, 1000)
	waitFor(t, "infer-b to end and eval to hold GPU 1", func() bool {
		r = pods(t, f)
		b, _ := podIn(r, "infer-b")
		_, ok := podIn(r, "eval")
		return b.Ended && ok
	})
	// Once more with the new holders settled.
	bump(1, 1000)
	waitFor(t, "GPU 1's last joules", func() bool {
		r = pods(t, f)
		tr, _ := podIn(r, "train")
		ev, _ := podIn(r, "eval")
		return tr.GPUJoules+ev.GPUJoules >= 5000-1e-6
	})
	tr, _ := podIn(r, "train")
	ev, _ := podIn(r, "eval")
	a, _ := podIn(r, "infer-a")
	b, _ := podIn(r, "infer-b")
	if s := tr.GPUJoules + ev.GPUJoules; math.Abs(s-5000) > 1e-6 || ev.GPUJoules < 1000-1e-6 {
		t.Errorf("train %v J + eval %v J, want 5000 J in all and at least GPU 1's last 1000 J on eval", tr.GPUJoules, ev.GPUJoules)
	}
	if s := a.GPUJoules + b.GPUJoules + r.UnattributedGPUJoules[id(2)]; math.Abs(s-5000) > 1e-6 || b.GPUJoules < 2000-1e-6 || b.GPUJoules > 2500+1e-6 {
		t.Errorf("GPU 2: infer-a %v J, infer-b %v J, unattributed %v J; want 5000 J in all, infer-b's share of the last 1000 J at most half",
			a.GPUJoules, b.GPUJoules, r.UnattributedGPUJoules[id(2)])
	}
	ended := b.GPUJoules

	// The driver reloads: GPU 0's counter starts again near zero. The
	// power reading stands in for the interval; nothing goes negative.
	before := tr.GPUJoules
	gpus[0].EnergyMJ = 10_000
	fakenvml.WriteGPU(t, f.gpus, 0, gpus[0])
	waitFor(t, "the reset seen", func() bool {
		p, _ := podIn(pods(t, f), "train")
		return p.GPUEstimated
	})
	r = pods(t, f)
	if p, _ := podIn(r, "train"); p.GPUJoules < before {
		t.Errorf("train: %v J after the counter reset, down from %v J", p.GPUJoules, before)
	}
	if p, _ := podIn(r, "infer-b"); p.GPUJoules != ended || !p.Ended {
		t.Errorf("infer-b after it ended: %+v, want its total frozen at %v J", p, ended)
	}
	if r.Kubelet == "" || r.CPU == "" {
		t.Errorf("report %+v says nothing of the kubelet or the CPU estimate", r)
	}
}
