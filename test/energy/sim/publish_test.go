package sim

import (
	"context"
	"joulie.io/joulie/pkg/powerpub"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/workload"
)

// The controller, and through its twin the extender, see a node's power
// as the agent publishes it: a change of 10% or less waits for the minute,
// a larger one goes out at the agent's next tick.
func TestTwinSeesPowerAsTheAgentPublishesIt(t *testing.T) {
	ctx := context.Background()
	nodes := workload.StandardCluster(1, 0)
	job := func(id string, milli int64) workload.Job {
		return workload.Job{ID: id, Class: workload.Standard, Boundness: physics.CPUCompute, CPUMilli: milli,
			MemoryMiB: 1024, Work: 10 * time.Hour}
	}
	// On the 384-CPU node: 2 CPUs move the draw by about 5%, 40 CPUs by
	// far more than 10%.
	jobs := []workload.Job{job("small", 2000), job("large", 40000), job("small-again", 2000)}
	spec, _ := Spec(ArmNoCaps)
	s, err := newSimulation(spec, nodes, jobs, Options{Seed: 1, Model: physics.Default(),
		ReconcileInterval: time.Minute, AgentDelay: 5 * time.Second, MaxPodsPerNode: 110})
	if err != nil {
		t.Fatal(err)
	}
	defer s.sched.Close()
	n := s.nodes[0]
	at := func(d time.Duration) { t.Helper(); s.advance(d) }
	reconcile := func(d time.Duration) {
		t.Helper()
		at(d)
		if err := s.reconcile(ctx); err != nil {
			t.Fatal(err)
		}
	}
	start := func(d time.Duration, idx int) float64 {
		t.Helper()
		at(d)
		before := n.parts.Total()
		if !s.trySchedule(ctx, idx) {
			t.Fatalf("job %s did not fit", jobs[idx].ID)
		}
		return n.parts.Total() / before
	}
	seen := func(when string, wantW float64, wantAt time.Duration) {
		t.Helper()
		pm := n.twin.PowerMeasurement
		if pm == nil || pm.Source != joulie.SourceAgent {
			t.Fatalf("%s: twin measurement %+v, want the agent's", when, pm)
		}
		if mp := n.profile.Status.MeasuredPower; mp == nil || !mp.Time.Time.Equal(epoch.Add(wantAt)) {
			t.Errorf("%s: the controller read the reading of %v, want the one published at %s", when, mp, wantAt)
		}
		if math.Abs(pm.MeasuredNodePowerW-wantW) > 0.05 {
			t.Errorf("%s: the twin says %.1f W, want %.1f W", when, pm.MeasuredNodePowerW, wantW)
		}
	}

	reconcile(0) // creates the node's profile: the agent publishes from its next tick
	idle := n.parts.Total()
	if r := start(30*time.Second, 0); r <= 1 || r > 1+powerpub.Change {
		t.Fatalf("the small job moved the draw by a factor %.3f; the test needs a change of at most 10%%", r)
	}
	reconcile(time.Minute)
	seen("a small change within the minute", idle, 5*time.Second)

	if r := start(90*time.Second, 1); r <= 1+powerpub.Change {
		t.Fatalf("the large job moved the draw by a factor %.3f; the test needs more than 10%%", r)
	}
	large := n.parts.Total()
	reconcile(2 * time.Minute)
	seen("a large change", large, 95*time.Second) // the first tick after the change

	if r := start(125*time.Second, 2); r <= 1 || r > 1+powerpub.Change {
		t.Fatalf("the second small job moved the draw by a factor %.3f", r)
	}
	reconcile(3 * time.Minute)
	seen("a small change once the minute is up", n.parts.Total(), 155*time.Second) // a minute after 95s
}

// catchUp settles many ticks at once; it must agree, at every read, with
// an agent that decides at every tick.
func TestCatchUpAgreesWithTickByTick(t *testing.T) {
	const tick = 5 * time.Second
	rng := rand.New(rand.NewPCG(7, 7))
	type step struct {
		at time.Duration
		w  float64
	}
	// agent is the agent tick by tick up to end: a tick reads the draw in
	// force just before it.
	agent := func(steps []step, end time.Duration) (pubW float64, pubAt time.Duration, ok bool) {
		for k := (steps[0].at/tick + 1) * tick; k <= end; k += tick {
			cur := steps[0].w
			for _, st := range steps {
				if st.at < k {
					cur = st.w
				}
			}
			cur = math.Round(cur*10) / 10
			if !ok || k-pubAt >= powerpub.Interval || powerpub.Changed(pubW, cur) {
				pubW, pubAt, ok = cur, k, true
			}
		}
		return pubW, pubAt, ok
	}
	for trial := range 200 {
		s := &simulation{opts: Options{AgentDelay: tick}}
		n := &nodeState{}
		s.now = time.Duration(rng.IntN(20)) * time.Second
		s.startPublishing(n)
		// Changes at any second, some on a tick, some several in one tick,
		// by up to 20% either way; reads in between.
		w := 100.0
		steps := []step{{s.now, w}}
		for range 40 {
			s.now += time.Duration(rng.IntN(90)) * time.Second
			s.catchUp(n, s.now, w)
			if rng.IntN(3) == 0 {
				pubW, pubAt, ok := agent(steps, s.now)
				if n.pub.ok != ok || n.pub.watts != pubW || n.pub.at != pubAt {
					t.Fatalf("trial %d, read at %s: catchUp published %.1f W at %s (%v), tick by tick %.1f W at %s (%v)",
						trial, s.now, n.pub.watts, n.pub.at, n.pub.ok, pubW, pubAt, ok)
				}
				continue
			}
			w *= 0.8 + 0.4*rng.Float64()
			steps = append(steps, step{s.now, w})
		}
	}
}
