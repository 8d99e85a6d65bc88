package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/hwview"
	"joulie.io/joulie/pkg/intent"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/pkg/twin"
	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/schedsim"
	"joulie.io/joulie/test/energy/workload"
)

// Options are a run's settings; the zero value of each field but Model
// takes the default the real programs use.
type Options struct {
	// Seed seeds the scheduler's tie-breaks.
	Seed int64
	// Model is the physics; required.
	Model *physics.Model
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
	// SeedWindow is the fixed window of the seed document's accounting,
	// run as a second pass of the same arm (48h, the seed's; negative:
	// no second pass).
	SeedWindow time.Duration
	// OracleUncapped forces the oracle's caps (arm f) to 100%: it then
	// runs arm a's placements and physics, which a test checks.
	OracleUncapped bool
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
	switch arm {
	case ArmDefault, ArmBinPack, ArmStatic, ArmQueueAware, ArmNoCaps, ArmOracle:
	default:
		return Result{}, fmt.Errorf("sim: unknown arm %q", arm)
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
	s, err := newSimulation(arm, nodes, jobs, opts)
	if err != nil {
		return Result{}, err
	}
	defer s.sched.Close()
	if err := s.loop(ctx); err != nil {
		return Result{}, err
	}
	r := s.result()
	if opts.SeedWindow > 0 {
		seed, err := newSimulation(arm, nodes, jobs, opts)
		if err != nil {
			return Result{}, err
		}
		defer seed.sched.Close()
		seed.seedWindow = opts.SeedWindow
		seed.opts.Progress = nil
		if err := seed.loop(ctx); err != nil {
			return Result{}, err
		}
		r.SeedMethod = seed.seedResult()
	}
	return r, nil
}

// seedResult is the seed document's accounting of a pass that dropped
// what did not fit at once and stopped at the fixed window: the energy
// over the window, and the jobs and full-speed work it accepted.
func (s *simulation) seedResult() *SeedMethod {
	m := &SeedMethod{Window: s.seedWindow, EnergyJ: s.energyJ, Dropped: s.dropped}
	for _, j := range s.jobs {
		if j.node < 0 {
			continue
		}
		m.Accepted++
		m.AcceptedCoreHours += j.job.Work.Hours() * float64(j.job.CPUMilli) / 1000
		m.AcceptedGPUHours += j.job.Work.Hours() * float64(j.job.GPUs)
	}
	return m
}

// joulieArm reports whether the arm runs Joulie's controller and extender.
func joulieArm(a Arm) bool { s, _ := Spec(a); return s.Joulie }

type nodeState struct {
	spec workload.Node
	obj  *v1.Node
	// cpuCap and gpuCap are the cap fractions the agent has applied (1:
	// none); they change AgentDelay after the reconcile that asked.
	cpuCap, gpuCap float64
	// running holds the indices of the jobs on the node in ascending
	// order: the sums over them and the events they push come out the
	// same on every run (a map's order would not).
	running []int
	watts   float64
	profile *joulie.NodePowerProfile
	twin    *joulie.NodeTwinStatus
	view    *hwview.View // the controller's view of the hardware
	pub     publication  // the agent's last published measurement
	// lastTransition is the time the profile's annotation holds.
	lastTransition time.Time
	// askedCPU and askedGPU are the caps the last reconcile asked for (1:
	// none), which the agent has applied or will.
	askedCPU, askedGPU float64
	// podsChanged says running changed since the controller's view of the
	// node's pods was last counted.
	podsChanged bool
	// The extender's view of the node, derived from twin and view when the
	// reconcile writes them.
	scoringTwin scoring.Twin
	hardware    powerest.Node
}

// capsChange is the caps a reconcile asks node's agent for.
type capsChange struct {
	node           int
	cpuCap, gpuCap float64
}

type jobState struct {
	job      workload.Job
	pod      *v1.Pod
	node     int // -1 while pending
	queued   bool
	start    time.Duration
	end      time.Duration
	done     bool
	profile  string
	left     float64 // seconds of full-speed work left at updated
	rate     float64 // full-speed seconds per second
	updated  time.Duration
	version  int // invalidates completion events scheduled at an older rate
	perfPod  bool
	boundCPU bool
	cap      float64 // the oracle's cap on the job's own shares (arm f only)
}

type simulation struct {
	arm      Arm
	opts     Options
	model    *physics.Model
	nodes    []*nodeState
	byName   map[string]int
	jobs     []*jobState
	sched    *schedsim.Scheduler
	ext      *extender
	settings plan.Settings

	now       time.Duration
	events    eventQueue
	queue     []int // pending jobs, FIFO
	power     []Sample
	totalW    float64
	energyJ   float64
	done      int
	perfOnEco int
	// seedWindow > 0 makes this the seed document's pass: a job that does
	// not fit at once is dropped, and the run ends at seedWindow.
	seedWindow time.Duration
	dropped    int

	// ctl is the controller's view of the cluster (joulie.go).
	ctl controllerView
	// pendingPerf counts the performance jobs waiting in the queue.
	pendingPerf int
	// twinGen counts the reconciles, so the extender knows when the
	// twins it summed have changed.
	twinGen uint64
	// caps holds the caps each reconcile asked for, oldest first, until
	// its agents apply them AgentDelay later.
	caps [][]capsChange
}

func newSimulation(arm Arm, nodes []workload.Node, jobs []workload.Job, opts Options) (*simulation, error) {
	s := &simulation{arm: arm, opts: opts, model: opts.Model, byName: map[string]int{}}
	objs := make([]*v1.Node, len(nodes))
	for i, n := range nodes {
		objs[i] = nodeObject(n, opts.MaxPodsPerNode)
		s.nodes = append(s.nodes, &nodeState{spec: n, obj: objs[i], cpuCap: 1, gpuCap: 1, askedCPU: 1, askedGPU: 1})
		s.byName[n.Name] = i
	}
	profile := schedsim.DefaultProfile
	if arm == ArmBinPack {
		profile = schedsim.MostAllocatedProfile
	}
	var ext schedsim.Extender
	if joulieArm(arm) {
		s.ext = newExtender(s)
		ext = s.ext
		s.settings = settings(arm, opts)
	}
	sched, err := schedsim.New(profile, objs, ext, schedsim.Options{Seed: uint64(opts.Seed)})
	if err != nil {
		return nil, fmt.Errorf("sim: scheduler for arm %s: %w", arm, err)
	}
	s.sched = sched
	for i, j := range jobs {
		js := &jobState{job: j, node: -1, pod: podObject(j), left: j.Work.Seconds(), perfPod: j.Class == workload.Performance}
		s.jobs = append(s.jobs, js)
		heap.Push(&s.events, event{t: j.Arrival, kind: evArrival, idx: i})
	}
	if joulieArm(arm) {
		heap.Push(&s.events, event{t: 0, kind: evReconcile})
	}
	s.ctl = controllerView{nodes: slices.Clone(objs), profiles: map[string]*joulie.NodePowerProfile{}, perfPods: map[string]int{},
		loads: map[string]plan.NodeLoad{}}
	for _, n := range s.nodes {
		n.watts = s.nodeWatts(n)
		s.totalW += n.watts
		n.hardware = s.hardwareOf(n)
	}
	s.power = append(s.power, Sample{T: 0, Watts: s.totalW})
	return s, nil
}

// settings are the controller's defaults (controller/internal/config) for
// the arm's policy.
func settings(arm Arm, opts Options) plan.Settings {
	sel, _ := labels.Parse(joulie.LabelManaged + "=true")
	in := intent.Default()
	if opts.Intent != nil {
		in = *opts.Intent
	}
	p := plan.PolicyQueueAware
	if arm == ArmStatic {
		p = plan.PolicyStaticPartition
	}
	return plan.Settings{NodeSelector: sel, Policy: p, StaticHPFrac: 0.5, Queue: policy.DefaultQueueAware(),
		Interval: opts.ReconcileInterval, MinEcoDwell: 5 * time.Minute, Intent: in,
		Cooling: twin.DefaultLinearCoolingModel(), RackCapacityW: 50000, MeasurementMaxAge: 3 * time.Minute,
		Coefficients: powerest.DefaultCoefficients()}
}

func nodeObject(n workload.Node, maxPods int64) *v1.Node {
	l := map[string]string{joulie.LabelManaged: "true", joulie.LabelHWCPUModel: n.CPUModel}
	res := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(n.CPUMilli, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(n.MemoryMiB<<20, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(maxPods, resource.DecimalSI),
	}
	if n.GPUs > 0 {
		l[joulie.LabelHWGPUModel] = n.GPUModel
		l[joulie.LabelHWGPUCount] = strconv.Itoa(n.GPUs)
		res[joulie.ResourceNVIDIAGPU] = *resource.NewQuantity(int64(n.GPUs), resource.DecimalSI)
	}
	o := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: types.UID("uid-" + n.Name), Labels: l}}
	o.Status.Capacity, o.Status.Allocatable = res, res.DeepCopy()
	o.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	return o
}

func podObject(j workload.Job) *v1.Pod {
	req := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(j.CPUMilli, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(j.MemoryMiB<<20, resource.BinarySI),
	}
	if j.GPUs > 0 {
		req[joulie.ResourceNVIDIAGPU] = *resource.NewQuantity(int64(j.GPUs), resource.DecimalSI)
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: j.ID, Namespace: "default", UID: types.UID("uid-" + j.ID)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "job", Resources: v1.ResourceRequirements{Requests: req, Limits: req}}}}}
	if j.Class == workload.Performance {
		p.Annotations = map[string]string{joulie.AnnotationWorkloadClass: joulie.WorkloadClassPerformance}
	}
	return p
}

func (s *simulation) loop(ctx context.Context) error {
	nextProgress := time.Duration(0)
	for s.done+s.dropped < len(s.jobs) {
		if s.seedWindow > 0 && (s.events.Len() == 0 || s.events.items[0].t > s.seedWindow) {
			s.advance(s.seedWindow)
			return nil
		}
		if s.events.Len() == 0 {
			return fmt.Errorf("sim: arm %s: %d jobs left and nothing more will happen (a job that fits no node?)", s.arm, len(s.jobs)-s.done)
		}
		ev := heap.Pop(&s.events).(event)
		s.advance(ev.t)
		switch ev.kind {
		case evArrival:
			if !s.trySchedule(ctx, ev.idx) {
				if s.seedWindow > 0 {
					s.dropped++
					continue
				}
				s.jobs[ev.idx].queued = true
				s.queue = append(s.queue, ev.idx)
				if s.jobs[ev.idx].perfPod {
					s.pendingPerf++
				}
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
			if err := s.reconcile(ctx); err != nil {
				return err
			}
			if s.done+s.dropped < len(s.jobs) {
				heap.Push(&s.events, event{t: s.now + s.opts.ReconcileInterval, kind: evReconcile})
			}
		case evCaps:
			batch := s.caps[0]
			s.caps[0], s.caps = nil, s.caps[1:]
			for _, c := range batch {
				s.applyCaps(c.node, c.cpuCap, c.gpuCap)
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

// advance moves the clock to t, integrating the power in force until then.
func (s *simulation) advance(t time.Duration) {
	if t < s.now {
		panic(fmt.Sprintf("sim: event at %s before now %s", t, s.now))
	}
	s.energyJ += s.totalW * (t - s.now).Seconds()
	s.now = t
}

// setNodeWatts recomputes node i's draw and records a power step.
func (s *simulation) setNodeWatts(n *nodeState) {
	w := s.nodeWatts(n)
	if w == n.watts {
		return
	}
	s.catchUp(n, s.now, n.watts)
	s.totalW += w - n.watts
	n.watts = w
	if last := &s.power[len(s.power)-1]; last.T == s.now {
		last.Watts = s.totalW
	} else {
		s.power = append(s.power, Sample{T: s.now, Watts: s.totalW})
	}
}

// nodeWatts is the physics' draw of a node with its running jobs under its
// applied caps. A job keeps its share of the CPUs it requested busy at its
// class's utilization, and each of its GPUs at the same utilization.
func (s *simulation) nodeWatts(n *nodeState) float64 {
	var busyMilli float64
	var gpuUtil []float64
	for _, idx := range n.running {
		j := s.jobs[idx].job
		u := s.model.Class(j.Boundness).Utilization
		busyMilli += float64(j.CPUMilli) * u
		for range j.GPUs {
			gpuUtil = append(gpuUtil, u)
		}
	}
	load := busyMilli / float64(n.spec.CPUMilli)
	if n.spec.GPUs == 0 {
		return s.model.CPUNodeWatts(load, n.cpuCap) - s.oracleSaving(n, load)
	}
	for len(gpuUtil) < n.spec.GPUs {
		gpuUtil = append(gpuUtil, 0)
	}
	return s.model.GPUNodeWatts(load, n.cpuCap, gpuUtil, n.gpuCap) - s.oracleSaving(n, load)
}

// rate is how fast job j progresses on node n under its applied caps: a
// GPU job by its GPUs' cap, a CPU job by the package cap; in the oracle,
// by the job's own cap.
func (s *simulation) rate(j *jobState, n *nodeState) float64 {
	c := n.cpuCap
	if j.job.GPUs > 0 {
		c = n.gpuCap
	}
	if s.arm == ArmOracle {
		c = j.cap
	}
	return 1 / s.model.Stretch(j.job.Boundness, c)
}

func (s *simulation) trySchedule(ctx context.Context, idx int) bool {
	j := s.jobs[idx]
	name, err := s.sched.Schedule(ctx, j.pod)
	if err != nil {
		return false
	}
	if err := s.sched.Bind(j.pod, name); err != nil {
		panic(fmt.Sprintf("sim: bind %s to %s: %v", j.job.ID, name, err))
	}
	ni := s.byName[name]
	n := s.nodes[ni]
	if j.queued && j.perfPod {
		s.pendingPerf--
	}
	j.node, j.start, j.updated, j.queued = ni, s.now, s.now, false
	j.profile = nodeProfile(n.obj)
	if j.perfPod && (j.profile == string(joulie.ProfileEco) || j.profile == "draining") {
		s.perfOnEco++
	}
	at, _ := slices.BinarySearch(n.running, idx)
	n.running = slices.Insert(n.running, at, idx)
	n.podsChanged = true
	if s.arm == ArmOracle {
		j.cap = s.oracleCap(j, n)
	}
	j.rate = s.rate(j, n)
	s.scheduleCompletion(idx)
	s.setNodeWatts(n)
	return true
}

// nodeProfile is the node's profile as its labels say when a pod lands.
func nodeProfile(n *v1.Node) string {
	if n.Labels[joulie.LabelDraining] == "true" {
		return "draining"
	}
	if p := n.Labels[joulie.LabelPowerProfile]; p != "" {
		return p
	}
	return "none"
}

func (s *simulation) scheduleCompletion(idx int) {
	j := s.jobs[idx]
	j.version++
	// Round up, so a job never completes before its work is done.
	d := time.Duration(j.left/j.rate*float64(time.Second)) + 1
	if j.left <= 0 {
		d = 0
	}
	heap.Push(&s.events, event{t: s.now + d, kind: evCompletion, idx: idx, version: j.version})
}

func (s *simulation) complete(ctx context.Context, idx int) error {
	j := s.jobs[idx]
	n := s.nodes[j.node]
	j.done, j.end, j.left = true, s.now, 0
	s.done++
	at, _ := slices.BinarySearch(n.running, idx)
	n.running = slices.Delete(n.running, at, at+1)
	n.podsChanged = true
	if err := s.sched.Remove(j.pod); err != nil {
		return fmt.Errorf("sim: remove %s: %w", j.job.ID, err)
	}
	s.setNodeWatts(n)
	s.retry(ctx, n)
	return nil
}

// retry offers the queue, in order, the resources freed on node n (nil:
// anything changed, offer every queued job). A job that could not fit on n
// by its requests alone is not sent through the scheduler, which would
// only say so again.
func (s *simulation) retry(ctx context.Context, n *nodeState) {
	if len(s.queue) == 0 {
		return
	}
	var freeCPU, freeMem int64
	var freeGPU int
	if n != nil {
		freeCPU, freeMem, freeGPU = s.free(n)
	}
	kept := s.queue[:0]
	for _, idx := range s.queue {
		j := s.jobs[idx].job
		if n != nil && (j.CPUMilli > freeCPU || j.MemoryMiB > freeMem || j.GPUs > freeGPU) {
			kept = append(kept, idx)
			continue
		}
		if !s.trySchedule(ctx, idx) {
			kept = append(kept, idx)
			continue
		}
		if n != nil {
			freeCPU, freeMem, freeGPU = s.free(n)
		}
	}
	s.queue = kept
}

func (s *simulation) free(n *nodeState) (cpu, mem int64, gpus int) {
	cpu, mem, gpus = n.spec.CPUMilli, n.spec.MemoryMiB, n.spec.GPUs
	for _, idx := range n.running {
		j := s.jobs[idx].job
		cpu -= j.CPUMilli
		mem -= j.MemoryMiB
		gpus -= j.GPUs
	}
	return cpu, mem, gpus
}

// applyCaps is the agent of node i enforcing new caps: the node's draw and
// its jobs' progress change from now on.
func (s *simulation) applyCaps(i int, cpuCap, gpuCap float64) {
	n := s.nodes[i]
	if s.arm == ArmNoCaps || (n.cpuCap == cpuCap && n.gpuCap == gpuCap) {
		return
	}
	n.cpuCap, n.gpuCap = cpuCap, gpuCap
	for _, idx := range n.running {
		j := s.jobs[idx]
		j.left -= j.rate * (s.now - j.updated).Seconds()
		j.updated = s.now
		if r := s.rate(j, n); r != j.rate {
			j.rate = r
			s.scheduleCompletion(idx)
		}
	}
	s.setNodeWatts(n)
}

func (s *simulation) result() Result {
	r := Result{Arm: s.arm, Seed: s.opts.Seed, Nodes: len(s.nodes), EnergyJ: s.energyJ, Makespan: s.now,
		Window: Window{0, s.now}, PerfOnEcoOrDraining: s.perfOnEco}
	var jobs []workload.Job
	for _, n := range s.nodes {
		if n.spec.GPUs > 0 {
			r.GPUNodes++
		} else {
			r.CPUNodes++
		}
	}
	for _, j := range s.jobs {
		jobs = append(jobs, j.job)
		r.Jobs = append(r.Jobs, JobResult{ID: j.job.ID, Class: string(j.job.Class), Boundness: string(j.job.Boundness),
			GPUs: j.job.GPUs, CPUMilli: j.job.CPUMilli, Work: j.job.Work, Arrival: j.job.Arrival, Start: j.start, End: j.end,
			Node: s.nodes[j.node].spec.Name, Profile: j.profile, Truncated: j.job.Truncated})
	}
	r.JobsHash = workload.Hash(jobs)
	r.Power = append([]Sample(nil), s.power...)
	return r
}

type eventKind uint8

// The order of kinds at one instant: caps and plans before completions,
// completions (which free resources) before arrivals.
const (
	evCaps eventKind = iota
	evReconcile
	evCompletion
	evArrival
)

type event struct {
	t            time.Duration
	kind         eventKind
	idx, version int
	seq          uint64
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

// pushCaps queues a reconcile's caps for its agents to apply at t.
func (s *simulation) pushCaps(t time.Duration, batch []capsChange) {
	s.caps = append(s.caps, batch)
	heap.Push(&s.events, event{t: t, kind: evCaps})
}

func (q *eventQueue) Pop() any {
	e := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return e
}
