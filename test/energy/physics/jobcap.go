package physics

import "slices"

// Share is the part of one device that a job holds: what that part draws
// while the job runs at full speed, and the maximum a cap fraction on it
// is taken of.
type Share struct {
	NaturalWatts, MaxWatts float64
}

// GPUShare is a job's n whole GPUs, each kept busy at util. A power limit
// per GPU is real hardware (NVML sets one per board), so a job's own cap on
// its GPUs is physical.
func (m *Model) GPUShare(n int, util float64) Share {
	g := m.GPUNode
	return Share{NaturalWatts: float64(n) * g.GPUWatts(util), MaxWatts: float64(n) * g.GPUMaxWatts()}
}

// CPUShare is a job's slice of a node's CPUs on curve c: frac of the node
// (its requested CPUs over the node's), drawing as the whole node would at
// the job's own utilization, scaled to the slice. A node filled with copies
// of one job then draws the sum of their shares, and a cap of f on every
// copy is the node-level cap of f. A cap on one job's slice alone is an
// idealisation: a package cap limits the whole socket, and per-core limits
// exist only as frequency settings.
func CPUShare(c Curve, frac, util float64) Share {
	return Share{NaturalWatts: frac * c.At(util), MaxWatts: frac * c.Max()}
}

// EnergyPerWork is what a job of class b holding shares costs under a cap
// of capFrac on all of them, in joules per second of its work: each share
// draws Capped(natural, EffectiveCap × maximum) for Stretch seconds per
// second of work. It is Model.Run summed over the shares, divided by the
// work.
func (m *Model) EnergyPerWork(b Boundness, capFrac float64, shares ...Share) float64 {
	f := m.EffectiveCap(capFrac)
	var w float64
	for _, s := range shares {
		w += Capped(s.NaturalWatts, f*s.MaxWatts)
	}
	return m.Stretch(b, capFrac) * w
}

// MinEnergyCap is the cap fraction in [MinCapFraction, 1] at which a job
// of class b holding shares uses the least energy (EnergyPerWork), 1 when
// no cap saves any.
//
// Only the breakpoints need trying: the floor, 1, and each share's
// natural/max, where its cap starts to bind. Between two of them each
// share's draw is either its natural draw (constant) or f × its maximum
// (linear, rising in f), and stretch is linear and falling in f, so the
// energy is a sum of a linear term and products of a rising and a falling
// line: concave, so its least value on the interval is at an end. A tie
// keeps the higher cap, which slows the job less.
func (m *Model) MinEnergyCap(b Boundness, shares ...Share) float64 {
	candidates := []float64{m.MinCapFraction}
	for _, s := range shares {
		if s.MaxWatts > 0 {
			if f := s.NaturalWatts / s.MaxWatts; f > m.MinCapFraction && f < 1 {
				candidates = append(candidates, f)
			}
		}
	}
	slices.Sort(candidates)
	best, bestE := 1.0, m.EnergyPerWork(b, 1, shares...)
	for _, f := range slices.Backward(candidates) {
		// A gain within rounding is no gain: it would slow the job for
		// nothing.
		if e := m.EnergyPerWork(b, f, shares...); e < bestE*(1-1e-12) {
			best, bestE = f, e
		}
	}
	return best
}

// CPUSlice is one job's part of a node's CPUs under the job's own cap:
// its requested CPUs (in any unit, the same for every slice of a node),
// the utilization it keeps them at, and its cap fraction (1: none).
type CPUSlice struct {
	CPUs, Util, Cap float64
}

// SliceSaving is how much less a node on curve c, at CPU load, draws when
// its jobs' slices are under their own caps than it draws uncapped. The
// node's dynamic power, c.At(load) − idle, is shared among its jobs in
// proportion to what each one's CPUShare draws above idle, and a job's cap
// cuts its part by the fraction the cap cuts from its share's dynamic
// power. So a node filled with copies of one job under a cap of f draws
// min(natural, f × maximum), the node-level cap, and a node whose jobs are
// all uncapped saves exactly 0. The floor is not below the node's idle
// draw (Load checks it), so no cut exceeds a job's part, and the node
// never draws less than idle.
func (m *Model) SliceSaving(c Curve, load float64, jobs []CPUSlice) float64 {
	idle, limit := c.Idle(), c.Max()
	var cut, weight float64
	for _, j := range jobs {
		natural := c.At(j.Util)
		weight += j.CPUs * (natural - idle)
		cut += j.CPUs * (natural - Capped(natural, m.EffectiveCap(j.Cap)*limit))
	}
	if cut == 0 || weight <= 0 {
		return 0
	}
	return (c.At(load) - idle) * cut / weight
}
