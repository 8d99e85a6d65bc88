package sim

import "joulie.io/joulie/test/energy/physics"

// The oracle heuristics, arms f-oracle-physical and f-oracle: caps and
// power states chosen with foresight, not policies anyone could run, and
// not bounds (package bound is the lower bound). Both
// place pods as bin-packing does (arm b), switch a node off the moment it
// is empty and have it Ready, its boot paid, exactly when a pod needs it
// (powerstate.go), and run performance jobs uncapped. They differ in the
// CPU caps:
//
//   - f-oracle-physical caps what hardware can cap: each standard GPU
//     job's own GPUs at the cap that minimises the job's energy per unit
//     of work (NVML sets a limit per GPU), and each node's CPU packages at
//     the cap that minimises the node's energy per unit of CPU work, for
//     the jobs on it at that moment (a package cap is per socket, shared
//     by every job on the node). A node running a performance job, or a
//     GPU job, keeps its packages uncapped.
//   - f-oracle gives each standard job, CPU slice included, its own
//     energy-optimal cap: a package cap cannot limit one pod's cores, so
//     this part is an idealisation.

// oracleCap is the cap the oracle gives job j, starting on node n, on
// the shares it caps per job.
func (s *simulation) oracleCap(j *jobState, n *nodeState) float64 {
	if j.perfPod || s.opts.OracleUncapped {
		return 1
	}
	m := j.phys // foresight: the oracle knows the job's true figures
	u := m.Class(j.job.Boundness).Utilization
	slice := physics.CPUSlice(n.host, float64(j.job.CPUMilli)/float64(n.spec.CPUMilli), u)
	if j.job.GPUs == 0 {
		if s.spec.Oracle == OraclePhysical {
			return 1
		}
		return m.MinEnergyCap(j.job.Boundness, slice)
	}
	gpus := gpuDevice(n, j.job.GPUs, u)
	if s.spec.Oracle == OraclePhysical {
		return m.MinEnergyCap(j.job.Boundness, gpus)
	}
	return m.MinEnergyCap(j.job.Boundness, gpus, slice)
}

// oracleNodeSteps is how finely the physical oracle searches a node's
// package cap, between the model's floor and no cap.
const oracleNodeSteps = 50

// oracleNodeCap is the physical oracle's package cap for node n: the one
// that minimises the node's CPU draw per unit of CPU work at full speed
// with the jobs on it now; 1 on a node with a performance job or a GPU job
// (whose host CPUs feed its GPUs), or with nothing to slow.
func (s *simulation) oracleNodeCap(n *nodeState) float64 {
	if s.opts.OracleUncapped || len(n.running) == 0 {
		return 1
	}
	for _, idx := range n.running {
		if j := s.jobs[idx]; j.perfPod || j.job.GPUs > 0 {
			return 1
		}
	}
	dev := physics.NodeCPU(n.host, s.load(n))
	perWork := func(f float64) float64 {
		r := s.model.Clock(dev, f)
		var work float64
		for _, idx := range n.running {
			j := s.jobs[idx]
			work += float64(j.job.CPUMilli) / j.phys.StretchAtClock(j.job.Boundness, r)
		}
		return s.model.Draw(dev, f) / work
	}
	best, bestE := 1.0, perWork(1)
	lo := s.model.MinCapFraction
	for i := oracleNodeSteps - 1; i >= 0; i-- {
		f := lo + (1-lo)*float64(i)/oracleNodeSteps
		// A gain within rounding is no gain: it would slow the jobs for
		// nothing.
		if e := perWork(f); e < bestE*(1-1e-12) {
			best, bestE = f, e
		}
	}
	return best
}

// oracleSaving is how much less node n draws, at CPU load, under its jobs'
// own CPU caps (f-oracle's idealised slices) than uncapped: 0 in every
// other arm.
func (s *simulation) oracleSaving(n *nodeState, load float64) float64 {
	if s.spec.Oracle != OracleSlices {
		return 0
	}
	slices := make([]physics.CappedSlice, 0, len(n.running))
	for _, idx := range n.running {
		j := s.jobs[idx]
		frac := float64(j.job.CPUMilli) / float64(n.spec.CPUMilli)
		slices = append(slices, physics.CappedSlice{Slice: physics.CPUSlice(n.host, frac, j.phys.Class(j.job.Boundness).Utilization), Cap: j.cap})
	}
	return s.model.SliceSaving(n.host, load, slices)
}

// gpuDevice is k of node n's GPUs, each at util.
func gpuDevice(n *nodeState, k int, util float64) physics.Device {
	f := float64(k)
	return physics.Device{Idle: f * n.gpu.GPUIdleWatts, Natural: f * n.gpu.GPUWatts(util), Max: f * n.gpu.GPUMaxWatts()}
}

// gpuCapOf is the cap fraction of job j's GPUs on node n: the oracle's
// own cap for the job, the standard cap where the node's agent caps the
// GPUs standard jobs hold (per-GPU caps), else the node's GPU cap.
func (s *simulation) gpuCapOf(j *jobState, n *nodeState) float64 {
	switch {
	case s.spec.Oracle != NoOracle:
		return j.cap
	case !j.perfPod && n.gpuStdCap < n.gpuCap:
		return n.gpuStdCap
	}
	return n.gpuCap
}

// cpuClock is the clock fraction node n's CPUs run at under its package
// cap: the cap binds on the whole node's draw.
func (s *simulation) cpuClock(n *nodeState) float64 {
	if n.cpuCap >= 1 {
		return 1
	}
	return s.model.Clock(physics.NodeCPU(n.host, s.load(n)), n.cpuCap)
}

// jobClock is the clock fraction job j runs at on node n: a GPU job's
// GPUs set its pace (its host CPUs feed them), under the node's GPU cap
// or its own oracle cap; a CPU job runs at the node's CPU clock, or in
// f-oracle at its own slice's.
func (s *simulation) jobClock(j *jobState, n *nodeState, cpuClock float64) float64 {
	u := j.phys.Class(j.job.Boundness).Utilization
	if j.job.GPUs > 0 {
		c := s.gpuCapOf(j, n)
		if c >= 1 {
			return 1
		}
		return s.model.Clock(gpuDevice(n, 1, u), c)
	}
	if s.spec.Oracle == OracleSlices {
		if j.cap >= 1 {
			return 1
		}
		return s.model.Clock(physics.CPUSlice(n.host, float64(j.job.CPUMilli)/float64(n.spec.CPUMilli), u), j.cap)
	}
	return cpuClock
}
