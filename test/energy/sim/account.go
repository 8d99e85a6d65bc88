package sim

import (
	"slices"
	"time"

	"joulie.io/joulie/test/energy/workload"
)

// accounts is what a run measures as it goes: the cluster's power as a
// step function split into Parts, and inside the accounting window the
// work done at full-speed-equivalent rates and the allocated share.
//
// Energy is not summed as the run goes: the oracle's foresight decides a
// node's power state over a past interval only when the node is needed
// again (powerstate.go), so those decisions are kept as adjustments and
// merged into the series at the end, and every energy figure is the
// integral of that final series.
type accounts struct {
	window   Window // the zero Window: the whole run
	series   []Sample
	total    Parts
	adjust   []adjustment
	coreSecs float64 // Σ rate × dt × CPUs inside the window
	gpuSecs  float64 // Σ rate × dt × GPUs inside the window
	allocCPU float64 // ∫ requested CPUs (milli) dt inside the window
	allocGPU float64 // ∫ requested GPUs dt inside the window
	usedCPU  int64   // requested CPUs (milli) of the running jobs
	usedGPU  int
	capCPU   float64 // the cluster's CPUs (milli) and GPUs
	capGPU   float64
	wholeRun bool
}

// adjustment adds parts to the series over [from, to).
type adjustment struct {
	from, to time.Duration
	parts    Parts
}

func (a *accounts) init(s *simulation) {
	a.window = s.opts.Window
	a.wholeRun = a.window == Window{}
	for _, n := range s.nodes {
		a.capCPU += float64(n.spec.CPUMilli)
		a.capGPU += float64(n.spec.GPUs)
	}
}

// inside is the part of [from, to) inside the window.
func (a *accounts) inside(from, to time.Duration) time.Duration {
	if a.wholeRun {
		return to - from
	}
	return max(0, min(to, a.window.End)-max(from, a.window.Start))
}

// step changes the cluster's power by delta from t on.
func (a *accounts) step(t time.Duration, delta Parts) {
	a.total = a.total.add(delta, 1)
	if n := len(a.series); n > 0 && a.series[n-1].T == t {
		a.series[n-1].Parts = a.total
		a.series[n-1].Watts = a.total.Total()
		return
	}
	a.series = append(a.series, Sample{T: t, Watts: a.total.Total(), Parts: a.total})
}

// add records an adjustment of the power over [from, to).
func (a *accounts) add(from, to time.Duration, p Parts) {
	if to > from {
		a.adjust = append(a.adjust, adjustment{from, to, p})
	}
}

// advance integrates the allocation over [from, to).
func (a *accounts) advance(from, to time.Duration) {
	if d := a.inside(from, to).Seconds(); d > 0 {
		a.allocCPU += float64(a.usedCPU) * d
		a.allocGPU += float64(a.usedGPU) * d
	}
}

// started and stopped keep the running jobs' requests.
func (a *accounts) started(j workload.Job) { a.usedCPU += j.CPUMilli; a.usedGPU += j.GPUs }
func (a *accounts) stopped(j workload.Job) { a.usedCPU -= j.CPUMilli; a.usedGPU -= j.GPUs }

// work credits job j's progress at its rate over [from, to).
func (a *accounts) work(j *jobState, from, to time.Duration) {
	d := j.rate * a.inside(from, to).Seconds()
	a.coreSecs += d * float64(j.job.CPUMilli) / 1000
	a.gpuSecs += d * float64(j.job.GPUs)
}

// final is the power series with every adjustment merged in.
func (a *accounts) final() []Sample {
	if len(a.adjust) == 0 {
		return a.series
	}
	type change struct {
		t time.Duration
		p Parts
	}
	var cs []change
	prev := Parts{}
	for _, s := range a.series {
		cs = append(cs, change{s.T, s.Parts.add(prev, -1)})
		prev = s.Parts
	}
	for _, ad := range a.adjust {
		cs = append(cs, change{ad.from, ad.parts}, change{ad.to, Parts{}.add(ad.parts, -1)})
	}
	slices.SortStableFunc(cs, func(x, y change) int { return int(x.t - y.t) })
	var out []Sample
	var cur Parts
	for _, c := range cs {
		cur = cur.add(c.p, 1)
		if n := len(out); n > 0 && out[n-1].T == c.t {
			out[n-1].Parts, out[n-1].Watts = cur, cur.Total()
			continue
		}
		out = append(out, Sample{T: c.t, Watts: cur.Total(), Parts: cur})
	}
	return out
}

// integrate is the energy of series over [from, to), split into parts;
// the last sample holds until to.
func integrate(series []Sample, from, to time.Duration) (float64, Parts) {
	var e Parts
	for i, p := range series {
		end := to
		if i+1 < len(series) {
			end = min(series[i+1].T, to)
		}
		start := max(p.T, from)
		if end <= start {
			if p.T >= to {
				break
			}
			continue
		}
		e = e.add(p.Parts, (end - start).Seconds())
	}
	return e.Total(), e
}

func (s *simulation) result() Result {
	s.power.finish()
	series := s.acct.final()
	w := s.opts.Window
	if s.acct.wholeRun {
		w = Window{0, s.now}
	}
	r := Result{Arm: s.spec.Arm, Seed: s.opts.Seed, Level: s.opts.Level, Nodes: len(s.nodes), Makespan: s.now,
		Window: w, PerfOnEcoOrDraining: s.perfOnEco, Power: series,
		Boots: s.power.boots, Shutdowns: s.power.shutdowns}
	r.EnergyJ, r.EnergyParts = integrate(series, w.Start, w.End)
	r.CoreHours, r.GPUHours = s.acct.coreSecs/3600, s.acct.gpuSecs/3600
	if secs := w.Length().Seconds(); secs > 0 {
		if s.acct.capCPU > 0 {
			r.AllocCPU = s.acct.allocCPU / secs / s.acct.capCPU
		}
		if s.acct.capGPU > 0 {
			r.AllocGPU = s.acct.allocGPU / secs / s.acct.capGPU
		}
	}
	for _, n := range s.nodes {
		if n.spec.GPUs > 0 {
			r.GPUNodes++
		} else {
			r.CPUNodes++
		}
	}
	first := time.Duration(-1)
	for _, j := range s.jobs {
		if first < 0 || j.job.Arrival < first {
			first = j.job.Arrival
		}
		if j.perfPod && j.bootWait > 0 {
			r.PerfBootWaits++
			if a := j.job.Arrival; a >= r.Window.Start && a < r.Window.End {
				r.PerfBootWaitsInWindow++
			}
		}
		r.Jobs = append(r.Jobs, JobResult{ID: j.job.ID, Class: string(j.job.Class), Boundness: string(j.job.Boundness),
			GPUs: j.job.GPUs, CPUMilli: j.job.CPUMilli, Work: j.job.Work, Arrival: j.job.Arrival, Start: j.start, End: j.end,
			BootWait: j.bootWait, Node: s.nodes[j.node].spec.Name, Profile: j.profile, Truncated: j.job.Truncated})
	}
	if first > 0 {
		r.Makespan -= first
	}
	// The hash is the input's, the pods left pending included, so that
	// every arm of a job list shows the same hash.
	r.JobsHash = workload.Hash(s.input)
	for _, j := range s.unplaceable {
		r.Unplaceable = append(r.Unplaceable, Unplaceable{ID: j.ID, Class: string(j.Class), CPUMilli: j.CPUMilli, MemoryMiB: j.MemoryMiB, GPUs: j.GPUs})
	}
	if s.opts.SeedWindow > 0 {
		r.SeedMethod = s.seedMethod(series)
	}
	return r
}

// seedMethod is the seed document's accounting of the run: the energy over
// a fixed window from 0, and the jobs arrived in it that started on
// arrival (the seed's experiment dropped a job that did not fit at once)
// with their whole work.
func (s *simulation) seedMethod(series []Sample) *SeedMethod {
	m := &SeedMethod{Window: s.opts.SeedWindow}
	m.EnergyJ, _ = integrate(series, 0, s.opts.SeedWindow)
	for _, j := range s.jobs {
		if j.job.Arrival >= s.opts.SeedWindow {
			continue
		}
		if j.start > j.job.Arrival {
			m.Dropped++
			continue
		}
		m.Accepted++
		m.AcceptedCoreHours += j.job.Work.Hours() * float64(j.job.CPUMilli) / 1000
		m.AcceptedGPUHours += j.job.Work.Hours() * float64(j.job.GPUs)
	}
	return m
}
