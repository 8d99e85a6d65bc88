package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"joulie.io/joulie/agentd/internal/podenergy"
)

func podSource() ([]podenergy.PodEnergy, map[string]float64, int, bool) {
	pods := []podenergy.PodEnergy{
		{Pod: podenergy.Pod{Key: podenergy.Key{Namespace: "ml", Name: "train"}},
			Containers: []podenergy.ContainerEnergy{{Name: "trainer", GPUJoules: 36000, GPUWatts: 610, GPUs: []string{"GPU-a"}}},
			GPUJoules:  36000, GPUWatts: 610, CPUJoules: 1200, CPUWatts: 20, HasCPU: true},
		// No CPU estimate (standalone): no CPU series.
		{Pod: podenergy.Pod{Key: podenergy.Key{Namespace: "web", Name: "front"}}},
	}
	return pods, map[string]float64{"GPU-b": 900}, 1, true
}

func TestPodMetricsPassLint(t *testing.T) {
	problems, err := testutil.CollectAndLint(NewPodCollector("node-a", podSource))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestPodMetricsValues(t *testing.T) {
	want := `
# HELP joulie_gpu_energy_meter_resets_total GPU energy counters seen going backwards (a driver reload); the power reading stood in for those intervals.
# TYPE joulie_gpu_energy_meter_resets_total counter
joulie_gpu_energy_meter_resets_total{node="node-a"} 1
# HELP joulie_gpu_unattributed_energy_joules_total Energy of a GPU while no pod held it, in joules.
# TYPE joulie_gpu_unattributed_energy_joules_total counter
joulie_gpu_unattributed_energy_joules_total{gpu="GPU-b",node="node-a"} 900
# HELP joulie_pod_cpu_energy_estimate_joules_total Estimate of a pod's share of the CPU packages' energy (RAPL), by its share of the host's busy CPU time, in joules.
# TYPE joulie_pod_cpu_energy_estimate_joules_total counter
joulie_pod_cpu_energy_estimate_joules_total{namespace="ml",node="node-a",pod="train"} 1200
# HELP joulie_pod_cpu_power_estimate_watts Estimate of a pod's share of the CPU packages' power over the last tick, in watts.
# TYPE joulie_pod_cpu_power_estimate_watts gauge
joulie_pod_cpu_power_estimate_watts{namespace="ml",node="node-a",pod="train"} 20
# HELP joulie_pod_gpu_energy_joules_total Energy of the GPUs a container held, measured by the GPUs' energy counters, in joules. A GPU shared by time-slicing is split by the replicas each holds.
# TYPE joulie_pod_gpu_energy_joules_total counter
joulie_pod_gpu_energy_joules_total{container="trainer",namespace="ml",node="node-a",pod="train"} 36000
# HELP joulie_pod_gpu_power_watts Mean power of the GPUs a container held over the last tick, in watts.
# TYPE joulie_pod_gpu_power_watts gauge
joulie_pod_gpu_power_watts{container="trainer",namespace="ml",node="node-a",pod="train"} 610
# HELP joulie_pod_resources_up 1 when the kubelet's pod-resources API answered at the last tick, 0 when it did not.
# TYPE joulie_pod_resources_up gauge
joulie_pod_resources_up{node="node-a"} 1
`
	if err := testutil.CollectAndCompare(NewPodCollector("node-a", podSource), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
