package scoring

import (
	"math"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/powerest"
)

// TwinOf is the scoring view of a NodeTwin's status.
func TwinOf(st *joulie.NodeTwinStatus) Twin {
	t := Twin{
		Class:             st.SchedulableClass,
		PredictedHeadroom: st.PredictedPowerHeadroomScore,
		CoolingStress:     st.PredictedCoolingStressScore,
		LastUpdated:       st.LastUpdated.Time,
	}
	if st.EstimatedPUE != nil {
		t.PUE = *st.EstimatedPUE
	}
	if m := st.PowerMeasurement; m != nil {
		t.Measured = true
		t.Source = m.Source
		t.MeasuredW = m.MeasuredNodePowerW
		t.CappedW = m.NodeCappedPowerW
		t.TdpW = m.NodeTdpW
		t.TrendWPerMin = m.PowerTrendWPerMin
	}
	return t
}

// HardwareOf is the marginal-power view of a NodeHardware's status: cores
// and maximum power of all CPU sockets together, GPU count and maximum
// power per GPU. Figures the agent could not discover stay zero, which the
// estimate treats as unknown.
func HardwareOf(st *joulie.NodeHardwareStatus) powerest.Node {
	cpu := &st.CPU
	n := powerest.Node{CPUTotalCores: float64(cpu.TotalCores)}
	if n.CPUTotalCores <= 0 {
		n.CPUTotalCores = float64(cpu.Sockets) * float64(cpu.CoresPerSocket)
	}
	// The cap range is per package; the packages' own ranges, when the
	// agent lists them, add up to the node's CPU maximum more exactly.
	var perPackage float64
	for _, p := range cpu.Packages {
		if p.CapRange != nil {
			perPackage += p.CapRange.MaxWatts
		}
	}
	switch {
	case perPackage > 0:
		n.CPUMaxWatts = perPackage
	case cpu.CapRange != nil:
		sockets := max(int(cpu.Sockets), len(cpu.Packages), 1)
		n.CPUMaxWatts = cpu.CapRange.MaxWatts * float64(sockets)
	}
	if g := st.GPU; g != nil && g.Count > 0 {
		n.GPUCount = float64(g.Count)
		if g.CapRange != nil {
			n.GPUMaxWattsPerGPU = g.CapRange.MaxWatts
		} else {
			for _, d := range g.Devices {
				if d.CapRange != nil {
					n.GPUMaxWattsPerGPU = math.Max(n.GPUMaxWattsPerGPU, d.CapRange.MaxWatts)
				}
			}
		}
	}
	return n
}
