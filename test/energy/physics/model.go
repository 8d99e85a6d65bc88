package physics

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Boundness says what limits a job's speed, and so how much a power cap
// slows it.
type Boundness string

// The boundness classes. The gpu-* classes run on GPUs and are slowed by
// the GPU cap; the cpu-* classes by the CPU cap.
const (
	GPUCompute Boundness = "gpu-compute"
	GPUMixed   Boundness = "gpu-mixed"
	GPULow     Boundness = "gpu-low"
	CPUCompute Boundness = "cpu-compute"
	CPUMemory  Boundness = "cpu-memory"
	CPULow     Boundness = "cpu-low"
)

// boundnesses lists every class; its order is the index of a class in
// Model.classes.
var boundnesses = [...]Boundness{GPUCompute, GPUMixed, GPULow, CPUCompute, CPUMemory, CPULow}

// Boundnesses returns every class, GPU classes first.
func Boundnesses() []Boundness { return slices.Clone(boundnesses[:]) }

// GPU reports whether jobs of the class run on GPUs.
func (b Boundness) GPU() bool { return b == GPUCompute || b == GPUMixed || b == GPULow }

// Valid reports whether b is one of the classes.
func (b Boundness) Valid() bool { return b.index() >= 0 }

func (b Boundness) index() int {
	for i, c := range boundnesses {
		if c == b {
			return i
		}
	}
	return -1
}

// Point is one measured point of a power curve.
type Point struct {
	Load  float64 // 0..1
	Watts float64
}

// Curve is a node's power as a piecewise-linear function of its load. Its
// points start at load 0, end at load 1, and rise with the load.
type Curve struct {
	points []Point
}

// Points returns the curve's points.
func (c Curve) Points() []Point { return slices.Clone(c.points) }

// Idle is the draw at load 0.
func (c Curve) Idle() float64 { return c.points[0].Watts }

// Max is the draw at full load.
func (c Curve) Max() float64 { return c.points[len(c.points)-1].Watts }

// At is the draw at load, interpolated linearly between the points. A load
// outside 0..1 is taken as the nearest end: a node cannot be busier than
// all of its CPUs.
func (c Curve) At(load float64) float64 {
	load = unit("load", load)
	i, _ := slices.BinarySearchFunc(c.points, load, func(p Point, l float64) int {
		switch {
		case p.Load < l:
			return -1
		case p.Load > l:
			return 1
		}
		return 0
	})
	if i == 0 {
		return c.points[0].Watts
	}
	lo, hi := c.points[i-1], c.points[i]
	return lo.Watts + (hi.Watts-lo.Watts)*(load-lo.Load)/(hi.Load-lo.Load)
}

// GPUNode is the model of a GPU node: a host curve and per-GPU figures.
type GPUNode struct {
	Host            Curve
	GPUIdleWatts    float64
	GPUDynamicWatts float64
}

// GPUMaxWatts is one GPU's maximum draw, the base of its cap fraction.
func (g GPUNode) GPUMaxWatts() float64 { return g.GPUIdleWatts + g.GPUDynamicWatts }

// GPUWatts is one GPU's natural draw at utilization util (0..1; outside,
// the nearest end).
func (g GPUNode) GPUWatts(util float64) float64 {
	return g.GPUIdleWatts + g.GPUDynamicWatts*unit("GPU utilization", util)
}

// Class holds a boundness class's figures.
type Class struct {
	// Utilization is the share of its device a job of the class keeps busy
	// at full speed: of its requested CPUs, or of each of its GPUs.
	Utilization float64
	// StretchAtTableCap is its runtime under a cap of the model's
	// TableCapFraction, relative to its uncapped runtime, on its class
	// device (ClassDevice): as the file gives it, or, for a class the file
	// gives a clock sensitivity, what that sensitivity makes of it.
	StretchAtTableCap float64
	// ClockSensitivity is β: the share of the class's runtime that scales
	// with the clock, 1 for a job bound by its clock alone, 0 for one the
	// clock does not slow. Given in the file, or derived from
	// StretchAtTableCap.
	ClockSensitivity float64
}

// ClockFit is the clock model fitted to the file's clock table.
type ClockFit struct {
	// K is the exponent of dynamic power (draw above idle) in the clock.
	K float64
	// A is the exponent of a clock-bound job's runtime in 1/clock.
	A float64
	// MinClock is the lowest clock fraction a cap can push a device to:
	// the table's lowest clock over its highest.
	MinClock float64
}

// Model is one complete physics model. Default, Sensitivity and a File's
// variants hand out shared models: read them, do not modify them.
type Model struct {
	// Name is "default" for a file's base model, else the variant's name.
	Name string
	// Source names the file it was read from.
	Source string
	// Description is the file's or the variant's description.
	Description string

	CPUNode Curve
	GPUNode GPUNode
	// TableCapFraction is the cap at which the classes' stretch is given.
	TableCapFraction float64
	// MinCapFraction is the floor: lower caps are treated as this one.
	MinCapFraction float64
	// ClockFit is how a binding cap lowers the clock and the clock slows
	// a job.
	ClockFit ClockFit
	// Power is what a node draws and takes to switch off and on.
	Power PowerStates
	// Spread is how far a job's true figures may lie from its class's
	// (Truth); zero in a file without a jobSpread block.
	Spread Spread

	classes [len(boundnesses)]Class
}

// Class returns the figures of class b. It panics on a b that is not one
// of the classes, a defect of the caller.
func (m *Model) Class(b Boundness) Class {
	i := b.index()
	if i < 0 {
		panic(fmt.Sprintf("physics: unknown boundness class %q", b))
	}
	return m.classes[i]
}

// EffectiveCap is the cap fraction the model applies for a requested cap
// fraction f: f itself within MinCapFraction..1, 1 above (a cap above the
// maximum does not limit), MinCapFraction below. A cap must be positive;
// 0 or NaN panics, since a caller passing the zero value most likely
// meant "no cap", which is 1.
func (m *Model) EffectiveCap(f float64) float64 {
	if !(f > 0) {
		panic(fmt.Sprintf("physics: cap fraction %v is not in (0,1]; 1 means no cap", f))
	}
	return min(max(f, m.MinCapFraction), 1)
}

// Capped is the draw of a device whose natural draw is natural under a
// limit of limit watts.
func Capped(natural, limit float64) float64 { return min(natural, limit) }

// CPUNodeWatts is a CPU node's draw at CPU load (0..1) under a package cap
// of fraction capFrac (1 for none).
func (m *Model) CPUNodeWatts(load, capFrac float64) float64 {
	c := m.CPUNode
	return Capped(c.At(load), m.EffectiveCap(capFrac)*c.Max())
}

// GPUNodeWatts is a GPU node's draw: the host at CPU load hostLoad under a
// package cap of fraction hostCap, plus one GPU per entry of gpuUtil at
// that utilization under a GPU cap of fraction gpuCap. Use 1 for no cap.
func (m *Model) GPUNodeWatts(hostLoad, hostCap float64, gpuUtil []float64, gpuCap float64) float64 {
	g := m.GPUNode
	w := Capped(g.Host.At(hostLoad), m.EffectiveCap(hostCap)*g.Host.Max())
	limit := m.EffectiveCap(gpuCap) * g.GPUMaxWatts()
	for _, u := range gpuUtil {
		w += Capped(g.GPUWatts(u), limit)
	}
	return w
}

// Clock is the clock fraction at which device d runs under a cap of
// fraction capFrac: 1 when its natural draw is within the limit L =
// EffectiveCap(capFrac) × d.Max; else the clock r at which its dynamic
// power, proportional to r^K, fits: r = ((L − idle)/(natural − idle))^(1/K),
// but not below MinClock, where a device whose limit is at or below its
// idle draw ends up.
func (m *Model) Clock(d Device, capFrac float64) float64 {
	limit := m.EffectiveCap(capFrac) * d.Max
	if !(d.Natural > limit) {
		return 1
	}
	if !(limit > d.Idle) || !(d.Natural > d.Idle) {
		return m.ClockFit.MinClock
	}
	return max(m.ClockFit.MinClock, math.Pow((limit-d.Idle)/(d.Natural-d.Idle), 1/m.ClockFit.K))
}

// StretchAtClock is how many times longer a job of class b runs at clock
// fraction r (0..1) than at full clock: 1 + β(r^−A − 1), β the class's
// ClockSensitivity. A clock-bound job (β = 1) runs r^−A times as long; a
// job of β = 0 is not slowed.
func (m *Model) StretchAtClock(b Boundness, r float64) float64 {
	if math.IsNaN(r) || !(r > 0) {
		panic(fmt.Sprintf("physics: clock fraction %v is not above 0", r))
	}
	if r >= 1 {
		return 1
	}
	return 1 + m.Class(b).ClockSensitivity*(math.Pow(r, -m.ClockFit.A)-1)
}

// Stretch is how many times longer a job of class b runs on device d under
// a cap of fraction capFrac than at full speed: StretchAtClock at the clock
// the cap leaves d. A cap that d's natural draw stays within leaves the
// job at full speed, exactly 1.
func (m *Model) Stretch(b Boundness, d Device, capFrac float64) float64 {
	return m.StretchAtClock(b, m.Clock(d, capFrac))
}

// ClassDevice is the device on which a class's StretchAtTableCap holds:
// one GPU at the class's utilization for a GPU class, a whole CPU node at
// the class's utilization (a node full of copies of the job) for a CPU
// class.
func (m *Model) ClassDevice(b Boundness) Device {
	u := m.Class(b).Utilization
	if b.GPU() {
		return m.GPUDevice(1, u)
	}
	return NodeCPU(m.CPUNode, u)
}

// Run is the closed form of a job's hold on device d over its whole run:
// a job of class b with work (its runtime at full speed) runs for work ×
// Stretch(b, d, capFrac) and d draws Draw(d, capFrac) all that time. It
// returns the stretched runtime and the energy in joules.
func (m *Model) Run(b Boundness, work time.Duration, d Device, capFrac float64) (time.Duration, float64) {
	s := m.Stretch(b, d, capFrac)
	runtime := time.Duration(math.Round(float64(work) * s))
	return runtime, m.Draw(d, capFrac) * work.Seconds() * s
}

// unit clamps v into 0..1 and panics on NaN, which would otherwise pass
// through every comparison and turn a simulation's energy into NaN.
func unit(what string, v float64) float64 {
	if math.IsNaN(v) {
		panic("physics: " + what + " is NaN")
	}
	return min(max(v, 0), 1)
}
