package schedsim

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
)

// Profile says how the scheduler scores nodes. Everything it leaves unset
// is kube-scheduler's v1 default, taken from the scheduler's own
// configuration API, so the zero Profile is kube-scheduler's default
// profile.
type Profile struct {
	// Strategy is NodeResourcesFit's scoring strategy: "" or
	// LeastAllocated (kube-scheduler's default, spreads), MostAllocated
	// (packs) or RequestedToCapacityRatio.
	Strategy configv1.ScoringStrategyType
	// Resources weighs the resources NodeResourcesFit scores; empty means
	// kube-scheduler's default, cpu and memory with weight 1 each. An
	// extended resource such as nvidia.com/gpu counts only if listed here.
	Resources []configv1.ResourceSpec
	// PercentageOfNodesToScore caps how many feasible nodes a pod's
	// scheduling cycle looks for (see numFeasibleNodesToFind). nil means
	// kube-scheduler's default, 0: adaptive, 50% minus 1% per 125 nodes,
	// at least 5% and at least 100 nodes.
	PercentageOfNodesToScore *int32
	// Disabled names default plugins left out of the profile. Leaving out
	// a plugin that passes and scores every node alike for the pods at
	// hand changes no placement and saves its cost in every cycle
	// (InertForPlainPods).
	Disabled []string
}

// InertForPlainPods are the default profile's plugins that cannot tell
// nodes apart for pods with no volumes, host ports, node or pod
// affinities, tolerations, topology spread constraints, resource claims
// or owner references, on nodes with no taints, images or declared
// features: they admit every node and score every node the same, so
// without them kube-scheduler places such pods exactly as with them.
// (NodeUnschedulable stays: a cordoned node must be passed over.) The
// energy simulator's pods and nodes are of that kind; TestInertPlugins
// checks the claim by placing a workload both ways.
var InertForPlainPods = []string{
	"TaintToleration", "NodeAffinity", "NodePorts", "VolumeRestrictions", "NodeVolumeLimits",
	"VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
	"ImageLocality", "NodeDeclaredFeatures",
}

// Without returns p with the named plugins disabled as well.
func (p Profile) Without(plugins ...string) Profile {
	p.Disabled = append(append([]string(nil), p.Disabled...), plugins...)
	return p
}

// DefaultProfile is kube-scheduler's default profile: NodeResourcesFit
// scores with LeastAllocated, so pods spread.
var DefaultProfile = Profile{}

// MostAllocatedProfile is the default profile with NodeResourcesFit's
// scoring strategy set to MostAllocated, so pods pack onto the fullest
// nodes that fit them.
var MostAllocatedProfile = Profile{Strategy: configv1.MostAllocated}

// schedulerConfig turns p into kube-scheduler's internal configuration the
// way kube-scheduler itself does with a configuration file: a v1 object,
// defaulted and converted through the scheduler's scheme, then validated.
func (p Profile) schedulerConfig() (*config.KubeSchedulerConfiguration, error) {
	var v1cfg configv1.KubeSchedulerConfiguration
	v1cfg.PercentageOfNodesToScore = p.PercentageOfNodesToScore
	if p.Strategy != "" || len(p.Resources) > 0 || len(p.Disabled) > 0 {
		strategy := p.Strategy
		if strategy == "" {
			strategy = configv1.LeastAllocated
		}
		// One profile with one plugin configuration: defaulting adds the
		// default plugins and the other plugins' default arguments, as it
		// does for a configuration file that names only this plugin.
		var disabled []configv1.Plugin
		for _, name := range p.Disabled {
			disabled = append(disabled, configv1.Plugin{Name: name})
		}
		v1cfg.Profiles = []configv1.KubeSchedulerProfile{{
			Plugins: &configv1.Plugins{MultiPoint: configv1.PluginSet{Disabled: disabled}},
			PluginConfig: []configv1.PluginConfig{{
				Name: "NodeResourcesFit",
				Args: runtime.RawExtension{Object: &configv1.NodeResourcesFitArgs{
					ScoringStrategy: &configv1.ScoringStrategy{Type: strategy, Resources: p.Resources},
				}},
			}},
		}}
	}
	scheme.Scheme.Default(&v1cfg)
	var cfg config.KubeSchedulerConfiguration
	if err := scheme.Scheme.Convert(&v1cfg, &cfg, nil); err != nil {
		return nil, fmt.Errorf("convert scheduler profile %+v to kube-scheduler's configuration: %w", p, err)
	}
	if errs := validation.ValidateKubeSchedulerConfiguration(&cfg); errs != nil {
		return nil, fmt.Errorf("scheduler profile %+v: kube-scheduler refuses it: %w", p, errs)
	}
	if len(cfg.Profiles) != 1 {
		return nil, fmt.Errorf("scheduler profile %+v: got %d kube-scheduler profiles, want 1", p, len(cfg.Profiles))
	}
	return &cfg, nil
}
