package bound

import (
	"fmt"
	"math"

	"joulie.io/joulie/test/energy/physics"
)

// loadSteps is how many pieces each linear segment of a host curve is cut
// into when the least dynamic energy over the node's load is bounded from
// below piece by piece; more pieces bring the bound closer to the true
// least.
const loadSteps = 400

// leastDynamic is the least dynamic energy, in joules per second of work,
// that a device d running a job of class b can draw under any cap the
// model allows: (draw − idle) × stretch, minimised over the cap.
//
// Where the cap binds and the clock is above the model's floor, the draw
// is idle + (natural − idle) × r^K at clock r, so the product is
// (natural − idle) × g(r), g(r) = (1 − β) r^K + β r^(K − A), over the
// clocks from the one the lowest cap leaves up to 1. g has at most one
// turning point, so its least on an interval is at an end or
// there. Where the floor clock holds the clock, the draw falls with the cap
// while the stretch stays, so the lowest cap is the least there.
func leastDynamic(m *physics.Model, b physics.Boundness, d physics.Device) float64 {
	if !(d.Natural > d.Idle) {
		return 0
	}
	low := m.MinCapFraction
	e := (d.Natural - d.Idle) * leastG(m, m.Class(b).ClockSensitivity, m.Clock(d, low))
	floor := (m.Draw(d, low) - d.Idle) * m.Stretch(b, d, low)
	return min(e, floor)
}

// leastG is the least of g over clocks [lo, 1].
func leastG(m *physics.Model, beta, lo float64) float64 { return leastGOn(m, beta, lo, 1) }

// leastGOn is the least of g over clocks [lo, hi].
func leastGOn(m *physics.Model, beta, lo, hi float64) float64 {
	g := func(r float64) float64 { return powersAt(m, r).g(beta) }
	best := min(g(lo), g(hi))
	if r, ok := turningPoint(m, beta); ok && r > lo && r < hi {
		best = min(best, g(r))
	}
	return best
}

// turningPoint is the clock at which g, for clock sensitivity beta, turns,
// if it does.
func turningPoint(m *physics.Model, beta float64) (float64, bool) {
	k, a := m.ClockFit.K, m.ClockFit.A
	if beta > 0 && beta < 1 && a > k {
		return math.Pow(beta*(a-k)/((1-beta)*k), 1/a), true
	}
	return 0, false
}

// floored says whether the floor clock, not the cap, sets d's clock under
// cap f: the clock the cap would leave is below it.
func floored(m *physics.Model, d physics.Device, f float64) bool {
	limit := m.EffectiveCap(f) * d.Max
	if !(d.Natural > limit) {
		return false
	}
	if !(limit > d.Idle) || !(d.Natural > d.Idle) {
		return true
	}
	return math.Pow((limit-d.Idle)/(d.Natural-d.Idle), 1/m.ClockFit.K) < m.ClockFit.MinClock
}

// host holds what the bound needs of one family's host curve.
type host struct {
	curve physics.Curve
	// perLoad is the least of (curve(L) − idle) / L over loads in (0, 1].
	perLoad float64
	// sliceShare is the least share of a job slice's own dynamic draw that
	// a node with per-slice caps (f-oracle) charges: the node's dynamic draw
	// over the sum of its slices' (physics.Model.SliceSaving's weight).
	sliceShare float64
	// m and floorW are the model and floor the figures below are taken
	// under: the list's base model, whose class-independent parts (the
	// clock fit, the lowest cap) every job's true model shares.
	m      *physics.Model
	floorW float64
	// perBusyAt[β] is the least node dynamic energy per second of CPU work
	// and per unit of busy load of a CPU job whose clock sensitivity is β,
	// under a package cap; gpuHost the same for the host share of a GPU
	// job, whose pace the package cap does not set (methods of the same
	// names). The clock sensitivity is the only figure of a job's class
	// that they read, so they are kept by it: with every job under its own
	// true figures a list holds a few hundred classes but a few dozen
	// sensitivities, and computing these per class was most of the bound's
	// time. Each is computed on first use.
	perBusyAt map[float64]float64
	gpuHostOf *float64
	// withIdleAt[β] and gpuHostWithIdle are perBusy and gpuHost with the
	// host's draw above the floor counted, its idle included (the
	// joint form, see Result.Joint). withIdleAt is computed for every β of
	// betas, the list's clock sensitivities, at once (leastWithIdle).
	withIdleAt        map[float64]float64
	betas             []float64
	gpuHostWithIdleOf *float64
}

// perBusy is perBusyAt for a job of class b under its model m.
func (h *host) perBusy(m *physics.Model, b physics.Boundness) float64 {
	beta := m.Class(b).ClockSensitivity
	v, ok := h.perBusyAt[beta]
	if !ok {
		v = h.leastPerBusy(m, b)
		h.perBusyAt[beta] = v
	}
	return v
}

// withIdle is withIdleAt for a job of class b under its model m.
func (h *host) withIdle(m *physics.Model, b physics.Boundness) float64 {
	if h.withIdleAt == nil {
		h.withIdleAt = h.leastWithIdle()
	}
	beta := m.Class(b).ClockSensitivity
	v, ok := h.withIdleAt[beta]
	if !ok {
		panic(fmt.Sprintf("bound: clock sensitivity %v is none of the list's", beta))
	}
	return v
}

func (h *host) gpuHost() float64 {
	if h.gpuHostOf == nil {
		v := h.leastHostShare(h.m)
		h.gpuHostOf = &v
	}
	return *h.gpuHostOf
}

func (h *host) gpuHostWithIdle() float64 {
	if h.gpuHostWithIdleOf == nil {
		v := h.leastHostShareWithIdle(h.m, h.floorW)
		h.gpuHostWithIdleOf = &v
	}
	return *h.gpuHostWithIdleOf
}

// newHost computes what the bound needs of curve c under model m; utils
// are the utilizations of every job of the list (their true figures), over
// which the slice share's least is taken.
func newHost(m *physics.Model, c physics.Curve, floorW float64, utils, betas []float64) *host {
	h := &host{curve: c, perLoad: math.Inf(1), sliceShare: math.Inf(1), m: m, floorW: floorW,
		perBusyAt: map[float64]float64{}, betas: betas}
	idle := c.Idle()
	// On each segment (curve(L) − idle)/L is w/L plus a constant, so its
	// least over (0, 1] is at a point of the curve.
	for _, p := range c.Points() {
		if p.Load > 0 {
			h.perLoad = min(h.perLoad, (p.Watts-idle)/p.Load)
		}
	}
	// A node's dynamic draw is at least perLoad × L, L its busy load, and
	// the sum of its slices' is the sum over them of slice × (curve(u) −
	// idle); the ratio is at least perLoad × u / (curve(u) − idle) for the
	// least such figure among the classes.
	for _, u := range utils {
		if w := c.At(u) - idle; u > 0 && w > 0 {
			h.sliceShare = min(h.sliceShare, h.perLoad*u/w)
		}
	}
	if math.IsInf(h.sliceShare, 1) {
		h.sliceShare = 0
	}
	return h
}

// clockSteps is how many pieces the clocks a cap can set are cut into
// where the least is bounded piece by piece.
const clockSteps = 64

// clockPowers are the powers of a clock r that g and the stretch are made
// of, for any clock sensitivity β: r^K, r^(K − A), and r^−A − 1 (0 at
// full clock, where the stretch is 1).
type clockPowers struct{ k, ka, ma float64 }

func powersAt(m *physics.Model, r float64) clockPowers {
	k, a := m.ClockFit.K, m.ClockFit.A
	p := clockPowers{k: math.Pow(r, k), ka: math.Pow(r, k-a)}
	if r < 1 {
		p.ma = math.Pow(r, -a) - 1
	}
	return p
}

// g is leastGOn's g at the clock, for sensitivity beta.
func (p clockPowers) g(beta float64) float64 { return (1-beta)*p.k + beta*p.ka }

// stretch is physics.Model.StretchAtClock at the clock, for sensitivity
// beta.
func (p clockPowers) stretch(beta float64) float64 { return 1 + beta*p.ma }

// leastWithIdle bounds from below, for each clock sensitivity β of
// h.betas, over every load L and package cap, the host's draw above the
// floor fl (h.floorW) times the stretch at its clock of a job of
// sensitivity β, over L. Where
// the cap binds above the floor clock the draw is idle + (curve(L) − idle)
// r^K, so the product over L is (idle − fl) × stretch(r)/L + (curve(L) −
// idle)/L × g(r); on a piece of loads and a piece [r1, r2] of clocks the
// stretch is least at r2, 1/L at the piece's top load, and g's least on
// [r1, r2] is exact. The floor clock's regime is bounded as in
// leastPerBusy, with the idle draw kept.
//
// Both stretch and g are sums of powers of the clock weighted by β, so
// each piece's powers are taken once for every β: taking them per β was
// most of the bound's time.
func (h *host) leastWithIdle() map[float64]float64 {
	m, betas, floorW := h.m, h.betas, h.floorW
	low := m.MinCapFraction
	idle := h.curve.Idle() - floorW
	best := make([]float64, len(betas))
	// turn[i] is g's turning point for betas[i] and g there (leastGOn),
	// the same for every piece; NaN where g has none.
	turn, gTurn := make([]float64, len(betas)), make([]float64, len(betas))
	for i, beta := range betas {
		best[i], turn[i] = math.Inf(1), math.NaN()
		if r, ok := turningPoint(m, beta); ok {
			turn[i], gTurn[i] = r, powersAt(m, r).g(beta)
		}
	}
	h.pieces(func(lo, hi, perLoad float64) {
		top := physics.NodeCPU(h.curve, hi)
		rlo := m.Clock(top, low)
		p1 := powersAt(m, rlo)
		for s := range clockSteps {
			r1 := rlo + (1-rlo)*float64(s)/clockSteps
			r2 := rlo + (1-rlo)*float64(s+1)/clockSteps
			p2 := powersAt(m, r2)
			for i, beta := range betas {
				least := min(p1.g(beta), p2.g(beta))
				if r := turn[i]; r > r1 && r < r2 {
					least = min(least, gTurn[i])
				}
				best[i] = min(best[i], idle*p2.stretch(beta)/hi+perLoad*least)
			}
			p1 = p2
		}
		if floored(m, top, low) {
			bottom := physics.NodeCPU(h.curve, lo)
			draw, p := m.Draw(bottom, low)-floorW, powersAt(m, m.Clock(bottom, low))
			for i, beta := range betas {
				best[i] = min(best[i], draw*p.stretch(beta)/hi)
			}
		}
	})
	out := make(map[float64]float64, len(betas))
	for i, beta := range betas {
		out[beta] = max(best[i], 0)
	}
	return out
}

// leastHostShareWithIdle is leastHostShare with the host's draw above
// the floor counted, its idle included.
func (h *host) leastHostShareWithIdle(m *physics.Model, floorW float64) float64 {
	idle := h.curve.Idle() - floorW
	limit := m.MinCapFraction * h.curve.Max()
	best := math.Inf(1)
	h.pieces(func(lo, hi, perLoad float64) {
		v := idle/hi + perLoad
		if h.curve.At(hi) > limit {
			v = min(v, (limit-floorW)/hi)
		}
		best = min(best, v)
	})
	return max(best, 0)
}

// pieces calls f with each piece [lo, hi] of the loads (0, 1], cut at the
// curve's points and loadSteps times within each segment, and with the
// least of (curve(L) − idle) / L over the piece.
func (h *host) pieces(f func(lo, hi, perLoad float64)) {
	pts := h.curve.Points()
	idle := h.curve.Idle()
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		slope := (b.Watts - a.Watts) / (b.Load - a.Load)
		at := func(l float64) float64 {
			if l == 0 {
				return slope // the first segment starts at (0, idle)
			}
			return (a.Watts + slope*(l-a.Load) - idle) / l
		}
		for s := range loadSteps {
			lo := a.Load + (b.Load-a.Load)*float64(s)/loadSteps
			hi := a.Load + (b.Load-a.Load)*float64(s+1)/loadSteps
			// On a segment the ratio is monotone, so its ends bound it.
			f(lo, hi, min(at(lo), at(hi)))
		}
	}
}

// leastPerBusy bounds from below, over every load L and package cap, the
// node's dynamic draw × the stretch of class b at the node's clock, over
// L: a CPU job's charge per second of work and per unit of its busy load.
// On a piece [lo, hi] of loads the first factor is at least the piece's
// least of (curve(L) − idle)/L, and the clock the lowest cap leaves falls
// with the load, so leastG at hi's clock bounds the second; where the floor
// clock holds at hi, the floor's draw and stretch both rise with the load,
// so lo's over hi bound them.
func (h *host) leastPerBusy(m *physics.Model, b physics.Boundness) float64 {
	beta := m.Class(b).ClockSensitivity
	low := m.MinCapFraction
	idle := h.curve.Idle()
	best := math.Inf(1)
	h.pieces(func(lo, hi, perLoad float64) {
		top := physics.NodeCPU(h.curve, hi)
		best = min(best, perLoad*leastG(m, beta, m.Clock(top, low)))
		if floored(m, top, low) {
			if lo == 0 {
				best = 0
				return
			}
			bottom := physics.NodeCPU(h.curve, lo)
			best = min(best, (m.Draw(bottom, low)-idle)*m.Stretch(b, bottom, low)/hi)
		}
	})
	return max(best, 0)
}

// leastHostShare bounds from below, over every load L and package cap,
// the host's dynamic draw over L, with no stretch: a GPU job's host CPUs
// are not slowed by the package cap in the simulator, only its GPUs' cap
// sets its pace.
func (h *host) leastHostShare(m *physics.Model) float64 {
	idle := h.curve.Idle()
	limit := m.MinCapFraction * h.curve.Max()
	best := math.Inf(1)
	h.pieces(func(lo, hi, perLoad float64) {
		v := perLoad
		if h.curve.At(hi) > limit {
			v = min(v, (limit-idle)/hi)
		}
		best = min(best, v)
	})
	return max(best, 0)
}

// perWork is the least dynamic energy per second of work of a job of
// class b asking cpuMilli and gpus on a node of family f: its share of the
// host's draw under a package cap (and, with sliceCaps, under f-oracle's
// cap on its own slice of the CPUs, if less), plus for a GPU job its GPUs'
// draw above idle under their own cap.
func (f *family) perWork(m *physics.Model, h *host, b physics.Boundness, cpuMilli int64, gpus int, sliceCaps bool) float64 {
	u := m.Class(b).Utilization
	frac := float64(cpuMilli) / float64(f.CPUMilli)
	c := h.curve
	slice := h.sliceShare * frac
	if gpus == 0 {
		e := frac * u * h.perBusy(m, b)
		if sliceCaps {
			e = min(e, slice*leastDynamic(m, b, physics.NodeCPU(c, u)))
		}
		return e
	}
	// A GPU job's host share is drawn whatever its pace, so its least per
	// second, at the lowest cap, bounds it per second of work too (the
	// rate is at most 1).
	e := frac * u * h.gpuHost()
	if sliceCaps {
		low := physics.NodeCPU(c, u)
		e = min(e, slice*(m.Draw(low, m.MinCapFraction)-low.Idle))
	}
	g := f.GPU
	one := physics.Device{Idle: g.GPUIdleWatts, Natural: g.GPUWatts(u), Max: g.GPUMaxWatts()}
	return e + float64(gpus)*leastDynamic(m, b, one)
}

// perWorkWithIdle is perWork in the joint form: the job's share of its
// host's whole draw above the floor, idle included, under a package cap,
// plus its GPUs' draw above their idle.
func (f *family) perWorkWithIdle(m *physics.Model, h *host, b physics.Boundness, cpuMilli int64, gpus int) float64 {
	u := m.Class(b).Utilization
	frac := float64(cpuMilli) / float64(f.CPUMilli)
	if gpus == 0 {
		return frac * u * h.withIdle(m, b)
	}
	g := f.GPU
	one := physics.Device{Idle: g.GPUIdleWatts, Natural: g.GPUWatts(u), Max: g.GPUMaxWatts()}
	return frac*u*h.gpuHostWithIdle() + float64(gpus)*leastDynamic(m, b, one)
}

// leastWhole bounds from below, over every cap, the whole draw of device d
// (idle included) times the stretch of class b: a job's energy per second
// of work on its own GPUs. Where the cap binds above the floor clock the
// product is idle × stretch(r) + (natural − idle) × g(r), bounded on
// pieces of clocks as in leastWithIdle.
func leastWhole(m *physics.Model, b physics.Boundness, d physics.Device) float64 {
	if !(d.Natural > d.Idle) {
		return d.Natural
	}
	beta := m.Class(b).ClockSensitivity
	low := m.MinCapFraction
	rlo := m.Clock(d, low)
	best := math.Inf(1)
	for i := range clockSteps {
		r1 := rlo + (1-rlo)*float64(i)/clockSteps
		r2 := rlo + (1-rlo)*float64(i+1)/clockSteps
		best = min(best, d.Idle*m.StretchAtClock(b, r2)+(d.Natural-d.Idle)*leastGOn(m, beta, r1, r2))
	}
	if floored(m, d, low) {
		best = min(best, m.Draw(d, low)*m.Stretch(b, d, low))
	}
	return best
}

// perWorkOwnGPUs is perWorkWithIdle with the job's GPUs counted whole,
// idle included, over their stretched time, instead of their draw above
// idle (the second joint form, see Result.Joint).
func (f *family) perWorkOwnGPUs(m *physics.Model, h *host, b physics.Boundness, cpuMilli int64, gpus int) float64 {
	if gpus == 0 {
		return f.perWorkWithIdle(m, h, b, cpuMilli, gpus)
	}
	u := m.Class(b).Utilization
	frac := float64(cpuMilli) / float64(f.CPUMilli)
	g := f.GPU
	one := physics.Device{Idle: g.GPUIdleWatts, Natural: g.GPUWatts(u), Max: g.GPUMaxWatts()}
	return frac*u*h.gpuHostWithIdle() + float64(gpus)*leastWhole(m, b, one)
}
