package workload

import (
	"math"
	"testing"
	"time"
)

// correlation is Pearson's correlation of two series.
func correlation(a, b [24]float64) float64 {
	var ma, mb float64
	for i := range a {
		ma += a[i] / 24
		mb += b[i] / 24
	}
	var ab, aa, bb float64
	for i := range a {
		ab += (a[i] - ma) * (b[i] - mb)
		aa += (a[i] - ma) * (a[i] - ma)
		bb += (b[i] - mb) * (b[i] - mb)
	}
	return ab / math.Sqrt(aa*bb)
}

func TestArrivalsFollowTheOpenBCurve(t *testing.T) {
	c := smallConfig()
	c.Jobs = sample
	h := hourCounts(Generate(21, c))
	if r := correlation(h, openbHourly); r < 0.9 {
		t.Errorf("arrivals by hour %v correlate %.3f with the openb counts, want above 0.9", h, r)
	}
	// The curve, not only its ups and downs: the busiest hour (18) over
	// the quietest (14), which the table puts at 4.0 and interpolation
	// between hour middles brings down a little.
	if ratio := h[18] / h[14]; ratio < 3 || ratio > 4.5 {
		t.Errorf("hour 18 over hour 14: %.2f, want about 3.5", ratio)
	}
}

func TestOpenBCurveHasMeanOneAndMeetsTheTableAtHourMiddles(t *testing.T) {
	c := DefaultConfig()
	shape, peak := c.dayShape()
	var sum, total float64
	for _, n := range openbHourly {
		total += n
	}
	for s := 0.5; s < 86400; s++ {
		sum += shape(s)
	}
	if m := sum / 86400; math.Abs(m-1) > 1e-6 {
		t.Errorf("mean of the curve over a day %.8f, want 1", m)
	}
	for h, n := range openbHourly {
		for _, day := range []float64{0, 3} {
			at := day*86400 + (float64(h)+0.5)*3600
			if got, want := shape(at), n*24/total; math.Abs(got-want) > 1e-12 {
				t.Errorf("day %v hour %d: %.6f, want %.6f", day, h, got, want)
			}
		}
	}
	if want := 550 * 24 / total; peak != want {
		t.Errorf("peak %v, want hour 18's %v", peak, want)
	}
}

// TestSinusoidModeKeepsTheOldLists: the hashes are those of lists drawn
// before the openb curve, window and load levels existed, from the then
// default Config on StandardCluster(20, 5). The sinusoid mode with the
// old horizon and targets draws the same jobs, so nothing else moved.
func TestSinusoidModeKeepsTheOldLists(t *testing.T) {
	c := DefaultConfig()
	c.Nodes = StandardCluster(20, 5)
	c.Diurnal = DiurnalSinusoid
	c.TargetGPUUtilization, c.TargetCPUUtilization = 0.6, 0.5
	c.Horizon = 72 * time.Hour
	if h := Hash(Generate(42, c)); h != "02e18705a1d297e2f850d4a7d63ad219f807e7a9b530fbf5c485d59e9da022a9" {
		t.Errorf("seed 42, 72 h: hash %s changed", h)
	}
	c.Horizon, c.Jobs = 0, 3000
	if h := Hash(Generate(7, c)); h != "81dfccd834676afa8261bfb0eb27a13db16be8f64f2c30095d485d976685221b" {
		t.Errorf("seed 7, 3,000 jobs: hash %s changed", h)
	}
}

// A compressed day runs the whole openb curve within Day: a list drawn
// with Day 4 min has the same hour-by-hour shape, in 10 s "hours", as one
// drawn over real days, and as many jobs per day.
func TestACompressedDayKeepsTheCurve(t *testing.T) {
	c := smallConfig()
	c.Jobs = sample
	c.Day = 4 * time.Minute
	scale := float64(c.Day) / float64(24*time.Hour)
	c.Lifetime = Lifetime{P50: time.Duration(float64(c.Lifetime.P50) * scale), P90: time.Duration(float64(c.Lifetime.P90) * scale),
		P99: time.Duration(float64(c.Lifetime.P99) * scale), Max: time.Duration(float64(c.Lifetime.Max) * scale)}
	jobs := Generate(21, c)
	var h [24]float64
	for _, j := range jobs {
		h[int(j.Arrival/(c.Day/24))%24]++
	}
	if r := correlation(h, openbHourly); r < 0.9 {
		t.Errorf("arrivals by compressed hour %v correlate %.3f with the openb counts, want above 0.9", h, r)
	}
	if ratio := h[18] / h[14]; ratio < 3 || ratio > 4.5 {
		t.Errorf("hour 18 over hour 14: %.2f, want about 3.5", ratio)
	}
	// The same load: jobs a day in proportion to the shorter lifetimes.
	real := smallConfig()
	real.Jobs = sample
	perDay := func(js []Job, day time.Duration) float64 {
		return float64(len(js)) / (float64(js[len(js)-1].Arrival) / float64(day))
	}
	if a, b := perDay(jobs, c.Day), perDay(Generate(21, real), 24*time.Hour); math.Abs(a/b-1) > 0.05 {
		t.Errorf("%.0f jobs a compressed day against %.0f a real one: the compressed day should carry the same load", a, b)
	}
	c.Day = -time.Second
	if err := c.Validate(); err == nil {
		t.Error("Validate took a negative Day")
	}
}
