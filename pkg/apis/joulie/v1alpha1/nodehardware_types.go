package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=nhw,categories=joulie
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=`.status.cpu.model`
// +kubebuilder:printcolumn:name="Sockets",type=integer,JSONPath=`.status.cpu.sockets`
// +kubebuilder:printcolumn:name="GPU",type=string,JSONPath=`.status.gpu.model`
// +kubebuilder:printcolumn:name="GPUs",type=integer,JSONPath=`.status.gpu.count`
// +kubebuilder:printcolumn:name="CPU-Control",type=string,JSONPath=`.status.cpu.control.backend`
// +kubebuilder:printcolumn:name="GPU-Control",type=string,JSONPath=`.status.gpu.control.backend`
// +kubebuilder:printcolumn:name="Quality",type=string,JSONPath=`.status.quality`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// NodeHardware is what the agent discovered about its host: the CPU and
// GPU models, their power-cap ranges and which controls and telemetry it can
// use. It is named after the node and written only by that node's agent;
// nobody authors it by hand.
type NodeHardware struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Status is the discovered hardware.
	// +optional
	Status NodeHardwareStatus `json:"status,omitempty"`
}

// NodeHardwareStatus holds the facts discovered on one host.
type NodeHardwareStatus struct {
	// CPU describes the host's processors.
	// +optional
	CPU CPUHardware `json:"cpu,omitempty"`
	// GPU describes the host's accelerators; absent on CPU-only hosts.
	// +optional
	GPU *GPUHardware `json:"gpu,omitempty"`
	// MemoryBytes is the host's physical memory.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	// Network lists the host's physical network interfaces, for
	// Wake-on-LAN.
	// +listType=map
	// +listMapKey=name
	// +optional
	Network []NetworkInterface `json:"network,omitempty"`
	// Quality says how complete the discovery was.
	// +optional
	Quality DiscoveryQuality `json:"quality,omitempty"`
	// Warnings name what the agent could not discover or cannot control,
	// and why, so an operator can act on it.
	// +listType=atomic
	// +optional
	Warnings []string `json:"warnings,omitempty"`
	// AgentVersion is the version of the agent that published this.
	// +optional
	AgentVersion string `json:"agentVersion,omitempty"`
	// LastUpdated is when the agent last confirmed these facts; it is
	// refreshed by a slow heartbeat even when nothing changed.
	// +optional
	LastUpdated metav1.Time `json:"lastUpdated,omitempty"`
}

// DiscoveryQuality grades a hardware discovery.
// +kubebuilder:validation:Enum=complete;partial;minimal
type DiscoveryQuality string

const (
	// DiscoveryComplete: every expected source answered.
	DiscoveryComplete DiscoveryQuality = "complete"
	// DiscoveryPartial: some sources were missing; see Warnings.
	DiscoveryPartial DiscoveryQuality = "partial"
	// DiscoveryMinimal: only the identity of the host is known; planning
	// falls back on catalog figures.
	DiscoveryMinimal DiscoveryQuality = "minimal"
)

// Exactness says how a raw model name was matched in the hardware catalog.
// +kubebuilder:validation:Enum=exact;proxy;generic
type Exactness string

const (
	// ExactnessExact: the model is in the catalog.
	ExactnessExact Exactness = "exact"
	// ExactnessProxy: a close relative of the model (same family) stands in.
	ExactnessProxy Exactness = "proxy"
	// ExactnessGeneric: only the vendor or the device class is known.
	ExactnessGeneric Exactness = "generic"
)

// CPUHardware describes the host's processors.
type CPUHardware struct {
	// Vendor is the CPU vendor as the kernel reports it (e.g. GenuineIntel,
	// AuthenticAMD).
	// +optional
	Vendor string `json:"vendor,omitempty"`
	// Model is the raw model name from /proc/cpuinfo.
	// +optional
	Model string `json:"model,omitempty"`
	// CatalogModel is the hardware-catalog entry the model resolved to.
	// +optional
	CatalogModel string `json:"catalogModel,omitempty"`
	// Exactness says how Model matched CatalogModel.
	// +optional
	Exactness Exactness `json:"exactness,omitempty"`
	// Sockets is the number of physical packages.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Sockets int32 `json:"sockets,omitempty"`
	// CoresPerSocket counts physical cores in one package.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CoresPerSocket int32 `json:"coresPerSocket,omitempty"`
	// TotalCores counts physical cores on the host.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TotalCores int32 `json:"totalCores,omitempty"`
	// LogicalCPUs counts hardware threads on the host.
	// +kubebuilder:validation:Minimum=0
	// +optional
	LogicalCPUs int32 `json:"logicalCPUs,omitempty"`
	// CapRange is the power-cap range of one package, the same for every
	// package of the host (the narrowest when they differ).
	// +optional
	CapRange *PowerRange `json:"capRange,omitempty"`
	// Packages holds per-package facts, one entry a socket.
	// +listType=map
	// +listMapKey=id
	// +optional
	Packages []CPUPackage `json:"packages,omitempty"`
	// Frequency holds the cpufreq landmarks of the host.
	// +optional
	Frequency *FrequencyLandmarks `json:"frequency,omitempty"`
	// Control says how the agent can cap the CPUs.
	// +optional
	Control ControlCapability `json:"control,omitempty"`
	// Telemetry says how the agent can measure CPU power.
	// +optional
	Telemetry TelemetryCapability `json:"telemetry,omitempty"`
}

// PowerRange is a range of power caps, in watts, with the vendor's default.
type PowerRange struct {
	// MinWatts is the lowest cap the hardware accepts.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinWatts float64 `json:"minWatts,omitempty"`
	// MaxWatts is the highest cap the hardware accepts; percentages of
	// max are taken of this figure.
	// +kubebuilder:validation:Minimum=0
	MaxWatts float64 `json:"maxWatts"`
	// DefaultWatts is the cap the hardware ships with (TDP for CPUs, the
	// default power limit for GPUs).
	// +kubebuilder:validation:Minimum=0
	// +optional
	DefaultWatts float64 `json:"defaultWatts,omitempty"`
	// Source says where the range came from: the kernel or driver
	// (`rapl`, `nvml`, `amdsmi`, `hwmon`) or the hardware catalog
	// (`catalog`) when the host does not report one.
	// +optional
	Source string `json:"source,omitempty"`
}

// CPUPackage is one CPU socket as the power-capping interfaces see it.
type CPUPackage struct {
	// ID is the physical package id (0, 1, ...).
	// +kubebuilder:validation:Minimum=0
	ID int32 `json:"id"`
	// Zone is the powercap zone that controls this package, such as
	// intel-rapl:0 (MSR interface) or intel-rapl-mmio:0.
	// +optional
	Zone string `json:"zone,omitempty"`
	// CapRange is the package's power-cap range.
	// +optional
	CapRange *PowerRange `json:"capRange,omitempty"`
	// CurrentCapWatts is the package's long-term power limit right now.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CurrentCapWatts *float64 `json:"currentCapWatts,omitempty"`
	// LimitsWritable is false when the zone exposes energy but its limits
	// are read-only, as on AMD EPYC.
	// +optional
	LimitsWritable bool `json:"limitsWritable,omitempty"`
}

// FrequencyLandmarks are the cpufreq figures of the host, in kHz, taken
// from cpu0 (the agent warns when CPUs disagree).
type FrequencyLandmarks struct {
	// Driver is the cpufreq scaling driver (intel_pstate, amd-pstate,
	// acpi-cpufreq, ...).
	// +optional
	Driver string `json:"driver,omitempty"`
	// Governor is the scaling governor in use.
	// +optional
	Governor string `json:"governor,omitempty"`
	// MinKHz is cpuinfo_min_freq, the lowest frequency the CPU runs at.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinKHz int64 `json:"minKHz,omitempty"`
	// BaseKHz is base_frequency when the driver publishes it.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BaseKHz int64 `json:"baseKHz,omitempty"`
	// MaxKHz is cpuinfo_max_freq, the highest (boost) frequency.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxKHz int64 `json:"maxKHz,omitempty"`
}

// ControlCapability says which backend can enforce caps on a device class.
type ControlCapability struct {
	// Backend is the backend the agent uses; none when it has none.
	// +optional
	Backend ControlBackend `json:"backend,omitempty"`
	// Available lists every backend found usable on the host.
	// +listType=set
	// +optional
	Available []ControlBackend `json:"available,omitempty"`
	// Reason explains a missing or degraded control.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// TelemetryCapability says how power of a device class is measured.
type TelemetryCapability struct {
	// Source is the measurement source in use; none when power cannot be
	// measured on the host.
	// +optional
	Source TelemetrySource `json:"source,omitempty"`
	// Reason explains missing telemetry.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// ControlBackend names a way of enforcing a power cap.
// +kubebuilder:validation:Enum=none;rapl;dvfs;amdsmi;nvml;hwmon;http
type ControlBackend string

const (
	// BackendNone: nothing enforces the cap.
	BackendNone ControlBackend = "none"
	// BackendRAPL: the CPU package long-term limit through powercap sysfs.
	BackendRAPL ControlBackend = "rapl"
	// BackendDVFS: CPU frequency ceilings through cpufreq, steered by
	// measured power.
	BackendDVFS ControlBackend = "dvfs"
	// BackendAMDSMI: the amd-smi library (AMD GPUs and EPYC sockets).
	BackendAMDSMI ControlBackend = "amdsmi"
	// BackendNVML: NVIDIA's management library.
	BackendNVML ControlBackend = "nvml"
	// BackendHwmon: the amdgpu driver's hwmon power1_cap file.
	BackendHwmon ControlBackend = "hwmon"
	// BackendHTTP: a simulator or remote controller over HTTP.
	BackendHTTP ControlBackend = "http"
)

// TelemetrySource names where power readings come from on a host.
// +kubebuilder:validation:Enum=none;rapl;nvml;amdsmi;hwmon;http
type TelemetrySource string

const (
	TelemetryNone   TelemetrySource = "none"
	TelemetryRAPL   TelemetrySource = "rapl"
	TelemetryNVML   TelemetrySource = "nvml"
	TelemetryAMDSMI TelemetrySource = "amdsmi"
	TelemetryHwmon  TelemetrySource = "hwmon"
	TelemetryHTTP   TelemetrySource = "http"
)

// GPUHardware describes the host's accelerators.
type GPUHardware struct {
	// Vendor is nvidia or amd.
	// +optional
	Vendor string `json:"vendor,omitempty"`
	// Model is the product name the driver reports for the first device.
	// +optional
	Model string `json:"model,omitempty"`
	// CatalogModel is the hardware-catalog entry Model resolved to.
	// +optional
	CatalogModel string `json:"catalogModel,omitempty"`
	// Exactness says how Model matched CatalogModel.
	// +optional
	Exactness Exactness `json:"exactness,omitempty"`
	// Count is the number of devices.
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`
	// CapRange is the per-device power-cap range (the narrowest when the
	// devices differ).
	// +optional
	CapRange *PowerRange `json:"capRange,omitempty"`
	// Devices holds per-device facts.
	// +listType=map
	// +listMapKey=index
	// +optional
	Devices []GPUDevice `json:"devices,omitempty"`
	// Control says how the agent can cap the GPUs.
	// +optional
	Control ControlCapability `json:"control,omitempty"`
	// Telemetry says how the agent can measure GPU power.
	// +optional
	Telemetry TelemetryCapability `json:"telemetry,omitempty"`
}

// GPUDevice is one accelerator.
type GPUDevice struct {
	// Index is the driver's device index.
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`
	// UUID is the device's stable identity.
	// +optional
	UUID string `json:"uuid,omitempty"`
	// Name is the product name the driver reports.
	// +optional
	Name string `json:"name,omitempty"`
	// PCIBusID is the device's PCI address, such as 0000:17:00.0.
	// +optional
	PCIBusID string `json:"pciBusID,omitempty"`
	// CapRange is the device's power-limit range.
	// +optional
	CapRange *PowerRange `json:"capRange,omitempty"`
	// CurrentCapWatts is the device's power limit right now.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CurrentCapWatts *float64 `json:"currentCapWatts,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// NodeHardwareList is a list of NodeHardware.
type NodeHardwareList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeHardware `json:"items"`
}

// NetworkInterface is one physical network interface of a host.
type NetworkInterface struct {
	// Name is the kernel's name for it, such as eno1.
	Name string `json:"name"`
	// MAC is its hardware address, colon-separated lower-case hex.
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{2}:){5}[0-9a-f]{2}$`
	MAC string `json:"mac"`
	// WakeOnLAN says whether the interface is armed for magic packets, as
	// far as the agent can tell; false when unknown.
	// +optional
	WakeOnLAN bool `json:"wakeOnLAN,omitempty"`
}
