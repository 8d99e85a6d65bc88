package ecocap

import "math"

// The published figures the stretch curves rest on. The energy
// benchmark's physics (test/energy/physics, physics.yaml) uses the same
// ones; this package keeps its own small copy because the product does
// not import test code.
const (
	// clockPowerExp (k) and cpuRuntimeExp (a) are least-squares fits to
	// the NAS Parallel Benchmarks' EP kernel, class C, timed at twelve
	// fixed clocks from 1.2 to 2.3 GHz on a Grid'5000 taurus node (2 × Xeon
	// E5-2630, idle 95 W): the table in the Batsim simulator's repository,
	// oar-team/batsim tools/energy_pform_generator_homo_nonet.py ("on
	// Taurus with TimeNasEP_C"), its turbo row left out. k is the slope of
	// ln(watts − idle) on ln(GHz), a that of ln(seconds) on −ln(GHz).
	// TestExponentsFitTheBatsimTable refits them.
	clockPowerExp = 1.384
	cpuRuntimeExp = 1.046

	// zeusStretch is the runtime of compute-bound DNN training under a
	// power limit of zeusCapFraction of the board's maximum, against the
	// uncapped runtime: Zeus (You, Chung, Chowdhury, "Zeus: Understanding
	// and Optimizing GPU Energy Consumption of DNN Training", USENIX NSDI
	// 2023) measured BERT +24% and ResNet-50 +17% at 60% on V100; +20%
	// lies between them.
	zeusStretch     = 1.20
	zeusCapFraction = 0.6
	// gpuIdleFraction is an H100 SXM's idle draw over its maximum: 70 W
	// of 700 W (NVIDIA's datasheet; nvidia-smi on an idle board), the
	// catalog's idle share for GPUs.
	gpuIdleFraction = 0.10
)

// Curve is a stretch model of work on a device whose cap binds: the
// device's dynamic power (its draw above idle) goes as clock^K, so under
// a limit it runs at the clock r at which idle + dynamic × r^K fits, and
// a job on it runs r^−A times as long as at full clock.
type Curve struct {
	K, A float64
}

// CPUStandard is the curve of standard work on CPU packages: NAS EP's
// fit, k and a. EP is compute-bound, every second of it scales with the
// clock, so no CPU job stretches more under a cap: the optimum it gives
// is the shallowest, never slowing work more than the energy saved is
// worth.
func CPUStandard() Curve { return Curve{K: clockPowerExp, A: cpuRuntimeExp} }

// GPUStandard is the curve of standard work on GPUs: the same k, and the
// runtime exponent that puts Zeus's compute-bound point on the curve. A
// compute-bound job holds its GPU at the board limit, so under 60% of it
// a GPU idling at 10% clocks to r = ((0.6 − 0.1)/(1 − 0.1))^(1/k) = 0.654,
// and r^−A = 1.20 there gives A = ln 1.20 / −ln r = 0.429. The compute-
// bound figure is the one whose GPU draw needs no utilization assumed,
// and the stretchiest of Zeus's, so again the optimum errs shallow.
func GPUStandard() Curve {
	r := math.Pow((zeusCapFraction-gpuIdleFraction)/(1-gpuIdleFraction), 1/clockPowerExp)
	return Curve{K: clockPowerExp, A: math.Log(zeusStretch) / -math.Log(r)}
}

// EnergyPerWork is what the node uses per unit of work, in joules per
// second of work at full clock, when the capped devices run at clock r:
// keep is every draw that lasts as long as the work does (the node's idle
// and what is not capped), dyn the capped devices' dynamic draw at full
// clock. Power keep + dyn·r^K for r^−A times as long.
func (c Curve) EnergyPerWork(r, keep, dyn float64) float64 {
	return (keep + dyn*math.Pow(r, c.K)) * math.Pow(r, -c.A)
}

// Optimal is the draw in watts of the capped devices at which their work
// uses the least energy per unit of work: devIdle + A·keep/(K − A), with
// devIdle the devices' own idle draw and keep as for EnergyPerWork. It is
// +Inf when K ≤ A: then slowing down never pays.
//
// Derivation. With E(r) = (I + D·r^K)·r^−A (I = keep, D = dyn),
//
//	dE/dr = K·D·r^(K−A−1) − A·I·r^(−A−1) − A·D·r^(K−A−1)
//	      = r^(−A−1) · ((K − A)·D·r^K − A·I).
//
// For K > A the bracket rises with r and changes sign once, at
// D·r*^K = A·I/(K − A): E falls below r* and rises above it, so r* is the
// minimum. The capped devices then draw their idle plus D·r*^K, which
// does not depend on D: the optimal limit in watts is the same at any
// load, devIdle + A·I/(K − A). When the devices' uncapped draw,
// devIdle + D, is at or below it, r* ≥ 1: E falls all the way to full
// clock, and no binding cap pays. On a CPU node (I = 129.6 W for 2 × EPYC
// 9654 by the catalog) the optimum is 129.6 × K/(K − A) = 531 W of its
// 800 W.
func (c Curve) Optimal(devIdle, keep float64) float64 {
	if !(c.K > c.A) {
		return math.Inf(1)
	}
	return devIdle + c.A*keep/(c.K-c.A)
}
