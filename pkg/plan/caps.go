package plan

import (
	"math"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/ecocap"
	"joulie.io/joulie/pkg/hwview"
	"joulie.io/joulie/pkg/intent"
	"joulie.io/joulie/pkg/powerest"
)

// Cap modes (capMode): how eco nodes are capped.
const (
	// CapModeFixed caps every eco node at CPU_ECO_CAP_PCT_OF_MAX and
	// GPU_ECO_CAP_PCT_OF_MAX, as the seeds do.
	CapModeFixed = "fixed"
	// CapModePays gives each eco node the cap that pays (pkg/ecocap) from
	// its projected draw and its pods' classes; the eco caps are the
	// deepest allowed.
	CapModePays = "pays"
)

// clippedShare is how close to the cap in force a measured draw must be
// to count as held down by it: RAPL and NVML hold a bound device's
// average a little under its limit.
const clippedShare = 0.98

// Caps is the cap that pays of an eco node, as capMode pays chose it.
type Caps struct {
	// CPU is nil when nothing can be chosen: absolute CPU caps on a node
	// whose package maximum is unknown keep the configured eco watts.
	CPU *ecocap.Choice
	// GPU is nil on a node without GPUs.
	GPU *ecocap.Choice
	// CPUDraw and GPUDraw are the projected uncapped draws the choice
	// weighed (all packages, all GPUs).
	CPUDraw, GPUDraw ecocap.Draw
}

// chooseCaps is the cap that pays for the eco node p.
func chooseCaps(p *NodePlan, in Inputs, s Params) *Caps {
	v := p.View
	var load *NodeLoad
	if in.Loads != nil {
		l := in.Loads[p.Name]
		load = &l
	}
	var prev *joulie.NodePowerProfileSpec
	if pr := in.Profiles[p.Name]; pr != nil {
		prev = &pr.Spec
	}
	c := &Caps{}
	c.CPUDraw, c.GPUDraw = projectedDraws(v, load, freshMeasurement(in.Profiles[p.Name], in.Now, s.MeasurementMaxAge),
		keplerReading(p.Name, in, s), prev, s.Coefficients)
	perf := p.PerfPods > 0
	ic := s.Intent

	if v.GPUCount > 0 {
		busy := float64(v.GPUCount) // occupancy unknown: the draw shared over every GPU
		if load != nil {
			busy = load.Standard.GPUs + load.Performance.GPUs
		}
		host := v.CPUIdleWattsPerSocket * float64(v.Sockets)
		if c.CPUDraw.Known {
			host = c.CPUDraw.Watts
		}
		g := ecocap.ChooseGPU(ecocap.GPU{Count: v.GPUCount, MaxWatts: v.GPUMaxWatts, IdleWatts: v.GPUIdleWatts,
			FloorPct: ic.GPUEcoCapPctOfMax, Busy: busy, Draw: c.GPUDraw, HostWatts: host, Performance: perf})
		c.GPU = &g
	}

	floorPct := ic.CPUEcoCapPctOfMax
	if ic.CPUWriteAbsoluteCaps {
		if !(v.CPUMaxWattsPerSocket > 0) {
			return c
		}
		floorPct = math.Min(100, ic.EcoCapWatts/v.CPUMaxWattsPerSocket*100)
	}
	// The GPUs of a GPU node wait for a slowed host: their draw lasts as
	// long as its work does.
	other := v.GPUIdleWatts * float64(v.GPUCount)
	if c.GPUDraw.Known {
		other = c.GPUDraw.Watts
	}
	ch := ecocap.ChooseCPU(ecocap.CPU{Sockets: v.Sockets, MaxWattsPerSocket: v.CPUMaxWattsPerSocket,
		IdleWattsPerSocket: v.CPUIdleWattsPerSocket, FloorPct: floorPct, Draw: c.CPUDraw, OtherWatts: other, Performance: perf})
	c.CPU = &ch
	return c
}

// keplerReading is the node's Kepler reading when it is fresh.
func keplerReading(name string, in Inputs, s Params) *NodeReading {
	k, ok := in.KeplerPower[name]
	if !ok || (s.MeasurementMaxAge > 0 && in.Now.Sub(k.Time) > s.MeasurementMaxAge) {
		return nil
	}
	return &k
}

// projectedDraws are a node's CPU package and GPU draws as they would be
// uncapped, each from the first source in SPEC.md's order that tells it
// apart: the agent's fresh reading (its CPU and GPU parts, or the whole
// of a CPU-only node that reports no parts), Kepler's (a CPU-only node's
// whole), then the utilization model of the pods' requests (load, nil
// when the pods are not known). A reading at the cap in force (prev, the
// spec the agent was last given) is held down by it: its draw is then
// taken as at least the cap, or the model where that says more.
func projectedDraws(v hwview.View, load *NodeLoad, m *joulie.MeasuredPower, k *NodeReading,
	prev *joulie.NodePowerProfileSpec, coef powerest.Coefficients) (cpu, gpu ecocap.Draw) {
	var cpuW, gpuW *float64
	switch {
	case m != nil:
		// The agent's whole is the sum of the parts it read, so one part
		// missing is not the whole less the other: it is unread.
		cpuW, gpuW = m.CPUPowerWatts, m.GPUPowerWatts
		if cpuW == nil && gpuW == nil && v.GPUCount == 0 {
			w := m.NodePowerWatts
			cpuW = &w
		}
	case k != nil && v.GPUCount == 0:
		w := k.Watts
		cpuW = &w
	}
	modelCPU, modelGPU := modelDraws(v, load, coef)

	cpuPct, gpuPct := 100.0, 100.0
	if prev != nil {
		cpuPct, gpuPct = intent.CapPcts(*prev, intent.Node{CPUMaxWattsPerSocket: v.CPUMaxWattsPerSocket})
	}
	cpuLimit := math.Inf(1)
	if maxW := float64(v.Sockets) * v.CPUMaxWattsPerSocket; cpuPct < 100 && maxW > 0 {
		cpuLimit = cpuPct / 100 * maxW
	}
	gpuLimit := math.Inf(1)
	if gpuPct < 100 && v.GPUMaxWatts > 0 && v.GPUCount > 0 {
		// Busy GPUs at their limit, the others idle.
		busy := float64(v.GPUCount)
		if load != nil {
			busy = math.Min(busy, load.Standard.GPUs+load.Performance.GPUs)
		}
		gpuLimit = busy*gpuPct/100*v.GPUMaxWatts + (float64(v.GPUCount)-busy)*v.GPUIdleWatts
	}
	return project(cpuW, modelCPU, cpuLimit), project(gpuW, modelGPU, gpuLimit)
}

// project is one device class's projected uncapped draw from its measured
// draw (nil: none), its modelled one, and the limit in force on it.
func project(measured *float64, model ecocap.Draw, limit float64) ecocap.Draw {
	if measured == nil {
		return model
	}
	d := ecocap.Draw{Watts: *measured, Known: true}
	if d.Watts >= clippedShare*limit {
		d.Watts = math.Max(d.Watts, limit)
		if model.Known {
			d.Watts = math.Max(d.Watts, model.Watts)
		}
		d.AtLeast = true
	}
	return d
}

// modelDraws is the utilization model's CPU package and GPU draws (see
// modelPower) without the clamp to the caps: what the pods would draw
// uncapped. Unknown where the catalog has no idle figure or the pods are
// not known.
func modelDraws(v hwview.View, load *NodeLoad, c powerest.Coefficients) (cpu, gpu ecocap.Draw) {
	if load == nil {
		return cpu, gpu
	}
	n := powerest.Node{CPUTotalCores: float64(v.CPUTotalCores), CPUMaxWatts: v.CPUMaxWattsPerSocket * float64(v.Sockets),
		GPUCount: float64(v.GPUCount), GPUMaxWattsPerGPU: v.GPUMaxWatts}
	if v.CPUIdleWattsPerSocket > 0 {
		cores := powerest.Demand{CPUCores: load.Standard.CPUCores + load.Performance.CPUCores}
		cpu = ecocap.Draw{Watts: v.CPUIdleWattsPerSocket*float64(v.Sockets) + c.Estimate(cores, n, false, 1).CPUWatts, Known: true}
	}
	if v.GPUCount > 0 && v.GPUIdleWatts > 0 {
		w := v.GPUIdleWatts * float64(v.GPUCount)
		w += c.Estimate(powerest.Demand{GPUs: load.Standard.GPUs}, n, false, 1).GPUWatts
		w += c.Estimate(powerest.Demand{GPUs: load.Performance.GPUs}, n, true, 1).GPUWatts
		gpu = ecocap.Draw{Watts: w, Known: true}
	}
	return cpu, gpu
}
