package v1alpha1

// Node labels and pod annotations of the Joulie contract (SPEC.md, "Labels
// and annotations"). Schedulers, pod authors and admins depend on these
// exact strings, so they never change within an API version.
const (
	// LabelManaged selects a node for Joulie ("true"); it is the chart's
	// default NODE_SELECTOR.
	LabelManaged = "joulie.io/managed"
	// LabelReserved ("true") keeps a managed node out of planning.
	LabelReserved = "joulie.io/reserved"
	// LabelPowerProfile carries the node's current profile, one of
	// ProfilePerformance or ProfileEco. Written by the controller.
	LabelPowerProfile = "joulie.io/power-profile"
	// LabelDraining is "true" while a node planned for eco still runs
	// performance-sensitive pods, "false" otherwise. Eco-only pods should
	// exclude draining nodes with `joulie.io/draining NotIn ["true"]`.
	LabelDraining = "joulie.io/draining"

	// LabelHWCPUModel, LabelHWGPUModel and LabelHWGPUCount give a node's
	// hardware identity when no NodeHardware has been published yet.
	LabelHWCPUModel = "joulie.io/hw.cpu-model"
	LabelHWGPUModel = "joulie.io/hw.gpu-model"
	LabelHWGPUCount = "joulie.io/hw.gpu-count"

	// LabelParkable ("true") lets the controller park the node (switch it
	// off while empty); parking is never done without it.
	LabelParkable = "joulie.io/parkable"
	// LabelWarmReserve ("true") is on an idle awake node the controller
	// holds as its hardware family's warm reserve for performance pods
	// (parking.reserveFor: performance); the extender keeps every other
	// pod off it, so a burst of performance pods finds it free instead of
	// waiting for a boot. The controller sets and removes it; unlike
	// LabelReserved, which an admin sets, it does not keep a node out of
	// planning.
	LabelWarmReserve = "joulie.io/warm-reserve"
	// TaintParked (effect NoSchedule) is on a node while it is not awake:
	// parking, parked, waking or wake-failed.
	TaintParked = "joulie.io/parked"
	// AnnotationCordonedForPark ("true") on a node says that its cordon
	// (spec.unschedulable) is the controller's, set when it recorded the
	// node parked: the controller lifts only a cordon that carries it, so
	// an admin's own cordon is never undone, and parking does not count
	// it as the admin's "cordoned".
	AnnotationCordonedForPark = "joulie.io/cordoned-for-park"
	// AnnotationBMCAddress and AnnotationBMCSecret on a node once named
	// its BMC's address and the Secret of its credentials. They are no
	// longer read (a node's kubelet may write its annotations): a node's
	// BMC is the Secret joulie-bmc-<node> of the controller's BMC
	// namespace. The controller warns about nodes still carrying them,
	// and the chart keeps kubelets and agents from writing them.
	// Credentials never go in a label, annotation or CR.
	AnnotationBMCAddress = "joulie.io/bmc-address"
	AnnotationBMCSecret  = "joulie.io/bmc-secret"
	// AnnotationHWMACs on a simulated node lists its NICs' MAC addresses,
	// comma-separated: pool mode publishes them in NodeHardware
	// status.network, as a host's agent does from sysfs, since the HTTP
	// backend's telemetry has no NICs.
	AnnotationHWMACs = "joulie.io/hw.macs"

	// AnnotationWorkloadClass on a pod is WorkloadClassPerformance or
	// WorkloadClassStandard (the default when absent).
	AnnotationWorkloadClass = "joulie.io/workload-class"
)

// ConditionEcoRefused is the NodePowerProfile status condition an agent
// reports while it refuses an eco target because a performance pod runs
// on its node (the eco guard); kubectl joulie status reads it.
const ConditionEcoRefused = "EcoRefused"

// Values of AnnotationWorkloadClass.
const (
	WorkloadClassPerformance = "performance"
	WorkloadClassStandard    = "standard"
)

// Extended resources through which device plugins advertise GPUs; the
// controller falls back on them for the GPU count of a node.
const (
	ResourceNVIDIAGPU = "nvidia.com/gpu"
	ResourceAMDGPU    = "amd.com/gpu"
)

// Profile is the power profile a node supplies.
// +kubebuilder:validation:Enum=performance;eco
type Profile string

const (
	// ProfilePerformance runs the node uncapped (by default at 100% of
	// its caps) for work that needs full speed.
	ProfilePerformance Profile = "performance"
	// ProfileEco caps the node to save energy.
	ProfileEco Profile = "eco"
)
