package sim

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"

	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/policy"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/test/energy/schedsim"
)

// Arm names a compared configuration.
type Arm string

// The arms, in the report's order. ArmSpecs says what each one runs.
const (
	ArmDefault        Arm = "a-default"                 // kube-scheduler's default profile (LeastAllocated), no caps
	ArmBinPack        Arm = "b-binpack"                 // MostAllocated, no caps
	ArmBinPackTuned   Arm = "b-tuned"                   // the chart's profile and the GPU taint, no caps, always on
	ArmPowerOffNaive  Arm = "g0-binpack-poweroff-naive" // as b, idle nodes switched off: g before issue 38
	ArmPowerOff       Arm = "g-binpack-poweroff"        // as b-tuned, idle nodes switched off by Slurm's rates and a 10-minute idle time
	ArmStatic         Arm = "c-static"                  // Joulie static_partition on the default profile
	ArmQueueAware     Arm = "d-queue-aware"             // Joulie queue_aware_v1 on the default profile
	ArmQueueAwarePack Arm = "d-pack"                    // as d, on the MostAllocated profile
	ArmNoCaps         Arm = "e-joulie-nocaps"           // as d, caps never enforced
	ArmOraclePhysical Arm = "f-oracle-physical"         // oracle: per-GPU caps per job, node-level CPU caps, power-off with foresight
	ArmOracle         Arm = "f-oracle"                  // oracle: as f-oracle-physical, CPU caps per job slice (idealised)
	ArmJoulie         Arm = "j-joulie"                  // Joulie as shipped after issue 23: packing, caps that pay, parking
	ArmJoulieNoCaps   Arm = "j-joulie-nocaps"           // as j-joulie, caps never applied: its parking and placement alone
	ArmJouliePerGPU   Arm = "j-joulie-pergpu"           // as j-joulie, with per-GPU caps (gpuCapScope pod)
)

// OracleMode says how the oracle chooses caps.
type OracleMode uint8

const (
	// NoOracle: caps come from Joulie's profiles, or none.
	NoOracle OracleMode = iota
	// OraclePhysical: each standard GPU job's own GPUs at their
	// energy-optimal cap (NVML sets a limit per GPU), and each node's CPU
	// package cap at the energy-optimal value for the jobs on it (a node
	// running a performance job stays uncapped).
	OraclePhysical
	// OracleSlices: as OraclePhysical for GPUs, and each standard job's
	// own slice of the CPUs at its energy-optimal cap, which no package
	// cap can do: an idealisation.
	OracleSlices
)

// PowerOff says when an arm switches idle nodes off and wakes them.
type PowerOff uint8

const (
	// AlwaysOn: nodes are never switched off.
	AlwaysOn PowerOff = iota
	// AutoscalerRules: cluster-autoscaler's defaults on bare metal. A node
	// empty of pods for IdleOffAfter is switched off; a pod that fits on
	// no awake node wakes one node that fits it, and waits for its boot.
	// At most SuspendsPerMinute and ResumesPerMinute (Slurm's power-saving
	// defaults). No warm reserve.
	AutoscalerRules
	// Foresight: a node is switched off the moment it is empty, and a node
	// a pod needs is Ready exactly when the pod arrives, its boot paid
	// before: the oracle's bound.
	Foresight
	// Parking: Joulie's parking (pkg/park, parking.go): an empty node is
	// parked after the settle time, keeping a warm reserve per hardware
	// family; a pending pod that fits no awake node wakes the fewest
	// parked nodes that fit.
	Parking
)

// ArmSpec is what an arm runs.
type ArmSpec struct {
	Arm Arm
	// Profile is kube-scheduler's base profile.
	Profile schedsim.Profile
	// Joulie runs the controller (plan.Compute) and the extender.
	Joulie bool
	// Policy is the controller's policy when Joulie is set.
	Policy string
	// Scoring is the extender's scoring mode when Joulie is set; "" is
	// the extender's default (scoring.DefaultParams).
	Scoring scoring.Mode
	// ExtenderWeight is the extender's weight in kube-scheduler's
	// configuration when Joulie is set; 0 is the chart's
	// (scoring.ChartWeight).
	ExtenderWeight int64
	// CapMode and Spread are the controller's capMode and
	// performanceSpread when Joulie is set; empty means the seeds'
	// (plan.CapModeFixed, policy.SpreadDensity).
	CapMode, Spread string
	// Guard is the controller's guardMode when Joulie is set; empty means
	// the seeds' (policy.GuardSeed).
	Guard policy.GuardMode
	// GPUCapScope is the controller's gpuCapScope when Joulie is set;
	// empty means plan.GPUScopeNode.
	GPUCapScope string
	// Caps says whether the agents enforce the controller's caps.
	Caps bool
	// Oracle chooses caps per job or per node (Joulie is then off).
	Oracle OracleMode
	// PowerOff says how idle nodes are switched off.
	PowerOff PowerOff
	// GPUTaint taints every GPU node with GPUNodeTaint
	// (nvidia.com/gpu=present:NoSchedule), as GKE does with its GPU node pools, and gives every
	// pod that requests GPUs the toleration Kubernetes'
	// ExtendedResourceToleration admission adds, so pods without GPUs stay
	// off GPU nodes; kube-scheduler's TaintToleration plugin enforces it.
	// It is the operator's placement setting, so every arm that is meant
	// to run as an operator configures a cluster sets it.
	GPUTaint bool
	// Describe is the report's one-line description.
	Describe string
}

// ShippedProfile is the kube-scheduler profile the Helm chart ships
// (packaging/helm/joulie, scheduler.profile): NodeResourcesFit
// MostAllocated over cpu and memory at weight 1 and GPUs at weight 5.
var ShippedProfile = schedsim.Profile{Strategy: configv1.MostAllocated, Resources: []configv1.ResourceSpec{
	{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}, {Name: "nvidia.com/gpu", Weight: 5}, {Name: "amd.com/gpu", Weight: 5}}}

// GPUNodeTaint is the taint of GPU nodes in the arms with ArmSpec.GPUTaint:
// the key is the GPU's extended resource, so the admission plugin
// ExtendedResourceToleration tolerates it for exactly the pods that
// request GPUs.
var GPUNodeTaint = v1.Taint{Key: string(joulie.ResourceNVIDIAGPU), Value: "present", Effect: v1.TaintEffectNoSchedule}

// gpuToleration is what ExtendedResourceToleration adds to a pod that
// requests nvidia.com/gpu: it tolerates any taint of that key.
var gpuToleration = v1.Toleration{Key: GPUNodeTaint.Key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}

// ArmSpecs is every arm, in the report's order.
var ArmSpecs = []ArmSpec{
	{Arm: ArmDefault, Profile: schedsim.DefaultProfile, Describe: "kube-scheduler's default profile (LeastAllocated), no caps, always on"},
	{Arm: ArmBinPack, Profile: schedsim.MostAllocatedProfile, Describe: "MostAllocated (bin-packing), no caps, always on: what a Kubernetes user runs today"},
	{Arm: ArmBinPackTuned, Profile: ShippedProfile, GPUTaint: true,
		Describe: "bin-packing as an operator tunes it: the chart's scheduler profile (GPUs weighted) and GPU nodes tainted for GPU pods only, no caps, always on"},
	{Arm: ArmPowerOffNaive, Profile: schedsim.MostAllocatedProfile, PowerOff: AutoscalerRules,
		Describe: "g before issue 38: MostAllocated over cpu and memory, no GPU taint, idle power-off as g"},
	{Arm: ArmPowerOff, Profile: ShippedProfile, GPUTaint: true, PowerOff: AutoscalerRules,
		Describe: "bin-packing + idle power-off as an operator configures it: b-tuned's placement, an empty node off after 10 min, a pod that fits no awake node wakes one it tolerates (Slurm's suspend and resume rates) and waits for its boot"},
	// The Joulie arms below score as the extender and the chart did before
	// issue 23 (the design's headroom formula, at weight 1), so that their
	// results stay what they were.
	{Arm: ArmStatic, Profile: schedsim.DefaultProfile, Joulie: true, Policy: plan.PolicyStaticPartition, Caps: true, Scoring: scoring.ModeHeadroom, ExtenderWeight: 1,
		Describe: "Joulie static_partition on the default profile"},
	{Arm: ArmQueueAware, Profile: schedsim.DefaultProfile, Joulie: true, Policy: plan.PolicyQueueAware, Caps: true, Scoring: scoring.ModeHeadroom, ExtenderWeight: 1,
		Describe: "Joulie queue_aware_v1 on the default profile"},
	{Arm: ArmQueueAwarePack, Profile: schedsim.MostAllocatedProfile, Joulie: true, Policy: plan.PolicyQueueAware, Caps: true, Scoring: scoring.ModeHeadroom, ExtenderWeight: 1,
		Describe: "Joulie queue_aware_v1 on the MostAllocated profile"},
	{Arm: ArmNoCaps, Profile: schedsim.DefaultProfile, Joulie: true, Policy: plan.PolicyQueueAware, Scoring: scoring.ModeHeadroom, ExtenderWeight: 1,
		Describe: "as d-queue-aware, caps never enforced"},
	{Arm: ArmOraclePhysical, Profile: schedsim.MostAllocatedProfile, Oracle: OraclePhysical, PowerOff: Foresight,
		Describe: "oracle heuristic, not a bound, physical: bin-packing, per-GPU caps per job and node-level CPU caps at the energy optimum, nodes off when empty and woken with foresight"},
	{Arm: ArmOracle, Profile: schedsim.MostAllocatedProfile, Oracle: OracleSlices, PowerOff: Foresight,
		Describe: "oracle heuristic, not a bound, idealised: as f-oracle-physical with a CPU cap per job slice"},
	{Arm: ArmJoulie, Profile: ShippedProfile, GPUTaint: true, Joulie: true, Policy: plan.PolicyQueueAware, Caps: true, PowerOff: Parking,
		CapMode: plan.CapModePays, Spread: policy.SpreadDemand, Guard: policy.GuardDrain,
		Describe: "Joulie as shipped, on b-tuned's placement (the chart's packing profile, the GPU taint): the extender's pack mode, queue_aware_v1 with performance spread by demand, caps only where they pay, idle nodes parked with a warm reserve per family"},
	// j without caps: what Joulie's parking and placement save against g
	// (the same placement, no caps), and what its caps add on top (j
	// against this), each step an arm that runs.
	{Arm: ArmJoulieNoCaps, Profile: ShippedProfile, GPUTaint: true, Joulie: true, Policy: plan.PolicyQueueAware, PowerOff: Parking,
		CapMode: plan.CapModePays, Spread: policy.SpreadDemand, Guard: policy.GuardDrain,
		Describe: "as j-joulie, caps planned but never applied: Joulie's placement and parking alone"},
	{Arm: ArmJouliePerGPU, Profile: ShippedProfile, GPUTaint: true, Joulie: true, Policy: plan.PolicyQueueAware, Caps: true, PowerOff: Parking,
		CapMode: plan.CapModePays, Spread: policy.SpreadDemand, Guard: policy.GuardDrain, GPUCapScope: plan.GPUScopePod,
		Describe: "as j-joulie, with per-GPU caps: on performance nodes, the GPUs of standard jobs at the fixed GPU eco cap"},
}

// Spec returns the spec of arm a.
func Spec(a Arm) (ArmSpec, error) {
	for _, s := range ArmSpecs {
		if s.Arm == a {
			return s, nil
		}
	}
	return ArmSpec{}, fmt.Errorf("unknown arm %q; the arms are %s", a, ArmNames())
}

// Arms returns every arm, in the report's order.
func Arms() []Arm {
	out := make([]Arm, len(ArmSpecs))
	for i, s := range ArmSpecs {
		out[i] = s.Arm
	}
	return out
}

// ArmNames is the arms joined by commas, for messages.
func ArmNames() string {
	var b strings.Builder
	for i, s := range ArmSpecs {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(string(s.Arm))
	}
	return b.String()
}
