// Package metrics exposes joulie-agentd's state to Prometheus. A collector
// reads agent snapshots at scrape time, so nothing is counted twice and a
// scrape always shows the last tick. Names follow the agent seed
// (joulie_backend_mode, joulie_dvfs_*) and Prometheus' naming rules.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"joulie.io/joulie/agentd/internal/agent"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Source yields the snapshots to export: one node for the daemon, many in
// pool mode.
type Source func() []agent.Snapshot

var (
	// modes are the CPU modes a host reports: the seed's none, rapl and
	// dvfs, amdsmi for the AMD socket cap, and http for a node driven
	// through a simulator (TelemetryProfile routing, pool mode).
	modes   = []joulie.ControlBackend{joulie.BackendNone, joulie.BackendRAPL, joulie.BackendAMDSMI, joulie.BackendDVFS, joulie.BackendHTTP}
	results = []joulie.ControlResult{joulie.ResultApplied, joulie.ResultBlocked, joulie.ResultError, joulie.ResultNone}
)

var (
	info = prometheus.NewDesc("joulie_agent_info",
		"Constant 1, labelled with the agent's version and mode (standalone or cluster).",
		[]string{"node", "version", "mode"}, nil)
	backendMode = prometheus.NewDesc("joulie_backend_mode",
		"1 for the CPU control backend in force (none, rapl, amdsmi, dvfs, http), 0 for the others.",
		[]string{"node", "mode"}, nil)
	throttlePct = prometheus.NewDesc("joulie_dvfs_throttle_pct",
		"Share of CPU cores the DVFS fallback holds at reduced frequency, in percent.",
		[]string{"node"}, nil)
	aboveTrip = prometheus.NewDesc("joulie_dvfs_above_trip_count",
		"Consecutive DVFS readings above the cap's upper margin.",
		[]string{"node"}, nil)
	belowTrip = prometheus.NewDesc("joulie_dvfs_below_trip_count",
		"Consecutive DVFS readings below the cap's lower margin.",
		[]string{"node"}, nil)
	dvfsActions = prometheus.NewDesc("joulie_dvfs_actions_total",
		"DVFS throttle changes, by direction.",
		[]string{"node", "action"}, nil)
	controlResult = prometheus.NewDesc("joulie_control_result",
		"1 for the outcome of the last enforcement of a device class (cpu, gpu), 0 for the others.",
		[]string{"node", "class", "result"}, nil)
	gpuResult = prometheus.NewDesc("joulie_gpu_control_result",
		"1 for the outcome of the last cap on one GPU, 0 for the others.",
		[]string{"node", "gpu", "result"}, nil)
	capWatts = prometheus.NewDesc("joulie_applied_cap_watts",
		"Cap in force per device (CPU package or GPU), in watts.",
		[]string{"node", "class", "device"}, nil)
	powerWatts = prometheus.NewDesc("joulie_power_watts",
		"Measured power, in watts: CPU packages (RAPL), GPUs (driver), node (their sum).",
		[]string{"node", "component"}, nil)
	lastReconcile = prometheus.NewDesc("joulie_last_reconcile_timestamp_seconds",
		"When the last reconcile tick ran, as a Unix time.",
		[]string{"node"}, nil)
	lastSync = prometheus.NewDesc("joulie_sync_last_success_timestamp_seconds",
		"When the cluster last answered, as a Unix time; absent in standalone mode.",
		[]string{"node"}, nil)
	syncUp = prometheus.NewDesc("joulie_sync_up",
		"1 when the last exchange with the API server succeeded, 0 when it failed.",
		[]string{"node"}, nil)
	failsafe = prometheus.NewDesc("joulie_failsafe_active",
		"1 while the failsafe is in force because the desired state went stale.",
		[]string{"node", "mode"}, nil)
	ecoRefused = prometheus.NewDesc("joulie_eco_refused",
		"1 while the agent holds an eco target off because performance pods run on the node (the node stays at its performance caps).",
		[]string{"node"}, nil)
	powerState = prometheus.NewDesc("joulie_agent_power_state",
		"1 for the power state the agent reports on its NodePowerProfile status (awake, parked), 0 for the other.",
		[]string{"node", "state"}, nil)
	wolPackets = prometheus.NewDesc("joulie_wake_on_lan_packets_total",
		"Wake-on-LAN magic packets sent to a MAC for the controller, since the agent started.",
		[]string{"node", "mac"}, nil)
	powerOffRefusals = prometheus.NewDesc("joulie_agent_park_power_off_refusals_total",
		"Parks whose last check right before the power-off found a pod on the node that no DaemonSet controls, or could not confirm the node empty, so the host stayed on; since the agent started.",
		[]string{"node"}, nil)
	wolErrors = prometheus.NewDesc("joulie_wake_on_lan_errors_total",
		"Wake-on-LAN magic packets to a MAC that could not be sent, since the agent started.",
		[]string{"node", "mac"}, nil)
)

// agentPowerStates are the states an agent reports: it is on, or
// powering its host off.
var agentPowerStates = []joulie.PowerState{joulie.PowerAwake, joulie.PowerParked}

// Collector exports snapshots.
type Collector struct{ source Source }

// NewCollector returns a collector over source.
func NewCollector(source Source) *Collector { return &Collector{source: source} }

// Describe sends every descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{info, backendMode, throttlePct, aboveTrip, belowTrip, dvfsActions,
		controlResult, gpuResult, capWatts, powerWatts, lastReconcile, lastSync, syncUp, failsafe, ecoRefused,
		powerState, wolPackets, wolErrors, powerOffRefusals} {
		ch <- d
	}
}

// Collect reads the snapshots.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.source() {
		collect(ch, s)
	}
}

func collect(ch chan<- prometheus.Metric, s agent.Snapshot) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	node := s.Node
	mode := "cluster"
	if s.Standalone {
		mode = "standalone"
	}
	gauge(info, 1, node, s.Version, mode)
	for _, m := range modes {
		gauge(backendMode, b2f(s.CPUMode == m), node, string(m))
	}
	if d := s.DVFS; d != nil {
		gauge(throttlePct, d.ThrottlePct, node)
		gauge(aboveTrip, float64(d.AboveCount), node)
		gauge(belowTrip, float64(d.BelowCount), node)
		ch <- prometheus.MustNewConstMetric(dvfsActions, prometheus.CounterValue, float64(d.ThrottleUps), node, "throttle_up")
		ch <- prometheus.MustNewConstMetric(dvfsActions, prometheus.CounterValue, float64(d.ThrottleDowns), node, "throttle_down")
	}
	for _, cls := range []struct {
		name string
		st   joulie.ControlStatus
	}{{"cpu", s.CPU}, {"gpu", s.GPU}} {
		if cls.st.Result == "" {
			continue // no tick yet
		}
		for _, r := range results {
			gauge(controlResult, b2f(cls.st.Result == r), node, cls.name, string(r))
		}
		for _, d := range cls.st.Devices {
			if d.AppliedCapWatts != nil {
				gauge(capWatts, *d.AppliedCapWatts, node, cls.name, d.ID)
			}
			if cls.name == "gpu" {
				for _, r := range results {
					gauge(gpuResult, b2f(d.Result == r), node, d.ID, string(r))
				}
			}
		}
	}
	if s.Power.HasCPU {
		gauge(powerWatts, s.Power.CPUWatts, node, "cpu")
	}
	if s.Power.HasGPU {
		gauge(powerWatts, s.Power.GPUWatts, node, "gpu")
	}
	if s.Power.HasCPU || s.Power.HasGPU {
		gauge(powerWatts, s.Power.CPUWatts+s.Power.GPUWatts, node, "node")
	}
	if !s.LastReconcile.IsZero() {
		gauge(lastReconcile, unix(s.LastReconcile), node)
	}
	if !s.Standalone {
		if !s.LastSync.IsZero() {
			gauge(lastSync, unix(s.LastSync), node)
		}
		gauge(syncUp, b2f(s.SyncError == "" && !s.LastSync.IsZero()), node)
		gauge(failsafe, b2f(s.Failsafe.Active), node, s.Failsafe.Mode)
		gauge(ecoRefused, b2f(s.Guard.Refused), node)
		for _, st := range agentPowerStates {
			gauge(powerState, b2f(s.PowerState() == st), node, string(st))
		}
		ch <- prometheus.MustNewConstMetric(powerOffRefusals, prometheus.CounterValue, float64(s.PowerOffRefusals), node)
	}
	for _, w := range s.WakeOnLAN {
		ch <- prometheus.MustNewConstMetric(wolPackets, prometheus.CounterValue, float64(w.Packets), node, w.MAC)
		ch <- prometheus.MustNewConstMetric(wolErrors, prometheus.CounterValue, float64(w.Errors), node, w.MAC)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
