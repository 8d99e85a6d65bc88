package twin

import (
	"math"
	"testing"
)

const eps = 1e-9

func near(a, b float64) bool { return math.Abs(a-b) < eps }

// seedNode is the seed's worked example: 2-socket EPYC at 400 W/socket plus
// 4 H100 at 400 W each, both at the 60% eco cap, 25 °C ambient.
func seedNode() Input {
	return Input{
		CPUMaxWattsPerSocket: 400, Sockets: 2,
		GPUMaxWatts: 400, GPUCount: 4,
		CPUCapPct: 60, GPUCapPct: 60,
		AmbientTempC:       25,
		ClusterTotalPowerW: 30000,
	}
}

func TestComputeSeedExample(t *testing.T) {
	out := Compute(seedNode(), DefaultLinearCoolingModel())
	checks := []struct {
		name      string
		got, want float64
	}{
		{"CPUCappedPowerW", out.CPUCappedPowerW, 480},
		{"GPUCappedPowerW", out.GPUCappedPowerW, 960},
		{"NodeCappedPowerW", out.NodeCappedPowerW, 1440},
		{"NodePowerW", out.NodePowerW, 1440},
		{"CPUTdpW", out.CPUTdpW, 800},
		{"GPUTdpW", out.GPUTdpW, 1600},
		{"NodeTdpW", out.NodeTdpW, 2400},
		{"CoolingStress", out.CoolingStress, 31.3},
		{"PSUStress", out.PSUStress, 60},
		{"Headroom", out.Headroom, 0.6 * (1 - 0.313) * 100},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestComputeNilModelUsesDefault(t *testing.T) {
	a := Compute(seedNode(), nil)
	b := Compute(seedNode(), DefaultLinearCoolingModel())
	if a != b {
		t.Fatalf("nil model: %+v, want %+v", a, b)
	}
}

func TestLinearCoolingModel(t *testing.T) {
	def := DefaultLinearCoolingModel()
	tests := []struct {
		name      string
		m         LinearCoolingModel
		power, tc float64
		want      float64
	}{
		{"seed example", def, 1440, 25, 31.3},
		{"reference power at baseline", def, 4000, 20, 80},
		{"below baseline adds nothing", def, 2000, 5, 40},
		{"40C adds 10", def, 0, 40, 10},
		{"clamp high", def, 8000, 30, 100},
		{"clamp high by temperature", def, 4000, 80, 100},
		{"zero power cool", def, 0, 10, 0},
		{"negative power is zero", def, -500, 20, 0},
		{"NaN power is zero", def, math.NaN(), 20, 0},
		{"+Inf power treated as zero", def, math.Inf(1), 20, 0},
		{"NaN temp no penalty", def, 2000, math.NaN(), 40},
		{"+Inf temp saturates", def, 0, math.Inf(1), 100},
		{"-Inf temp no penalty", def, 2000, math.Inf(-1), 40},
		{"zero value is default", LinearCoolingModel{}, 1440, 25, 31.3},
		{"custom model", LinearCoolingModel{ReferenceNodePowerW: 2000, Scale: 50, TempBaselineC: 10, PerDegree: 1}, 1000, 15, 30},
		{"bad reference falls back", LinearCoolingModel{ReferenceNodePowerW: -1, Scale: 80, TempBaselineC: 20, PerDegree: 0.5}, 4000, 20, 80},
		{"negative scale clamps to 0", LinearCoolingModel{ReferenceNodePowerW: 4000, Scale: -80, TempBaselineC: 20, PerDegree: 0.5}, 4000, 20, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.m.CoolingStress(tt.power, tt.tc)
			if !near(got, tt.want) {
				t.Fatalf("CoolingStress(%v, %v) = %v, want %v", tt.power, tt.tc, got, tt.want)
			}
		})
	}
}

// fixedModel returns a constant stress, to exercise Compute's handling of
// arbitrary pluggable models.
type fixedModel float64

func (f fixedModel) CoolingStress(float64, float64) float64 { return float64(f) }

func TestComputeTable(t *testing.T) {
	tests := []struct {
		name                                   string
		in                                     Input
		m                                      CoolingModel
		wantPower, wantCool, wantPSU, wantHead float64
	}{
		{
			name:      "unset caps mean 100",
			in:        Input{CPUMaxWattsPerSocket: 400, Sockets: 2, GPUMaxWatts: 400, GPUCount: 4, AmbientTempC: 20},
			wantPower: 2400, wantCool: 48, wantPSU: 0, wantHead: 52,
		},
		{
			name:      "caps above 100 clamp to 100",
			in:        Input{CPUMaxWattsPerSocket: 400, Sockets: 2, GPUMaxWatts: 400, GPUCount: 4, CPUCapPct: 150, GPUCapPct: 250, AmbientTempC: 20},
			wantPower: 2400, wantCool: 48, wantPSU: 0, wantHead: 52,
		},
		{
			name:      "negative and NaN caps mean 100",
			in:        Input{CPUMaxWattsPerSocket: 400, Sockets: 2, GPUMaxWatts: 400, GPUCount: 4, CPUCapPct: -10, GPUCapPct: math.NaN(), AmbientTempC: 20},
			wantPower: 2400, wantCool: 48, wantPSU: 0, wantHead: 52,
		},
		{
			name:      "mixed caps averaged on CPU+GPU node",
			in:        Input{CPUMaxWattsPerSocket: 400, Sockets: 2, GPUMaxWatts: 400, GPUCount: 4, CPUCapPct: 60, GPUCapPct: 100, AmbientTempC: 20},
			wantPower: 480 + 1600, wantCool: 41.6, wantPSU: 0, wantHead: 0.8 * (1 - 0.416) * 100,
		},
		{
			name:      "CPU-only node uses CPU cap alone",
			in:        Input{CPUMaxWattsPerSocket: 400, Sockets: 2, CPUCapPct: 60, AmbientTempC: 20},
			wantPower: 480, wantCool: 9.6, wantPSU: 0, wantHead: 0.6 * (1 - 0.096) * 100,
		},
		{
			name:      "CPU-only node ignores a stray GPU cap",
			in:        Input{CPUMaxWattsPerSocket: 400, Sockets: 2, CPUCapPct: 60, GPUCapPct: 30, GPUMaxWatts: 400, AmbientTempC: 20},
			wantPower: 480, wantCool: 9.6, wantPSU: 0, wantHead: 0.6 * (1 - 0.096) * 100,
		},
		{
			name:      "GPU-only data uses GPU cap alone",
			in:        Input{GPUMaxWatts: 500, GPUCount: 2, GPUCapPct: 50, CPUCapPct: 100, AmbientTempC: 20},
			wantPower: 500, wantCool: 10, wantPSU: 0, wantHead: 0.5 * 0.9 * 100,
		},
		{
			name:      "empty node is fully free",
			in:        Input{},
			wantPower: 0, wantCool: 0, wantPSU: 0, wantHead: 100,
		},
		{
			name:      "PSU clamps high",
			in:        Input{ClusterTotalPowerW: 80000},
			wantPower: 0, wantCool: 0, wantPSU: 100, wantHead: 100,
		},
		{
			name:      "PSU custom rack capacity",
			in:        Input{ClusterTotalPowerW: 15000, ReferenceRackCapacityW: 20000},
			wantPower: 0, wantCool: 0, wantPSU: 75, wantHead: 100,
		},
		{
			name:      "PSU bad rack capacity falls back to 50 kW",
			in:        Input{ClusterTotalPowerW: 30000, ReferenceRackCapacityW: math.Inf(1)},
			wantPower: 0, wantCool: 0, wantPSU: 60, wantHead: 100,
		},
		{
			name:      "PSU negative cluster power clamps low",
			in:        Input{ClusterTotalPowerW: -1000},
			wantPower: 0, wantCool: 0, wantPSU: 0, wantHead: 100,
		},
		{
			name:      "hot heavy node has no headroom",
			in:        Input{CPUMaxWattsPerSocket: 500, Sockets: 2, GPUMaxWatts: 700, GPUCount: 8, AmbientTempC: 35},
			wantPower: 6600, wantCool: 100, wantPSU: 0, wantHead: 0,
		},
		{
			name:      "negative counts and watts are zero",
			in:        Input{CPUMaxWattsPerSocket: -400, Sockets: 2, GPUMaxWatts: 400, GPUCount: -4},
			wantPower: 0, wantCool: 0, wantPSU: 0, wantHead: 100,
		},
		{
			name:      "model above 100 clamps",
			in:        Input{CPUMaxWattsPerSocket: 400, Sockets: 1},
			m:         fixedModel(250),
			wantPower: 400, wantCool: 100, wantPSU: 0, wantHead: 0,
		},
		{
			name:      "model below 0 clamps",
			in:        Input{CPUMaxWattsPerSocket: 400, Sockets: 1, CPUCapPct: 50},
			m:         fixedModel(-20),
			wantPower: 200, wantCool: 0, wantPSU: 0, wantHead: 50,
		},
		{
			name:      "model NaN is conservative",
			in:        Input{CPUMaxWattsPerSocket: 400, Sockets: 1},
			m:         fixedModel(math.NaN()),
			wantPower: 400, wantCool: 100, wantPSU: 0, wantHead: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Compute(tt.in, tt.m)
			if !near(out.NodePowerW, tt.wantPower) {
				t.Errorf("NodePowerW = %v, want %v", out.NodePowerW, tt.wantPower)
			}
			if !near(out.CoolingStress, tt.wantCool) {
				t.Errorf("CoolingStress = %v, want %v", out.CoolingStress, tt.wantCool)
			}
			if !near(out.PSUStress, tt.wantPSU) {
				t.Errorf("PSUStress = %v, want %v", out.PSUStress, tt.wantPSU)
			}
			if !near(out.Headroom, tt.wantHead) {
				t.Errorf("Headroom = %v, want %v", out.Headroom, tt.wantHead)
			}
			if out.NodeCappedPowerW != out.NodePowerW {
				t.Errorf("NodeCappedPowerW %v != NodePowerW %v", out.NodeCappedPowerW, out.NodePowerW)
			}
		})
	}
}

// TestComputeNeverNaN feeds hostile values everywhere and checks that every
// output is finite and every score stays in 0..100.
func TestComputeNeverNaN(t *testing.T) {
	bad := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 0, 1e308}
	for _, v := range bad {
		in := Input{
			CPUMaxWattsPerSocket: v, Sockets: 2,
			GPUMaxWatts: v, GPUCount: 8,
			CPUCapPct: v, GPUCapPct: v,
			AmbientTempC: v, ClusterTotalPowerW: v, ReferenceRackCapacityW: v,
		}
		out := Compute(in, nil)
		all := []float64{out.NodePowerW, out.CoolingStress, out.PSUStress, out.Headroom,
			out.CPUCappedPowerW, out.GPUCappedPowerW, out.NodeCappedPowerW,
			out.CPUTdpW, out.GPUTdpW, out.NodeTdpW}
		for i, f := range all {
			if math.IsNaN(f) {
				t.Errorf("input %v: output field %d is NaN (%+v)", v, i, out)
			}
		}
		for _, s := range []float64{out.CoolingStress, out.PSUStress, out.Headroom} {
			if s < 0 || s > 100 {
				t.Errorf("input %v: score %v out of 0..100", v, s)
			}
		}
	}
}

func TestPUE(t *testing.T) {
	tests := []struct {
		name     string
		it, cool float64
		want     float64
		wantOK   bool
	}{
		{"typical", 1000, 400, 1.4, true},
		{"no cooling", 1000, 0, 1, true},
		{"zero IT", 0, 400, 0, false},
		{"negative IT", -100, 400, 0, false},
		{"negative cooling", 1000, -1, 0, false},
		{"NaN IT", math.NaN(), 400, 0, false},
		{"NaN cooling", 1000, math.NaN(), 0, false},
		{"Inf IT", math.Inf(1), 400, 0, false},
		{"Inf cooling", 1000, math.Inf(1), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := PUE(tt.it, tt.cool)
			if ok != tt.wantOK || !near(got, tt.want) {
				t.Fatalf("PUE(%v, %v) = (%v, %v), want (%v, %v)", tt.it, tt.cool, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func BenchmarkCompute(b *testing.B) {
	in := seedNode()
	m := DefaultLinearCoolingModel()
	var sink Output
	for b.Loop() {
		sink = Compute(in, m)
	}
	_ = sink
}
