package daemon

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/localapi"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// apiAdapter serves the agent on the local socket.
type apiAdapter struct{ d *Daemon }

func (a apiAdapter) Status() localapi.Status {
	s := a.d.agent.Snapshot()
	cpu, gpu := s.CPU, s.GPU
	st := localapi.Status{
		Node: s.Node, Version: s.Version, Standalone: s.Standalone, Source: localapi.ProfileSource(s.Source),
		ObservedGeneration: s.Generation, CPUMode: s.CPUMode, CPU: &cpu, GPU: &gpu,
		MeasuredPower: s.MeasuredPower(), SyncError: s.SyncError, OriginalsRecorded: a.d.hw.PendingOriginals(),
		Failsafe: localapi.FailsafeState{Active: s.Failsafe.Active, Mode: s.Failsafe.Mode, Reason: s.Failsafe.Reason, Since: timePtr(s.Failsafe.Since)},
		LastSync: timePtr(s.LastSync), EcoGuard: s.Guard.Message(),
	}
	if s.Spec != nil {
		st.Profile = s.Spec.Profile
		if s.Spec.CPU != nil {
			st.CPUCapReason = s.Spec.CPU.Reason
		}
		if s.Spec.GPU != nil {
			st.GPUCapReason = s.Spec.GPU.Reason
		}
	}
	if !s.Standalone {
		ps := s.ProfileStatus(nil)
		st.PowerState, st.Conditions = ps.PowerState, ps.Conditions
	}
	for _, w := range s.WakeOnLAN {
		if w.Listed {
			st.WakeOnLAN = append(st.WakeOnLAN, localapi.WakeOnLANTarget{MAC: w.MAC, PacketsSent: w.Packets, Errors: w.Errors,
				LastSent: timePtr(w.LastSent), LastError: w.LastError})
		}
	}
	return st
}

func (a apiAdapter) Hardware() joulie.NodeHardwareStatus { return a.d.agent.HardwareStatus() }

func (a apiAdapter) Pods() localapi.PodsReport { return a.d.podsReport() }

func (a apiAdapter) Profile() localapi.ProfileState {
	s := a.d.agent.Snapshot()
	p := localapi.ProfileState{Node: s.Node, Standalone: s.Standalone, Source: localapi.ProfileSource(s.Source), Generation: s.Generation}
	if s.Spec != nil {
		p.Spec = *s.Spec
	}
	return p
}

func (a apiAdapter) SetProfile(spec joulie.NodePowerProfileSpec) error {
	return mapErr(a.d.agent.SetOverride(&spec))
}

func (a apiAdapter) ClearProfile() error { return mapErr(a.d.agent.SetOverride(nil)) }

func (a apiAdapter) Restore() (localapi.RestoreReport, error) {
	before := a.d.hw.PendingOriginals()
	err := a.d.agent.RestoreNow()
	kept := a.d.hw.PendingOriginals()
	r := localapi.RestoreReport{Restored: before - kept, Kept: kept,
		Message: "enforcement is paused until the target changes (a new profile, joulie-agentctl profile set, or a reload)"}
	if err != nil {
		r.Error = err.Error()
	}
	return r, err
}

func mapErr(err error) error {
	if errors.Is(err, agent.ErrNotStandalone) {
		return localapi.ErrNotStandalone
	}
	return err
}

func timePtr(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &mt
}
