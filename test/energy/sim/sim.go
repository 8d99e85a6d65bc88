package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/intent"
	"joulie.io/joulie/pkg/park"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/schedsim"
	"joulie.io/joulie/test/energy/workload"
)

// Options are a run's settings; the zero value of each field but Model
// takes the default the real programs use.
type Options struct {
	// Parking replaces the parking arm's settings (nil: the controller's
	// defaults, park.DefaultParams), for choosing them on seeds other
	// than the reported ones.
	Parking *park.Params
	// Seed seeds the scheduler's tie-breaks.
	Seed int64
	// Model is the physics; required.
	Model *physics.Model
	// Truth draws each job's true clock sensitivity and utilization
	// around its class's (the zero Truth: the class's own). The physics
	// runs every job on its true figures; what Joulie's controller, its
	// cap rule and the extender are given (pods, requests, the agents'
	// measured power, the catalog) never carries them, as on a real
	// cluster. The oracles, which choose with foresight, do see them.
	Truth physics.Truth
	// Window is the steady-state accounting window (the workload's
	// warm-up to the end of its arrivals); the zero Window accounts the
	// whole run, from 0 to the last completion.
	Window Window
	// Level is the load level the job list was generated for, copied to
	// the result.
	Level float64
	// ReconcileInterval is the controller's RECONCILE_INTERVAL (1m).
	ReconcileInterval time.Duration
	// AgentDelay is how long after a reconcile a node's agent has applied
	// the new caps, and the agent's tick, at which it decides whether to
	// publish its measured power (5s: the agent's default reconcile
	// interval).
	AgentDelay time.Duration
	// Intent overrides the controller's power intent (caps per profile);
	// nil takes intent.Default(). The invariant test sets eco caps to 100%.
	Intent *intent.Config
	// MaxPodsPerNode is the kubelet's max-pods (110, its default).
	MaxPodsPerNode int64
	// SeedWindow is the fixed window of the seed document's accounting of
	// the run (48h, the seed's; negative: none).
	SeedWindow time.Duration
	// OracleUncapped forces the oracles' caps to 100%: an oracle then
	// runs its placement and power states without caps, which a test
	// checks against the arm it shares them with.
	OracleUncapped bool
	// AllPlugins runs every plugin of the arm's profile. By default the
	// plugins that cannot tell nodes apart for the simulator's pods
	// (schedsim.InertForPlainPods) are left out, which changes no
	// placement (TestInertPluginsChangeNothing) and saves their cost in
	// every scheduling cycle.
	AllPlugins bool
	// Progress, when set, is called now and then with the simulated time
	// and the share of jobs completed.
	Progress func(simulated time.Duration, done float64)
}

// epoch is the simulated clock's zero: any fixed instant does, since
// nothing reads the wall clock.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Run simulates arm over jobs on nodes until every job has completed.
func Run(ctx context.Context, arm Arm, nodes []workload.Node, jobs []workload.Job, opts Options) (Result, error) {
	if opts.Model == nil {
		return Result{}, errors.New("sim: Options.Model is required")
	}
	spec, err := Spec(arm)
	if err != nil {
		return Result{}, fmt.Errorf("sim: %w", err)
	}
	if opts.Window.End < opts.Window.Start || opts.Window.Start < 0 {
		return Result{}, fmt.Errorf("sim: accounting window %s..%s is not an interval", opts.Window.Start, opts.Window.End)
	}
	if opts.ReconcileInterval <= 0 {
		opts.ReconcileInterval = time.Minute
	}
	if opts.AgentDelay <= 0 {
		opts.AgentDelay = 5 * time.Second
	}
	if opts.MaxPodsPerNode <= 0 {
		opts.MaxPodsPerNode = 110
	}
	if opts.SeedWindow == 0 {
		opts.SeedWindow = 48 * time.Hour
	}
	s, err := newSimulation(spec, nodes, jobs, opts)
	if err != nil {
		return Result{}, err
	}
	defer s.sched.Close()
	if err := s.loop(ctx); err != nil {
		return Result{}, err
	}
	return s.result(), nil
}

type jobState struct {
	job     workload.Job
	pod     *v1.Pod
	node    int // -1 while pending
	queued  bool
	start   time.Duration
	end     time.Duration
	done    bool
	profile string
	left    float64 // seconds of full-speed work left at updated
	rate    float64 // full-speed seconds per second
	updated time.Duration
	version int // invalidates completion events scheduled at an older rate
	perfPod bool
	// phys is the physics of the job's true figures (Options.Truth):
	// everything the simulator computes of the job's draw and pace reads
	// its class here, never from the run's model.
	phys *physics.Model
	// cap is the oracle's cap on the job's own shares (1: none).
	cap float64
	// waking is the node booting for this pending job (-1: none), and
	// bootWait the time it waited for capacity when it waited for a boot
	// by BootWaitRule.
	waking   int
	bootWait time.Duration
}

type simulation struct {
	spec   ArmSpec
	opts   Options
	model  *physics.Model
	nodes  []*nodeState
	byName map[string]int
	jobs   []*jobState
	sched  *schedsim.Scheduler
	ext    *extender
	// plan is the controller's configuration of Joulie's arms.
	plan plan.Params

	now    time.Duration
	events eventQueue
	queue  []int // pending jobs, FIFO
	done   int

	acct      accounts
	perfOnEco int

	// input is the job list as given; unplaceable are the jobs of it that
	// fit no node (fitsSomeNode), left pending and out of jobs.
	input, unplaceable []workload.Job

	// ctl is the controller's view of the cluster (joulie.go).
	ctl controllerView
	// pendingPerf counts the performance jobs waiting in the queue.
	pendingPerf int
	// replanAt is when the pass a drain dwell asked for runs.
	replanAt time.Duration
	// twinGen counts the reconciles, so the extender knows when the
	// twins it summed have changed.
	twinGen uint64
	// power holds the power-off rules' state (powerstate.go).
	power powerRules
	// parking is the parking arm's controller state (parking.go).
	parking parking
}

func newSimulation(spec ArmSpec, nodes []workload.Node, jobs []workload.Job, opts Options) (*simulation, error) {
	s := &simulation{spec: spec, opts: opts, model: opts.Model, byName: map[string]int{}}
	objs := make([]*v1.Node, len(nodes))
	for i, n := range nodes {
		objs[i] = nodeObject(n, opts.MaxPodsPerNode)
		if spec.GPUTaint && n.GPUs > 0 {
			objs[i].Spec.Taints = append(objs[i].Spec.Taints, GPUNodeTaint)
		}
		if spec.PowerOff == Parking {
			objs[i].Labels[joulie.LabelParkable] = "true"
		}
		s.nodes = append(s.nodes, s.newNode(i, n, objs[i]))
		s.byName[n.Name] = i
	}
	var ext schedsim.Extender
	if spec.Joulie {
		s.ext = newExtender(s)
		ext = s.ext
		s.plan = planParams(spec, opts)
	}
	profile := spec.Profile
	if !opts.AllPlugins {
		inert := schedsim.InertForPlainPods
		if spec.GPUTaint {
			// The GPU taint is what TaintToleration filters on.
			inert = slices.DeleteFunc(slices.Clone(inert), func(p string) bool { return p == "TaintToleration" })
		}
		profile = profile.Without(inert...)
	}
	sched, err := schedsim.New(profile, objs, ext, schedsim.Options{Seed: uint64(opts.Seed)})
	if err != nil {
		return nil, fmt.Errorf("sim: scheduler for arm %s: %w", spec.Arm, err)
	}
	s.sched = sched
	truths := opts.Truth.Models(opts.Model)
	s.input = jobs
	for _, j := range jobs {
		fits, cpuNodeFits := fitsSomeNode(j, nodes)
		if !fits {
			// As on a real cluster the pod stays pending; it asks for
			// nothing any node has, so it wakes and holds nothing.
			s.unplaceable = append(s.unplaceable, j)
			continue
		}
		i := len(s.jobs)
		pod := podObject(j)
		// An operator who taints GPU nodes lets a CPU pod too large for
		// every CPU node tolerate the taint, or it would never run; so
		// every arm runs the same pods.
		if spec.GPUTaint && (j.GPUs > 0 || !cpuNodeFits) {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, gpuToleration)
		}
		js := &jobState{job: j, node: -1, pod: pod, left: j.Work.Seconds(), perfPod: j.Class == workload.Performance, cap: 1, waking: -1,
			phys: truths.Of(j.Boundness, j.ID)}
		s.jobs = append(s.jobs, js)
		heap.Push(&s.events, event{t: j.Arrival, kind: evArrival, idx: i})
	}
	if spec.Joulie {
		heap.Push(&s.events, event{t: 0, kind: evReconcile})
	} else if spec.PowerOff == Parking {
		// Parking without the rest of Joulie: its passes run on their own
		// every reconcile interval.
		heap.Push(&s.events, event{t: 0, kind: evPark, idx: periodicPark})
	}
	s.ctl = controllerView{nodes: slices.Clone(objs), profiles: map[string]*joulie.NodePowerProfile{}, perfPods: map[string]int{},
		loads: map[string]plan.NodeLoad{}}
	s.acct.init(s)
	for _, n := range s.nodes {
		n.hardware = s.hardwareOf(n)
		s.setNodePower(n)
	}
	s.power.init(s)
	if spec.PowerOff == Parking {
		s.parking.init(s)
	}
	return s, nil
}

// fitsSomeNode says whether j fits an empty node of nodes by its requests
// (CPU, memory, GPUs), and whether one of those is a node without GPUs. A
// pod that fits none would stay pending on any cluster of these nodes
// whatever the scheduler or the power states.
func fitsSomeNode(j workload.Job, nodes []workload.Node) (fits, cpuNode bool) {
	for _, n := range nodes {
		if j.CPUMilli <= n.CPUMilli && j.MemoryMiB <= n.MemoryMiB && j.GPUs <= n.GPUs {
			fits = true
			cpuNode = cpuNode || n.GPUs == 0
		}
	}
	return fits, cpuNode
}

func (s *simulation) loop(ctx context.Context) error {
	nextProgress := time.Duration(0)
	for s.done < len(s.jobs) {
		if s.events.Len() == 0 {
			return fmt.Errorf("sim: arm %s: %d jobs left and nothing more will happen (a job that fits no node?)", s.spec.Arm, len(s.jobs)-s.done)
		}
		ev := heap.Pop(&s.events).(event)
		s.advance(ev.t)
		switch ev.kind {
		case evArrival:
			if !s.trySchedule(ctx, ev.idx) {
				s.enqueue(ev.idx)
			}
		case evCompletion:
			j := s.jobs[ev.idx]
			if j.done || j.version != ev.version {
				continue
			}
			if err := s.complete(ctx, ev.idx); err != nil {
				return err
			}
		case evReconcile:
			if ev.idx == drainReplan && ev.t != s.replanAt {
				continue // superseded by an earlier pass
			}
			if err := s.reconcile(ctx); err != nil {
				return err
			}
			if ev.idx != drainReplan && s.done < len(s.jobs) {
				heap.Push(&s.events, event{t: s.now + s.opts.ReconcileInterval, kind: evReconcile})
			}
		case evCaps:
			for _, c := range ev.caps {
				s.applyCaps(c.node, c.cpuCap, c.gpuCap, c.gpuStdCap)
			}
		case evPower:
			if err := s.powerEvent(ctx, ev); err != nil {
				return err
			}
		case evPark:
			if err := s.parkPass(ctx); err != nil {
				return err
			}
			if ev.idx == periodicPark && s.done < len(s.jobs) {
				heap.Push(&s.events, event{t: s.now + s.opts.ReconcileInterval, kind: evPark, idx: periodicPark})
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.opts.Progress != nil && s.now >= nextProgress {
			s.opts.Progress(s.now, float64(s.done)/float64(len(s.jobs)))
			nextProgress = s.now + time.Hour
		}
	}
	return nil
}

// advance moves the clock to t, integrating what the accounts integrate
// (the allocated share) until then.
func (s *simulation) advance(t time.Duration) {
	if t < s.now {
		panic(fmt.Sprintf("sim: event at %s before now %s", t, s.now))
	}
	s.acct.advance(s.now, t)
	s.now = t
}

type eventKind uint8

// The order of kinds at one instant: caps and plans before power-state
// changes, those before completions, completions (which free resources)
// before arrivals.
const (
	evCaps eventKind = iota
	evReconcile
	evPower
	evCompletion
	evArrival
	// evPark is the parking pass a pending pod asks for (parking.go);
	// last, so the arms without parking keep their order.
	evPark
)

type event struct {
	t            time.Duration
	kind         eventKind
	idx, version int
	// caps is what an evCaps event's agents apply.
	caps []capsChange
	// power is what an evPower event does to node idx.
	power powerStep
	seq   uint64
}

type eventQueue struct {
	items []event
	seq   uint64
}

func (q *eventQueue) Len() int { return len(q.items) }
func (q *eventQueue) Less(a, b int) bool {
	x, y := q.items[a], q.items[b]
	if x.t != y.t {
		return x.t < y.t
	}
	if x.kind != y.kind {
		return x.kind < y.kind
	}
	return x.seq < y.seq
}
func (q *eventQueue) Swap(a, b int) { q.items[a], q.items[b] = q.items[b], q.items[a] }
func (q *eventQueue) Push(x any) {
	e := x.(event)
	q.seq++
	e.seq = q.seq
	q.items = append(q.items, e)
}

func (q *eventQueue) Pop() any {
	e := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return e
}
