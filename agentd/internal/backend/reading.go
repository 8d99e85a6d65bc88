package backend

// Reading is the host's measured power at one tick: the CPU packages'
// summed draw (RAPL energy or a simulator's telemetry) and the GPUs'
// summed draw. A Has field is false when that class could not be
// measured, and its watts are then 0.
type Reading struct {
	CPUWatts, GPUWatts float64
	HasCPU, HasGPU     bool
}
