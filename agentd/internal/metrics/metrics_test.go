package metrics

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/utils/ptr"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/dvfs"
	"joulie.io/joulie/agentd/internal/enforce"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func snapshot() agent.Snapshot {
	return agent.Snapshot{
		Node: "node-a", Version: "v0.1.0", Result: enforce.Result{CPUMode: joulie.BackendDVFS,
			DVFS: &dvfs.Decision{ThrottlePct: 25, AboveCount: 1, ThrottleUps: 5, ThrottleDowns: 2},
			CPU: joulie.ControlStatus{Backend: joulie.BackendDVFS, Result: joulie.ResultApplied,
				Devices: []joulie.DeviceControlStatus{{ID: "package-0", Result: joulie.ResultApplied, AppliedCapWatts: ptr.To(180.0)}}},
			GPU: joulie.ControlStatus{Backend: joulie.BackendNVML, Result: joulie.ResultError, Devices: []joulie.DeviceControlStatus{
				{ID: "0", Result: joulie.ResultApplied, AppliedCapWatts: ptr.To(420.0)}, {ID: "1", Result: joulie.ResultError}}},
			Power: backend.Reading{CPUWatts: 310, HasCPU: true, GPUWatts: 800, HasGPU: true}},
		LastReconcile: time.Unix(1_800_000_000, 0), LastSync: time.Unix(1_799_999_990, 0), SyncError: "connection refused",
		Failsafe: agent.FailsafeState{Active: true, Mode: "keep"},
	}
}

// The agent seed names two gauges joulie_dvfs_{above,below}_trip_count;
// the linter reserves "_count" for histograms and summaries. The seed's
// names are the contract dashboards use, so they are the only findings
// allowed.
var seedNamedExceptions = map[string]bool{"joulie_dvfs_above_trip_count": true, "joulie_dvfs_below_trip_count": true}

func TestMetricsPassLint(t *testing.T) {
	c := NewCollector(func() []agent.Snapshot { return []agent.Snapshot{snapshot()} })
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if seedNamedExceptions[p.Metric] && strings.Contains(p.Text, `"_count" suffix`) {
			continue
		}
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestMetricsValues(t *testing.T) {
	c := NewCollector(func() []agent.Snapshot { return []agent.Snapshot{snapshot()} })
	want := `
# HELP joulie_backend_mode 1 for the CPU control backend in force (none, rapl, amdsmi, dvfs, http), 0 for the others.
# TYPE joulie_backend_mode gauge
joulie_backend_mode{mode="amdsmi",node="node-a"} 0
joulie_backend_mode{mode="dvfs",node="node-a"} 1
joulie_backend_mode{mode="http",node="node-a"} 0
joulie_backend_mode{mode="none",node="node-a"} 0
joulie_backend_mode{mode="rapl",node="node-a"} 0
# HELP joulie_dvfs_actions_total DVFS throttle changes, by direction.
# TYPE joulie_dvfs_actions_total counter
joulie_dvfs_actions_total{action="throttle_down",node="node-a"} 2
joulie_dvfs_actions_total{action="throttle_up",node="node-a"} 5
# HELP joulie_dvfs_throttle_pct Share of CPU cores the DVFS fallback holds at reduced frequency, in percent.
# TYPE joulie_dvfs_throttle_pct gauge
joulie_dvfs_throttle_pct{node="node-a"} 25
# HELP joulie_gpu_control_result 1 for the outcome of the last cap on one GPU, 0 for the others.
# TYPE joulie_gpu_control_result gauge
joulie_gpu_control_result{gpu="0",node="node-a",result="applied"} 1
joulie_gpu_control_result{gpu="0",node="node-a",result="blocked"} 0
joulie_gpu_control_result{gpu="0",node="node-a",result="error"} 0
joulie_gpu_control_result{gpu="0",node="node-a",result="none"} 0
joulie_gpu_control_result{gpu="1",node="node-a",result="applied"} 0
joulie_gpu_control_result{gpu="1",node="node-a",result="blocked"} 0
joulie_gpu_control_result{gpu="1",node="node-a",result="error"} 1
joulie_gpu_control_result{gpu="1",node="node-a",result="none"} 0
# HELP joulie_power_watts Measured power, in watts: CPU packages (RAPL), GPUs (driver), node (their sum).
# TYPE joulie_power_watts gauge
joulie_power_watts{component="cpu",node="node-a"} 310
joulie_power_watts{component="gpu",node="node-a"} 800
joulie_power_watts{component="node",node="node-a"} 1110
# HELP joulie_sync_up 1 when the last exchange with the API server succeeded, 0 when it failed.
# TYPE joulie_sync_up gauge
joulie_sync_up{node="node-a"} 0
`
	names := []string{"joulie_backend_mode", "joulie_dvfs_actions_total", "joulie_dvfs_throttle_pct", "joulie_gpu_control_result", "joulie_power_watts", "joulie_sync_up"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("pedantic registry: %v", err)
	}
}

// Every CPU mode a host can be in (host: none, rapl, amdsmi, dvfs;
// httphost, for routed and pool nodes: http) is exactly one
// joulie_backend_mode series at 1, so counting nodes by mode misses none.
func TestBackendModeMarksEveryCPUMode(t *testing.T) {
	for _, m := range []joulie.ControlBackend{joulie.BackendNone, joulie.BackendRAPL, joulie.BackendAMDSMI, joulie.BackendDVFS, joulie.BackendHTTP} {
		t.Run(string(m), func(t *testing.T) {
			s := snapshot()
			s.CPUMode = m
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(NewCollector(func() []agent.Snapshot { return []agent.Snapshot{s} }))
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var on []string
			for _, f := range families {
				if f.GetName() != "joulie_backend_mode" {
					continue
				}
				for _, mt := range f.GetMetric() {
					if mt.GetGauge().GetValue() != 1 {
						continue
					}
					for _, l := range mt.GetLabel() {
						if l.GetName() == "mode" {
							on = append(on, l.GetValue())
						}
					}
				}
			}
			if !slices.Equal(on, []string{string(m)}) {
				t.Errorf("CPU mode %s: joulie_backend_mode is 1 for modes %q, want exactly [%s]", m, on, m)
			}
		})
	}
}

func TestStandaloneHasNoSyncMetrics(t *testing.T) {
	s := snapshot()
	s.Standalone = true
	c := NewCollector(func() []agent.Snapshot { return []agent.Snapshot{s} })
	if n := testutil.CollectAndCount(c, "joulie_sync_up", "joulie_failsafe_active"); n != 0 {
		t.Fatalf("standalone exports %d sync metrics", n)
	}
}

// A parking agent says parked; an awake one counts the Wake-on-LAN
// packets it sends for the controller, per MAC.
func TestPowerStateAndWakeOnLANMetrics(t *testing.T) {
	s := snapshot()
	s.Park = agent.ParkState{Parked: true, Reason: agent.ReasonPowerOffRequested}
	s.PowerOffRefusals = 2
	s.WakeOnLAN = []agent.WakeTarget{{MAC: "0c:c4:7a:12:34:56", Listed: true, Packets: 7}, {MAC: "0c:c4:7a:ab:cd:ef", Packets: 2, Errors: 1}}
	c := NewCollector(func() []agent.Snapshot { return []agent.Snapshot{s} })
	want := `
# HELP joulie_agent_power_state 1 for the power state the agent reports on its NodePowerProfile status (awake, parked), 0 for the other.
# TYPE joulie_agent_power_state gauge
joulie_agent_power_state{node="node-a",state="awake"} 0
joulie_agent_power_state{node="node-a",state="parked"} 1
# HELP joulie_agent_park_power_off_refusals_total Parks whose last check right before the power-off found a pod on the node that no DaemonSet controls, or could not confirm the node empty, so the host stayed on; since the agent started.
# TYPE joulie_agent_park_power_off_refusals_total counter
joulie_agent_park_power_off_refusals_total{node="node-a"} 2
# HELP joulie_wake_on_lan_errors_total Wake-on-LAN magic packets to a MAC that could not be sent, since the agent started.
# TYPE joulie_wake_on_lan_errors_total counter
joulie_wake_on_lan_errors_total{mac="0c:c4:7a:12:34:56",node="node-a"} 0
joulie_wake_on_lan_errors_total{mac="0c:c4:7a:ab:cd:ef",node="node-a"} 1
# HELP joulie_wake_on_lan_packets_total Wake-on-LAN magic packets sent to a MAC for the controller, since the agent started.
# TYPE joulie_wake_on_lan_packets_total counter
joulie_wake_on_lan_packets_total{mac="0c:c4:7a:12:34:56",node="node-a"} 7
joulie_wake_on_lan_packets_total{mac="0c:c4:7a:ab:cd:ef",node="node-a"} 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "joulie_agent_power_state", "joulie_agent_park_power_off_refusals_total",
		"joulie_wake_on_lan_packets_total", "joulie_wake_on_lan_errors_total"); err != nil {
		t.Fatal(err)
	}
	s.Standalone = true
	if n := testutil.CollectAndCount(c, "joulie_agent_power_state"); n != 0 {
		t.Fatalf("standalone never parks, yet exports %d power-state series", n)
	}
}
