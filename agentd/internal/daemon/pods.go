package daemon

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/kubesync"
	"joulie.io/joulie/agentd/internal/localapi"
	"joulie.io/joulie/agentd/internal/metrics"
	"joulie.io/joulie/agentd/internal/podenergy"
	"joulie.io/joulie/agentd/internal/podmeter"
	"joulie.io/joulie/agentd/internal/sysfs"
)

// dynamicClient is the client of the node's pods and of the events the
// meter writes, under the agent's own identity.
func dynamicClient(cfg config.Config) (dynamic.Interface, error) {
	rc, err := kubesync.RestConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("client for the pods and events of node %s: %w", cfg.NodeName, err)
	}
	return dc, nil
}

// newPodMeter builds the per-pod energy meter of a daemon that drives its
// own host; simulated nodes have neither GPUs nor pod cgroups of their
// own, so they get none. dc is nil in standalone mode.
func (d *Daemon) newPodMeter(cfg config.Config, dc dynamic.Interface) (*podmeter.Meter, error) {
	if !d.onHost {
		return nil, nil
	}
	o := podmeter.Options{
		Snapshot: d.agent.Snapshot,
		Kubelet:  newKubelet(cfg),
		Cgroups:  sysfs.New(cfg.HostRoot),
		Logger:   d.log,
	}
	if d.pods != nil {
		o.PodUIDs, o.PodsErr = d.pods.UIDs, d.pods.Err
	}
	if dc != nil {
		d.reports = kubesync.NewEnergyReporter(dc, cfg.NodeName, d.log)
		o.Ended = d.reports.Enqueue
	}
	// A GPU changing hands may change its cap (per-GPU caps): enforce
	// now, not at the next tick.
	o.HoldersChanged = d.agent.Kick
	return podmeter.New(o), nil
}

// standardGPUs names by UUID the GPUs that only standard pods hold, as the
// kubelet last said who holds which GPU and the API server says what each
// pod is. A GPU held by a pod whose class is not known yet counts as not
// standard: it keeps the node's cap rather than risk slowing a
// performance pod.
func (d *Daemon) standardGPUs() map[string]bool {
	if d == nil || d.meter == nil || d.pods == nil {
		return nil
	}
	out := map[string]bool{}
	for id, pods := range d.meter.Holders() {
		standard := len(pods) > 0
		for _, p := range pods {
			if perf, known := d.pods.Performance(p.Namespace, p.Name); perf || !known {
				standard = false
				break
			}
		}
		if standard {
			out[id] = true
		}
	}
	return out
}

// podCollectors is the per-pod energy's metrics, none without a meter.
func (d *Daemon) podCollectors() []prometheus.Collector {
	m := d.meter
	if m == nil {
		return nil
	}
	return []prometheus.Collector{metrics.NewPodCollector(d.cfg.NodeName, func() ([]podenergy.PodEnergy, map[string]float64, int, bool) {
		u, resets := m.Unattributed()
		return m.Pods(), u, resets, m.Status().KubeletUp
	})}
}

// podsReport is GET /v1/pods.
func (d *Daemon) podsReport() localapi.PodsReport {
	r := localapi.PodsReport{Node: d.cfg.NodeName, Pods: []localapi.PodEnergy{}}
	if d.meter == nil {
		r.Kubelet = "per-pod energy is measured only by an agent driving its own host"
		r.CPU = r.Kubelet
		return r
	}
	st := d.meter.Status()
	r.Kubelet, r.CPU = st.Kubelet, st.CPU
	u, _ := d.meter.Unattributed()
	if len(u) > 0 {
		r.UnattributedGPUJoules = u
	}
	for _, p := range d.meter.Pods() {
		e := localapi.PodEnergy{Namespace: p.Namespace, Name: p.Name, UID: p.UID, GPUs: p.GPUs(),
			GPUWatts: p.GPUWatts, GPUJoules: p.GPUJoules, GPUEstimated: p.GPUEstimated,
			Since: metav1.NewTime(p.Since), Until: metav1.NewTime(p.Until), Ended: p.Ended}
		if p.HasCPU {
			w, j := p.CPUWatts, p.CPUJoules
			e.CPUWattsEstimate, e.CPUJoulesEstimate = &w, &j
		}
		for _, c := range p.Containers {
			e.Containers = append(e.Containers, localapi.ContainerEnergy{Name: c.Name, GPUs: c.GPUs, GPUWatts: c.GPUWatts, GPUJoules: c.GPUJoules})
		}
		r.Pods = append(r.Pods, e)
	}
	return r
}
