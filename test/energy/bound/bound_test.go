package bound

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/physics"
	"joulie.io/joulie/test/energy/workload"
)

// The brute force below is a second, independent computation of the
// least energy of a tiny job list: every placement of the jobs on the
// nodes, every package and GPU cap per node from a grid, every job started
// on arrival, each node's power states chosen for the least energy with
// foresight, and the result the least over all of them. Every schedule it
// tries is feasible, so the bound must be at most its least.

// bfCaps is the grid of caps the brute force tries on each node.
var bfCaps = []float64{0.5, 0.6, 0.7, 0.8, 0.9, 1}

type bfNode struct {
	fam  Family
	host physics.Curve
}

// bfRun is one node's run of its jobs under package cap hostCap and GPU
// cap gpuCap from time 0: its energy while it holds jobs, the intervals
// it holds them, and false if its jobs do not fit together.
func bfRun(m *physics.Model, n bfNode, jobs []workload.Job, hostCap, gpuCap float64) (joules float64, busy [][2]float64, ok bool) {
	type run struct {
		j    workload.Job
		left float64
	}
	pending := slices.Clone(jobs)
	slices.SortFunc(pending, func(a, b workload.Job) int { return int(a.Arrival - b.Arrival) })
	var running []*run
	t := 0.0
	f := n.fam
	for len(pending) > 0 || len(running) > 0 {
		if len(running) == 0 {
			t = max(t, pending[0].Arrival.Seconds())
		}
		for len(pending) > 0 && pending[0].Arrival.Seconds() <= t {
			running = append(running, &run{j: pending[0], left: pending[0].Work.Seconds()})
			pending = pending[1:]
		}
		var cpu, mem int64
		gpus := 0
		var busyMilli float64
		for _, r := range running {
			cpu += r.j.CPUMilli
			mem += r.j.MemoryMiB
			gpus += r.j.GPUs
			busyMilli += float64(r.j.CPUMilli) * m.Class(r.j.Boundness).Utilization
		}
		if cpu > f.CPUMilli || mem > f.MemoryMiB || gpus > f.GPUs {
			return 0, nil, false
		}
		load := busyMilli / float64(f.CPUMilli)
		dev := physics.NodeCPU(n.host, load)
		watts := m.Draw(dev, hostCap) + float64(f.GPUs-gpus)*f.GPU.GPUIdleWatts
		rates := make([]float64, len(running))
		for i, r := range running {
			u := m.Class(r.j.Boundness).Utilization
			if r.j.GPUs > 0 {
				one := physics.Device{Idle: f.GPU.GPUIdleWatts, Natural: f.GPU.GPUWatts(u), Max: f.GPU.GPUMaxWatts()}
				watts += float64(r.j.GPUs) * m.Draw(one, gpuCap)
				rates[i] = 1 / m.Stretch(r.j.Boundness, one, gpuCap)
			} else {
				rates[i] = 1 / m.Stretch(r.j.Boundness, dev, hostCap)
			}
		}
		next := math.Inf(1)
		if len(pending) > 0 {
			next = pending[0].Arrival.Seconds()
		}
		for i, r := range running {
			next = min(next, t+r.left/rates[i])
		}
		dt := next - t
		joules += watts * dt
		if k := len(busy); k > 0 && busy[k-1][1] == t {
			busy[k-1][1] = next
		} else {
			busy = append(busy, [2]float64{t, next})
		}
		kept := running[:0]
		for i, r := range running {
			r.left -= rates[i] * dt
			if r.left > 1e-9 {
				kept = append(kept, r)
			}
		}
		running = kept
		t = next
	}
	return joules, busy, true
}

// bfIdle is the least a node awake at 0 spends outside busy over [0, end),
// choosing for every stretch without jobs between staying on and a
// shutdown, off and a boot (where both fit).
func bfIdle(m *physics.Model, f Family, busy [][2]float64, end float64) float64 {
	ps := m.Power
	idle, off := f.Idle(), ps.OffWatts
	sd, boot := ps.Shutdown.Seconds(), ps.BootTime(f.GPUs > 0).Seconds()
	sdJ, bootJ := ps.ShutdownJoules(), ps.BootJoules(f.GPUs > 0)
	var e float64
	from := 0.0
	for _, b := range busy {
		g := b[0] - from
		stay := idle * g
		if g >= sd+boot {
			stay = min(stay, sdJ+bootJ+off*(g-sd-boot))
		}
		e += stay
		from = b[1]
	}
	if g := end - from; g > 0 {
		last := idle * g
		if g >= sd {
			last = min(last, sdJ+off*(g-sd))
		} else {
			last = min(last, ps.ShutdownWatts*g)
		}
		e += last
	}
	return e
}

// bruteForce is the least energy over [0, end) of jobs on nodes, +Inf
// when no placement fits.
func bruteForce(t *testing.T, m *physics.Model, nodes []bfNode, jobs []workload.Job, end float64) float64 {
	t.Helper()
	best := math.Inf(1)
	place := make([]int, len(jobs))
	var try func(i int)
	try = func(i int) {
		if i < len(jobs) {
			for n := range nodes {
				place[i] = n
				try(i + 1)
			}
			return
		}
		total := 0.0
		for n, node := range nodes {
			var mine []workload.Job
			for k, p := range place {
				if p == n {
					mine = append(mine, jobs[k])
				}
			}
			least := math.Inf(1)
			gpuCaps := []float64{1}
			if node.fam.GPUs > 0 {
				gpuCaps = bfCaps
			}
			for _, hc := range bfCaps {
				for _, gc := range gpuCaps {
					e, busy, ok := bfRun(m, node, mine, hc, gc)
					if !ok {
						return
					}
					if len(busy) > 0 && busy[len(busy)-1][1] > end+1e-6 {
						continue // a job would run past the window
					}
					least = min(least, e+bfIdle(m, node.fam, busy, end))
				}
			}
			total += least
		}
		best = min(best, total)
	}
	try(0)
	return best
}

func cpuFamily(m *physics.Model, nodes int) Family {
	return Family{Name: "cpu", Nodes: nodes, CPUMilli: 8000, MemoryMiB: 16384, Host: m.CPUNode}
}

func gpuFamily(m *physics.Model, nodes int) Family {
	return Family{Name: "gpu", Nodes: nodes, CPUMilli: 4000, MemoryMiB: 16384, GPUs: 8, Host: m.GPUNode.Host, GPU: m.GPUNode}
}

func bfNodes(fams ...Family) []bfNode {
	var out []bfNode
	for _, f := range fams {
		for range f.Nodes {
			out = append(out, bfNode{fam: f, host: f.Host})
		}
	}
	return out
}

func job(id string, arrival, work time.Duration, b physics.Boundness, cpuMilli int64, gpus int) workload.Job {
	return workload.Job{ID: id, Arrival: arrival, Work: work, Boundness: b, CPUMilli: cpuMilli, MemoryMiB: 1024, GPUs: gpus, Class: workload.Standard}
}

func compute(t *testing.T, in Input) Result {
	t.Helper()
	r, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Where the relaxation gives nothing away, the bound is the optimum: GPU
// work that a cap cannot make cheaper (gpu-low, clock sensitivity 0, below
// the cap floor), no host CPUs, one node, and gaps that the optimum either
// bridges (too short to switch off) or switches off over.
func TestBoundEqualsBruteForceWhereTight(t *testing.T) {
	m := physics.Default()
	fam := gpuFamily(m, 1)
	for _, tc := range []struct {
		name string
		jobs []workload.Job
	}{
		{"two jobs sharing the node", []workload.Job{
			job("a", 0, time.Hour, physics.GPULow, 0, 4), job("b", 0, 2*time.Hour, physics.GPULow, 0, 4)}},
		{"a gap too short to switch off", []workload.Job{
			job("a", 0, time.Hour, physics.GPULow, 0, 8), job("b", time.Hour+100*time.Second, time.Hour, physics.GPULow, 0, 2)}},
		{"a gap long enough to switch off", []workload.Job{
			job("a", 0, time.Hour, physics.GPULow, 0, 4), job("b", 0, 2*time.Hour, physics.GPULow, 0, 4), job("c", 5*time.Hour, time.Hour, physics.GPULow, 0, 8)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var end time.Duration
			for _, j := range tc.jobs {
				end = max(end, j.Arrival+j.Work)
			}
			got := compute(t, Input{Jobs: tc.jobs, Families: []Family{fam}, Model: m, End: end})
			want := bruteForce(t, m, bfNodes(fam), tc.jobs, end.Seconds())
			if math.Abs(got.Joules-want) > 1e-9*want {
				t.Errorf("bound %.6f J, brute-force optimum %.6f J (parts %+v)", got.Joules, want, got)
			}
		})
	}
}

// On small mixed cases the bound is at most the brute-force optimum, and
// not far below it where little is relaxed.
func TestBoundAtMostBruteForce(t *testing.T) {
	m := physics.Default()
	for _, tc := range []struct {
		name string
		fams []Family
		jobs []workload.Job
	}{
		{"CPU jobs of every class on two CPU nodes", []Family{cpuFamily(m, 2)}, []workload.Job{
			job("a", 0, time.Hour, physics.CPUCompute, 6000, 0),
			job("b", 10*time.Minute, 40*time.Minute, physics.CPUMemory, 4000, 0),
			job("c", 20*time.Minute, 30*time.Minute, physics.CPULow, 2000, 0),
			job("d", 3*time.Hour, 20*time.Minute, physics.CPUCompute, 8000, 0)}},
		{"GPU and CPU jobs on a CPU node and a GPU node", []Family{cpuFamily(m, 1), gpuFamily(m, 1)}, []workload.Job{
			job("a", 0, time.Hour, physics.GPUCompute, 2000, 4),
			job("b", 0, 90*time.Minute, physics.GPUMixed, 1000, 2),
			job("c", 5*time.Minute, time.Hour, physics.CPUCompute, 6000, 0),
			job("d", 2*time.Hour, 30*time.Minute, physics.CPUMemory, 8000, 0)}},
		{"CPU jobs that can use a GPU node's spare CPUs", []Family{cpuFamily(m, 1), gpuFamily(m, 1)}, []workload.Job{
			job("a", 0, time.Hour, physics.GPULow, 1000, 8),
			job("b", 0, time.Hour, physics.CPULow, 3000, 0),
			job("c", 0, 2*time.Hour, physics.CPUCompute, 8000, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The window runs past every completion the brute force
			// allows, so that no schedule is cut short.
			end := 8 * time.Hour
			got := compute(t, Input{Jobs: tc.jobs, Families: tc.fams, Model: m, End: end})
			want := bruteForce(t, m, bfNodes(tc.fams...), tc.jobs, end.Seconds())
			if got.Joules > want {
				t.Fatalf("bound %.1f J above the brute-force optimum %.1f J (parts %+v)", got.Joules, want, got)
			}
			t.Logf("bound %.1f J, brute force %.1f J: %.1f%% below", got.Joules, want, 100*(1-got.Joules/want))
		})
	}
}

// Random small cases, each solved by brute force: the bound is never
// above the optimum.
func TestBoundAtMostBruteForceOnRandomCases(t *testing.T) {
	m := physics.Default()
	fams := []Family{cpuFamily(m, 2), gpuFamily(m, 1)}
	rng := rand.New(rand.NewPCG(38, 4))
	classes := physics.Boundnesses()
	// Each case computes the bound's tables afresh, which the race
	// detector makes slow; a dozen cases keep the test short.
	const cases = 12
	solved := 0
	for c := range cases {
		var jobs []workload.Job
		for i := range 4 {
			b := classes[rng.IntN(len(classes))]
			gpus := 0
			if b.GPU() {
				gpus = 1 + rng.IntN(4)
			}
			arrival := time.Duration(rng.IntN(4*60)) * time.Minute
			work := time.Duration(10+rng.IntN(110)) * time.Minute
			cpu := int64(1000 * (1 + rng.IntN(4)))
			if gpus > 0 {
				cpu /= 4 // a GPU node has half a CPU node's CPUs
			}
			jobs = append(jobs, job(string(rune('a'+i)), arrival, work, b, cpu, gpus))
		}
		end := 12 * time.Hour
		want := bruteForce(t, m, bfNodes(fams...), jobs, end.Seconds())
		if math.IsInf(want, 1) {
			continue // the jobs fit no placement
		}
		solved++
		got := compute(t, Input{Jobs: jobs, Families: fams, Model: m, End: end})
		if got.Joules > want {
			t.Errorf("case %d: bound %.1f J above the brute-force optimum %.1f J (jobs %+v, parts %+v)", c, got.Joules, want, jobs, got)
		}
	}
	if solved < cases*2/3 {
		t.Errorf("only %d of %d random cases fit the nodes", solved, cases)
	}
}

// A CPU node's dynamic energy per unit of work is least near half load,
// its idle per unit of work least at full load: the joint form, which
// charges both to the work together, is the higher and is the bound.
func TestJointFormBoundsCPUWorkTighter(t *testing.T) {
	m := physics.Default()
	fam := cpuFamily(m, 1)
	jobs := []workload.Job{job("a", 0, time.Hour, physics.CPUCompute, 8000, 0)}
	// The window leaves room for the job at the slowest clock, so all of
	// its work surely falls inside.
	end := 3 * time.Hour
	got := compute(t, Input{Jobs: jobs, Families: []Family{fam}, Model: m, End: end})
	if !(got.Joint > got.Separate) || got.Joules != got.Joint {
		t.Errorf("joint form %.0f J, separate %.0f J, bound %.0f J: want the joint form higher and taken", got.Joint, got.Separate, got.Joules)
	}
	want := bruteForce(t, m, bfNodes(fam), jobs, end.Seconds())
	if got.Joules > want {
		t.Errorf("bound %.0f J above the brute-force optimum %.0f J", got.Joules, want)
	}
	t.Logf("joint %.0f J, separate %.0f J, brute force %.0f J", got.Joint, got.Separate, want)
}

// A deep cap on a busy GPU saves dynamic energy but keeps the GPU's idle
// draw for longer: the second joint form, which counts the job's own GPUs
// whole over its stretched time, is then the bound, and stays below the
// brute-force optimum.
func TestOwnGPUsFormBoundsCappedGPUWork(t *testing.T) {
	m := physics.Default()
	fam := gpuFamily(m, 1)
	jobs := []workload.Job{job("a", 0, time.Hour, physics.GPUCompute, 0, 8)}
	end := 3 * time.Hour
	got := compute(t, Input{Jobs: jobs, Families: []Family{fam}, Model: m, End: end})
	want := bruteForce(t, m, bfNodes(fam), jobs, end.Seconds())
	if !(got.Joint > got.Separate) || got.Joules != got.Joint || got.Joules > want {
		t.Errorf("joint %.0f J, separate %.0f J, bound %.0f J, brute force %.0f J: want the joint form higher, taken, and at most the optimum", got.Joint, got.Separate, got.Joules, want)
	}
	t.Logf("joint %.0f J, separate %.0f J, brute force %.0f J", got.Joint, got.Separate, want)
}

// The bound takes g and the stretch from a clock's powers, once for every
// clock sensitivity; they must be the model's stretch and g themselves, at
// every clock and sensitivity, or the bound would follow a physics of its
// own.
func TestClockPowersAreTheModelsStretch(t *testing.T) {
	m := physics.Default()
	b := physics.Boundnesses()[0]
	for _, beta := range []float64{0, 0.02, 0.2, 0.5, 0.98, 1} {
		c := m.Class(b)
		c.ClockSensitivity = beta
		mb := m.WithClass(b, c)
		for _, r := range []float64{m.ClockFit.MinClock, 0.45, 0.7, 0.999, 1} {
			p := powersAt(m, r)
			if got, want := p.stretch(beta), mb.StretchAtClock(b, r); got != want {
				t.Errorf("β %v, clock %v: stretch %v from the powers, the model's %v", beta, r, got, want)
			}
			k, a := m.ClockFit.K, m.ClockFit.A
			if got, want := p.g(beta), (1-beta)*math.Pow(r, k)+beta*math.Pow(r, k-a); got != want {
				t.Errorf("β %v, clock %v: g %v from the powers, want %v", beta, r, got, want)
			}
		}
	}
}
