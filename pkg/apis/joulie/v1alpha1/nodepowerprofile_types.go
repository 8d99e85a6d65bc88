package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=npp,categories=joulie
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Profile",type=string,JSONPath=`.spec.profile`
// +kubebuilder:printcolumn:name="CPU-Cap-W",type=number,JSONPath=`.spec.cpu.packagePowerCapWatts`
// +kubebuilder:printcolumn:name="CPU-Cap-%",type=number,JSONPath=`.spec.cpu.packagePowerCapPctOfMax`
// +kubebuilder:printcolumn:name="GPU-Cap-%",type=number,JSONPath=`.spec.gpu.powerCap.capPctOfMax`
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=`.status.cpu.result`
// +kubebuilder:printcolumn:name="GPU",type=string,JSONPath=`.status.gpu.result`
// +kubebuilder:printcolumn:name="Power-W",type=number,JSONPath=`.status.measuredPower.nodePowerWatts`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.powerState`
// +kubebuilder:printcolumn:name="CPU-Cap-Reason",type=string,JSONPath=`.spec.cpu.reason`,priority=1
// +kubebuilder:printcolumn:name="GPU-Cap-Reason",type=string,JSONPath=`.spec.gpu.reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// NodePowerProfile is the power target the controller sets for one node,
// and the agent's report of what it applied. It is named after the node.
type NodePowerProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired target, written by the controller.
	Spec NodePowerProfileSpec `json:"spec"`
	// Status is what the node's agent enforced.
	// +optional
	Status NodePowerProfileStatus `json:"status,omitempty"`
}

// NodePowerProfileSpec is a node's desired power target.
type NodePowerProfileSpec struct {
	// Profile is the supply class the node provides.
	Profile Profile `json:"profile"`
	// CPU is the CPU package cap; absent means the CPUs are left uncapped.
	// +optional
	CPU *CPUPowerTarget `json:"cpu,omitempty"`
	// GPU is the per-device GPU cap; absent means the GPUs are left at
	// their default limits.
	// +optional
	GPU *GPUPowerTarget `json:"gpu,omitempty"`
	// PowerState is the node's power state as the controller drives it;
	// empty means awake. The agent acts on one value only: parked, on
	// which it restores every cap, reports parked and powers the host
	// off. The other values record the controller's progress, so that a
	// restart or a new leader resumes a park or a wake from the object.
	// +optional
	PowerState PowerState `json:"powerState,omitempty"`
	// PowerStateSince is when PowerState last changed; settle times and
	// the resume timeout count from it.
	// +optional
	PowerStateSince *metav1.Time `json:"powerStateSince,omitempty"`
	// WakeAttempts counts the wakes tried since the node was last awake.
	// +kubebuilder:validation:Minimum=0
	// +optional
	WakeAttempts int32 `json:"wakeAttempts,omitempty"`
	// WakeOnLAN lists MAC addresses this node's agent sends Wake-on-LAN
	// magic packets to, on its own network, while they are listed: the
	// controller asks an awake agent to wake a parked neighbour.
	// +listType=set
	// +optional
	WakeOnLAN []string `json:"wakeOnLAN,omitempty"`
}

// PowerState is a managed node's power state (SPEC.md, "Power states,
// parking and per-pod energy").
// +kubebuilder:validation:Enum=awake;parking;parked;waking;wake-failed
type PowerState string

const (
	// PowerAwake: the node is on and runs as its profile says.
	PowerAwake PowerState = "awake"
	// PowerParking: the node is tainted and the controller waits until
	// no pod can land on it before asking its agent to shut it down.
	PowerParking PowerState = "parking"
	// PowerParked: the agent is asked to shut the host down, or has; the
	// BMC stays alive.
	PowerParked PowerState = "parked"
	// PowerWaking: the controller asked the BMC or a neighbour's agent to
	// start the node and waits for it to be Ready.
	PowerWaking PowerState = "waking"
	// PowerWakeFailed: the node was not Ready within the resume timeout
	// after the allowed attempts; it stays tainted until an operator acts.
	PowerWakeFailed PowerState = "wake-failed"
)

// Awake reports whether s means the node is on and schedulable: empty or
// awake.
func (s PowerState) Awake() bool { return s == "" || s == PowerAwake }

// CPUPowerTarget caps each CPU package (socket). When both fields are set,
// the absolute watts win.
type CPUPowerTarget struct {
	// PackagePowerCapWatts is the long-term power limit of each package.
	// The agent clamps it to the package's range.
	// +kubebuilder:validation:Minimum=0
	// +optional
	PackagePowerCapWatts *float64 `json:"packagePowerCapWatts,omitempty"`
	// PackagePowerCapPctOfMax is the limit of each package as a percentage
	// of that package's maximum (the RAPL zone's max power when the kernel
	// gives it, else the catalog TDP of the model).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	PackagePowerCapPctOfMax *float64 `json:"packagePowerCapPctOfMax,omitempty"`
	// Reason says why the controller chose this cap, e.g. "uncapped: draw
	// under the 480 W eco cap" or "capped at 67%: energy optimum for
	// standard work". The agent shows it and enforces only the numbers.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
}

// GPUPowerTarget caps each GPU of the node.
type GPUPowerTarget struct {
	// PowerCap is the per-device cap.
	// +optional
	PowerCap *GPUPowerCap `json:"powerCap,omitempty"`
	// StandardPowerCap, when set, is the cap of each GPU that only
	// standard pods hold (per the kubelet's pod-resources API); GPUs a
	// performance pod holds, and idle ones, take PowerCap. The controller
	// sets it on performance nodes with per-GPU caps (caps.gpuScope pod),
	// so standard work sharing a performance node is capped where it runs.
	// +optional
	StandardPowerCap *GPUPowerCap `json:"standardPowerCap,omitempty"`
	// Reason says why the controller chose this cap, as for the CPU.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
}

// GPUPowerCap is a per-device GPU power cap. The controller may write both
// fields when it knows the model; the agent prefers CapWattsPerGpu and
// otherwise resolves CapPctOfMax against each device's own range.
type GPUPowerCap struct {
	// CapWattsPerGpu is the power limit of each device, clamped by the
	// agent to the device's range.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CapWattsPerGpu *float64 `json:"capWattsPerGpu,omitempty"`
	// CapPctOfMax is the limit as a percentage of each device's maximum
	// power limit.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	CapPctOfMax *float64 `json:"capPctOfMax,omitempty"`
}

// NodePowerProfileStatus is the agent's report of what it enforced.
type NodePowerProfileStatus struct {
	// ObservedGeneration is the spec generation the results below answer.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// CPU is the outcome of the CPU cap.
	// +optional
	CPU *ControlStatus `json:"cpu,omitempty"`
	// GPU is the outcome of the GPU cap.
	// +optional
	GPU *ControlStatus `json:"gpu,omitempty"`
	// PowerState is the agent's side of a park: parked once it has
	// restored every cap and is about to power the host off, awake while
	// it runs normally.
	// +optional
	PowerState PowerState `json:"powerState,omitempty"`
	// MeasuredPower is the node's power as the agent measured it. It is
	// published at most once a minute, or sooner on a change over 10%.
	// +optional
	MeasuredPower *MeasuredPower `json:"measuredPower,omitempty"`
	// Conditions carry the agent's standard conditions, such as Applied and
	// Failsafe.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ControlResult is the outcome of enforcing a cap.
// +kubebuilder:validation:Enum=applied;blocked;error;none
type ControlResult string

const (
	// ResultApplied: the cap is in force and was read back.
	ResultApplied ControlResult = "applied"
	// ResultBlocked: the host cannot enforce it (no backend, read-only
	// files, missing library); Message says why.
	ResultBlocked ControlResult = "blocked"
	// ResultError: enforcement was attempted and failed; Message says how.
	ResultError ControlResult = "error"
	// ResultNone: nothing was asked (no cap in the spec) or nothing exists
	// to cap (no GPU).
	ResultNone ControlResult = "none"
)

// ControlStatus is the outcome of enforcing one device class's cap.
type ControlStatus struct {
	// Backend is what enforced it.
	// +optional
	Backend ControlBackend `json:"backend,omitempty"`
	// Result is the outcome across the devices of the class: applied only
	// when every device applied.
	Result ControlResult `json:"result"`
	// Message explains the result in words an operator can act on.
	// +optional
	Message string `json:"message,omitempty"`
	// AppliedCapWatts is the cap in force on each device (package or GPU)
	// after clamping.
	// +kubebuilder:validation:Minimum=0
	// +optional
	AppliedCapWatts *float64 `json:"appliedCapWatts,omitempty"`
	// ThrottlePct is the share of CPUs held below full frequency when the
	// DVFS fallback enforces the cap.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ThrottlePct *float64 `json:"throttlePct,omitempty"`
	// Devices holds per-device outcomes (CPU packages or GPUs).
	// +listType=map
	// +listMapKey=id
	// +optional
	Devices []DeviceControlStatus `json:"devices,omitempty"`
	// LastTransitionTime is when Result last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// DeviceControlStatus is the outcome of a cap on one device.
type DeviceControlStatus struct {
	// ID names the device: package-N for a CPU package, the index for a
	// GPU.
	ID string `json:"id"`
	// Result is the device's outcome.
	Result ControlResult `json:"result"`
	// Message explains a result other than applied.
	// +optional
	Message string `json:"message,omitempty"`
	// AppliedCapWatts is the cap in force on the device.
	// +kubebuilder:validation:Minimum=0
	// +optional
	AppliedCapWatts *float64 `json:"appliedCapWatts,omitempty"`
}

// MeasuredPower is a host's power reading.
type MeasuredPower struct {
	// CPUPowerWatts is the sum over CPU packages.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CPUPowerWatts *float64 `json:"cpuPowerWatts,omitempty"`
	// GPUPowerWatts is the sum over GPUs.
	// +kubebuilder:validation:Minimum=0
	// +optional
	GPUPowerWatts *float64 `json:"gpuPowerWatts,omitempty"`
	// NodePowerWatts is what the agent can see of the node: CPU plus GPU.
	// +kubebuilder:validation:Minimum=0
	NodePowerWatts float64 `json:"nodePowerWatts"`
	// Time is when the reading was taken.
	Time metav1.Time `json:"time"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// NodePowerProfileList is a list of NodePowerProfile.
type NodePowerProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePowerProfile `json:"items"`
}
