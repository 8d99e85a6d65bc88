package workload

import (
	"math"
	"time"
)

// The normal distribution's 95th percentile.
var z95 = math.Sqrt2 * math.Erfinv(2*0.95-1)

// WarmUp is how long a cluster that starts empty takes to fill up to its
// steady state, as the benchmark counts it: the 95th percentile of a
// job's work (4.7 h with the default lifetimes), but never less than a
// day, so that the window starts on the same phase of the daily curve as
// the list.
func WarmUp(cfg Config) time.Duration {
	s := cfg.Lifetime.fit()
	p95 := min(s.at(z95), s.max)
	return max(time.Duration(p95*float64(time.Second)), 24*time.Hour)
}

// survival is P(work > v) for v seconds, after the cut at max.
func (s split) survival(v float64) float64 {
	if v >= s.max {
		return 0
	}
	if v <= 0 {
		return 1
	}
	// Invert at: the normal quantile z whose work is v.
	l := math.Log(v) - s.mu
	z := l / s.sigma1
	if z > z90 {
		z = z90 + (l-s.sigma1*z90)/s.sigma2
	}
	return 0.5 * math.Erfc(z/math.Sqrt2)
}

// Steps of the window integral, in seconds.
const (
	workStep    = 10.0
	arrivalStep = 60.0
)

// windowFactor is the expected allocation averaged over cfg.Window, as a
// share of the steady-state allocation that Load's targets describe.
//
// A job arriving at s holds its requests at t while its work is longer
// than t − s, so the allocation at t is ∫₀ᵗ λ(s) P(work > t − s) ds ×
// E[size], λ following the daily curve from 0 and stopping at Horizon. In
// the steady state of a constant λ it is λ E[work] E[size], which Load
// sets to the target. Averaged over the window [a, b] and swapping the
// integrals, the share of the target is
//
//	1/((b−a) E[work]) ∫₀^min(b,H) r(s) (G(b−s) − G(max(a,s)−s)) ds
//
// with r the daily curve (mean 1) and G(u) = ∫₀ᵘ P(work > v) dv. G is
// the trapezoid rule on 10 s steps of the survival, the outer integral the
// midpoint rule on 1 min steps. Bursts are taken to arrive at their start
// (their spread is minutes, against hours of work), and a Jobs limit is
// not seen.
func (c *Config) windowFactor() float64 {
	s := c.Lifetime.fit()
	a, b := c.Window.Start.Seconds(), c.Window.End.Seconds()
	n := int(math.Ceil(b/workStep)) + 1
	g := make([]float64, n+1)
	prev := 1.0
	for i := 1; i <= n; i++ {
		cur := s.survival(float64(i) * workStep)
		g[i] = g[i-1] + (prev+cur)/2*workStep
		prev = cur
	}
	G := func(u float64) float64 {
		if u <= 0 {
			return 0
		}
		x := u / workStep
		i := int(x)
		if i >= n {
			return g[n]
		}
		return g[i] + (g[i+1]-g[i])*(x-float64(i))
	}
	shape, _ := c.dayShape()
	end := b
	if c.Horizon > 0 {
		end = min(end, c.Horizon.Seconds())
	}
	var sum float64
	for k := 0; float64(k)*arrivalStep < end; k++ {
		lo := float64(k) * arrivalStep
		hi := min(lo+arrivalStep, end)
		t := (lo + hi) / 2
		sum += shape(t) * (G(b-t) - G(max(a, t)-t)) * (hi - lo)
	}
	return sum / ((b - a) * s.mean())
}

// ExpectedAllocation is the share of the cluster's CPUs and of its GPUs
// that jobs are expected to hold on average inside cfg.Window, if each
// starts when it arrives: requested core-hours over CPU capacity, and
// GPU-hours over GPU capacity. It is below the targets by the window
// factor (windowFactor), since the cluster starts empty and the longest
// jobs take days to reach their steady share.
func ExpectedAllocation(cfg Config) (cpuShare, gpuShare float64) {
	f := cfg.windowFactor()
	ld := cfg.Load()
	return f * ld.CPUUtilization, f * ld.GPUUtilization
}

// LoadLevel returns cfg with the CPU and GPU targets set so that the
// expected allocation inside cfg.Window (ExpectedAllocation) is level
// for both CPUs and GPUs: each target is level over the window factor. It
// reads cfg's lifetimes, daily curve, Horizon and Window, so set those
// first. A level the window cannot reach without a target above 1 yields
// a Config that Validate refuses.
func LoadLevel(cfg Config, level float64) Config {
	f := cfg.windowFactor()
	cfg.TargetCPUUtilization = level / f
	cfg.TargetGPUUtilization = level / f
	return cfg
}
