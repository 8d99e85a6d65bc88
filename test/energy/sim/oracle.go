package sim

import "joulie.io/joulie/test/energy/physics"

// The oracle bound, arm f: what capping could save at best, not a policy
// anyone could run. It places pods as arm a does (kube-scheduler's default
// profile, no Joulie filter or scoring, no eco or performance nodes), and
// gives every standard job, when it starts, the cap that minimises that
// job's own energy under the physics; performance jobs run uncapped. The
// cap is the job's own, on the device shares it holds, not its node's:
//
//   - its GPUs, each limited to cap × its maximum (a limit per GPU is what
//     NVML sets, so this part is physical);
//   - its slice of the node's CPUs, whose part of the node's dynamic power
//     the cap cuts as it would cut a node of the job's own
//     (physics.SliceSaving; an idealisation, since a package cap limits a
//     whole socket).
//
// The job runs Stretch(class, cap) times its work, and the node's draw is
// arm a's physics less what the caps cut, so with every cap at 1 the arm
// is arm a, to the bit.

// oracleCap is the cap the oracle gives job j, starting on node n.
func (s *simulation) oracleCap(j *jobState, n *nodeState) float64 {
	if j.perfPod || s.opts.OracleUncapped {
		return 1
	}
	u := s.model.Class(j.job.Boundness).Utilization
	shares := []physics.Share{physics.CPUShare(s.hostCurve(n), float64(j.job.CPUMilli)/float64(n.spec.CPUMilli), u)}
	if j.job.GPUs > 0 {
		shares = append(shares, s.model.GPUShare(j.job.GPUs, u))
	}
	return s.model.MinEnergyCap(j.job.Boundness, shares...)
}

// oracleSaving is how much less node n draws, at CPU load, under its jobs'
// oracle caps than uncapped: 0 outside the oracle.
func (s *simulation) oracleSaving(n *nodeState, load float64) float64 {
	if s.arm != ArmOracle {
		return 0
	}
	g := s.model.GPUNode
	var gpuCut float64
	slices := make([]physics.CPUSlice, 0, len(n.running))
	for idx := range n.running {
		j := s.jobs[idx]
		u := s.model.Class(j.job.Boundness).Utilization
		slices = append(slices, physics.CPUSlice{CPUs: float64(j.job.CPUMilli), Util: u, Cap: j.cap})
		if j.job.GPUs > 0 && j.cap < 1 {
			w := g.GPUWatts(u)
			gpuCut += float64(j.job.GPUs) * (w - physics.Capped(w, s.model.EffectiveCap(j.cap)*g.GPUMaxWatts()))
		}
	}
	return s.model.SliceSaving(s.hostCurve(n), load, slices) + gpuCut
}

// hostCurve is the CPU power curve of node n.
func (s *simulation) hostCurve(n *nodeState) physics.Curve {
	if n.spec.GPUs > 0 {
		return s.model.GPUNode.Host
	}
	return s.model.CPUNode
}
