package ecocap

import (
	"fmt"
	"math"
)

// Kind says why a cap was chosen, in a word: the metrics' label.
type Kind string

// The kinds of choice.
const (
	// KindPerformance: performance pods run on the node; uncapped.
	KindPerformance Kind = "performance-pods"
	// KindNoWork: no pod asks for the devices (GPUs); a cap would bind
	// nothing. Uncapped.
	KindNoWork Kind = "no-work"
	// KindNotBinding: the projected draw is at or below the eco cap.
	// Uncapped.
	KindNotBinding Kind = "not-binding"
	// KindNotPaying: the eco cap would bind, but the energy optimum lies
	// above the draw, so any binding cap costs more than it saves.
	// Uncapped.
	KindNotPaying Kind = "not-paying"
	// KindOptimum: capped at the energy optimum, above the eco cap.
	KindOptimum Kind = "optimum"
	// KindFloor: capped at the eco cap, the deepest allowed; the optimum
	// lies at it or deeper.
	KindFloor Kind = "floor"
	// KindUnknown: the draw, the idle draw or the devices' maximum is
	// unknown, so the eco cap is applied as configured.
	KindUnknown Kind = "unknown"
)

// Choice is one device class's cap on one node.
type Choice struct {
	// PctOfMax is the cap in percent of each device's maximum; 0 means
	// uncapped.
	PctOfMax float64
	Kind     Kind
	// Reason says why, for people: "capped at 67%: energy optimum for
	// standard work".
	Reason string
}

// Capped reports whether the choice is a cap.
func (c Choice) Capped() bool { return c.PctOfMax > 0 }

// Draw is a projected uncapped draw in watts.
type Draw struct {
	Watts float64
	// Known is false when nothing measures or models the draw.
	Known bool
	// AtLeast marks a measurement held down by the cap in force: the
	// uncapped draw is Watts or more, so a limit of Watts binds.
	AtLeast bool
}

// binds reports whether a limit of limit watts holds the draw down.
func (d Draw) binds(limit float64) bool {
	return d.Known && (d.Watts > limit || d.AtLeast && d.Watts >= limit)
}

// CPU is what the choice of a node's CPU package cap weighs.
type CPU struct {
	Sockets int
	// MaxWattsPerSocket is each package's maximum, the base of the
	// percentage; IdleWattsPerSocket its idle draw (0: unknown).
	MaxWattsPerSocket, IdleWattsPerSocket float64
	// FloorPct is the eco cap in percent of the maximum, the deepest the
	// choice goes.
	FloorPct float64
	// Draw is the packages' projected uncapped draw, all sockets.
	Draw Draw
	// OtherWatts is what the rest of the node draws for as long as its
	// jobs run: on a GPU node, its GPUs, which wait for a slowed host.
	OtherWatts float64
	// Performance is set when performance pods run on the node.
	Performance bool
}

// ChooseCPU chooses a node's CPU package cap (see the package
// documentation), on the curve of standard work.
func ChooseCPU(c CPU) Choice {
	if c.Performance {
		return uncapped(KindPerformance, "performance pods on the node")
	}
	maxW := float64(c.Sockets) * c.MaxWattsPerSocket
	if !(maxW > 0) {
		return floor(c.FloorPct, KindUnknown, "eco cap; the package maximum is unknown")
	}
	return choose(CPUStandard(), c.FloorPct, maxW, float64(c.Sockets)*c.IdleWattsPerSocket, c.OtherWatts, c.Draw, "")
}

// GPU is what the choice of a node's GPU cap weighs: one cap for every
// GPU of the node (a cap per GPU and pod waits for the per-pod view).
type GPU struct {
	Count int
	// MaxWatts and IdleWatts are one GPU's maximum and idle draw (0:
	// unknown).
	MaxWatts, IdleWatts float64
	// FloorPct is the eco cap in percent of the maximum.
	FloorPct float64
	// Busy is how many GPUs the node's pods request.
	Busy float64
	// Draw is the GPUs' projected uncapped draw, all of them.
	Draw Draw
	// HostWatts is what the host draws for as long as the GPU jobs run.
	HostWatts float64
	// Performance is set when performance pods run on the node.
	Performance bool
}

// ChooseGPU chooses the cap of a node's GPUs (see the package
// documentation), on the curve of standard work. The busy GPUs are taken
// to draw alike, the idle ones their idle draw.
func ChooseGPU(g GPU) Choice {
	switch {
	case g.Performance:
		return uncapped(KindPerformance, "performance pods on the node")
	case !(g.Busy > 0) || g.Count <= 0:
		return uncapped(KindNoWork, "no pod requests a GPU")
	case !(g.MaxWatts > 0):
		return floor(g.FloorPct, KindUnknown, "eco cap; the GPU maximum is unknown")
	}
	n := float64(g.Count)
	busy := math.Min(g.Busy, n)
	per := g.Draw
	per.Watts = (g.Draw.Watts - (n-busy)*g.IdleWatts) / busy
	// The optimum per busy GPU: the node's idle (the host and every GPU's
	// idle) shared over the busy GPUs, whose dynamic power the cap cuts.
	keep := (g.HostWatts + n*g.IdleWatts) / busy
	return choose(GPUStandard(), g.FloorPct, g.MaxWatts, g.IdleWatts, keep-g.IdleWatts, per, " per GPU")
}

// choose is the rule for devices of maximum maxW and idle idleW (0:
// unknown) whose work also keeps other watts drawing, projected to draw
// d uncapped.
func choose(c Curve, floorPct, maxW, idleW, other float64, d Draw, unit string) Choice {
	floorW := floorPct / 100 * maxW
	switch {
	case !d.Known:
		return floor(floorPct, KindUnknown, "eco cap; the draw is unknown")
	case !d.binds(floorW):
		return uncapped(KindNotBinding, fmt.Sprintf("draw under the %.0f W eco cap%s", floorW, unit))
	case !(idleW > 0):
		return floor(floorPct, KindUnknown, "eco cap; no idle draw is known to weigh it against")
	}
	// Whole percents, rounded up (never deeper than the optimum), so that
	// a small change in the idle the optimum weighs does not rewrite the
	// profile.
	pct := math.Ceil(c.Optimal(idleW, idleW+other)/maxW*100 - 1e-9)
	switch {
	case pct <= floorPct:
		return floor(floorPct, KindFloor, "eco cap; the energy optimum lies deeper")
	case pct >= 100 || !d.binds(pct/100*maxW):
		return uncapped(KindNotPaying, "a binding cap would not pay: the energy optimum lies above the draw")
	}
	return Choice{PctOfMax: pct, Kind: KindOptimum, Reason: fmt.Sprintf("capped at %s: energy optimum for standard work", pctText(pct))}
}

func uncapped(k Kind, why string) Choice { return Choice{Kind: k, Reason: "uncapped: " + why} }

func floor(pct float64, k Kind, why string) Choice {
	return Choice{PctOfMax: pct, Kind: k, Reason: fmt.Sprintf("capped at %s: %s", pctText(pct), why)}
}

func pctText(p float64) string { return fmt.Sprintf("%g%%", math.Round(p*10)/10) }
