package sim

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/physics"
)

// spreadTruth is the default physics' spread drawn from seed.
func spreadTruth(seed int64) physics.Truth {
	return physics.Truth{Spread: physics.Default().Spread, Seed: seed}
}

// trueFigures is every job's class figures as simulation s runs it, by
// job ID.
func trueFigures(s *simulation) map[string]physics.Class {
	out := map[string]physics.Class{}
	for _, j := range s.jobs {
		out[j.job.ID] = j.phys.Class(j.job.Boundness)
	}
	return out
}

// With a spread, every arm runs each job on the same true figures,
// whatever order the list comes in, and they are not all the class's.
func TestEveryArmRunsEachJobOnTheSameTrueFigures(t *testing.T) {
	nodes, jobs := smallRun(t, 3, 200)
	m := physics.Default()
	var want map[string]physics.Class
	for _, arm := range Arms() {
		s, err := newSimulation(mustSpec(t, arm), nodes, jobs, Options{Seed: 3, Model: m, Truth: spreadTruth(3)})
		if err != nil {
			t.Fatal(err)
		}
		got := trueFigures(s)
		s.sched.Close()
		if want == nil {
			want = got
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("arm %s runs other true figures than arm %s", arm, Arms()[0])
		}
	}
	reversed := slices.Clone(jobs)
	slices.Reverse(reversed)
	s, err := newSimulation(mustSpec(t, ArmBinPack), nodes, reversed, Options{Seed: 3, Model: m, Truth: spreadTruth(3)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.sched.Close()
	if !reflect.DeepEqual(trueFigures(s), want) {
		t.Error("the true figures depend on the order of the job list")
	}
	differ := 0
	for _, j := range jobs {
		if want[j.ID] != m.Class(j.Boundness) {
			differ++
		}
	}
	if differ < len(jobs)/2 {
		t.Errorf("%d of %d jobs have figures other than their class's; a spread of %+v should move most", differ, len(jobs), m.Spread)
	}
}

// The physics runs the true figures: with a spread, a run's energy and
// its jobs' completions differ from the nominal run's, and the zero
// Truth is the nominal run to the bit.
func TestThePhysicsRunsTheTrueFigures(t *testing.T) {
	nodes, jobs := smallRun(t, 4, 150)
	nominal := run(t, ArmJoulie, nodes, jobs, Options{Seed: 4})
	zero := run(t, ArmJoulie, nodes, jobs, Options{Seed: 4, Truth: physics.Truth{Seed: 4}})
	if resultHash(zero) != resultHash(nominal) {
		t.Error("a Truth with no spread changed the results")
	}
	spread := run(t, ArmJoulie, nodes, jobs, Options{Seed: 4, Truth: spreadTruth(4)})
	if spread.EnergyJ == nominal.EnergyJ {
		t.Errorf("the spread left the energy at %.0f J: the physics does not read the true figures", spread.EnergyJ)
	}
}

// What Joulie's controller and extender are given does not carry the true
// figures: the pods, the node objects and the controller's view of the
// loads are the same with and without a spread, while the physics of the
// same jobs differs. (The agents' measured power does follow the true
// draw, as it would on a real cluster.)
func TestTheControllerSeesOnlyNominalInputs(t *testing.T) {
	nodes, jobs := smallRun(t, 5, 150)
	m := physics.Default()
	build := func(truth physics.Truth) *simulation {
		// Run's defaults, which newSimulation leaves to it.
		opts := Options{Seed: 5, Model: m, Truth: truth, MaxPodsPerNode: 110, ReconcileInterval: time.Minute, AgentDelay: 5 * time.Second, SeedWindow: -1}
		s, err := newSimulation(mustSpec(t, ArmJoulie), nodes, jobs, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.sched.Close)
		// The first reconcile writes the twins the extender filters on.
		if err := s.reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
		placed := 0
		for i := range min(40, len(s.jobs)) {
			if s.trySchedule(t.Context(), i) {
				placed++
			}
		}
		if placed == 0 {
			t.Fatal("no job placed")
		}
		for _, n := range s.nodes {
			s.ctl.recount(s, n)
		}
		return s
	}
	a, b := build(physics.Truth{}), build(spreadTruth(5))
	for i := range a.jobs {
		if !reflect.DeepEqual(a.jobs[i].pod, b.jobs[i].pod) {
			t.Fatalf("job %s: the pod the scheduler and controller see differs with the spread", a.jobs[i].job.ID)
		}
	}
	if !reflect.DeepEqual(a.ctl.loads, b.ctl.loads) || !reflect.DeepEqual(a.ctl.nodes, b.ctl.nodes) || !reflect.DeepEqual(a.ctl.perfPods, b.ctl.perfPods) {
		t.Error("the controller's view of nodes, loads or performance pods differs with the spread")
	}
	for i := range a.nodes {
		if a.nodes[i].hardware != b.nodes[i].hardware {
			t.Errorf("node %s: the extender's hardware view differs with the spread", a.nodes[i].spec.Name)
		}
	}
	same := true
	for i := range a.nodes {
		same = same && a.load(a.nodes[i]) == b.load(b.nodes[i])
	}
	if same {
		t.Error("every node's true load is the same with the spread: the test's jobs did not exercise it")
	}
}
