package workload

import (
	"math"
	"math/rand/v2"
	"time"
)

// Lifetime is the distribution of a generated job's work (its runtime at
// full speed), given by three published quantiles.
//
// A log-normal through p50 = 9 min and p90 = 1.8 h has σ = 1.94 and puts
// p99 at 13.6 h: half the published 28 h, so one log-normal cannot match
// the trace's tail. The generator therefore uses a split log-normal: the
// logarithm of the work is a normal draw z mapped by a line of slope σ1
// up to z90 (the normal's 90th percentile) and a steeper slope σ2 above
// it, with σ1 fitted to p50 and p90 and σ2 to p90 and p99 (2.63 with the
// defaults). The map is monotone and continuous, so all three quantiles
// hold exactly; above p99 the tail goes on with slope σ2, which no
// published figure checks (p99.9 comes out at 208 h). Work beyond Max is
// cut to Max and the job marked Truncated (0.13% of jobs with the
// defaults); one multi-week job would otherwise set the end of every
// arm's energy window. Work is rounded to whole seconds, at least 1 s, the
// resolution of the traces.
type Lifetime struct {
	P50, P90, P99 time.Duration
	Max           time.Duration
}

// The normal distribution's 90th and 99th percentiles.
var (
	z90 = math.Sqrt2 * math.Erfinv(2*0.90-1)
	z99 = math.Sqrt2 * math.Erfinv(2*0.99-1)
)

// split is a Lifetime's fitted parameters, in log-seconds.
type split struct {
	mu, sigma1, sigma2 float64
	max                float64 // seconds
}

func (l Lifetime) fit() split {
	p50, p90, p99 := l.P50.Seconds(), l.P90.Seconds(), l.P99.Seconds()
	return split{
		mu:     math.Log(p50),
		sigma1: math.Log(p90/p50) / z90,
		sigma2: math.Log(p99/p90) / (z99 - z90),
		max:    l.Max.Seconds(),
	}
}

// at is the work in seconds for the normal quantile z, before the cut.
func (s split) at(z float64) float64 {
	if z <= z90 {
		return math.Exp(s.mu + s.sigma1*z)
	}
	return math.Exp(s.mu + s.sigma1*z90 + s.sigma2*(z-z90))
}

// draw returns one job's work and whether it was cut at Max.
func (s split) draw(rng *rand.Rand) (time.Duration, bool) {
	w := s.at(rng.NormFloat64())
	cut := w > s.max
	if cut {
		w = s.max
	}
	return max(time.Duration(math.Round(w))*time.Second, time.Second), cut
}

// mean is the expected work in seconds after the cut at Max, by Simpson's
// rule over z in [-10, 10], where all but 1e-23 of the mass lies.
func (s split) mean() float64 {
	const n = 20000 // even
	const a, b = -10.0, 10.0
	h := (b - a) / n
	f := func(z float64) float64 {
		return min(s.at(z), s.max) * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
	}
	sum := f(a) + f(b)
	for i := 1; i < n; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(a+float64(i)*h)
	}
	return sum * h / 3
}
