package demo

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"joulie.io/joulie/test/demo/demoreport"
)

func sampleFrame(elapsed time.Duration) frame {
	return frame{
		Run: demoreport.RunJoulie, Elapsed: elapsed, Duration: 5 * time.Minute, Submitted: 40, Jobs: 300, EnergyJ: 123456,
		Obs: demoreport.Observation{
			PowerW: 12345, EnergyJ: 999999, Pending: 3, Running: 30, Done: 7,
			Nodes: []demoreport.NodeState{
				{Name: "cpu-epyc-0", Family: "2x EPYC 9654", Path: "pool", Profile: demoreport.ProfilePerformance, CPUCapPct: 100, GPUCapPct: 100, Watts: 800, RunningPerf: 4, RunningStd: 2},
				{Name: "gpu-h100-0", Family: "8x H100", Path: "daemon", Profile: demoreport.ProfileEco, CPUCapPct: 60, GPUCapPct: 60, Watts: 3100, RunningStd: 5},
				{Name: "gpu-mi300x-0", Family: "8x MI300X", Path: "pool", Profile: demoreport.ProfileEco, Draining: true, CPUCapPct: 60, GPUCapPct: 60, Watts: 2500, RunningPerf: 1},
				{Name: "cpu-epyc-1", Family: "2x EPYC 9654", Path: "pool", Profile: demoreport.ProfilePerformance, CPUCapPct: 100, GPUCapPct: 100, Watts: 9.75,
					PowerState: demoreport.StateParked, Host: "off"},
				{Name: "cpu-epyc-2", Family: "2x EPYC 9654", Path: "pool", Profile: demoreport.ProfilePerformance, CPUCapPct: 100, GPUCapPct: 100, Watts: 125,
					PowerState: demoreport.StateWaking, Host: "booting", BootPct: 40},
			},
		},
	}
}

func TestLiveViewRedrawsATableOnATerminal(t *testing.T) {
	var out bytes.Buffer
	v := &liveView{w: &out, terminal: true, plainEvery: 10 * time.Second, header: []string{"  chart controller.policy.reconcileInterval=5s"}}
	v.draw(sampleFrame(3 * time.Second))
	v.draw(sampleFrame(4 * time.Second))
	got := out.String()
	if n := strings.Count(got, "\x1b[H\x1b[2J"); n != 2 {
		t.Errorf("%d screen clears for two frames, want 2", n)
	}
	last := got[strings.LastIndex(got, "\x1b[H\x1b[2J"):]
	for _, want := range []string{
		"reconcileInterval=5s",
		"run joulie   4s of 5m0s",
		"gpu-h100-0     8x H100            daemon \x1b[32meco         \x1b[0m awake                60%     60%      3100      0      5",
		"cpu-epyc-0     2x EPYC 9654       pool   \x1b[31mperformance \x1b[0m awake                  -       -       800      4      2",
		"cpu-epyc-1     2x EPYC 9654       pool   \x1b[31mperformance \x1b[0m parked (off)           -       -        10      0      0",
		"cpu-epyc-2     2x EPYC 9654       pool   \x1b[31mperformance \x1b[0m booting  40%           -       -       125      0      0",
		"nodes per power state: awake 3, parked 1, booting 1",
		"\x1b[33mdraining",
		"power now 12.3 kW   energy so far 123 kJ",
		"pods: pending 3, running 30, done 7 (submitted 40 of 300)",
		"performance pods on eco nodes: 0",
	} {
		if !strings.Contains(last, want) {
			t.Errorf("the frame lacks %q:\n%s", want, last)
		}
	}
}

func TestLiveViewPrintsPlainLinesWhenNotATerminal(t *testing.T) {
	var out bytes.Buffer
	v := &liveView{w: &out, terminal: false, plainEvery: 10 * time.Second}
	for s := range 26 {
		v.draw(sampleFrame(time.Duration(s) * time.Second))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines over 25 s at one per 10 s, want 3 (0, 10, 20 s):\n%s", len(lines), out.String())
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Errorf("plain output carries terminal escapes: %q", out.String())
	}
	// The next run starts its lines afresh.
	f := sampleFrame(2 * time.Second)
	f.Run = demoreport.RunBaseline
	v.draw(f)
	if !strings.Contains(out.String(), "[without-joulie    2s]") {
		t.Errorf("the second run's first frame printed no line:\n%s", out.String())
	}
	want := "[joulie   10s] power 12.3 kW, energy 123 kJ, pods pending 3 running 30 done 7 (submitted 40 of 300), of 5 nodes 1 eco (1 capped) and 1 draining, power states awake 3, parked 1, booting 1, performance pods on eco nodes 0"
	if lines[1] != want {
		t.Errorf("line\n%s\nwant\n%s", lines[1], want)
	}
}

// A performance pod on an eco node is what Joulie must prevent; the view
// counts it where the operator looks.
func TestLiveViewCountsPerformancePodsOnEcoNodes(t *testing.T) {
	f := sampleFrame(time.Second)
	f.Obs.Nodes[1].RunningPerf = 2
	if got := table(f); !strings.Contains(got, "performance pods on eco nodes: 2") {
		t.Errorf("two performance pods on an eco node are not counted:\n%s", got)
	}
}
