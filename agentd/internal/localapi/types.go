package localapi

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Defaults of the daemon's config (SPEC.md, "Security").
const (
	// DefaultSocketPath is where joulie-agentd listens unless configured
	// otherwise; systemd's RuntimeDirectory creates /run/joulie.
	DefaultSocketPath = "/run/joulie/agentd.sock"
	// DefaultGroup is the group whose members may read the agent's state.
	DefaultGroup = "joulie"
)

// Agent is what the daemon exposes on its socket. Every method is called
// from the server's goroutines, concurrently, so implementations lock
// their own state. None of them should block for long: the client gives
// up after its timeout.
type Agent interface {
	// Status is the agent's view of itself right now.
	Status() Status
	// Hardware is the NodeHardware status as the agent would publish it.
	Hardware() joulie.NodeHardwareStatus
	// Profile is the spec in force and where it came from.
	Profile() ProfileState
	// SetProfile replaces the standalone profile with a local override.
	// It returns ErrNotStandalone when the cluster owns the profile. The
	// server has checked the spec with ValidateSpec already.
	SetProfile(spec joulie.NodePowerProfileSpec) error
	// ClearProfile drops a local override, going back to the standalone
	// profile of the daemon's config; no override is not an error. It
	// returns ErrNotStandalone in cluster mode.
	ClearProfile() error
	// Pods is each pod's energy so far.
	Pods() PodsReport
	// Restore puts every recorded original back. The report names what
	// was restored and what stays recorded; the error, when not nil, says
	// why some controls could not be restored.
	Restore() (RestoreReport, error)
}

// ErrNotStandalone is what Agent.SetProfile and ClearProfile return when
// the node's NodePowerProfile, not the host, decides the profile. The
// server answers 409 Conflict.
var ErrNotStandalone = errors.New("the profile is set by the cluster")

// ErrInvalidSpec marks a spec the agent refuses; the server answers 400.
// ValidateSpec's errors wrap it, and so may the agent's own checks.
var ErrInvalidSpec = errors.New("invalid profile")

// ProfileSource says where the spec in force came from.
type ProfileSource string

const (
	// SourceNone: nothing asked yet (cluster mode before the first
	// NodePowerProfile); nothing is enforced.
	SourceNone ProfileSource = "none"
	// SourceCluster: the node's NodePowerProfile.
	SourceCluster ProfileSource = "cluster"
	// SourceStandalone: standalone.profile of the daemon's config.
	SourceStandalone ProfileSource = "standalone"
	// SourceOverride: a local override set with `joulie-agentctl profile
	// set`, in standalone mode.
	SourceOverride ProfileSource = "override"
	// SourceFailsafe: the configured failsafe, because the agent lost its
	// desired state (see FailsafeState).
	SourceFailsafe ProfileSource = "failsafe"
	// SourcePaused: an operator restored the originals; nothing is
	// enforced until the target changes.
	SourcePaused ProfileSource = "paused"
)

// Status is the answer to GET /v1/status. The nested types are the API's,
// so `joulie-agentctl status -o json` reads like NodePowerProfile status.
type Status struct {
	// Node is the Kubernetes node the agent speaks for.
	Node string `json:"node"`
	// Version is the agent's version.
	Version string `json:"version"`
	// Standalone is true when the agent runs without a cluster.
	Standalone bool `json:"standalone"`
	// Profile is the profile in force.
	Profile joulie.Profile `json:"profile,omitempty"`
	// Source says where the profile in force came from.
	Source ProfileSource `json:"source,omitempty"`
	// ObservedGeneration is the NodePowerProfile generation the results
	// below answer; 0 in standalone mode.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// CPUMode is the CPU backend in force: none, rapl, amdsmi, dvfs, or
	// http for a simulated node.
	CPUMode joulie.ControlBackend `json:"cpuMode,omitempty"`
	// CPU and GPU are the outcomes of the last enforcement, as published
	// on NodePowerProfile status.
	CPU *joulie.ControlStatus `json:"cpu,omitempty"`
	GPU *joulie.ControlStatus `json:"gpu,omitempty"`
	// CPUCapReason and GPUCapReason are why the controller chose the caps
	// in force (the spec's cpu.reason and gpu.reason), when it says.
	CPUCapReason string `json:"cpuCapReason,omitempty"`
	GPUCapReason string `json:"gpuCapReason,omitempty"`
	// MeasuredPower is the agent's latest reading, taken every tick (the
	// API gets it less often).
	MeasuredPower *joulie.MeasuredPower `json:"measuredPower,omitempty"`
	// LastSync is when the agent last read its NodePowerProfile from the
	// API server; absent in standalone mode.
	LastSync *metav1.Time `json:"lastSync,omitempty"`
	// SyncError is the last failure to reach the API server, empty once a
	// sync succeeds again.
	SyncError string `json:"syncError,omitempty"`
	// EcoGuard says, when it acts, what the eco guard does: an eco target
	// held off while performance pods run here, or applied without the
	// node's pods being known.
	EcoGuard string `json:"ecoGuard,omitempty"`
	// Failsafe says whether the agent runs on its failsafe target.
	Failsafe FailsafeState `json:"failsafe"`
	// OriginalsRecorded counts the controls whose original values are
	// journaled, that is the controls Restore would put back.
	OriginalsRecorded int `json:"originalsRecorded"`
	// PowerState is what the agent reports on NodePowerProfile
	// status.powerState: parked while it powers the host off, awake
	// otherwise; absent in standalone mode, which never parks.
	PowerState joulie.PowerState `json:"powerState,omitempty"`
	// Conditions are the agent's status conditions, as on the
	// NodePowerProfile: Parked while the profile says parked.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// WakeOnLAN lists the MACs the profile's spec.wakeOnLAN asks the agent
	// to wake, and the packets sent to each.
	WakeOnLAN []WakeOnLANTarget `json:"wakeOnLAN,omitempty"`
}

// WakeOnLANTarget is one MAC the agent sends magic packets to.
type WakeOnLANTarget struct {
	MAC string `json:"mac"`
	// PacketsSent and Errors count the sends since the daemon started.
	PacketsSent int64 `json:"packetsSent"`
	Errors      int64 `json:"errors,omitempty"`
	// LastSent is when a packet was last sent or tried.
	LastSent *metav1.Time `json:"lastSent,omitempty"`
	// LastError is why the last send failed; empty when it worked.
	LastError string `json:"lastError,omitempty"`
}

// FailsafeState is the agent's failsafe: configured, and whether in force.
type FailsafeState struct {
	// Active is true while the agent enforces the failsafe target.
	Active bool `json:"active"`
	// Mode is the configured failsafe: keep (the last applied target),
	// performance or restore.
	Mode string `json:"mode,omitempty"`
	// Reason says why the failsafe is active.
	Reason string `json:"reason,omitempty"`
	// Since is when it became active.
	Since *metav1.Time `json:"since,omitempty"`
}

// ProfileState is the answer to GET and PUT /v1/profile.
type ProfileState struct {
	// Node is the node the agent speaks for; in cluster mode, also the
	// name of the NodePowerProfile.
	Node string `json:"node"`
	// Standalone is true when the agent runs without a cluster, which is
	// when a local override is possible.
	Standalone bool `json:"standalone"`
	// Source says where Spec came from.
	Source ProfileSource `json:"source"`
	// Generation is the NodePowerProfile's metadata.generation in cluster
	// mode.
	Generation int64 `json:"generation,omitempty"`
	// Spec is the target in force.
	Spec joulie.NodePowerProfileSpec `json:"spec"`
}

// RecordedControl is one control of the journal of originals.
type RecordedControl struct {
	// Backend owns the control: rapl, cpufreq, nvml, hwmon, amdsmi, http.
	Backend string `json:"backend"`
	// ID names the control within its backend.
	ID string `json:"id"`
	// Original is the value from before Joulie's first write, in the
	// backend's own units (µW for RAPL, kHz for cpufreq, ...).
	Original string `json:"original"`
	// Error says why it could not be restored; empty when it was.
	Error string `json:"error,omitempty"`
}

// RestoreReport is the answer to POST /v1/restore.
type RestoreReport struct {
	// Restored counts the controls put back to their originals.
	Restored int `json:"restored"`
	// Kept counts the controls that could not be restored; their
	// originals stay recorded for the next attempt.
	Kept int `json:"kept"`
	// Controls names them, when the daemon can tell: restored ones
	// without Error, kept ones with it.
	Controls []RecordedControl `json:"controls,omitempty"`
	// Message is the daemon's word on what happens next, e.g. that
	// enforcement is paused until the target changes.
	Message string `json:"message,omitempty"`
	// Error is set by the server when Agent.Restore returned one; the
	// status code is then 500.
	Error string `json:"error,omitempty"`
}

// ErrorResponse is the body of every answer other than 2xx.
type ErrorResponse struct {
	Error string `json:"error"`
}

// PodsReport is the energy of each pod on the node, as joulie-agentctl
// pods shows it (GET /v1/pods).
type PodsReport struct {
	Node string `json:"node"`
	// Kubelet says whether the kubelet's pod-resources API answered, and
	// what it found: without it no GPU is tied to a pod.
	Kubelet string `json:"kubelet"`
	// CPU says whether and how the per-pod CPU estimate is made.
	CPU string `json:"cpu"`
	// Pods are the running pods and those ended within the retention.
	Pods []PodEnergy `json:"pods"`
	// UnattributedGPUJoules is, per GPU ID, the energy of the device
	// while no pod held it.
	UnattributedGPUJoules map[string]float64 `json:"unattributedGpuJoules,omitempty"`
}

// PodEnergy is one pod's energy so far. GPU figures are measured by the
// devices' energy counters; CPU figures are an estimate, the CPU packages'
// energy by the pod's share of CPU time.
type PodEnergy struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
	// GPUs are the devices the pod has held.
	GPUs      []string `json:"gpus,omitempty"`
	GPUWatts  float64  `json:"gpuWatts"`
	GPUJoules float64  `json:"gpuJoules"`
	// GPUEstimated says part of the GPU figure was integrated from power
	// readings (no energy counter, or a counter reset).
	GPUEstimated bool `json:"gpuEstimated,omitempty"`
	// CPUWattsEstimate and CPUJoulesEstimate are absent when no estimate
	// could be made (see PodsReport.CPU).
	CPUWattsEstimate  *float64 `json:"cpuWattsEstimate,omitempty"`
	CPUJoulesEstimate *float64 `json:"cpuJoulesEstimate,omitempty"`
	// Containers are the pod's containers holding GPUs.
	Containers []ContainerEnergy `json:"containers,omitempty"`
	Since      metav1.Time       `json:"since"`
	// Ended is set once the pod is gone; Until is then when it was last
	// seen, otherwise the last tick.
	Ended bool        `json:"ended,omitempty"`
	Until metav1.Time `json:"until"`
}

// ContainerEnergy is one container's GPU energy.
type ContainerEnergy struct {
	Name      string   `json:"name"`
	GPUs      []string `json:"gpus,omitempty"`
	GPUWatts  float64  `json:"gpuWatts"`
	GPUJoules float64  `json:"gpuJoules"`
}
