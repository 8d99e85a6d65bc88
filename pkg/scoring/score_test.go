package scoring

import (
	"math"
	"testing"
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/powerest"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// designParams score by the design's formula (headroom mode) with the
// default settings: the tests of that formula use them.
func designParams() *Params {
	return &Params{Mode: ModeHeadroom, Coefficients: powerest.DefaultCoefficients(), StalenessThreshold: 5 * time.Minute}
}

// cpuNode is a 64-core CPU node whose sockets together draw at most
// 500 W: an 8-core pod adds 0.8 × 8/64 × 500 = 50 W to it.
var cpuNode = powerest.Node{CPUTotalCores: 64, CPUMaxWatts: 500}

// measured is a fresh twin with a power measurement.
func measured(class joulie.SchedulableClass, cappedW, measuredW, cooling, trend float64) *Twin {
	return &Twin{
		Class: class, CoolingStress: cooling, PredictedHeadroom: 80,
		Measured: true, Source: joulie.SourceAgent, CappedW: cappedW, MeasuredW: measuredW, TdpW: cappedW * 1.5, TrendWPerMin: trend,
		LastUpdated: now.Add(-30 * time.Second),
	}
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// The design's first worked example: a node capped at 600 W measuring
// 300 W, a pod adding 50 W, cooling stress 20, a flat trend:
// (600 − 350) / 600 × 100 = 41.7, and 41.7 × 0.7 + 80 × 0.15 = 41.2.
func TestWorkedExampleProjectedHeadroom(t *testing.T) {
	p := designParams()
	b := p.Explain(Pod{Demand: powerest.Demand{CPUCores: 8}}, Cluster{}, measured(joulie.ClassPerformance, 600, 300, 20, 0), cpuNode, Fill{}, now)
	if round1(b.MarginalW) != 50 {
		t.Errorf("marginal power %.2f W, want 50", b.MarginalW)
	}
	if round1(b.Headroom) != 41.7 {
		t.Errorf("projected headroom %.2f, want 41.7", b.Headroom)
	}
	if round1(b.Total) != 41.2 {
		t.Errorf("score %.3f, want 41.2 (%+v)", b.Total, b)
	}
	if got := ExtenderPriority(b.Total, 10); got != 4 {
		t.Errorf("extender priority %d, want 4", got)
	}
}

// The design's second worked example: an empty, uncapped, cool eco node
// and a standard pod: 100 × 0.7 + 100 × 0.15 + 0 + 10 = 95.
func TestWorkedExampleIdealEcoNode(t *testing.T) {
	p := designParams()
	b := p.Explain(Pod{}, Cluster{}, measured(joulie.ClassEco, 1000, 0, 0, 0), cpuNode, Fill{}, now)
	if b.Headroom != 100 || b.ProfileBonus != 10 || b.TrendBonus != 0 {
		t.Errorf("terms %+v, want headroom 100, profile bonus 10, trend bonus 0", b)
	}
	if round1(b.Total) != 95 {
		t.Errorf("score %.3f, want 95", b.Total)
	}
	if got := ExtenderPriority(b.Total, 10); got != 10 {
		t.Errorf("extender priority %d, want 10 (9.5 rounds up)", got)
	}
}

// One test per row of the design's summary table, in its order. Filter
// rows are in filter_test.go.
func TestSummaryTableScores(t *testing.T) {
	p := designParams()
	light := Pod{Demand: powerest.Demand{CPUCores: 2}}
	heavy := Pod{Demand: powerest.Demand{CPUCores: 64}}

	t.Run("unknown node scores neutral 50", func(t *testing.T) {
		for _, pod := range []Pod{{}, {Performance: true}, heavy} {
			b := p.Explain(pod, Cluster{}, nil, cpuNode, Fill{}, now)
			if b.Total != 50 || !b.Neutral || b.Stale {
				t.Errorf("pod %+v: %+v, want neutral 50", pod, b)
			}
		}
	})

	t.Run("high headroom, low cooling stress, falling trend scores high", func(t *testing.T) {
		good := p.Score(light, Cluster{}, measured(joulie.ClassPerformance, 1000, 100, 5, -60), cpuNode, Fill{}, now)
		flat := p.Score(light, Cluster{}, measured(joulie.ClassPerformance, 1000, 100, 5, 0), cpuNode, Fill{}, now)
		rising := p.Score(light, Cluster{}, measured(joulie.ClassPerformance, 1000, 100, 5, 60), cpuNode, Fill{}, now)
		if good < 80 || !(good > flat && flat > rising) {
			t.Errorf("falling %.1f, flat %.1f, rising %.1f: want falling ≥ 80 and falling > flat > rising", good, flat, rising)
		}
	})

	t.Run("low headroom: pod would exceed the cap, headroom goes negative", func(t *testing.T) {
		// 0.8 × 64/64 × 500 = 400 W on top of 500 W measured, cap 600 W.
		b := p.Explain(heavy, Cluster{}, measured(joulie.ClassPerformance, 600, 500, 90, 0), cpuNode, Fill{}, now)
		if b.Headroom >= 0 {
			t.Errorf("projected headroom %.1f, want negative", b.Headroom)
		}
		if b.Total != 0 {
			t.Errorf("score %.1f, want 0 after clamping (%+v)", b.Total, b)
		}
	})

	t.Run("standard pod on eco node gets +10", func(t *testing.T) {
		eco := p.Explain(light, Cluster{}, measured(joulie.ClassEco, 600, 300, 20, 0), cpuNode, Fill{}, now)
		perf := p.Explain(light, Cluster{}, measured(joulie.ClassPerformance, 600, 300, 20, 0), cpuNode, Fill{}, now)
		if eco.ProfileBonus != 10 || round1(eco.Total-perf.Total) != 10 {
			t.Errorf("eco %+v, performance %+v: want a 10-point profile bonus", eco, perf)
		}
		perfPod := p.Explain(Pod{Performance: true, Demand: light.Demand}, Cluster{}, measured(joulie.ClassEco, 600, 300, 20, 0), cpuNode, Fill{}, now)
		if perfPod.ProfileBonus != 0 {
			t.Errorf("performance pod got profile bonus %v", perfPod.ProfileBonus)
		}
	})

	t.Run("standard pod on performance node under pressure loses up to 30", func(t *testing.T) {
		twin := measured(joulie.ClassPerformance, 1000, 200, 10, 0)
		idle := p.Explain(light, Cluster{PerfPressure: 0}, twin, cpuNode, Fill{}, now)
		half := p.Explain(light, Cluster{PerfPressure: 50}, twin, cpuNode, Fill{}, now)
		full := p.Explain(light, Cluster{PerfPressure: 100}, twin, cpuNode, Fill{}, now)
		over := p.Explain(light, Cluster{PerfPressure: 250}, twin, cpuNode, Fill{}, now)
		if idle.PressureRelief != 0 || half.PressureRelief != -15 || full.PressureRelief != -30 || over.PressureRelief != -30 {
			t.Errorf("pressure relief at 0/50/100/250: %v %v %v %v, want 0 -15 -30 -30",
				idle.PressureRelief, half.PressureRelief, full.PressureRelief, over.PressureRelief)
		}
		perfPod := p.Explain(Pod{Performance: true}, Cluster{PerfPressure: 100}, twin, cpuNode, Fill{}, now)
		if perfPod.PressureRelief != 0 {
			t.Errorf("performance pod penalized %v on a performance node", perfPod.PressureRelief)
		}
		eco := p.Explain(light, Cluster{PerfPressure: 100}, measured(joulie.ClassEco, 1000, 200, 10, 0), cpuNode, Fill{}, now)
		if eco.PressureRelief != 0 {
			t.Errorf("eco node penalized %v for performance pressure", eco.PressureRelief)
		}
	})

	t.Run("stale or missing twin scores neutral 50", func(t *testing.T) {
		old := measured(joulie.ClassEco, 1000, 0, 0, 0)
		old.LastUpdated = now.Add(-6 * time.Minute)
		never := measured(joulie.ClassEco, 1000, 0, 0, 0)
		never.LastUpdated = time.Time{}
		for name, twin := range map[string]*Twin{"older than 5m": old, "no lastUpdated": never} {
			b := p.Explain(light, Cluster{}, twin, cpuNode, Fill{}, now)
			if b.Total != 50 || !b.Stale {
				t.Errorf("%s: %+v, want stale neutral 50", name, b)
			}
		}
		if b := p.Explain(light, Cluster{}, nil, cpuNode, Fill{}, now); b.Total != 50 || b.Stale {
			t.Errorf("missing twin: %+v, want neutral 50, not stale", b)
		}
	})

	t.Run("heavy pod on a nearly full node scores low, a light pod higher", func(t *testing.T) {
		full := measured(joulie.ClassPerformance, 600, 480, 30, 0)
		h := p.Score(heavy, Cluster{}, full, cpuNode, Fill{}, now)
		l := p.Score(light, Cluster{}, full, cpuNode, Fill{}, now)
		if h > 15 || l <= h+10 {
			t.Errorf("heavy %.1f, light %.1f: want heavy low and light clearly higher", h, l)
		}
	})
}

func TestStalenessThreshold(t *testing.T) {
	p := designParams()
	tests := []struct {
		name  string
		age   time.Duration
		stale bool
	}{
		{"fresh", time.Second, false},
		{"exactly at the threshold", 5 * time.Minute, false},
		{"just past the threshold", 5*time.Minute + time.Millisecond, true},
		{"from the future (clock skew)", -time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			twin := measured(joulie.ClassPerformance, 600, 300, 20, 0)
			twin.LastUpdated = now.Add(-tt.age)
			if got := twin.Stale(now, p.StalenessThreshold); got != tt.stale {
				t.Errorf("Stale = %v, want %v", got, tt.stale)
			}
		})
	}
}

func TestHeadroomFallsBackToThePrediction(t *testing.T) {
	p := designParams()
	tests := []struct {
		name string
		twin Twin
		want float64
	}{
		{"no measurement", Twin{Class: joulie.ClassPerformance, PredictedHeadroom: 60, CoolingStress: 40}, 60*0.7 + 60*0.15},
		{"measurement without a budget", Twin{Class: joulie.ClassPerformance, PredictedHeadroom: 60, CoolingStress: 40, Measured: true, MeasuredW: 100}, 60*0.7 + 60*0.15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.twin.LastUpdated = now
			b := p.Explain(Pod{Demand: powerest.Demand{CPUCores: 64}}, Cluster{}, &tt.twin, cpuNode, Fill{}, now)
			if math.Abs(b.Total-tt.want) > 1e-9 || b.MarginalW != 0 {
				t.Errorf("score %.3f (marginal %v W), want %.3f from the predicted headroom", b.Total, b.MarginalW, tt.want)
			}
		})
	}
}

func TestTrendBonus(t *testing.T) {
	tests := []struct {
		name          string
		node, cluster float64
		want          float64
	}{
		{"flat", 0, 0, 0},
		{"falling at steady state, scale 6", -60, -60, 10},
		{"rising at steady state, scale 6", 30, 100, -5},
		{"falling during a burst, scale 2", -20, -600, 10},
		{"rising during a burst, scale 2", 20, 501, -10},
		{"exactly 500 is steady", 60, 500, -10},
		{"clamped at +25", -1000, 0, 25},
		{"clamped at -25", 1000, 2000, -25},
		{"NaN trend counts as flat", math.NaN(), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TrendBonus(tt.node, tt.cluster); math.Abs(got-tt.want) > 1e-9 || math.Signbit(got) && got == 0 {
				t.Errorf("TrendBonus(%v, %v) = %v, want %v", tt.node, tt.cluster, got, tt.want)
			}
		})
	}
}

func TestClusterSum(t *testing.T) {
	stale := measured(joulie.ClassPerformance, 1000, 1000, 0, 400)
	stale.LastUpdated = now.Add(-time.Hour)
	twins := []*Twin{
		measured(joulie.ClassPerformance, 1000, 800, 0, 300),                      // headroom 20: congestion 80
		measured(joulie.ClassPerformance, 1000, 400, 0, 250),                      // headroom 60: congestion 40
		measured(joulie.ClassEco, 500, 500, 0, -20),                               // eco: trend only
		{Class: joulie.ClassPerformance, PredictedHeadroom: 70, LastUpdated: now}, // unmeasured: left out
		stale, // left out
		nil,   // no twin
	}
	var s ClusterSum
	for _, tw := range twins {
		s.Add(tw, now, 5*time.Minute)
	}
	c := s.Cluster()
	if c.TrendWPerMin != 530 {
		t.Errorf("cluster trend %v, want 530", c.TrendWPerMin)
	}
	if want := (80.0 + 40) / 2; math.Abs(c.PerfPressure-want) > 1e-9 {
		t.Errorf("performance pressure %v, want %v", c.PerfPressure, want)
	}
	if got := (&ClusterSum{}).Cluster(); got != (Cluster{}) {
		t.Errorf("empty cluster %+v, want zero", got)
	}
}

func TestPUEWeighting(t *testing.T) {
	twin := measured(joulie.ClassPerformance, 600, 300, 20, 0)
	twin.PUE = 1.6
	pod := Pod{Demand: powerest.Demand{CPUCores: 8}}
	off := designParams()
	on := designParams()
	on.FacilityMetrics = true
	if b := off.Explain(pod, Cluster{}, twin, cpuNode, Fill{}, now); round1(b.MarginalW) != 50 {
		t.Errorf("facility metrics off: marginal %v W, want 50 (PUE ignored)", b.MarginalW)
	}
	b := on.Explain(pod, Cluster{}, twin, cpuNode, Fill{}, now)
	if round1(b.MarginalW) != 80 {
		t.Errorf("facility metrics on: marginal %v W, want 50 × 1.6 = 80", b.MarginalW)
	}
	if want := (600.0 - 380) / 600 * 100; math.Abs(b.Headroom-want) > 1e-9 {
		t.Errorf("headroom %v, want %v", b.Headroom, want)
	}
	twin.PUE = 0
	if b := on.Explain(pod, Cluster{}, twin, cpuNode, Fill{}, now); round1(b.MarginalW) != 50 {
		t.Errorf("no PUE in the twin: marginal %v W, want 50", b.MarginalW)
	}
}

func TestGPUPodsCostMoreOnPerformanceCoefficient(t *testing.T) {
	p := designParams()
	gpuNode := powerest.Node{CPUTotalCores: 128, CPUMaxWatts: 700, GPUCount: 8, GPUMaxWattsPerGPU: 400}
	twin := measured(joulie.ClassPerformance, 4000, 1000, 20, 0)
	d := powerest.Demand{CPUCores: 4, GPUs: 2}
	std := p.Explain(Pod{Demand: d}, Cluster{}, twin, gpuNode, Fill{}, now)
	perf := p.Explain(Pod{Performance: true, Demand: d}, Cluster{}, twin, gpuNode, Fill{}, now)
	// CPU 0.8 × 4/128 × 700 = 17.5; GPU 0.6 or 0.9 × 2/8 × 3200.
	if round1(std.MarginalW) != 497.5 || round1(perf.MarginalW) != 737.5 {
		t.Errorf("marginal standard %v W, performance %v W; want 497.5 and 737.5", std.MarginalW, perf.MarginalW)
	}
}

func TestBaseScoreIgnoresThePod(t *testing.T) {
	p := designParams()
	twin := measured(joulie.ClassEco, 600, 300, 20, 0)
	// 50 × 0.7 + 80 × 0.15, no profile bonus.
	if got := p.BaseScore(Cluster{PerfPressure: 100}, twin, now); round1(got) != 47 {
		t.Errorf("BaseScore = %v, want 47", got)
	}
	if got := p.BaseScore(Cluster{}, nil, now); got != 50 {
		t.Errorf("BaseScore without twin = %v, want 50", got)
	}
}

func TestScoreIsAlwaysWithinRange(t *testing.T) {
	for _, mode := range []Mode{ModeHeadroom, ModePack} {
		t.Run(string(mode), func(t *testing.T) { testScoreWithinRange(t, mode) })
	}
}

func testScoreWithinRange(t *testing.T, mode Mode) {
	p := designParams()
	p.Mode = mode
	p.FacilityMetrics = true
	inf := math.Inf(1)
	odd := []Twin{
		{Class: joulie.ClassPerformance, PredictedHeadroom: 500, CoolingStress: -300},
		{Class: joulie.ClassEco, PredictedHeadroom: -500, CoolingStress: 500},
		{Class: joulie.ClassEco, Measured: true, CappedW: 1, MeasuredW: 1e9, TrendWPerMin: -inf},
		{Class: joulie.ClassPerformance, Measured: true, CappedW: inf, MeasuredW: 5, PUE: inf, PredictedHeadroom: math.NaN()},
		{Class: "unknown", Measured: true, CappedW: 100, MeasuredW: -1e9, CoolingStress: math.NaN()},
	}
	for i := range odd {
		odd[i].LastUpdated = now
		for _, pod := range []Pod{{}, {Demand: powerest.Demand{GPUs: 1}}, {Performance: true, Demand: powerest.Demand{CPUCores: 1e9, GPUs: 1e9}}} {
			for _, c := range []Cluster{{}, {TrendWPerMin: math.NaN(), PerfPressure: inf}} {
				for _, f := range []Fill{{}, {AllocatableCPU: 1, RequestedCPU: 1e9}, {AllocatableCPU: inf, RequestedCPU: inf, AllocatableGPUs: math.NaN()}, {AllocatableCPU: 64, RequestedCPU: -1e9}} {
					got := p.Score(pod, c, &odd[i], cpuNode, f, now)
					if !(got >= 0 && got <= 100) {
						t.Errorf("twin %+v, pod %+v, cluster %+v, fill %+v: score %v outside 0..100", odd[i], pod, c, f, got)
					}
					if pr := ExtenderPriority(got, 10); pr < 0 || pr > 10 {
						t.Errorf("priority %d outside 0..10", pr)
					}
				}
			}
		}
	}
}

func TestExtenderPriority(t *testing.T) {
	tests := []struct {
		score float64
		want  int64
	}{
		{0, 0}, {4.9, 0}, {5, 1}, {41.2, 4}, {50, 5}, {95, 10}, {100, 10}, {-3, 0}, {250, 10}, {math.NaN(), 5},
	}
	for _, tt := range tests {
		if got := ExtenderPriority(tt.score, 10); got != tt.want {
			t.Errorf("ExtenderPriority(%v) = %d, want %d", tt.score, got, tt.want)
		}
	}
}

func TestScoreDoesNotAllocate(t *testing.T) {
	for _, mode := range []Mode{ModeHeadroom, ModePack} {
		p := designParams()
		p.Mode = mode
		twin := measured(joulie.ClassPerformance, 600, 300, 20, 5)
		pod := Pod{Demand: powerest.Demand{CPUCores: 8, GPUs: 1}}
		f := Fill{AllocatableCPU: 64, RequestedCPU: 8, AllocatableGPUs: 4, RequestedGPUs: 1}
		if n := testing.AllocsPerRun(100, func() { _ = p.Score(pod, Cluster{PerfPressure: 30}, twin, cpuNode, f, now) }); n != 0 {
			t.Errorf("%s: Score allocates %v times per call", mode, n)
		}
	}
}

// BenchmarkScore5000 is the scoring part of one prioritize request for a
// standard pod over 5,000 nodes, in each mode.
func BenchmarkScore5000(b *testing.B) {
	twins := make([]Twin, 5000)
	fills := make([]Fill, 5000)
	for i := range twins {
		twins[i] = *measured(joulie.ClassPerformance, 4000, float64(500+i%3000), float64(i%70), float64(i%41-20))
		fills[i] = Fill{AllocatableCPU: 190, RequestedCPU: float64(i % 190), AllocatableGPUs: 8, RequestedGPUs: float64(i % 8)}
	}
	hw := powerest.Node{CPUTotalCores: 192, CPUMaxWatts: 720, GPUCount: 8, GPUMaxWattsPerGPU: 700}
	pod := Pod{Demand: powerest.Demand{CPUCores: 16, GPUs: 2}}
	for _, mode := range []Mode{ModeHeadroom, ModePack} {
		b.Run(string(mode), func(b *testing.B) {
			p := designParams()
			p.Mode = mode
			var sink int64
			for b.Loop() {
				var s ClusterSum
				for i := range twins {
					s.Add(&twins[i], now, p.StalenessThreshold)
				}
				batch := p.Batch(pod, s.Cluster(), now)
				for i := range twins {
					sink += ExtenderPriority(batch.Score(&twins[i], hw, fills[i]), 10)
				}
			}
			_ = sink
		})
	}
}

// Each source of the twin's powerMeasurement: agent, Kepler and the
// controller's utilization model stand for the node's draw; static is the
// node's capped budget in the measured field, which the extender treats as
// no measurement: the twin's predicted headroom, no trend bonus, and left
// out of the performance pressure and the cluster trend.
func TestPowerMeasurementSources(t *testing.T) {
	p := designParams()
	pod := Pod{Demand: powerest.Demand{CPUCores: 8}} // adds 50 W on cpuNode
	tests := []struct {
		source     joulie.MeasurementSource
		measuredW  float64
		headroom   float64 // projected, with the pod
		pressure   float64 // of a cluster of this one performance node
		trend      float64 // cluster trend
		trendBonus float64
	}{
		// (600 − 350) / 600 × 100; congestion 100 − 50; −clamp(12/6).
		{joulie.SourceAgent, 300, 250.0 / 6, 50, 12, -2},
		{joulie.SourceKepler, 300, 250.0 / 6, 50, 12, -2},
		{joulie.SourceUtilization, 300, 250.0 / 6, 50, 12, -2},
		// The controller writes the budget as measured power: without the
		// fallback every such node had no headroom and was 100% congested.
		{joulie.SourceStatic, 600, 80, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(string(tt.source), func(t *testing.T) {
			tw := measured(joulie.ClassPerformance, 600, tt.measuredW, 20, 12)
			tw.Source = tt.source
			var sum ClusterSum
			sum.Add(tw, now, p.StalenessThreshold)
			c := sum.Cluster()
			if math.Abs(c.PerfPressure-tt.pressure) > 1e-9 || c.TrendWPerMin != tt.trend {
				t.Errorf("cluster %+v; want perfPressure %v, trend %v", c, tt.pressure, tt.trend)
			}
			b := p.Explain(pod, Cluster{}, tw, cpuNode, Fill{}, now)
			if math.Abs(b.Headroom-tt.headroom) > 1e-9 || b.TrendBonus != tt.trendBonus {
				t.Errorf("headroom %v, trend bonus %v; want %v, %v (%+v)", b.Headroom, b.TrendBonus, tt.headroom, tt.trendBonus, b)
			}
			if want := tt.headroom*0.7 + 80*0.15 + tt.trendBonus; math.Abs(b.Total-want) > 1e-9 {
				t.Errorf("score %v, want %v", b.Total, want)
			}
		})
	}
}
