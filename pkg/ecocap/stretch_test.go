package ecocap

import (
	"math"
	"testing"
)

// The Batsim table NAS EP class C was timed in (GHz, watts, seconds), idle
// 95 W, without the turbo row.
var batsimEP = [][3]float64{
	{1.2, 125.88, 62.7}, {1.3, 128.87, 57.3}, {1.4, 132.519, 56.3}, {1.5, 135.368, 48.1},
	{1.6, 138.928, 46.4}, {1.7, 142.95, 43.6}, {1.8, 146.92, 41.0}, {1.9, 151.30, 38.9},
	{2.0, 155.729, 37.0}, {2.1, 160.47, 35.0}, {2.2, 165.62, 33.7}, {2.3, 171.02, 31.7},
}

func slope(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	return num / den
}

func TestExponentsFitTheBatsimTable(t *testing.T) {
	var lnGHz, lnDyn, negLnGHz, lnSec []float64
	for _, p := range batsimEP {
		lnGHz = append(lnGHz, math.Log(p[0]))
		lnDyn = append(lnDyn, math.Log(p[1]-95))
		negLnGHz = append(negLnGHz, -math.Log(p[0]))
		lnSec = append(lnSec, math.Log(p[2]))
	}
	if k := slope(lnGHz, lnDyn); math.Abs(k-clockPowerExp) > 0.0005 {
		t.Errorf("fitted k = %.4f, the constant says %v", k, clockPowerExp)
	}
	if a := slope(negLnGHz, lnSec); math.Abs(a-cpuRuntimeExp) > 0.0005 {
		t.Errorf("fitted a = %.4f, the constant says %v", a, cpuRuntimeExp)
	}
}

// A board-limited GPU under Zeus's 60% limit stretches by Zeus's +20% on
// the GPU curve.
func TestGPUStandardPutsZeusOnTheCurve(t *testing.T) {
	c := GPUStandard()
	const maxW, idleW = 700.0, 70.0
	r := math.Pow((0.6*maxW-idleW)/(maxW-idleW), 1/c.K)
	if s := math.Pow(r, -c.A); math.Abs(s-1.20) > 1e-12 {
		t.Errorf("stretch at 60%% = %v, want 1.20", s)
	}
	if math.Abs(c.A-0.4293) > 0.0001 {
		t.Errorf("A = %v, want about 0.429", c.A)
	}
}

// bruteOptimum minimises EnergyPerWork over the clock by a grid and a
// golden-section refinement, and returns the best clock.
func bruteOptimum(c Curve, keep, dyn float64) float64 {
	e := func(r float64) float64 { return c.EnergyPerWork(r, keep, dyn) }
	best, bestE := 1.0, e(1)
	const steps = 20000
	for i := 1; i < steps; i++ {
		r := float64(i) / steps
		if v := e(r); v < bestE {
			best, bestE = r, v
		}
	}
	lo, hi := math.Max(best-1.0/steps, 1e-9), math.Min(best+1.0/steps, 1)
	const invPhi = 0.6180339887498949
	for hi-lo > 1e-13 {
		x1, x2 := hi-invPhi*(hi-lo), lo+invPhi*(hi-lo)
		if e(x1) <= e(x2) {
			hi = x2
		} else {
			lo = x1
		}
	}
	return (lo + hi) / 2
}

func TestOptimalMatchesBruteForce(t *testing.T) {
	curves := map[string]Curve{"cpu": CPUStandard(), "gpu": GPUStandard(), "steep": {K: 3, A: 1}}
	cases := []struct {
		name               string
		devIdle, rest, dyn float64
	}{
		{"CPU node, saturated", 129.6, 0, 689},
		{"CPU node, half", 129.6, 0, 300},
		{"GPU node host with busy GPUs", 129.6, 3000, 640},
		{"one busy GPU of eight", 70, 860 - 70, 630},
		{"eight busy GPUs", 70, (300+560)/8.0 - 70, 630},
		{"tiny idle", 5, 0, 1000},
		{"idle larger than dynamic", 500, 200, 100},
	}
	for cn, c := range curves {
		for _, tc := range cases {
			keep := tc.devIdle + tc.rest
			opt := c.Optimal(tc.devIdle, keep)
			r := bruteOptimum(c, keep, tc.dyn)
			natural := tc.devIdle + tc.dyn
			if r > 1-1e-6 {
				// The brute force stays at full clock: no binding cap pays,
				// and the closed form must say the optimum is at or above
				// the uncapped draw.
				if opt < natural*(1-1e-6) {
					t.Errorf("%s/%s: brute force keeps full clock, Optimal = %.3f W below the %.3f W draw", cn, tc.name, opt, natural)
				}
				continue
			}
			if got := tc.devIdle + tc.dyn*math.Pow(r, c.K); math.Abs(got-opt) > 1e-6*opt {
				t.Errorf("%s/%s: brute force %.6f W, Optimal %.6f W", cn, tc.name, got, opt)
			}
		}
	}
}

func TestOptimalNeverPaysWhenRuntimeOutrunsPower(t *testing.T) {
	if o := (Curve{K: 1, A: 1.2}).Optimal(100, 100); !math.IsInf(o, 1) {
		t.Errorf("Optimal = %v, want +Inf when K ≤ A", o)
	}
}
