package nvml

import (
	"testing"

	"joulie.io/joulie/agentd/internal/nvml/nvmltest"
)

// BenchmarkSteadyState is one reconcile tick on a capped DGX H100 with
// nothing to change: enumerate, then ask for the cap already in force on
// each GPU. Allocations come from the result slice, the bus id strings
// and go-nvml's mock recording its calls.
func BenchmarkSteadyState(b *testing.B) {
	h := nvmltest.NewDGX(b)
	be, _ := newBackendOn(b, h)
	for i := range 8 {
		if _, err := be.SetCap(i, 420); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		gpus, err := be.GPUs()
		if err != nil {
			b.Fatal(err)
		}
		for _, g := range gpus {
			if _, err := be.SetCap(g.Index, 420); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	for i, g := range h.GPUs {
		if n := g.SetCount(); n != 1 {
			b.Fatalf("GPU %d written %d times, want only the initial cap", i, n)
		}
	}
}
