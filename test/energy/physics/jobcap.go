package physics

import (
	"math"
	"slices"
)

// Device is what a cap acts on: its idle draw, its natural draw at full
// clock for the work on it, and the maximum a cap fraction is taken of.
// All three are in watts, and scale together: a job's slice of a node is
// the node's figures times the slice.
type Device struct{ Idle, Natural, Max float64 }

// GPUDevice is n whole GPUs, each kept busy at util. A power limit per GPU
// is real hardware (NVML sets one per board), so a job's own cap on its
// GPUs is physical.
func (m *Model) GPUDevice(n int, util float64) Device {
	g, k := m.GPUNode, float64(n)
	return Device{Idle: k * g.GPUIdleWatts, Natural: k * g.GPUWatts(util), Max: k * g.GPUMaxWatts()}
}

// NodeCPU is the CPUs of a node on curve c at CPU load: what a package cap
// on the node acts on.
func NodeCPU(c Curve, load float64) Device {
	return Device{Idle: c.Idle(), Natural: c.At(load), Max: c.Max()}
}

// CPUSlice is a job's slice of a node's CPUs on curve c: frac of the node
// (its requested CPUs over the node's), drawing as the whole node would at
// the job's own utilization, scaled to the slice. A node filled with copies
// of one job then draws the sum of their slices, and a cap of f on every
// copy is the node-level cap of f. A cap on one job's slice alone is an
// idealisation: a package cap limits the whole socket, and per-core limits
// exist only as frequency settings.
func CPUSlice(c Curve, frac, util float64) Device {
	return Device{Idle: frac * c.Idle(), Natural: frac * c.At(util), Max: frac * c.Max()}
}

// Draw is what device d draws under a cap of fraction capFrac (1 for
// none): its natural draw, or the cap if that is lower.
func (m *Model) Draw(d Device, capFrac float64) float64 {
	return Capped(d.Natural, m.EffectiveCap(capFrac)*d.Max)
}

// Share is the old name of Device.
//
// Deprecated: use Device.
type Share = Device

// GPUShare is the old name of GPUDevice.
//
// Deprecated: use Model.GPUDevice.
func (m *Model) GPUShare(n int, util float64) Device { return m.GPUDevice(n, util) }

// CPUShare is the old name of CPUSlice.
//
// Deprecated: use CPUSlice.
func CPUShare(c Curve, frac, util float64) Device { return CPUSlice(c, frac, util) }

// EnergyPerWork is what a job of class b costs under a cap of capFrac on
// all the devices it holds, in joules per second of its work. pace is the
// device whose cap sets its speed (its GPUs for a GPU job, its CPU slice
// for a CPU job), others the rest it holds (a GPU job's slice of the
// host's CPUs). Each device draws Draw(d, capFrac) for Stretch(b, pace,
// capFrac) seconds per second of work: Model.Run summed over the devices,
// divided by the work.
func (m *Model) EnergyPerWork(b Boundness, capFrac float64, pace Device, others ...Device) float64 {
	w := m.Draw(pace, capFrac)
	for _, d := range others {
		w += m.Draw(d, capFrac)
	}
	return m.Stretch(b, pace, capFrac) * w
}

// MinEnergyCap is the cap fraction in [MinCapFraction, 1] at which a job
// of class b pacing on pace and holding others uses the least energy
// (EnergyPerWork), 1 when no cap saves any. A tie keeps the higher cap,
// which slows the job less.
//
// The energy has kinks where a device's cap starts to bind and where the
// pace's clock reaches MinClock, and between them it is smooth but not of
// one shape: falling draw against rising stretch. So the search tries the
// kinks, a grid of minCapSteps steps, and then narrows in on the best of
// those by golden-section search within a grid step either side.
func (m *Model) MinEnergyCap(b Boundness, pace Device, others ...Device) float64 {
	lo := m.MinCapFraction
	energy := func(f float64) float64 { return m.EnergyPerWork(b, f, pace, others...) }
	candidates := []float64{lo}
	for i := 1; i < minCapSteps; i++ {
		candidates = append(candidates, lo+(1-lo)*float64(i)/minCapSteps)
	}
	for _, d := range append([]Device{pace}, others...) {
		if d.Max > 0 {
			candidates = append(candidates, d.Natural/d.Max)
		}
	}
	if fit := m.ClockFit; pace.Max > 0 && pace.Natural > pace.Idle {
		// The cap below which the pace's clock stays at MinClock.
		candidates = append(candidates, (pace.Idle+(pace.Natural-pace.Idle)*math.Pow(fit.MinClock, fit.K))/pace.Max)
	}
	candidates = slices.DeleteFunc(candidates, func(f float64) bool { return !(f >= lo && f < 1) })
	slices.Sort(candidates)
	best, bestE := 1.0, energy(1)
	// A gain within rounding is no gain: it would slow the job for nothing.
	better := func(f float64) {
		if e := energy(f); e < bestE*(1-1e-12) {
			best, bestE = f, e
		}
	}
	for _, f := range slices.Backward(candidates) {
		better(f)
	}
	if best == 1 {
		return 1
	}
	step := (1 - lo) / minCapSteps
	l, h := max(lo, best-step), min(1, best+step)
	const invPhi = 0.6180339887498949
	x1, x2 := h-invPhi*(h-l), l+invPhi*(h-l)
	e1, e2 := energy(x1), energy(x2)
	for h-l > 1e-12 {
		if e1 <= e2 {
			h, x2, e2 = x2, x1, e1
			x1 = h - invPhi*(h-l)
			e1 = energy(x1)
		} else {
			l, x1, e1 = x1, x2, e2
			x2 = l + invPhi*(h-l)
			e2 = energy(x2)
		}
	}
	better((l + h) / 2)
	return best
}

// minCapSteps is the number of steps of MinEnergyCap's grid.
const minCapSteps = 200

// CappedSlice is one job's slice of a node's CPUs (CPUSlice) under the
// job's own cap fraction (1: none).
type CappedSlice struct {
	Slice Device
	Cap   float64
}

// SliceSaving is how much less a node on curve c, at CPU load, draws when
// its jobs' slices are under their own caps than it draws uncapped. The
// node's dynamic power, c.At(load) − idle, is shared among its jobs in
// proportion to what each one's slice draws above idle, and a job's cap
// cuts its part by the fraction the cap cuts from its slice's dynamic
// power. So a node filled with copies of one job under a cap of f draws
// min(natural, f × maximum), the node-level cap, and a node whose jobs are
// all uncapped saves exactly 0. The floor is not below the node's idle
// draw (Load checks it), so no cut exceeds a job's part, and the node
// never draws less than idle. This is draw only: how much the caps slow
// the jobs is Stretch's business.
func (m *Model) SliceSaving(c Curve, load float64, jobs []CappedSlice) float64 {
	var cut, weight float64
	for _, j := range jobs {
		weight += j.Slice.Natural - j.Slice.Idle
		cut += j.Slice.Natural - m.Draw(j.Slice, j.Cap)
	}
	if cut == 0 || weight <= 0 {
		return 0
	}
	return (c.At(load) - c.Idle()) * cut / weight
}
