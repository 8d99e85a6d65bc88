package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// The eco guard holds an eco target off while a performance pod runs on
// the node, reports it in status, and applies the target again once the
// pod is gone; without the pod list it applies the target and says so.
func TestEcoGuardHoldsEcoOffWhilePerformancePodsRun(t *testing.T) {
	hw, c := &fakeHW{}, &clock{t0}
	var pods []string
	var listErr error
	a := newAgent(hw, c, func(o *Options) {
		o.PerformancePods = func() ([]string, error) { return pods, listErr }
	})
	a.Start(context.Background())
	a.SetDesired(eco(60), 4)

	a.Reconcile()
	if got := hw.last(); got.Profile != joulie.ProfileEco || *got.CPU.PackagePowerCapPctOfMax != 60 {
		t.Fatalf("no performance pod: enforced %+v, want the eco target", got)
	}

	pods = []string{"ml/train", "ml/eval"}
	a.Reconcile()
	got := hw.last()
	if got.Profile != joulie.ProfilePerformance || *got.CPU.PackagePowerCapPctOfMax != 100 || *got.GPU.PowerCap.CapPctOfMax != 100 {
		t.Fatalf("performance pods on the node: enforced %+v, want the performance caps", got)
	}
	s := a.Snapshot()
	if !s.Guard.Refused || s.Spec.Profile != joulie.ProfilePerformance || s.Source != SourceCluster {
		t.Fatalf("snapshot while refusing: guard %+v, spec %s, source %s", s.Guard, s.Spec.Profile, s.Source)
	}
	st := s.ProfileStatus(nil)
	if len(st.Conditions) != 1 || st.Conditions[0].Type != joulie.ConditionEcoRefused || st.Conditions[0].Reason != "PerformancePodRunning" ||
		!strings.Contains(st.Conditions[0].Message, "ml/train (and 1 more)") || st.ObservedGeneration != 4 {
		t.Fatalf("status while refusing: %+v", st)
	}
	since := st.Conditions[0].LastTransitionTime
	c.t = c.t.Add(time.Minute)
	a.Reconcile()
	if st := a.Snapshot().ProfileStatus(nil); st.Conditions[0].LastTransitionTime != since {
		t.Fatalf("the condition's transition time moved while the refusal held: %s, was %s", st.Conditions[0].LastTransitionTime, since)
	}

	pods = nil
	a.Reconcile()
	if got := hw.last(); got.Profile != joulie.ProfileEco || *got.CPU.PackagePowerCapPctOfMax != 60 {
		t.Fatalf("the pods ended: enforced %+v, want the eco target again", got)
	}
	if st := a.Snapshot().ProfileStatus(nil); len(st.Conditions) != 0 {
		t.Fatalf("conditions after the refusal ended: %+v", st.Conditions)
	}

	listErr = errors.New("pods is forbidden")
	a.Reconcile()
	if s := a.Snapshot(); hw.last().Profile != joulie.ProfileEco || !strings.Contains(s.Guard.Message(), "without checking the node's pods: pods is forbidden") {
		t.Fatalf("without the pod list: enforced %s, guard %q", hw.last().Profile, s.Guard.Message())
	}
}

// Only the cluster's eco targets are guarded: a performance target needs
// no check, and the standalone profile is the operator's own.
func TestEcoGuardChecksOnlyTheClustersEcoTargets(t *testing.T) {
	asked := 0
	count := func(o *Options) {
		o.PerformancePods = func() ([]string, error) { asked++; return []string{"ml/train"}, nil }
	}
	hw, c := &fakeHW{}, &clock{t0}
	a := newAgent(hw, c, count)
	a.Start(context.Background())
	a.SetDesired(joulie.NodePowerProfileSpec{Profile: joulie.ProfilePerformance, CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(100.0)}}, 1)
	a.Reconcile()
	if asked != 0 || a.Snapshot().Guard.Refused {
		t.Fatalf("a performance target asked for the pods %d times", asked)
	}
	profile := eco(60)
	hw = &fakeHW{}
	a = newAgent(hw, c, func(o *Options) { count(o); o.Standalone = &profile })
	a.Start(context.Background())
	if asked != 0 || hw.last().Profile != joulie.ProfileEco {
		t.Fatalf("standalone eco: asked %d times, enforced %s", asked, hw.last().Profile)
	}
}
