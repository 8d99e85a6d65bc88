package ecocap

import (
	"math"
	"strings"
	"testing"
)

// epyc is the benchmark's CPU node as the catalog sees it: 2 × EPYC 9654,
// 400 W cap maximum and 64.8 W idle per package, eco cap 60% (480 W).
func epyc(draw Draw) CPU {
	return CPU{Sockets: 2, MaxWattsPerSocket: 400, IdleWattsPerSocket: 64.8, FloorPct: 60, Draw: draw}
}

func watts(w float64) Draw { return Draw{Watts: w, Known: true} }

func TestChooseCPU(t *testing.T) {
	tests := []struct {
		name   string
		in     CPU
		pct    float64
		kind   Kind
		reason string
	}{
		{name: "lightly loaded node: no cap", in: epyc(watts(310)),
			kind: KindNotBinding, reason: "uncapped: draw under the 480 W eco cap"},
		{name: "draw exactly at the eco cap does not bind", in: epyc(watts(480)), kind: KindNotBinding},
		{name: "eco cap binds but capping would not pay", in: epyc(watts(515)), kind: KindNotPaying},
		// 129.6 + 1.046 × 129.6 / 0.338 = 530.7 W of 800: 66.3%, up to 67.
		{name: "saturated node: the optimum", in: epyc(watts(790)), pct: 67, kind: KindOptimum,
			reason: "capped at 67%: energy optimum for standard work"},
		{name: "saturated node, eco cap above the optimum: the eco floor",
			in: func() CPU { c := epyc(watts(790)); c.FloorPct = 75; return c }(), pct: 75, kind: KindFloor,
			reason: "capped at 75%: eco cap; the energy optimum lies deeper"},
		{name: "performance pod on the node: uncapped",
			in: func() CPU { c := epyc(watts(790)); c.Performance = true; return c }(), kind: KindPerformance,
			reason: "uncapped: performance pods on the node"},
		{name: "a measurement held at the cap in force keeps the cap",
			in: epyc(Draw{Watts: 536, Known: true, AtLeast: true}), pct: 67, kind: KindOptimum},
		{name: "a measurement held at exactly the cap in force keeps it",
			in: epyc(Draw{Watts: 0.67 * 800, Known: true, AtLeast: true}), pct: 67, kind: KindOptimum},
		// 533 W is above the 530.7 W optimum but not above 67% (536 W),
		// the cap it rounds to, which would not bind.
		{name: "draw between the optimum and its rounded cap: uncapped", in: epyc(watts(533)), kind: KindNotPaying},
		{name: "unknown draw: the eco cap", in: epyc(Draw{}), pct: 60, kind: KindUnknown,
			reason: "capped at 60%: eco cap; the draw is unknown"},
		{name: "unknown idle: the eco cap where it binds",
			in: func() CPU { c := epyc(watts(790)); c.IdleWattsPerSocket = 0; return c }(), pct: 60, kind: KindUnknown},
		{name: "unknown idle, draw under the cap: uncapped",
			in: func() CPU { c := epyc(watts(300)); c.IdleWattsPerSocket = 0; return c }(), kind: KindNotBinding},
		{name: "unknown maximum: the eco cap",
			in: func() CPU { c := epyc(watts(790)); c.MaxWattsPerSocket = 0; return c }(), pct: 60, kind: KindUnknown},
		// On a GPU node the busy GPUs wait for a slowed host: 3,000 W of
		// them put the optimum far above the packages' maximum.
		{name: "host of busy GPUs: uncapped",
			in: func() CPU { c := epyc(watts(790)); c.OtherWatts = 3000; return c }(), kind: KindNotPaying},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChooseCPU(tt.in)
			if got.PctOfMax != tt.pct || got.Kind != tt.kind || (tt.reason != "" && got.Reason != tt.reason) {
				t.Errorf("ChooseCPU = %+v, want %v%% %s %q", got, tt.pct, tt.kind, tt.reason)
			}
			if got.Capped() != (tt.pct > 0) || got.Reason == "" {
				t.Errorf("ChooseCPU = %+v: Capped() = %v", got, got.Capped())
			}
		})
	}
}

// h100 is the benchmark's GPU node: 8 × H100 SXM (700 W, 70 W idle), eco
// cap 60% (420 W), its host drawing 300 W.
func h100(busy, drawPerBusy float64) GPU {
	return GPU{Count: 8, MaxWatts: 700, IdleWatts: 70, FloorPct: 60, Busy: busy,
		Draw: watts(busy*drawPerBusy + (8-busy)*70), HostWatts: 300}
}

func TestChooseGPU(t *testing.T) {
	tests := []struct {
		name string
		in   GPU
		pct  float64
		kind Kind
	}{
		{name: "no GPU requested", in: h100(0, 0), kind: KindNoWork},
		{name: "light GPU work stays under the eco cap", in: h100(4, 259), kind: KindNotBinding},
		// One busy GPU carries the whole node's idle: 70 + 0.4497 × 860 =
		// 456.7 W, 65.2% up to 66%.
		{name: "one busy GPU: the optimum", in: h100(1, 490), pct: 66, kind: KindOptimum},
		{name: "one busy GPU drawing less than the optimum", in: h100(1, 440), kind: KindNotPaying},
		{name: "two busy GPUs: the eco floor", in: h100(2, 490), pct: 60, kind: KindFloor},
		{name: "saturated GPU node: the eco floor", in: h100(8, 700), pct: 60, kind: KindFloor},
		{name: "performance pod on the node",
			in: func() GPU { g := h100(8, 700); g.Performance = true; return g }(), kind: KindPerformance},
		{name: "unknown draw", in: func() GPU { g := h100(8, 700); g.Draw = Draw{}; return g }(), pct: 60, kind: KindUnknown},
		{name: "a request for more GPUs than the node has counts the node",
			in: func() GPU { g := h100(8, 700); g.Busy = 12; return g }(), pct: 60, kind: KindFloor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChooseGPU(tt.in)
			if got.PctOfMax != tt.pct || got.Kind != tt.kind {
				t.Errorf("ChooseGPU = %+v, want %v%% %s", got, tt.pct, tt.kind)
			}
		})
	}
	if r := ChooseGPU(h100(4, 259)).Reason; r != "uncapped: draw under the 420 W eco cap per GPU" {
		t.Errorf("reason %q", r)
	}
}

// Over a sweep of draws, idles and floors, a chosen cap always binds,
// is never deeper than the eco cap nor than the optimum, and leaves the
// work using less energy than no cap on the model's own curve.
func TestChosenCapsBindAndPay(t *testing.T) {
	c := CPUStandard()
	for _, idle := range []float64{20, 64.8, 120, 200} {
		for _, floorPct := range []float64{40, 50, 60, 70, 80, 90} {
			for draw := 2 * idle; draw <= 800; draw += 7 {
				in := CPU{Sockets: 2, MaxWattsPerSocket: 400, IdleWattsPerSocket: idle, FloorPct: floorPct, Draw: watts(draw)}
				ch := ChooseCPU(in)
				if !ch.Capped() {
					continue
				}
				limit := ch.PctOfMax / 100 * 800
				if ch.PctOfMax < floorPct || limit >= draw || limit < c.Optimal(2*idle, 2*idle)-1e-9 {
					t.Fatalf("idle %v floor %v draw %v: %+v (limit %.1f W, optimum %.1f W)", idle, floorPct, draw, ch, limit, c.Optimal(2*idle, 2*idle))
				}
				dyn := draw - 2*idle
				r := math.Pow((limit-2*idle)/dyn, 1/c.K)
				if c.EnergyPerWork(r, 2*idle, dyn) >= c.EnergyPerWork(1, 2*idle, dyn) {
					t.Fatalf("idle %v floor %v draw %v: the %v%% cap does not pay", idle, floorPct, draw, ch.PctOfMax)
				}
				if !strings.HasPrefix(ch.Reason, "capped at ") {
					t.Fatalf("reason %q", ch.Reason)
				}
			}
		}
	}
}
