package physics

import "time"

// PowerStates is what a node draws switched off and what switching it off
// and on takes. Boot and shutdown are measured on a CPU node; a GPU node
// boots for as long and then starts its GPU driver stack.
type PowerStates struct {
	// OffWatts is a node's draw when soft-off: the BMC stays powered.
	OffWatts float64
	// Boot and Shutdown are how long a node takes to come up and to go
	// off.
	Boot, Shutdown time.Duration
	// BootWatts and ShutdownWatts are the average draw during each.
	BootWatts, ShutdownWatts float64
	// GPUDriverStart is how much longer a GPU node takes to boot, drawing
	// BootWatts.
	GPUDriverStart time.Duration
}

// BootTime is how long a node takes from off to ready: Boot, plus
// GPUDriverStart for a GPU node.
func (p PowerStates) BootTime(gpuNode bool) time.Duration {
	if gpuNode {
		return p.Boot + p.GPUDriverStart
	}
	return p.Boot
}

// BootJoules is the energy of a boot: BootWatts over BootTime.
func (p PowerStates) BootJoules(gpuNode bool) float64 {
	return p.BootWatts * p.BootTime(gpuNode).Seconds()
}

// ShutdownJoules is the energy of a shutdown: ShutdownWatts over Shutdown.
func (p PowerStates) ShutdownJoules() float64 {
	return p.ShutdownWatts * p.Shutdown.Seconds()
}
