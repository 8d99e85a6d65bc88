package bound

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/workload"
)

// Family is a set of identical nodes: the same capacity and the same
// physics.
type Family struct {
	// Name is the first of its nodes' names, for messages.
	Name  string
	Nodes int
	// CPUMilli, MemoryMiB and GPUs are one node's capacity.
	CPUMilli, MemoryMiB int64
	GPUs                int
	// Host is the node's CPU power curve, GPU its GPUs' figures (read
	// only when GPUs > 0).
	Host physics.Curve
	GPU  physics.GPUNode
}

// Idle is what one of the family's nodes draws awake with nothing running.
func (f Family) Idle() float64 { return f.Host.Idle() + float64(f.GPUs)*f.GPU.GPUIdleWatts }

// Families groups nodes into families; physicsOf gives a node's host curve
// and GPU figures (the simulator's sim.NodePhysics).
func Families(nodes []workload.Node, physicsOf func(workload.Node) (physics.Curve, physics.GPUNode)) []Family {
	var out []Family
	index := map[string]int{}
	for _, n := range nodes {
		c, g := physicsOf(n)
		if n.GPUs == 0 {
			g = physics.GPUNode{}
		}
		key := fmt.Sprint(n.CPUMilli, n.MemoryMiB, n.GPUs, c.Points(), g.Host.Points(), g.GPUIdleWatts, g.GPUDynamicWatts)
		if i, ok := index[key]; ok {
			out[i].Nodes++
			continue
		}
		index[key] = len(out)
		out = append(out, Family{Name: n.Name, Nodes: 1, CPUMilli: n.CPUMilli, MemoryMiB: n.MemoryMiB, GPUs: n.GPUs, Host: c, GPU: g})
	}
	return out
}

// Input is what the bound is computed from.
type Input struct {
	Jobs     []workload.Job
	Families []Family
	Model    *physics.Model
	// Start and End are the accounting window.
	Start, End time.Duration
	// LatestStart is, by job ID, the latest time a schedule the bound
	// covers starts the job; a job not in it starts on arrival.
	LatestStart map[string]time.Duration
	// Truth is how the jobs' true figures were drawn (physics.Truth): the
	// bound holds for the physics the simulator ran them under.
	Truth physics.Truth
	// SliceCaps lets a job's own slice of a node's CPUs be capped, as
	// f-oracle idealises it; no hardware caps one pod's cores, so the
	// physical limit leaves it out.
	SliceCaps bool
}

// Result is the bound's energy over the window, in joules, and its terms
// (see the package documentation).
type Result struct {
	// Joules is the bound: the larger of Separate and Joint.
	Joules float64
	// Separate is Floor + Awake + Switching + Dynamic; Joint the larger
	// of the two joint forms, 0 with SliceCaps.
	Separate, Joint                  float64
	Floor, Awake, Switching, Dynamic float64
	// AwakeNodeSeconds is ∫ Σ_f k_f dt over the window.
	AwakeNodeSeconds float64
	// Gaps counts the gaps between two needs of a level, GapsCycled those
	// where a shutdown and a boot cost less than staying on.
	Gaps, GapsCycled int
	// Delayed counts the jobs whose latest start is after their arrival.
	Delayed int
}

// family is a Family with what the computation keeps of it.
type family struct {
	Family
	hostKey string   // its host curve, whose figures hostOf keeps
	cap     [3]int64 // CPUs, memory, GPUs of one node
	index   int
}

// Compute is the bound for in.
func Compute(in Input) (Result, error) {
	m := in.Model
	switch {
	case m == nil:
		return Result{}, errors.New("bound: no physics model")
	case in.End < in.Start:
		return Result{}, fmt.Errorf("bound: window %v..%v is not an interval", in.Start, in.End)
	case len(in.Families) == 0:
		return Result{}, errors.New("bound: no node families")
	}
	ps := m.Power
	// Both kinds of node's figures, so the floor holds for every node.
	floorW := min(ps.Off(false), ps.Booting(false), ps.Off(true), ps.Booting(true), ps.ShutdownWatts)
	fams := make([]*family, len(in.Families))
	// Each job runs under its own true figures; the hosts' figures are
	// computed once per curve and clock sensitivity (hostOf).
	truths := in.Truth.Models(m)
	jobModels := make([]*physics.Model, len(in.Jobs))
	// The utilizations and clock sensitivities of every class and every
	// job's true figures, each once: the hosts' figures are taken over them.
	seenU, seenB := map[float64]bool{}, map[float64]bool{}
	var utils, betas []float64
	figures := func(c physics.Class) {
		if u := c.Utilization; !seenU[u] {
			seenU[u] = true
			utils = append(utils, u)
		}
		if b := c.ClockSensitivity; !seenB[b] {
			seenB[b] = true
			betas = append(betas, b)
		}
	}
	for _, b := range physics.Boundnesses() {
		figures(m.Class(b))
	}
	for i, j := range in.Jobs {
		if !j.Boundness.Valid() {
			return Result{}, fmt.Errorf("bound: job %s: unknown boundness class %q", j.ID, j.Boundness)
		}
		jobModels[i] = truths.Of(j.Boundness, j.ID)
		figures(jobModels[i].Class(j.Boundness))
	}
	// A host's figures are kept per curve; those that depend on a job's
	// class are kept inside it by the one figure of the class they read.
	hosts := map[string]*host{}
	curves := map[string]physics.Curve{}
	hostOf := func(f *family) *host {
		if hosts[f.hostKey] == nil {
			hosts[f.hostKey] = newHost(m, curves[f.hostKey], floorW, utils, betas)
		}
		return hosts[f.hostKey]
	}
	for i, f := range in.Families {
		if f.Nodes < 1 || f.CPUMilli <= 0 || f.MemoryMiB <= 0 || f.GPUs < 0 {
			return Result{}, fmt.Errorf("bound: family %s: %d nodes of %d mCPU, %d MiB, %d GPUs is not a family", f.Name, f.Nodes, f.CPUMilli, f.MemoryMiB, f.GPUs)
		}
		key := fmt.Sprint(f.Host.Points())
		curves[key] = f.Host
		fams[i] = &family{Family: f, hostKey: key, cap: [3]int64{f.CPUMilli, f.MemoryMiB, int64(f.GPUs)}, index: i}
	}
	var res Result
	window := (in.End - in.Start).Seconds()
	for _, f := range fams {
		res.Floor += float64(f.Nodes) * floorW * window
	}

	// Each job surely holds its requests over [latest start, arrival +
	// work), inside the window; it adds to the demand of every job (all)
	// and, with GPUs, to that of the GPU jobs (gpu).
	type change struct {
		t    time.Duration
		gpu  bool
		req  [3]int64
		sign int64
	}
	var changes []change
	var jointWork, ownWork, gpuIdle float64
	for ji, j := range in.Jobs {
		jm := jobModels[ji]
		latest := j.Arrival
		if l, ok := in.LatestStart[j.ID]; ok {
			if l < j.Arrival {
				return Result{}, fmt.Errorf("bound: job %s: latest start %v before its arrival %v", j.ID, l, j.Arrival)
			}
			latest = l
			if l > j.Arrival {
				res.Delayed++
			}
		}
		eps, err := leastPerWork(fams, j, func(f *family) float64 {
			return f.perWork(jm, hostOf(f), j.Boundness, j.CPUMilli, j.GPUs, in.SliceCaps)
		})
		if err != nil {
			return Result{}, err
		}
		joint, _ := leastPerWork(fams, j, func(f *family) float64 { return f.perWorkWithIdle(jm, hostOf(f), j.Boundness, j.CPUMilli, j.GPUs) })
		own, _ := leastPerWork(fams, j, func(f *family) float64 { return f.perWorkOwnGPUs(jm, hostOf(f), j.Boundness, j.CPUMilli, j.GPUs) })
		w := workInside(jm, j, latest, in.Start, in.End)
		res.Dynamic += eps * w
		jointWork += joint * w
		ownWork += own * w
		from, to := max(latest, in.Start), min(j.Arrival+j.Work, in.End)
		if from >= to {
			continue
		}
		req := [3]int64{j.CPUMilli, j.MemoryMiB, int64(j.GPUs)}
		changes = append(changes, change{from, j.GPUs > 0, req, 1}, change{to, j.GPUs > 0, req, -1})
	}
	slices.SortFunc(changes, func(a, b change) int { return cmp.Compare(a.t, b.t) })

	sw := newSwitching(m, fams, floorW, in.Start, in.End)
	var all, gpu [3]int64
	count := make([]int, len(fams))
	prev := in.Start
	for i := 0; i <= len(changes); i++ {
		t := in.End
		if i < len(changes) {
			t = changes[i].t
		}
		if t > prev {
			for fi, f := range fams {
				res.Awake += (f.Idle() - floorW) * float64(count[fi]) * (t - prev).Seconds()
				res.AwakeNodeSeconds += float64(count[fi]) * (t - prev).Seconds()
				gpuIdle += float64(f.GPUs) * f.GPU.GPUIdleWatts * float64(count[fi]) * (t - prev).Seconds()
			}
			prev = t
		}
		if i == len(changes) {
			break
		}
		c := changes[i]
		for r := range 3 {
			all[r] += c.sign * c.req[r]
			if c.gpu {
				gpu[r] += c.sign * c.req[r]
			}
		}
		if i+1 < len(changes) && changes[i+1].t == t {
			continue // the counts change once all of an instant's changes are in
		}
		for fi, f := range fams {
			k, err := fewestAwake(fams, f, all, gpu)
			if err != nil {
				return Result{}, fmt.Errorf("bound: at %v: %w", t, err)
			}
			sw.change(fi, count[fi], k, t)
			count[fi] = k
		}
	}
	res.Switching, res.Gaps, res.GapsCycled = sw.joules, sw.gaps, sw.cycled
	res.Separate = res.Floor + res.Awake + res.Switching + res.Dynamic
	if !in.SliceCaps {
		res.Joint = res.Floor + max(gpuIdle+jointWork, ownWork)
	}
	res.Joules = max(res.Separate, res.Joint)
	return res, nil
}

// fewestAwake is k_f: the fewest awake nodes of family f that the jobs
// surely running can need, given demand all of every job and gpu of the
// GPU jobs, with every node of the other families that could hold them
// taken as available.
func fewestAwake(fams []*family, f *family, all, gpu [3]int64) (int, error) {
	k := int64(0)
	need := func(demand [3]int64, eligible func(*family) bool) {
		for r := range 3 {
			if f.cap[r] == 0 {
				continue
			}
			left := demand[r]
			for _, g := range fams {
				if g != f && eligible(g) {
					left -= int64(g.Nodes) * g.cap[r]
				}
			}
			if left > 0 {
				k = max(k, (left+f.cap[r]-1)/f.cap[r])
			}
		}
	}
	need(all, func(*family) bool { return true })
	if f.GPUs > 0 {
		need(gpu, func(g *family) bool { return g.GPUs > 0 })
	}
	if k > int64(f.Nodes) {
		return 0, fmt.Errorf("the jobs surely running need %d nodes of family %s, which has %d: the latest starts let no schedule run them", k, f.Name, f.Nodes)
	}
	return int(k), nil
}

// leastPerWork is the least of perWork over the families that can hold
// job j.
func leastPerWork(fams []*family, j workload.Job, perWork func(*family) float64) (float64, error) {
	if !j.Boundness.Valid() {
		return 0, fmt.Errorf("bound: job %s: unknown boundness class %q", j.ID, j.Boundness)
	}
	best, found := 0.0, false
	for _, f := range fams {
		if j.CPUMilli > f.CPUMilli || j.MemoryMiB > f.MemoryMiB || j.GPUs > f.GPUs {
			continue
		}
		e := perWork(f)
		if !found || e < best {
			best, found = e, true
		}
	}
	if !found {
		return 0, fmt.Errorf("bound: job %s (%d mCPU, %d MiB, %d GPUs) fits no node family", j.ID, j.CPUMilli, j.MemoryMiB, j.GPUs)
	}
	return best, nil
}

// workInside is the least work, in seconds at full speed, that job j,
// started between its arrival and latest, does inside [start, end): by
// end it has run at least end − latest at no less than the slowest
// clock's rate, and before start it can have done at most start −
// arrival at full speed.
func workInside(m *physics.Model, j workload.Job, latest, start, end time.Duration) float64 {
	w := j.Work.Seconds()
	slowest := 1 / m.StretchAtClock(j.Boundness, m.ClockFit.MinClock)
	byEnd := min(w, slowest*max(0, (end-latest).Seconds()))
	byStart := min(w, max(0, (start-j.Arrival).Seconds()))
	return max(0, byEnd-byStart)
}

// switching keeps, per family and level, when the level was last needed,
// and adds up the cheaper of staying on and switching off over each gap.
type switching struct {
	stay, shutdown, boot []float64 // per family: W above the floor awake; J above the floor to shut down, to boot
	sdTime, bootTime     []time.Duration
	lastNeeded           [][]time.Duration // per family, per level (1-based): end of its last need, −1 if never needed
	start, end           time.Duration
	joules               float64
	gaps, cycled         int
}

func newSwitching(m *physics.Model, fams []*family, floorW float64, start, end time.Duration) *switching {
	ps := m.Power
	s := &switching{start: start, end: end}
	for _, f := range fams {
		gpuNode := f.GPUs > 0
		s.stay = append(s.stay, f.Idle()-floorW)
		s.shutdown = append(s.shutdown, max(0, ps.ShutdownWatts-floorW))
		s.boot = append(s.boot, max(0, ps.Booting(gpuNode)-floorW))
		s.sdTime = append(s.sdTime, ps.Shutdown)
		s.bootTime = append(s.bootTime, ps.BootTime(gpuNode))
		last := make([]time.Duration, f.Nodes+1)
		for i := range last {
			last[i] = -1
		}
		s.lastNeeded = append(s.lastNeeded, last)
	}
	return s
}

// change moves family fi's count of needed nodes from k0 to k1 at t.
func (s *switching) change(fi, k0, k1 int, t time.Duration) {
	last := s.lastNeeded[fi]
	for l := k1 + 1; l <= k0; l++ {
		last[l] = t
	}
	for l := k0 + 1; l <= k1; l++ {
		if last[l] < 0 {
			continue // first need inside the window: counted as free
		}
		gap := t - last[l]
		stay := s.stay[fi] * gap.Seconds()
		// The shutdown starts in the gap and the boot ends in it, on two
		// nodes or one; only what can lie inside the window is counted.
		// When the level is the whole family, every node was awake as the
		// gap began, so the node that boots shut down inside it: both must
		// fit.
		cycle := s.shutdown[fi]*min(s.sdTime[fi], s.end-t).Seconds() + s.boot[fi]*min(s.bootTime[fi], last[l]-s.start).Seconds()
		if l == len(last)-1 && gap < s.sdTime[fi]+s.bootTime[fi] {
			cycle = stay
		}
		s.gaps++
		if cycle < stay {
			s.cycled++
		}
		s.joules += min(stay, cycle)
	}
}
