package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/sim"
	"joulie.io/joulie/test/energy/workload"
)

// TestProgressLineAndETA: a run's share is its simulated time over its
// span, whatever share of its jobs it has completed; the jobs figure is
// shown beside it.
func TestProgressLineAndETA(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	p := newProgress(&buf, true, 4, now)
	a := p.start(sim.ArmDefault, 0.4, 1, 10*time.Hour)
	clock = clock.Add(10 * time.Second)
	p.finish(a)
	b := p.start(sim.ArmBinPack, 0.6, 1, 3*time.Hour)
	clock = clock.Add(20 * time.Second)
	p.update(b, 90*time.Minute, 0.9)
	// Half of b's span and 1.5 of 4 runs in 30 s: 2.5 left take 50 s
	// more. The 90% of jobs done does not count.
	want := "\r[1/4 runs done, ETA 50s] b-binpack at level 0.6, seed 1: 1h30m of ~3h00m (50%, 90% of jobs done)\x1b[K"
	if got := buf.String(); !strings.HasSuffix(got, want) {
		t.Errorf("terminal progress %q, want it to end with %q", got, want)
	}

	buf.Reset()
	p = newProgress(&buf, false, 2, now)
	c := p.start(sim.ArmOracle, 0, 3, 10*time.Hour) // a trace: no level
	p.update(c, time.Hour, 0.5)                     // the first update is shown at once
	clock = clock.Add(time.Second)
	p.update(c, 90*time.Minute, 0.8) // within plainEvery of the last line: not shown
	clock = clock.Add(plainEvery)
	p.update(c, 2*time.Hour, 0.9)
	p.finish(c) // 16 s for a tenth of the work: 144 s left
	p.done()
	want = "[0/2 runs done, ETA unknown] f-oracle, seed 3: 1h00m of ~10h00m (10%, 50% of jobs done)\n" +
		"[0/2 runs done, ETA 2m24s] f-oracle, seed 3: 2h00m of ~10h00m (20%, 90% of jobs done)\ndone: f-oracle, seed 3 (1 of 2 runs)\n"
	if got := buf.String(); got != want {
		t.Errorf("plain progress %q, want %q", got, want)
	}
}

func TestRunShareIsSimulatedTimeOverTheSpan(t *testing.T) {
	// 20 jobs, the last arriving at 10 h; work 1 h to 20 h, whose 95th
	// percentile (the 19th of 20, rounding down) is 19 h.
	var jobs []workload.Job
	for i := range 20 {
		jobs = append(jobs, workload.Job{Arrival: time.Duration(i) * 10 * time.Hour / 19, Work: time.Duration(20-i) * time.Hour})
	}
	if got, want := runSpan(jobs), 29*time.Hour; got != want {
		t.Errorf("span %v, want %v", got, want)
	}
	if got := runSpan(nil); got != 0 {
		t.Errorf("span of no jobs %v", got)
	}
	for _, tc := range []struct {
		r    runState
		want float64
	}{
		{runState{span: 10 * time.Hour, simulated: 2 * time.Hour, jobs: 0.99}, 0.2},
		{runState{span: 10 * time.Hour, simulated: 30 * time.Hour}, 1},
		{runState{simulated: time.Hour}, 0},
	} {
		if got := tc.r.share(); got != tc.want {
			t.Errorf("%+v: share %v, want %v", tc.r, got, tc.want)
		}
	}
}
