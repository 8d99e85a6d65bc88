package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/enforce"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// fakeHW records what the agent asks of the hardware. The real hardware
// layer is driven end to end by the daemon tests.
type fakeHW struct {
	enforced []joulie.NodePowerProfileSpec
	restores int
	pending  int
	power    backend.Reading
}

// Enforce records the specs enforced; a nil spec (paused) only measures.
func (f *fakeHW) Enforce(_ time.Time, s *joulie.NodePowerProfileSpec) enforce.Result {
	res := enforce.Result{CPUMode: joulie.BackendRAPL, Power: f.power}
	if s == nil {
		return res
	}
	f.enforced = append(f.enforced, *s)
	r := joulie.ResultApplied
	if s.CPU == nil {
		r = joulie.ResultNone
	}
	res.CPU, res.GPU = joulie.ControlStatus{Backend: joulie.BackendRAPL, Result: r}, joulie.ControlStatus{Backend: joulie.BackendNVML, Result: r}
	return res
}
func (f *fakeHW) Hardware(time.Time) joulie.NodeHardwareStatus { return joulie.NodeHardwareStatus{} }
func (f *fakeHW) PendingOriginals() int                        { return f.pending }
func (f *fakeHW) Restore() error                               { f.restores++; f.pending = 0; return nil }
func (f *fakeHW) Close() error                                 { return nil }

func (f *fakeHW) last() joulie.NodePowerProfileSpec { return f.enforced[len(f.enforced)-1] }

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newAgent(hw *fakeHW, c *clock, mod func(*Options)) *Agent {
	o := Options{Node: "node-a", Interval: time.Second, Failsafe: FailsafeKeep, FailsafeTimeout: 5 * time.Minute,
		Now: c.now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&o)
	}
	return New(hw, o)
}

func eco(pct float64) joulie.NodePowerProfileSpec {
	return joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco,
		CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(pct)},
		GPU: &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(pct)}}}
}

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func TestStandaloneEnforcesTheConfigProfileAndOverrides(t *testing.T) {
	hw, c := &fakeHW{}, &clock{t0}
	profile := eco(60)
	a := newAgent(hw, c, func(o *Options) { o.Standalone = &profile })
	a.Start(context.Background())
	if s := a.Snapshot(); s.Source != SourceStandalone || *hw.last().CPU.PackagePowerCapPctOfMax != 60 {
		t.Fatalf("source %s, enforced %+v", s.Source, hw.last())
	}
	if err := a.SetOverride(ptr.To(eco(40))); err != nil {
		t.Fatal(err)
	}
	a.Reconcile()
	if s := a.Snapshot(); s.Source != SourceOverride || *hw.last().CPU.PackagePowerCapPctOfMax != 40 {
		t.Fatalf("override: source %s, enforced %+v", s.Source, hw.last())
	}
	_ = a.SetOverride(nil)
	a.Reconcile()
	if a.Snapshot().Source != SourceStandalone {
		t.Fatal("clearing the override should return to the config's profile")
	}
}

func TestOverrideIsRefusedInClusterMode(t *testing.T) {
	a := newAgent(&fakeHW{}, &clock{t0}, nil)
	if err := a.SetOverride(ptr.To(eco(40))); !errors.Is(err, ErrNotStandalone) {
		t.Fatalf("err %v", err)
	}
}

func TestClusterTargetAndGeneration(t *testing.T) {
	hw, c := &fakeHW{}, &clock{t0}
	a := newAgent(hw, c, nil)
	a.Start(context.Background())
	if s := a.Snapshot(); s.Source != SourceNone || hw.last().CPU != nil {
		t.Fatalf("before any profile nothing is enforced: %s %+v", s.Source, hw.last())
	}
	a.SetDesired(eco(60), 3)
	a.Reconcile()
	s := a.Snapshot()
	if s.Source != SourceCluster || s.Generation != 3 || s.CPU.Result != joulie.ResultApplied {
		t.Fatalf("snapshot %+v", s)
	}
	st := s.ProfileStatus(nil)
	if st.ObservedGeneration != 3 || st.CPU.Result != joulie.ResultApplied {
		t.Fatalf("status %+v", st)
	}
	a.ClearDesired()
	a.Reconcile()
	if hw.last().CPU != nil || a.Snapshot().Source != SourceNone {
		t.Fatalf("a deleted profile should lift the caps: %+v", hw.last())
	}
}

func TestFailsafeModes(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		wantCPU  *float64 // CPU pct enforced in failsafe; nil = lifted
		restores int
	}{
		{FailsafeKeep, ptr.To(60.0), 0},
		{FailsafePerformance, ptr.To(100.0), 0},
		{FailsafeRestore, nil, 1},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			hw, c := &fakeHW{}, &clock{t0}
			a := newAgent(hw, c, func(o *Options) { o.Failsafe = tc.mode })
			a.Start(context.Background())
			a.SetDesired(eco(60), 1)
			a.Reconcile()
			a.SyncFailed(errors.New("dial tcp 10.0.0.1:6443: connection refused"))
			c.t = c.t.Add(4 * time.Minute)
			a.Reconcile()
			if a.Snapshot().Failsafe.Active {
				t.Fatal("failsafe before its timeout")
			}
			c.t = c.t.Add(2 * time.Minute)
			a.Reconcile()
			s := a.Snapshot()
			if !s.Failsafe.Active || s.Source != SourceFailsafe || s.Failsafe.Mode != tc.mode {
				t.Fatalf("snapshot %+v", s)
			}
			var got *joulie.CPUPowerTarget
			if s.Spec != nil {
				got = s.Spec.CPU
			}
			if (tc.wantCPU == nil) != (got == nil) || got != nil && *got.PackagePowerCapPctOfMax != *tc.wantCPU {
				t.Fatalf("target %+v in failsafe %s", got, tc.mode)
			}
			if hw.restores != tc.restores {
				t.Fatalf("restores %d, want %d", hw.restores, tc.restores)
			}
			// The cluster is back: the target is enforced again.
			a.SetDesired(eco(60), 1)
			a.Reconcile()
			if s := a.Snapshot(); s.Failsafe.Active || s.Source != SourceCluster || *hw.last().CPU.PackagePowerCapPctOfMax != 60 {
				t.Fatalf("after recovery %+v", s)
			}
		})
	}
}

func TestStartRestoresAfterAnUncleanStopUnlessKeepingCaps(t *testing.T) {
	hw := &fakeHW{pending: 3}
	newAgent(hw, &clock{t0}, nil).Start(context.Background())
	if hw.restores != 1 {
		t.Fatalf("restores %d", hw.restores)
	}
	hw = &fakeHW{pending: 3}
	newAgent(hw, &clock{t0}, func(o *Options) { o.KeepCapsOnStop = true }).Start(context.Background())
	if hw.restores != 0 {
		t.Fatalf("keepCapsOnStop restored: %d", hw.restores)
	}
}

func TestStartStopsBeforeTheFirstWriteWhenAStopIsAsked(t *testing.T) {
	hw := &fakeHW{pending: 2}
	profile := eco(60)
	a := newAgent(hw, &clock{t0}, func(o *Options) { o.Standalone = &profile })
	stop := errors.New("signal: terminated")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(stop)
	if err := a.Start(ctx); !errors.Is(err, stop) {
		t.Fatalf("Start after a stop request: %v, want the stop's cause", err)
	}
	if len(hw.enforced) != 0 {
		t.Fatalf("Start enforced %+v although a stop was asked for", hw.enforced)
	}
	// The previous run's originals are still put back: stopping would
	// restore them anyway.
	if hw.restores != 1 {
		t.Fatalf("restores %d, want the unclean stop's originals restored", hw.restores)
	}
}

func TestStopRestoresUnlessKeepingCaps(t *testing.T) {
	hw := &fakeHW{}
	_ = newAgent(hw, &clock{t0}, nil).Stop()
	keep := &fakeHW{}
	_ = newAgent(keep, &clock{t0}, func(o *Options) { o.KeepCapsOnStop = true }).Stop()
	if hw.restores != 1 || keep.restores != 0 {
		t.Fatalf("restores: default %d, keep %d", hw.restores, keep.restores)
	}
}

func TestOperatorRestorePausesUntilTheTargetChanges(t *testing.T) {
	hw, c := &fakeHW{}, &clock{t0}
	a := newAgent(hw, c, nil)
	a.SetDesired(eco(60), 1)
	a.Reconcile()
	n := len(hw.enforced)
	if err := a.RestoreNow(); err != nil {
		t.Fatal(err)
	}
	a.Reconcile()
	if len(hw.enforced) != n || a.Snapshot().Source != SourcePaused {
		t.Fatalf("paused agent enforced again: %d -> %d, source %s", n, len(hw.enforced), a.Snapshot().Source)
	}
	a.SetDesired(eco(50), 2)
	a.Reconcile()
	if a.Snapshot().Source != SourceCluster || *hw.last().CPU.PackagePowerCapPctOfMax != 50 {
		t.Fatal("a new generation should resume enforcement")
	}
}

func TestTransitionTimeHoldsWhileTheResultHolds(t *testing.T) {
	hw, c := &fakeHW{}, &clock{t0}
	a := newAgent(hw, c, nil)
	a.SetDesired(eco(60), 1)
	a.Reconcile()
	first := a.Snapshot().CPU.LastTransitionTime
	c.t = c.t.Add(time.Minute)
	a.Reconcile()
	if got := a.Snapshot().CPU.LastTransitionTime; !got.Equal(&first) {
		t.Fatalf("transition moved from %v to %v with the same result", first, got)
	}
}

func TestShouldPublishPower(t *testing.T) {
	at := func(d time.Duration, w float64) *joulie.MeasuredPower {
		return &joulie.MeasuredPower{NodePowerWatts: w, Time: metav1.NewTime(t0.Add(d))}
	}
	for _, tc := range []struct {
		name      string
		published *joulie.MeasuredPower
		cur       *joulie.MeasuredPower
		want      bool
	}{
		{"first reading", nil, at(0, 500), true},
		{"nothing measured", at(0, 500), nil, false},
		{"same power a second later", at(0, 500), at(time.Second, 520), false},
		{"a minute later", at(0, 500), at(time.Minute, 500), true},
		{"over 10% up", at(0, 500), at(time.Second, 560), true},
		{"over 10% down", at(0, 500), at(time.Second, 440), true},
		{"exactly 10%", at(0, 500), at(time.Second, 550), false},
	} {
		if got := ShouldPublishPower(tc.published, tc.cur); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestProfileStatusKeepsPublishedPowerUntilDue(t *testing.T) {
	published := &joulie.MeasuredPower{NodePowerWatts: 500, Time: metav1.NewTime(t0)}
	s := Snapshot{Generation: 2, LastReconcile: t0.Add(10 * time.Second), Result: enforce.Result{Power: backend.Reading{CPUWatts: 300, HasCPU: true, GPUWatts: 210, HasGPU: true}}}
	st := s.ProfileStatus(published)
	if st.MeasuredPower.NodePowerWatts != 500 || !st.MeasuredPower.Time.Equal(&published.Time) {
		t.Fatalf("a 2%% change 10 s later must not be republished: %+v", st.MeasuredPower)
	}
	s.LastReconcile = t0.Add(time.Minute)
	if st := s.ProfileStatus(published); st.MeasuredPower.NodePowerWatts != 510 || *st.MeasuredPower.GPUPowerWatts != 210 {
		t.Fatalf("due after a minute: %+v", st.MeasuredPower)
	}
}

func TestReconfigureChangesTheStandaloneProfileAndFailsafe(t *testing.T) {
	hw, c := &fakeHW{}, &clock{t0}
	p := eco(60)
	a := newAgent(hw, c, func(o *Options) { o.Standalone = &p })
	a.Start(context.Background())
	np := eco(30)
	a.Reconfigure(Options{Standalone: &np, Failsafe: FailsafeRestore, FailsafeTimeout: time.Minute})
	a.Reconcile()
	if *hw.last().CPU.PackagePowerCapPctOfMax != 30 {
		t.Fatalf("reloaded profile not enforced: %+v", hw.last())
	}
}
