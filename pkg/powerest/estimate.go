package powerest

import "math"

// Node is the hardware a pod would be placed on, as NodeHardware reports it.
type Node struct {
	// CPUTotalCores is the number of cores of all sockets together.
	CPUTotalCores float64
	// CPUMaxWatts is the maximum power of all sockets together (for example
	// two 350 W packages make 700 W).
	CPUMaxWatts float64
	// GPUCount is the number of GPUs; zero on CPU-only nodes.
	GPUCount float64
	// GPUMaxWattsPerGPU is the maximum power of one GPU.
	GPUMaxWattsPerGPU float64
}

// Impact is the power a pod is expected to add to a node.
type Impact struct {
	CPUWatts   float64
	GPUWatts   float64
	TotalWatts float64
}

// Estimate returns the marginal power of a pod with demand d on node n (see
// the package documentation for the formula). performance selects the GPU
// coefficient for performance workloads; pue is the node's estimated PUE.
//
// Edge cases, all of which yield a finite, non-negative result:
//   - a node without cores, CPU power, GPUs or GPU power (zero, negative,
//     NaN or infinite, i.e. unknown) contributes 0 for that term;
//   - a pod asking for more than the node has counts as the whole node: the
//     fraction is clamped to 1, because a pod cannot make hardware draw
//     more than its maximum (and the scheduler's resource fit rejects such
//     a placement anyway);
//   - a pue that is not a finite number above 1 applies no weighting, as
//     when facility metrics are off.
//
// The coefficients are used as they are; validate them once at start-up.
func (c Coefficients) Estimate(d Demand, n Node, performance bool, pue float64) Impact {
	var im Impact
	if f := share(d.CPUCores, n.CPUTotalCores); f > 0 && known(n.CPUMaxWatts) {
		im.CPUWatts = c.CPUUtil * f * n.CPUMaxWatts
	}
	if f := share(d.GPUs, n.GPUCount); f > 0 && known(n.GPUMaxWattsPerGPU) {
		coeff := c.GPUUtilStandard
		if performance {
			coeff = c.GPUUtilPerformance
		}
		im.GPUWatts = coeff * f * (n.GPUCount * n.GPUMaxWattsPerGPU)
	}
	if known(pue) && pue > 1 {
		im.CPUWatts *= pue
		im.GPUWatts *= pue
	}
	im.TotalWatts = im.CPUWatts + im.GPUWatts
	return im
}

// share is the fraction of the node's capacity that want takes, within
// [0, 1], and 0 when either side is unknown.
func share(want, capacity float64) float64 {
	if !known(want) || !known(capacity) {
		return 0
	}
	if want >= capacity {
		return 1
	}
	return want / capacity
}

// known reports whether x is a usable positive quantity: NaN, infinities,
// zero and negatives are what a missing or broken hardware report looks
// like.
func known(x float64) bool {
	return x > 0 && !math.IsInf(x, 1)
}
