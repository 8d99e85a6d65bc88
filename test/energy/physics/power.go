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
	// GPUNodeOffWatts and GPUNodeBootWatts are a GPU node's own draw off
	// and booting, where it differs from a CPU node's (0: OffWatts,
	// BootWatts): an HGX board's standby rails and its GPUs powered from
	// the start of POST are not a CPU server's.
	GPUNodeOffWatts, GPUNodeBootWatts float64
}

// Off is what a node draws switched off.
func (p PowerStates) Off(gpuNode bool) float64 {
	if gpuNode && p.GPUNodeOffWatts > 0 {
		return p.GPUNodeOffWatts
	}
	return p.OffWatts
}

// Booting is what a node draws while it boots.
func (p PowerStates) Booting(gpuNode bool) float64 {
	if gpuNode && p.GPUNodeBootWatts > 0 {
		return p.GPUNodeBootWatts
	}
	return p.BootWatts
}

// BootTime is how long a node takes from off to ready: Boot, plus
// GPUDriverStart for a GPU node.
func (p PowerStates) BootTime(gpuNode bool) time.Duration {
	if gpuNode {
		return p.Boot + p.GPUDriverStart
	}
	return p.Boot
}

// BootJoules is the energy of a boot: Booting over BootTime.
func (p PowerStates) BootJoules(gpuNode bool) float64 {
	return p.Booting(gpuNode) * p.BootTime(gpuNode).Seconds()
}

// ShutdownJoules is the energy of a shutdown: ShutdownWatts over Shutdown.
func (p PowerStates) ShutdownJoules() float64 {
	return p.ShutdownWatts * p.Shutdown.Seconds()
}
