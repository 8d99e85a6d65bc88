// Package powerest estimates the power a pod will add to a node if it is
// placed there, so that the scheduler extender can score the same node
// differently for a 2-core pod and for an 8-GPU training job.
//
// The marginal power of a pod is its share of the node's CPU and GPU
// maximum power, discounted by how hard such a pod typically drives the
// hardware:
//
//	cpuW   = CPUUtil × min(podCPUCores / nodeCPUCores, 1) × nodeCPUMaxW
//	gpuW   = GPUUtil × min(podGPUs / nodeGPUs, 1) × nodeGPUs × gpuMaxW
//	totalW = cpuW + gpuW
//
// nodeCPUMaxW is the maximum of all CPU sockets together; nodeGPUs × gpuMaxW
// is the maximum of all GPUs together. GPUUtil is GPUUtilPerformance for
// performance pods and GPUUtilStandard otherwise, because performance
// workloads typically keep their GPUs busier. When the node's PUE is known
// and above 1, each of cpuW, gpuW and totalW is multiplied by it, so that a
// watt placed where cooling is less efficient costs what the facility pays
// for it.
//
// The default coefficients are CPUUtil 0.8, GPUUtilStandard 0.6 and
// GPUUtilPerformance 0.9 (DefaultCoefficients); operators tune them with
// MARGINAL_CPU_UTIL_COEFF, MARGINAL_GPU_UTIL_COEFF_STANDARD and
// MARGINAL_GPU_UTIL_COEFF_PERFORMANCE.
//
// Worked example: a pod requesting 8 cores on a 64-core node whose sockets
// together draw at most 500 W adds 0.8 × 8/64 × 500 = 50 W. On a node capped
// at 600 W that measures 300 W, the extender's projected headroom becomes
// (600 − 350) / 600 × 100 = 41.7.
//
// Everything here is a pure function over values and allocation-free, since
// the extender estimates one pod against thousands of nodes per request.
package powerest

import (
	"errors"
	"strconv"
)

// Environment variables that override DefaultCoefficients in the
// extender and the controller.
const (
	EnvCPUUtilCoeff            = "MARGINAL_CPU_UTIL_COEFF"
	EnvGPUUtilCoeffStandard    = "MARGINAL_GPU_UTIL_COEFF_STANDARD"
	EnvGPUUtilCoeffPerformance = "MARGINAL_GPU_UTIL_COEFF_PERFORMANCE"
)

// Coefficients are the fractions of its share of a node's maximum power that
// a pod is expected to draw. The JSON names are those of the extender's
// /debug/scoring output.
type Coefficients struct {
	// CPUUtil scales the CPU term for every pod.
	CPUUtil float64 `json:"cpuUtilCoeff"`
	// GPUUtilStandard scales the GPU term for standard pods.
	GPUUtilStandard float64 `json:"gpuUtilCoeffStandard"`
	// GPUUtilPerformance scales the GPU term for performance pods.
	GPUUtilPerformance float64 `json:"gpuUtilCoeffPerformance"`
}

// DefaultCoefficients returns the coefficients the extender uses when no
// environment variable overrides them, the values the scheduler-extender
// design documents in its /debug/scoring example. A CPU-bound pod rarely
// holds every requested core at full power for long (0.8); a standard GPU
// job spends part of its time on input, checkpoints and host work (0.6),
// while a performance job keeps its GPUs near their limit (0.9).
func DefaultCoefficients() Coefficients {
	return Coefficients{CPUUtil: 0.8, GPUUtilStandard: 0.6, GPUUtilPerformance: 0.9}
}

// CoefficientKey is one coefficient as the programs' configurations name
// it. joulie-extender scores with the coefficients and joulie-controller
// models the power of unmeasured nodes with them (the chart gives both
// the same values): declared here once, so that the two programs' keys,
// variables and help cannot drift apart.
type CoefficientKey struct {
	// Path is the configuration key ("marginal.cpuUtilCoeff").
	Path string
	// Env is its variable, the scheduler-extender design's name.
	Env string
	// Usage says what it means, for --help and the READMEs.
	Usage string
	// Field is the coefficient in c.
	Field func(c *Coefficients) *float64
}

// CoefficientKeys are the three coefficients' keys, in the order the
// programs list them.
func CoefficientKeys() []CoefficientKey {
	return []CoefficientKey{
		{"marginal.cpuUtilCoeff", EnvCPUUtilCoeff, "share of its CPU power a pod is expected to draw, 0..1",
			func(c *Coefficients) *float64 { return &c.CPUUtil }},
		{"marginal.gpuUtilCoeffStandard", EnvGPUUtilCoeffStandard, "share of its GPU power a standard pod is expected to draw, 0..1",
			func(c *Coefficients) *float64 { return &c.GPUUtilStandard }},
		{"marginal.gpuUtilCoeffPerformance", EnvGPUUtilCoeffPerformance, "share of its GPU power a performance pod is expected to draw, 0..1",
			func(c *Coefficients) *float64 { return &c.GPUUtilPerformance }},
	}
}

// Problems is every coefficient that is not a finite number in [0, 1], by
// configuration key (marginal.cpuUtilCoeff); the programs' configuration
// loaders say where the value came from. One above 1 would claim that a
// pod draws more than the maximum power of the share it requested, which
// the model's clamp to the node's maximum cannot represent consistently; a
// negative one would make heavy pods look like they free power and attract
// them to the busiest nodes. Zero is allowed: it switches a term off, for
// operators who want placement to ignore it.
func (c Coefficients) Problems() []Problem {
	var ps []Problem
	for _, k := range CoefficientKeys() {
		if v := *k.Field(&c); !(v >= 0 && v <= 1) { // also refuses NaN
			ps = append(ps, Problem{Key: k.Path, Msg: strconv.FormatFloat(v, 'g', -1, 64) + " is not a number between 0 and 1"})
		}
	}
	return ps
}

// Problem is a coefficient out of range, by configuration key. (The
// programs' configuration loaders take it as theirs; this package stays
// free of their dependencies, since the extender's hot path links it.)
type Problem struct{ Key, Msg string }

// Validate is Problems as one error, each problem naming its key.
func (c Coefficients) Validate() error {
	var errs []error
	for _, p := range c.Problems() {
		errs = append(errs, errors.New(p.Key+": "+p.Msg))
	}
	return errors.Join(errs...)
}
