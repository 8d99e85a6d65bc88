package physics

import (
	"math"
	"testing"
	"time"
)

// near reports whether a and b agree to a millionth of their size: the
// hand-computed values below are exact decimals that floating point may
// miss in the last bit.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*max(1, math.Abs(b)) }

func TestCPUCurveInterpolatesBetweenSPECpowerPoints(t *testing.T) {
	c := Default().CPUNode
	for _, tc := range []struct {
		load, want float64
	}{
		{0, 128},
		{0.05, 192.5}, // halfway from 128 to 257
		{0.1, 257},
		{0.3, 333.5}, // halfway from 257 to 410
		{0.5, 410},
		{0.75, 613.5}, // halfway from 410 to 817
		{1, 817},
		{-0.2, 128}, // below 0: idle
		{1.5, 817},  // above 1: full load
	} {
		if got := c.At(tc.load); !near(got, tc.want) {
			t.Errorf("At(%v) = %v W, want %v W", tc.load, got, tc.want)
		}
	}
}

func TestCPUNodeUnderCapDrawsTheLesserOfNaturalAndCap(t *testing.T) {
	m := Default()
	for _, tc := range []struct {
		name      string
		load, cap float64
		want      float64
	}{
		{"full load, no cap", 1, 1, 817},
		{"full load, 60% cap binds", 1, 0.6, 490.2},
		{"three quarters load, 60% cap binds", 0.75, 0.6, 490.2},
		{"half load, 60% cap above the draw", 0.5, 0.6, 410},
		{"idle under a cap", 0, 0.6, 128},
		{"cap below the floor is the floor", 1, 0.3, 408.5},
		{"cap above the maximum does not limit", 1, 1.3, 817},
	} {
		if got := m.CPUNodeWatts(tc.load, tc.cap); !near(got, tc.want) {
			t.Errorf("%s: CPUNodeWatts(%v, %v) = %v W, want %v W", tc.name, tc.load, tc.cap, got, tc.want)
		}
	}
}

func TestGPUNodeIsHostPlusEachGPU(t *testing.T) {
	m := Default()
	// Host at half load: 410 W. GPUs: two compute-bound (700 W each), one
	// mixed (70 + 0.7 × 630 = 511 W), one low (70 + 0.3 × 630 = 259 W),
	// four idle (70 W each).
	utils := []float64{1, 1, 0.7, 0.3, 0, 0, 0, 0}
	for _, tc := range []struct {
		name            string
		hostCap, gpuCap float64
		want            float64
	}{
		{"no caps", 1, 1, 410 + 700 + 700 + 511 + 259 + 4*70},
		// 60% of 700 W = 420 W caps the busy and the mixed GPU; the low one
		// and the idle ones stay under it; the host at 410 W is under
		// 0.6 × 817.
		{"60% caps", 0.6, 0.6, 410 + 420 + 420 + 420 + 259 + 4*70},
	} {
		if got := m.GPUNodeWatts(0.5, tc.hostCap, utils, tc.gpuCap); !near(got, tc.want) {
			t.Errorf("%s: GPUNodeWatts = %v W, want %v W", tc.name, got, tc.want)
		}
	}
	if got := m.GPUNodeWatts(0, 1, nil, 1); got != 128 {
		t.Errorf("a GPU node without GPUs draws its host's idle: got %v W, want 128 W", got)
	}
}

// Stretch on each class's own device (one GPU, or a node full of copies
// of the job) at several caps. The expected values were computed apart
// from this package, from the table's fit k = 1.38421, a = 1.04642 and
// the betas it derives (gpu-compute 0.357478, gpu-mixed 0.628584).
func TestStretchOnTheClassDevice(t *testing.T) {
	m := Default()
	for _, tc := range []struct {
		b         Boundness
		cap       float64
		clock     float64
		want      float64
		tolerance float64
	}{
		{GPUCompute, 1, 1, 1, 0},
		{GPUCompute, 0.8, 0.833970, 1.074796, 1e-6},
		{GPUCompute, 0.6, 0.654008, 1.20, 1e-9}, // the Zeus figure, by construction
		{GPUCompute, 0.5, 0.556637, 1.302438, 1e-6},
		{GPUCompute, 0.3, 0.556637, 1.302438, 1e-6}, // below the 50% floor: the floor
		{GPUCompute, 1.4, 1, 1, 0},                  // above the maximum: no cap
		{GPUMixed, 0.6, 0.846231, 1.12, 1e-9},
		{GPUMixed, 0.8, 1, 1, 0}, // 511 W under 560 W: not binding
		{GPULow, 0.5, 1, 1, 0},   // 259 W under 350 W
		{CPUCompute, 0.6, 0.628414, 1.626000, 1e-6},
		{CPUCompute, 0.5, 0.522450, 1.972628, 1e-6},
		{CPUMemory, 0.6, 0.763519, 1.065247, 1e-6},
		{CPUMemory, 0.9, 1, 1, 0}, // 654.2 W under 735.3 W
		{CPULow, 0.6, 1, 1, 0},
	} {
		d := m.ClassDevice(tc.b)
		if got := m.Clock(d, tc.cap); math.Abs(got-tc.clock) > 1e-6 {
			t.Errorf("Clock(%s device %+v, %v) = %v, want %v", tc.b, d, tc.cap, got, tc.clock)
		}
		if got := m.Stretch(tc.b, d, tc.cap); math.Abs(got-tc.want) > tc.tolerance {
			t.Errorf("Stretch(%s, %v) = %v, want %v", tc.b, tc.cap, got, tc.want)
		}
	}
}

// The stretch never falls as the clock does, for every class: 1 at full
// clock, and at the lowest clock r^-a scaled by beta.
func TestStretchAtClock(t *testing.T) {
	m := Default()
	a, low := m.ClockFit.A, m.ClockFit.MinClock
	for _, b := range Boundnesses() {
		beta := m.Class(b).ClockSensitivity
		if got := m.StretchAtClock(b, 1); got != 1 {
			t.Errorf("%s at full clock: %v", b, got)
		}
		if got, want := m.StretchAtClock(b, low), 1+beta*(math.Pow(low, -a)-1); !near(got, want) {
			t.Errorf("%s at the lowest clock: %v, want %v", b, got, want)
		}
		prev := 1.0
		for r := 1.0; r >= low; r -= 0.01 {
			s := m.StretchAtClock(b, r)
			if s < prev {
				t.Fatalf("%s: stretch %v at clock %v below %v at a higher clock", b, s, r, prev)
			}
			prev = s
		}
	}
}

func TestRunMatchesAStepwiseSimulation(t *testing.T) {
	m := Default()
	for _, tc := range []struct {
		name    string
		b       Boundness
		gpus    int
		cap     float64
		runtime time.Duration
		energyJ float64
		work    time.Duration
	}{
		// One H100 at a 60% cap: 420 W for 1.2 h instead of 700 W for 1 h.
		{name: "compute-bound GPU job capped", b: GPUCompute, gpus: 1, cap: 0.6,
			work: time.Hour, runtime: 72 * time.Minute, energyJ: 420 * 1.2 * 3600},
		{name: "compute-bound GPU job uncapped", b: GPUCompute, gpus: 1, cap: 1,
			work: time.Hour, runtime: time.Hour, energyJ: 700 * 3600},
		// Two GPUs at 511 W natural, capped to 420 W, 12% longer.
		{name: "mixed job on two GPUs capped", b: GPUMixed, gpus: 2, cap: 0.6,
			work: 30 * time.Minute, runtime: 33*time.Minute + 36*time.Second, energyJ: 2 * 420 * 1.12 * 1800},
		// 259 W stays under the 420 W cap, and the job is not slowed.
		{name: "low-utilization GPU job capped", b: GPULow, gpus: 1, cap: 0.6,
			work: time.Hour, runtime: time.Hour, energyJ: 259 * 3600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := m.GPUDevice(tc.gpus, m.Class(tc.b).Utilization)
			runtime, energy := m.Run(tc.b, tc.work, d, tc.cap)
			if runtime != tc.runtime || !near(energy, tc.energyJ) {
				t.Fatalf("Run = %v, %v J; want %v, %v J", runtime, energy, tc.runtime, tc.energyJ)
			}
			// The way a simulator advances: each second the job gains
			// 1/stretch s of work and its share adds its capped draw.
			stretch := m.Stretch(tc.b, d, tc.cap)
			power := m.Draw(d, tc.cap)
			var done, joules float64
			steps := 0
			for done < tc.work.Seconds()-1e-9 {
				dt := min(1, (tc.work.Seconds()-done)*stretch)
				done += dt / stretch
				joules += power * dt
				steps++
			}
			if d := time.Duration(float64(steps) * float64(time.Second)); d-runtime > time.Second || runtime-d > time.Second {
				t.Errorf("stepwise runtime %v, closed form %v", d, runtime)
			}
			if !near(joules, energy) {
				t.Errorf("stepwise energy %v J, closed form %v J", joules, energy)
			}
		})
	}
}

func TestEffectiveCapRefusesZero(t *testing.T) {
	for _, f := range []float64{0, -0.5, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("EffectiveCap(%v) did not panic; a zero cap is most likely a forgotten \"no cap\" (1)", f)
				}
			}()
			Default().EffectiveCap(f)
		}()
	}
}

func TestSensitivityRaisesIdleAndKeepsMaxima(t *testing.T) {
	def, sen := Default(), Sensitivity()
	for _, c := range []struct {
		name     string
		def, sen Curve
	}{{"cpuNode", def.CPUNode, sen.CPUNode}, {"gpuNode.host", def.GPUNode.Host, sen.GPUNode.Host}} {
		if !near(c.sen.Max(), c.def.Max()) {
			t.Errorf("%s: maximum %v W, want the default's %v W", c.name, c.sen.Max(), c.def.Max())
		}
		if math.Abs(c.sen.Idle()-0.3*c.sen.Max()) > 0.05 {
			t.Errorf("%s: idle %v W, want 30%% of %v W", c.name, c.sen.Idle(), c.sen.Max())
		}
		// Every point keeps its share of the dynamic range above idle.
		for i, p := range c.def.Points() {
			want := c.sen.Idle() + (p.Watts-c.def.Idle())*(c.sen.Max()-c.sen.Idle())/(c.def.Max()-c.def.Idle())
			if got := c.sen.Points()[i].Watts; math.Abs(got-want) > 0.05 {
				t.Errorf("%s point %d: %v W, want %.2f W", c.name, i, got, want)
			}
		}
	}
	if sen.GPUNode.GPUIdleWatts != 145 || sen.GPUNode.GPUMaxWatts() != def.GPUNode.GPUMaxWatts() {
		t.Errorf("sensitivity GPU: idle %v W, max %v W; want 145 W and the default's %v W",
			sen.GPUNode.GPUIdleWatts, sen.GPUNode.GPUMaxWatts(), def.GPUNode.GPUMaxWatts())
	}
	// What the variant does not give, it keeps; a GPU class's beta is
	// derived anew from its figure at the variant's higher GPU idle.
	for _, b := range Boundnesses() {
		d, s := def.Class(b), sen.Class(b)
		if s.Utilization != d.Utilization || (b.GPU() && s.StretchAtTableCap != d.StretchAtTableCap) {
			t.Errorf("sensitivity changed %s: %+v, default %+v", b, s, d)
		}
	}
	if sen.TableCapFraction != def.TableCapFraction || sen.ClockFit != def.ClockFit {
		t.Errorf("sensitivity changed the table cap or the clock fit: %v, %+v", sen.TableCapFraction, sen.ClockFit)
	}
	// At 145 W idle, 420 W clocks a 700 W H100 to 0.602 (0.654 at 70 W),
	// so +20% needs a smaller beta.
	if b := sen.Class(GPUCompute).ClockSensitivity; math.Abs(b-0.285567) > 1e-6 {
		t.Errorf("sensitivity gpu-compute beta %v, want 0.285567", b)
	}
}

func TestBoundnessDevice(t *testing.T) {
	for _, b := range Boundnesses() {
		if !b.Valid() {
			t.Errorf("%s: not Valid", b)
		}
		if want := b[:3] == "gpu"; b.GPU() != want {
			t.Errorf("%s: GPU() = %v", b, b.GPU())
		}
	}
	if Boundness("gpu").Valid() || Boundness("").Valid() {
		t.Error("an unknown class is Valid")
	}
}
