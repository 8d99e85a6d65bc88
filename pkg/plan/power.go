package plan

import (
	corev1 "k8s.io/api/core/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/hwview"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/workload"
)

// NodeLoad is what the active pods on one node request, split by class
// because a performance pod's GPUs count with a higher coefficient.
type NodeLoad struct {
	Standard, Performance powerest.Demand
}

// Add counts pod, when it is active, in the load.
func (l *NodeLoad) Add(p *corev1.Pod) {
	if !workload.IsActive(p) {
		return
	}
	d := powerest.PodDemand(p)
	sum := &l.Standard
	if workload.Classify(p) == workload.Performance {
		sum = &l.Performance
	}
	sum.CPUCores += d.CPUCores
	sum.GPUs += d.GPUs
}

// PodLoads sums the requests of the active pods by node; pods not yet
// scheduled are left out, as they draw nothing yet.
func PodLoads(pods []*corev1.Pod) map[string]NodeLoad {
	out := map[string]NodeLoad{}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		l := out[p.Spec.NodeName]
		l.Add(p)
		out[p.Spec.NodeName] = l
	}
	return out
}

// nodePower is the node's power for the twin's powerMeasurement and where
// it came from, in SPEC.md's order: the agent's fresh reading, Kepler's
// fresh reading, the utilization model, and last the cap-based budget.
func nodePower(p *NodePlan, cappedW float64, in Inputs, s Params) (joulie.MeasurementSource, float64) {
	if m := freshMeasurement(in.Profiles[p.Name], in.Now, s.MeasurementMaxAge); m != nil {
		return joulie.SourceAgent, m.NodePowerWatts
	}
	if k, ok := in.KeplerPower[p.Name]; ok && (s.MeasurementMaxAge <= 0 || in.Now.Sub(k.Time) <= s.MeasurementMaxAge) {
		return joulie.SourceKepler, k.Watts
	}
	if in.Loads != nil {
		if w, ok := modelPower(p.View, in.Loads[p.Name], cappedW, s.Coefficients); ok {
			return joulie.SourceUtilization, w
		}
	}
	return joulie.SourceStatic, cappedW
}

// modelPower is the utilization model of a node's draw: the idle power of
// its CPU packages and GPUs plus the marginal power of each pod on it, as
// the extender estimates it for a pod it places (pkg/powerest, no PUE:
// this is IT power). The caps hold a node under its budget, so the model
// never says more than cappedW.
//
// ok is false when the model has nothing to stand on: no idle figure for
// the CPU, or for the GPUs of a GPU node (the catalog has none for a model
// it knows only as a generic stand-in), or no power budget at all.
func modelPower(v hwview.View, load NodeLoad, cappedW float64, c powerest.Coefficients) (float64, bool) {
	if v.CPUIdleWattsPerSocket <= 0 || (v.GPUCount > 0 && v.GPUIdleWatts <= 0) || !(cappedW > 0) {
		return 0, false
	}
	n := powerest.Node{CPUTotalCores: float64(v.CPUTotalCores), CPUMaxWatts: v.CPUMaxWattsPerSocket * float64(v.Sockets),
		GPUCount: float64(v.GPUCount), GPUMaxWattsPerGPU: v.GPUMaxWatts}
	w := v.CPUIdleWattsPerSocket*float64(v.Sockets) + v.GPUIdleWatts*float64(v.GPUCount)
	// Every pod's cores count alike; only the GPUs' coefficient depends on
	// the class. Summing the requests before estimating caps the CPU share
	// at the whole node rather than each pod's.
	cpuAndStandardGPUs := powerest.Demand{CPUCores: load.Standard.CPUCores + load.Performance.CPUCores, GPUs: load.Standard.GPUs}
	w += c.Estimate(cpuAndStandardGPUs, n, false, 1).TotalWatts
	w += c.Estimate(powerest.Demand{GPUs: load.Performance.GPUs}, n, true, 1).TotalWatts
	return min(w, cappedW), true
}
