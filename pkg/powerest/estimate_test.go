package powerest

import (
	"math"
	"testing"
)

// debugNode is the node of the extender's /debug/scoring example: 128
// cores, 700 W across its sockets, 8 GPUs of 400 W.
var debugNode = Node{CPUTotalCores: 128, CPUMaxWatts: 700, GPUCount: 8, GPUMaxWattsPerGPU: 400}

func TestEstimate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name        string
		c           *Coefficients // nil: DefaultCoefficients
		d           Demand
		n           Node
		performance bool
		pue         float64
		want        Impact
	}{
		{
			// 0.8 × 8/64 × 500
			name: "worked example: 8 cores of a 64-core 500 W node add 50 W",
			d:    Demand{CPUCores: 8},
			n:    Node{CPUTotalCores: 64, CPUMaxWatts: 500},
			pue:  1,
			want: Impact{CPUWatts: 50, TotalWatts: 50},
		},
		{
			// 0.8 × 16/128 × 700
			name: "CPU-only pod on a GPU node",
			d:    Demand{CPUCores: 16},
			n:    debugNode,
			pue:  1,
			want: Impact{CPUWatts: 70, TotalWatts: 70},
		},
		{
			// CPU 0.8 × 4/128 × 700 = 17.5; GPU 0.6 × 1/8 × 3200 = 240
			name: "one GPU standard",
			d:    Demand{CPUCores: 4, GPUs: 1},
			n:    debugNode,
			pue:  1,
			want: Impact{CPUWatts: 17.5, GPUWatts: 240, TotalWatts: 257.5},
		},
		{
			// GPU 0.9 × 1/8 × 3200 = 360
			name:        "one GPU performance",
			d:           Demand{CPUCores: 4, GPUs: 1},
			n:           debugNode,
			performance: true,
			pue:         1,
			want:        Impact{CPUWatts: 17.5, GPUWatts: 360, TotalWatts: 377.5},
		},
		{
			// CPU 0.8 × 32/128 × 700 = 140; GPU 0.9 × 8/8 × 3200 = 2880
			name:        "whole-node training job",
			d:           Demand{CPUCores: 32, GPUs: 8},
			n:           debugNode,
			performance: true,
			pue:         1,
			want:        Impact{CPUWatts: 140, GPUWatts: 2880, TotalWatts: 3020},
		},
		{
			// 0.25 core of 64 × 500 W × 0.8
			name: "fractional cores",
			d:    Demand{CPUCores: 0.25},
			n:    Node{CPUTotalCores: 64, CPUMaxWatts: 500},
			pue:  1,
			want: Impact{CPUWatts: 1.5625, TotalWatts: 1.5625},
		},
		{
			// 70 × 1.6 and 240 × 1.6
			name: "PUE 1.6 weights every term",
			d:    Demand{CPUCores: 16, GPUs: 1},
			n:    debugNode,
			pue:  1.6,
			want: Impact{CPUWatts: 112, GPUWatts: 384, TotalWatts: 496},
		},
		{
			name: "PUE 1 does not weight",
			d:    Demand{CPUCores: 16, GPUs: 1},
			n:    debugNode,
			pue:  1,
			want: Impact{CPUWatts: 70, GPUWatts: 240, TotalWatts: 310},
		},
		{
			name: "PUE below 1 is ignored",
			d:    Demand{CPUCores: 16, GPUs: 1},
			n:    debugNode,
			pue:  0.8,
			want: Impact{CPUWatts: 70, GPUWatts: 240, TotalWatts: 310},
		},
		{
			name: "PUE zero (unset) is ignored",
			d:    Demand{CPUCores: 16, GPUs: 1},
			n:    debugNode,
			pue:  0,
			want: Impact{CPUWatts: 70, GPUWatts: 240, TotalWatts: 310},
		},
		{
			name: "PUE NaN is ignored",
			d:    Demand{CPUCores: 16, GPUs: 1},
			n:    debugNode,
			pue:  nan,
			want: Impact{CPUWatts: 70, GPUWatts: 240, TotalWatts: 310},
		},
		{
			name: "PUE infinite is ignored",
			d:    Demand{CPUCores: 16, GPUs: 1},
			n:    debugNode,
			pue:  inf,
			want: Impact{CPUWatts: 70, GPUWatts: 240, TotalWatts: 310},
		},
		{
			// 0.8 × 1 × 700; 0.9 × 1 × 3200
			name:        "pod larger than the node is clamped to the whole node",
			d:           Demand{CPUCores: 200, GPUs: 16},
			n:           debugNode,
			performance: true,
			pue:         1,
			want:        Impact{CPUWatts: 560, GPUWatts: 2880, TotalWatts: 3440},
		},
		{
			name: "GPU pod on a CPU-only node adds no GPU power",
			d:    Demand{CPUCores: 8, GPUs: 2},
			n:    Node{CPUTotalCores: 64, CPUMaxWatts: 500},
			pue:  1,
			want: Impact{CPUWatts: 50, TotalWatts: 50},
		},
		{
			name: "GPUs without a known per-GPU maximum add nothing",
			d:    Demand{GPUs: 2},
			n:    Node{GPUCount: 8},
			pue:  1,
			want: Impact{},
		},
		{
			name: "node without core count adds no CPU power",
			d:    Demand{CPUCores: 8},
			n:    Node{CPUMaxWatts: 500},
			pue:  1,
			want: Impact{},
		},
		{
			name: "node without CPU power adds no CPU power",
			d:    Demand{CPUCores: 8},
			n:    Node{CPUTotalCores: 64},
			pue:  1,
			want: Impact{},
		},
		{
			name: "NaN and infinite node facts count as unknown",
			d:    Demand{CPUCores: 8, GPUs: 1},
			n:    Node{CPUTotalCores: nan, CPUMaxWatts: 500, GPUCount: inf, GPUMaxWattsPerGPU: 400},
			pue:  1.5,
			want: Impact{},
		},
		{
			name: "negative node facts count as unknown",
			d:    Demand{CPUCores: 8, GPUs: 1},
			n:    Node{CPUTotalCores: 64, CPUMaxWatts: -1, GPUCount: -8, GPUMaxWattsPerGPU: 400},
			pue:  1,
			want: Impact{},
		},
		{
			name:        "empty pod adds nothing",
			d:           Demand{},
			n:           debugNode,
			performance: true,
			pue:         1.6,
			want:        Impact{},
		},
		{
			name: "negative demand adds nothing",
			d:    Demand{CPUCores: -4, GPUs: -1},
			n:    debugNode,
			pue:  1,
			want: Impact{},
		},
		{
			// 1 × 16/128 × 700; 0.5 × 2/8 × 3200
			name: "custom coefficients",
			c:    &Coefficients{CPUUtil: 1, GPUUtilStandard: 0.5, GPUUtilPerformance: 1},
			d:    Demand{CPUCores: 16, GPUs: 2},
			n:    debugNode,
			pue:  1,
			want: Impact{CPUWatts: 87.5, GPUWatts: 400, TotalWatts: 487.5},
		},
		{
			name: "zero CPU coefficient switches the CPU term off",
			c:    &Coefficients{CPUUtil: 0, GPUUtilStandard: 0.6, GPUUtilPerformance: 0.9},
			d:    Demand{CPUCores: 16, GPUs: 1},
			n:    debugNode,
			pue:  1,
			want: Impact{GPUWatts: 240, TotalWatts: 240},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultCoefficients()
			if tt.c != nil {
				c = *tt.c
			}
			got := c.Estimate(tt.d, tt.n, tt.performance, tt.pue)
			if !near(got.CPUWatts, tt.want.CPUWatts) || !near(got.GPUWatts, tt.want.GPUWatts) || !near(got.TotalWatts, tt.want.TotalWatts) {
				t.Errorf("Estimate = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestEstimateFeedsSeedHeadroomExample ties the estimate to the extender
// design's scoring example: a 600 W capped node measuring 300 W, and a pod
// adding 50 W, leave a projected headroom of 41.7.
func TestEstimateFeedsSeedHeadroomExample(t *testing.T) {
	im := DefaultCoefficients().Estimate(Demand{CPUCores: 8}, Node{CPUTotalCores: 64, CPUMaxWatts: 500}, false, 1)
	const capped, measured = 600.0, 300.0
	headroom := (capped - (measured + im.TotalWatts)) / capped * 100
	if math.Round(headroom*10)/10 != 41.7 {
		t.Errorf("headroom = %.2f, want 41.7 (pod adds %.2f W, want 50)", headroom, im.TotalWatts)
	}
}

func TestEstimateDoesNotAllocate(t *testing.T) {
	c := DefaultCoefficients()
	d := Demand{CPUCores: 4, GPUs: 1}
	if n := testing.AllocsPerRun(100, func() { _ = c.Estimate(d, debugNode, true, 1.3) }); n != 0 {
		t.Errorf("Estimate: %v allocations per call, want 0", n)
	}
}

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

// BenchmarkEstimate5000Nodes is the extender's work for one /prioritize
// request against a large cluster; the budget is well under 1 ms per op.
func BenchmarkEstimate5000Nodes(b *testing.B) {
	nodes := make([]Node, 5000)
	for i := range nodes {
		nodes[i] = Node{
			CPUTotalCores:     float64(32 + i%4*32),
			CPUMaxWatts:       float64(250 + i%3*225),
			GPUCount:          float64(i % 9),
			GPUMaxWattsPerGPU: 300 + float64(i%2)*400,
		}
	}
	c := DefaultCoefficients()
	d := Demand{CPUCores: 6.5, GPUs: 2}
	b.ReportAllocs()
	var sink float64
	for b.Loop() {
		for i := range nodes {
			sink += c.Estimate(d, nodes[i], true, 1.4).TotalWatts
		}
	}
	_ = sink
}
