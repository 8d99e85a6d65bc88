package physics

import (
	"math"
	"math/rand/v2"
	"testing"
)

// taurus is the clock table of physics.yaml, written out again here so
// that the test does not read the fit from the code it checks: NAS EP
// class C on a Grid'5000 taurus node, idle 95 W; GHz, average W, seconds.
var taurus = [][3]float64{
	{1.2, 125.88, 62.7}, {1.3, 128.87, 57.3}, {1.4, 132.519, 56.3},
	{1.5, 135.368, 48.1}, {1.6, 138.928, 46.4}, {1.7, 142.95, 43.6},
	{1.8, 146.92, 41.0}, {1.9, 151.30, 38.9}, {2.0, 155.729, 37.0},
	{2.1, 160.47, 35.0}, {2.2, 165.62, 33.7}, {2.3, 171.02, 31.7},
}

const taurusIdle = 95

// slope is the least-squares slope of ys on xs, from the normal equations
// in sums (the code under test centres the data instead).
func slope(xs, ys []float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for i := range xs {
		n++
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// taurusFit is k and a fitted to the table above.
func taurusFit() (k, a float64) {
	var lg, neg, lw, ls []float64
	for _, r := range taurus {
		lg = append(lg, math.Log(r[0]))
		neg = append(neg, -math.Log(r[0]))
		lw = append(lw, math.Log(r[1]-taurusIdle))
		ls = append(ls, math.Log(r[2]))
	}
	return slope(lg, lw), slope(neg, ls)
}

// A cap that the node's draw stays under does not slow the node's job:
// a cpu-compute job on a node at load 0.2 (295.25 W natural)
// under a 60% cap of 490.2 W.
func TestCapAboveTheDrawDoesNotSlow(t *testing.T) {
	m := Default()
	d := NodeCPU(m.CPUNode, 0.2)
	if got := m.Stretch(CPUCompute, d, 0.6); got != 1 {
		t.Errorf("cpu-compute on a node at load 0.2 (%v W) under a 60%% cap (%v W): stretch %v, want exactly 1",
			d.Natural, 0.6*d.Max, got)
	}
}

// On a saturated node, a cap at which the fitted model clocks the CPUs
// at the table's lowest clock stretches a compute-bound job as the table
// measured: 62.7 s against 31.7 s.
func TestSaturatedNodeStretchesAsTheTableMeasured(t *testing.T) {
	m := Default()
	k, _ := taurusFit()
	d := NodeCPU(m.CPUNode, 1)
	limit := d.Idle + (d.Natural-d.Idle)*math.Pow(1.2/2.3, k)
	want := 62.7 / 31.7
	if got := m.Stretch(CPUCompute, d, limit/d.Max); math.Abs(got/want-1) > 0.03 {
		t.Errorf("cap %.1f W (%.4f of %v W): stretch %v, want %.4f within 3%%", limit, limit/d.Max, d.Max, got, want)
	}
}

// One H100 at each GPU class's utilization under a 60% cap stretches by
// the class's Zeus figure.
func TestGPUClassesStretchByTheirZeusFigureAtSixtyPercent(t *testing.T) {
	m := Default()
	for b, want := range map[Boundness]float64{GPUCompute: 1.20, GPUMixed: 1.12, GPULow: 1} {
		d := m.GPUDevice(1, m.Class(b).Utilization)
		if got := m.Stretch(b, d, 0.6); !near(got, want) {
			t.Errorf("%s (%v W natural) under 60%%: stretch %v, want %v", b, d.Natural, got, want)
		}
	}
}

// Whatever the device, the class and the model, a cap that the device's
// natural draw stays under leaves the job at full speed.
func TestCapThatDoesNotBindNeverSlows(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 3))
	for _, m := range []*Model{Default(), Sensitivity()} {
		for range 20000 {
			maxW := 1 + 2000*rng.Float64()
			idle := maxW * rng.Float64()
			natural := idle + (maxW-idle)*rng.Float64()
			d := Device{Idle: idle, Natural: natural, Max: maxW}
			// A cap at or above the natural draw, above the floor.
			lo := max(natural/maxW, m.MinCapFraction)
			f := lo + (1.2-lo)*rng.Float64()
			for _, b := range Boundnesses() {
				if s := m.Stretch(b, d, f); s != 1 {
					t.Fatalf("%s, %s on %+v under cap %v (%v W): stretch %v, want exactly 1", m.Name, b, d, f, f*maxW, s)
				}
			}
		}
	}
}

// FuzzStretchOnlyWhenBinding is the property above for any device the
// fuzzer finds.
func FuzzStretchOnlyWhenBinding(f *testing.F) {
	f.Add(70.0, 259.0, 700.0, 0.6)
	f.Add(128.0, 295.25, 817.0, 0.6)
	f.Add(128.0, 817.0, 817.0, 0.5)
	m := Default()
	f.Fuzz(func(t *testing.T, idle, natural, maxW, capFrac float64) {
		if !(idle >= 0 && natural >= idle && maxW >= natural && maxW < 1e9 && capFrac > 0 && capFrac < 10) {
			return
		}
		d := Device{Idle: idle, Natural: natural, Max: maxW}
		for _, b := range Boundnesses() {
			s := m.Stretch(b, d, capFrac)
			binds := natural > m.EffectiveCap(capFrac)*maxW
			if !binds && s != 1 || !(s >= 1) || math.IsInf(s, 0) {
				t.Fatalf("%s on %+v under cap %v: stretch %v (binds: %v)", b, d, capFrac, s, binds)
			}
		}
	})
}

// The loader's fit of the embedded table is the fit of the table written
// out above, and lands where the file's source says: k = 1.38, a = 1.05.
func TestClockFitReproducesTheTable(t *testing.T) {
	k, a := taurusFit()
	for _, m := range []*Model{Default(), Sensitivity()} {
		got := m.ClockFit
		if math.Abs(got.K-k) > 1e-12 || math.Abs(got.A-a) > 1e-12 || got.MinClock != 1.2/2.3 {
			t.Errorf("%s: fit %+v, want k %v, a %v, lowest clock %v", m.Name, got, k, a, 1.2/2.3)
		}
	}
	if math.Round(k*100) != 138 || math.Round(a*100) != 105 {
		t.Errorf("k = %.4f, a = %.4f; physics.yaml's source says 1.38 and 1.05", k, a)
	}
	// A table that is an exact power law fits exactly: watts − idle ∝
	// GHz^1.5 and seconds ∝ GHz^−0.9.
	f, err := Parse([]byte(minimal+`variants:
  exact:
    clock:
      idleWatts: 20
      points:
        - {ghz: 1, watts: 30, seconds: 100}
        - {ghz: 1.5, watts: 38.37117307087384, seconds: 69.4253162661607}
        - {ghz: 3, watts: 71.96152422706632, seconds: 37.20410580113015}
`), "exact.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := f.Variant("exact")
	if got := m.ClockFit; math.Abs(got.K-1.5) > 1e-9 || math.Abs(got.A-0.9) > 1e-9 || !near(got.MinClock, 1.0/3) {
		t.Errorf("exact power law: fit %+v, want k 1.5, a 0.9, lowest clock 1/3", got)
	}
}
