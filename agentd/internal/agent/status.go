package agent

import (
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/powerpub"
)

// newTime is t as the API stores it: UTC, whole seconds.
func newTime(t time.Time) metav1.Time { return metav1.NewTime(t.UTC().Truncate(time.Second)) }

// transition keeps the previous transition time while the result holds.
func transition(prev, cur joulie.ControlStatus, now time.Time) metav1.Time {
	if prev.Result == cur.Result && !prev.LastTransitionTime.IsZero() {
		return prev.LastTransitionTime
	}
	return newTime(now)
}

// MeasuredPower turns a snapshot's reading into the API's form; nil when
// nothing was measured.
func (s Snapshot) MeasuredPower() *joulie.MeasuredPower {
	if !s.Power.HasCPU && !s.Power.HasGPU {
		return nil
	}
	m := &joulie.MeasuredPower{Time: newTime(s.LastReconcile)}
	if s.Power.HasCPU {
		m.CPUPowerWatts = ptr.To(round1(s.Power.CPUWatts))
		m.NodePowerWatts += s.Power.CPUWatts
	}
	if s.Power.HasGPU {
		m.GPUPowerWatts = ptr.To(round1(s.Power.GPUWatts))
		m.NodePowerWatts += s.Power.GPUWatts
	}
	m.NodePowerWatts = round1(m.NodePowerWatts)
	return m
}

// ShouldPublishPower decides whether a new reading replaces the published
// one, by the rule of pkg/powerpub: at most once a minute, or sooner on a
// change of more than 10% (SPEC.md), never every tick.
func ShouldPublishPower(published, cur *joulie.MeasuredPower) bool {
	switch {
	case cur == nil:
		return false
	case published == nil:
		return true
	}
	return powerpub.Due(published.Time.Time, cur.Time.Time, published.NodePowerWatts, cur.NodePowerWatts)
}

// ProfileStatus is the NodePowerProfile status to report: the snapshot's
// results, and the measured power when it is due (else the one already
// published, so a status write does not churn it).
func (s Snapshot) ProfileStatus(published *joulie.MeasuredPower) joulie.NodePowerProfileStatus {
	st := joulie.NodePowerProfileStatus{ObservedGeneration: s.Generation, PowerState: s.PowerState()}
	if p := s.Park; p.Reason != "" {
		c := metav1.Condition{Type: ConditionParked, Status: metav1.ConditionFalse, ObservedGeneration: s.Generation,
			Reason: p.Reason, Message: p.Message, LastTransitionTime: newTime(p.At)}
		if p.Parked {
			c.Status = metav1.ConditionTrue
		}
		st.Conditions = []metav1.Condition{c}
	}
	if c := s.ecoCondition(); c != nil {
		st.Conditions = append(st.Conditions, *c)
	}
	cpu, gpu := s.CPU, s.GPU
	st.CPU, st.GPU = &cpu, &gpu
	if cur := s.MeasuredPower(); ShouldPublishPower(published, cur) {
		st.MeasuredPower = cur
	} else if published != nil {
		st.MeasuredPower = published.DeepCopy()
	}
	return st
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
