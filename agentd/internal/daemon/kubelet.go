package daemon

import (
	"context"

	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/podenergy"
	"joulie.io/joulie/agentd/internal/podmeter"
	"joulie.io/joulie/agentd/internal/podresources"
)

// kubelet answers the meter from the kubelet's pod-resources API.
type kubelet struct{ c *podresources.Client }

// newKubelet is the pod-resources client of the configuration; nil when
// podResources.socket is none.
func newKubelet(cfg config.Config) podmeter.Kubelet {
	if cfg.PodResources.Socket == podresources.Off {
		return nil
	}
	return kubelet{podresources.New(cfg.PodResources.Socket, podresources.DefaultTimeout)}
}

func (k kubelet) Devices(ctx context.Context) (podmeter.Devices, bool, string) {
	snap := k.c.Poll(ctx, nil)
	if snap.Status.State != podresources.StateConnected {
		return podmeter.Devices{}, false, snap.Status.String()
	}
	d := podmeter.Devices{Holders: make(map[string][]podenergy.Claim, len(snap.GPUs))}
	for _, p := range snap.Pods {
		d.Pods = append(d.Pods, podenergy.Key{Namespace: p.Namespace, Name: p.Name})
	}
	for id, holders := range snap.GPUs {
		claims := make([]podenergy.Claim, len(holders))
		for i, h := range holders {
			claims[i] = podenergy.Claim{Pod: podenergy.Key{Namespace: h.Namespace, Name: h.Pod}, Container: h.Container, Replicas: h.Replicas}
		}
		d.Holders[id] = claims
	}
	return d, true, snap.Status.String()
}
