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

func TestStretchIsLinearFromNoCapToTheTablePointAndStopsAtTheFloor(t *testing.T) {
	m := Default()
	for _, tc := range []struct {
		b    Boundness
		cap  float64
		want float64
	}{
		{GPUCompute, 1, 1},
		{GPUCompute, 0.8, 1.10}, // halfway to the table point: half of +20%
		{GPUCompute, 0.6, 1.20},
		{GPUCompute, 0.5, 1.25}, // extrapolated: a further quarter of 0.4 below 0.6
		{GPUCompute, 0.3, 1.25}, // below the 50% floor: the floor
		{GPUCompute, 1.4, 1},    // above the maximum: no cap
		{GPUMixed, 0.6, 1.12},
		{GPUMixed, 0.8, 1.06},
		{GPULow, 0.6, 1},
		{GPULow, 0.5, 1},
		{CPUCompute, 0.6, 1.25},
		{CPUCompute, 0.5, 1.3125},
		{CPUMemory, 0.6, 1.05},
		{CPUMemory, 0.9, 1.0125},
		{CPULow, 0.6, 1},
	} {
		if got := m.Stretch(tc.b, m.GPUDevice(1, 1), tc.cap); !near(got, tc.want) {
			t.Errorf("Stretch(%s, %v) = %v, want %v", tc.b, tc.cap, got, tc.want)
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
	// What the variant does not give, it keeps.
	if sen.Class(GPUCompute) != def.Class(GPUCompute) || sen.TableCapFraction != def.TableCapFraction {
		t.Errorf("sensitivity changed the stretch table: %+v, %v", sen.Class(GPUCompute), sen.TableCapFraction)
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
