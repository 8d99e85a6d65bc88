package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"joulie.io/joulie/agentd/internal/podenergy"
)

// PodSource is what the per-pod energy meter knows at scrape time: every
// pod it holds (running, or ended within its retention, after which the
// pod's series go), the energy of GPUs no pod held, how many GPU energy
// counters were seen reset, and whether the kubelet answered.
type PodSource func() (pods []podenergy.PodEnergy, unattributed map[string]float64, resets int, kubeletUp bool)

var (
	podGPUEnergy = prometheus.NewDesc("joulie_pod_gpu_energy_joules_total",
		"Energy of the GPUs a container held, measured by the GPUs' energy counters, in joules. A GPU shared by time-slicing is split by the replicas each holds.",
		[]string{"node", "namespace", "pod", "container"}, nil)
	podGPUPower = prometheus.NewDesc("joulie_pod_gpu_power_watts",
		"Mean power of the GPUs a container held over the last tick, in watts.",
		[]string{"node", "namespace", "pod", "container"}, nil)
	podCPUEnergy = prometheus.NewDesc("joulie_pod_cpu_energy_estimate_joules_total",
		"Estimate of a pod's share of the CPU packages' energy (RAPL), by its share of the host's busy CPU time, in joules.",
		[]string{"node", "namespace", "pod"}, nil)
	podCPUPower = prometheus.NewDesc("joulie_pod_cpu_power_estimate_watts",
		"Estimate of a pod's share of the CPU packages' power over the last tick, in watts.",
		[]string{"node", "namespace", "pod"}, nil)
	gpuUnattributed = prometheus.NewDesc("joulie_gpu_unattributed_energy_joules_total",
		"Energy of a GPU while no pod held it, in joules.",
		[]string{"node", "gpu"}, nil)
	gpuCounterResets = prometheus.NewDesc("joulie_gpu_energy_meter_resets_total",
		"GPU energy counters seen going backwards (a driver reload); the power reading stood in for those intervals.",
		[]string{"node"}, nil)
	podResourcesUp = prometheus.NewDesc("joulie_pod_resources_up",
		"1 when the kubelet's pod-resources API answered at the last tick, 0 when it did not.",
		[]string{"node"}, nil)
)

// PodCollector exports the per-pod energy of one node.
type PodCollector struct {
	node   string
	source PodSource
}

// NewPodCollector returns a collector of node's per-pod energy.
func NewPodCollector(node string, source PodSource) *PodCollector {
	return &PodCollector{node: node, source: source}
}

// Describe sends every descriptor.
func (c *PodCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{podGPUEnergy, podGPUPower, podCPUEnergy, podCPUPower, gpuUnattributed, gpuCounterResets, podResourcesUp} {
		ch <- d
	}
}

// Collect reads the meter.
func (c *PodCollector) Collect(ch chan<- prometheus.Metric) {
	pods, unattributed, resets, up := c.source()
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	for _, p := range pods {
		for _, ct := range p.Containers {
			metric(podGPUEnergy, prometheus.CounterValue, ct.GPUJoules, c.node, p.Namespace, p.Name, ct.Name)
			metric(podGPUPower, prometheus.GaugeValue, ct.GPUWatts, c.node, p.Namespace, p.Name, ct.Name)
		}
		if p.HasCPU {
			metric(podCPUEnergy, prometheus.CounterValue, p.CPUJoules, c.node, p.Namespace, p.Name)
			metric(podCPUPower, prometheus.GaugeValue, p.CPUWatts, c.node, p.Namespace, p.Name)
		}
	}
	for id, j := range unattributed {
		metric(gpuUnattributed, prometheus.CounterValue, j, c.node, id)
	}
	metric(gpuCounterResets, prometheus.CounterValue, float64(resets), c.node)
	metric(podResourcesUp, prometheus.GaugeValue, b2f(up), c.node)
}
