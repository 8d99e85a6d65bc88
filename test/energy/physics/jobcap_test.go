package physics

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// costlyModel is the embedded model with a clock table on which runtime
// goes as clock^-3 and power as clock^1, and a gpu-compute class bound by
// its clock alone: every cap that binds costs energy (at 60%, 420 W for
// (630/350)^3 = 5.83 times as long, against 700 W).
func costlyModel(t *testing.T) *Model {
	t.Helper()
	f, err := Parse(append(append([]byte(nil), embedded...), `  costly:
    clock:
      idleWatts: 0
      points: [{ghz: 1, watts: 10, seconds: 64}, {ghz: 2, watts: 20, seconds: 8}, {ghz: 4, watts: 40, seconds: 1}]
    classes:
      gpu-compute: {clockSensitivity: 1}
`...), "costly.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.Variant("costly")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// jobShares are the shares the oracle gives a job of class b: a GPU job
// holds its GPUs and its slice of the host's CPUs, a CPU job its slice of
// a CPU node's.
func jobShares(m *Model, b Boundness, gpus int, cpuFrac float64) (pace Device, others []Device) {
	u := m.Class(b).Utilization
	if b.GPU() {
		return m.GPUDevice(gpus, u), []Device{CPUSlice(m.GPUNode.Host, cpuFrac, u)}
	}
	return CPUSlice(m.CPUNode, cpuFrac, u), nil
}

// The breakpoint search finds the same least energy as trying every cap
// on a fine grid, for every class, on every shipped model.
func TestMinEnergyCapMatchesBruteForce(t *testing.T) {
	models := []*Model{Default(), Sensitivity(), costlyModel(t)}
	for _, m := range models {
		for _, b := range Boundnesses() {
			for _, size := range []struct {
				gpus    int
				cpuFrac float64
			}{{1, 0.04}, {8, 0.5}, {2, 0}} {
				pace, others := jobShares(m, b, size.gpus, size.cpuFrac)
				name := fmt.Sprintf("%s/%s/%d GPUs, %.2f of the CPUs", m.Name, b, size.gpus, size.cpuFrac)
				got := m.MinEnergyCap(b, pace, others...)
				if got < m.MinCapFraction || got > 1 {
					t.Fatalf("%s: cap %v outside [%v, 1]", name, got, m.MinCapFraction)
				}
				gotE := m.EnergyPerWork(b, got, pace, others...)
				const steps = 20000
				bestF, bestE := 1.0, m.EnergyPerWork(b, 1, pace, others...)
				for i := range steps + 1 {
					f := m.MinCapFraction + (1-m.MinCapFraction)*float64(i)/steps
					if e := m.EnergyPerWork(b, f, pace, others...); e < bestE {
						bestF, bestE = f, e
					}
				}
				if gotE > bestE*(1+1e-9) {
					t.Errorf("%s: MinEnergyCap %v costs %v J per second of work; the grid finds %v J at %v", name, got, gotE, bestE, bestF)
				}
				if bestE >= m.EnergyPerWork(b, 1, pace, others...) && got != 1 {
					t.Errorf("%s: no cap on the grid saves energy, yet MinEnergyCap chose %v", name, got)
				}
			}
		}
	}
}

func TestMinEnergyCapPerClass(t *testing.T) {
	def, costly := Default(), costlyModel(t)
	for _, tc := range []struct {
		name string
		m    *Model
		b    Boundness
		want float64
	}{
		// 1.3024 × 350 W at the floor against 700 W uncapped (one GPU; the
		// host slice is 0 here).
		{"gpu-compute saves at the floor", def, GPUCompute, 0.5},
		// 1.2575 × 350 W against 511 W.
		{"gpu-mixed saves at the floor", def, GPUMixed, 0.5},
		// Not slowed, but its 259 W stay under any cap: nothing to save.
		{"gpu-low is never capped", def, GPULow, 1},
		// Clock-bound: the stretch grows faster than the draw falls below
		// a cap of 0.642015, where the node draws 524.5 W for 1.5185
		// times as long, 796.45 J per second of work against 817.
		{"cpu-compute saves least at an inner cap", def, CPUCompute, 0.642015},
		// 1.1218 × 408.5 W against 654.2 W.
		{"cpu-memory saves at the floor", def, CPUMemory, 0.5},
		// 333.5 W stay under the floor's 408.5 W.
		{"cpu-low is never capped", def, CPULow, 1},
		{"a class whose stretch makes capping cost energy", costly, GPUCompute, 1},
	} {
		frac := 1.0 // a CPU job on the whole node
		if tc.b.GPU() {
			frac = 0 // one GPU alone, as in the comments
		}
		pace, others := jobShares(tc.m, tc.b, 1, frac)
		if got := tc.m.MinEnergyCap(tc.b, pace, others...); math.Abs(got-tc.want) > 1e-5 {
			t.Errorf("%s: MinEnergyCap = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// EnergyPerWork is Model.Run's energy summed over the shares, per second
// of work.
func TestEnergyPerWorkIsRunPerSecondOfWork(t *testing.T) {
	m := Default()
	pace, others := jobShares(m, GPUMixed, 2, 0.1)
	work := 90 * time.Minute
	for _, f := range []float64{1, 0.8, 0.6, 0.5} {
		// Every device is held for the pace's stretched runtime.
		stretched, sum := m.Run(GPUMixed, work, pace, f)
		for _, d := range others {
			sum += m.Draw(d, f) * stretched.Seconds()
		}
		if got := m.EnergyPerWork(GPUMixed, f, pace, others...) * work.Seconds(); !near(got, sum) {
			t.Errorf("cap %v: %v J from EnergyPerWork, %v J from Run", f, got, sum)
		}
	}
}

func TestSliceSavingAgreesWithTheNodeCap(t *testing.T) {
	for _, m := range []*Model{Default(), Sensitivity()} {
		c := m.CPUNode
		for _, b := range []Boundness{CPUCompute, CPUMemory, CPULow} {
			u := m.Class(b).Utilization
			for _, f := range []float64{1, 0.8, 0.6, 0.5} {
				// Four copies of one job fill the node, all under cap f:
				// the node-level cap.
				d := CPUSlice(c, 0.25, u)
				jobs := []CappedSlice{{d, f}, {d, f}, {d, f}, {d, f}}
				got := c.At(u) - m.SliceSaving(c, u, jobs)
				if want := m.CPUNodeWatts(u, f); !near(got, want) {
					t.Errorf("%s, %s at cap %v: node full of copies draws %v W, the node-level cap gives %v W", m.Name, b, f, got, want)
				}
			}
		}
	}
}

func TestSliceSaving(t *testing.T) {
	m := Default()
	c := m.CPUNode
	// A compute job at the floor and a low job uncapped, 96 CPUs each of
	// 384: load (96 + 28.8) / 384 = 0.325, natural 257 + 153 × 0.5625 =
	// 343.0625 W, 215.0625 W above idle. Their parts go by their shares'
	// dynamic power, 96 × 689 and 96 × 205.5; the cap cuts 408.5 of the
	// compute job's 689: 215.0625 × 96 × 408.5 / (96 × (689 + 205.5)) = 98.2147 W.
	jobs := []CappedSlice{{CPUSlice(c, 0.25, 1), 0.5}, {CPUSlice(c, 0.25, 0.3), 1}}
	if got := m.SliceSaving(c, 0.325, jobs); math.Abs(got-98.2147) > 1e-4 {
		t.Errorf("saving %v W, want 98.2147 W", got)
	}
	jobs[0].Cap = 1
	if got := m.SliceSaving(c, 0.325, jobs); got != 0 {
		t.Errorf("no job capped: saving %v W, want exactly 0", got)
	}
	if got := m.SliceSaving(c, 0, nil); got != 0 {
		t.Errorf("an empty node saves %v W", got)
	}
	// However the node is shared, a capped node draws between its idle and
	// its natural power.
	for _, ca := range []float64{0.5, 0.7, 1} {
		for _, cb := range []float64{0.5, 0.9, 1} {
			for _, n := range []float64{8, 64, 190} {
				jobs := []CappedSlice{{CPUSlice(c, n/384, 1), ca}, {CPUSlice(c, (384-n)/384, 0.8), cb}, {CPUSlice(c, 0, 0.3), 0.5}}
				load := (n + (384-n)*0.8) / 384
				w := c.At(load) - m.SliceSaving(c, load, jobs)
				if w < c.Idle()-1e-9 || w > c.At(load)+1e-9 {
					t.Errorf("caps %v, %v with %v CPUs: node draws %v W, outside idle %v .. natural %v", ca, cb, n, w, c.Idle(), c.At(load))
				}
			}
		}
	}
}
