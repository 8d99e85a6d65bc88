package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/dynamic"

	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/kubesync"
	"joulie.io/joulie/agentd/internal/lastcheck"
	"joulie.io/joulie/agentd/internal/podresources"
	"joulie.io/joulie/pkg/kubeclient"
	"joulie.io/joulie/pkg/version"
)

// lastCheckTimeout bounds the last check before a park's power-off: both
// sources answer in milliseconds when healthy, and one that does not is
// a reason not to switch the host off.
const lastCheckTimeout = 10 * time.Second

// podsClient is the client the agent reads its node's pods with, under
// podsKubeconfig's identity (the kubelet's, which the Node authorizer
// confines to this node's pods). It is nil, with the reason, when the
// configuration reads no pods or the kubeconfig is not there: the agent
// then runs without them rather than crash-loop on a host whose kubelet
// keeps its credentials elsewhere.
func podsClient(cfg config.Config) (dynamic.Interface, string, error) {
	path := cfg.PodsKubeconfig
	if path == config.NoPods {
		return nil, "podsKubeconfig is none", nil
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Sprintf("podsKubeconfig %s does not exist (set it to the kubelet's kubeconfig)", path), nil
	}
	rc, err := kubeclient.Config(path, "--pods-kubeconfig / JOULIE_PODS_KUBECONFIG", "joulie-agentd/"+version.Version+" ("+cfg.NodeName+", pods)")
	if err != nil {
		return nil, "", err
	}
	rc.QPS, rc.Burst = 5, 10
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, "", fmt.Errorf("client for the pods of node %s: %w", cfg.NodeName, err)
	}
	return dc, "", nil
}

// checkEmpty is the agent's last check before a park powers the host
// off: the kubelet first, then the API server, so that the read closest
// to the power-off is the one a new binding reaches first.
func (d *Daemon) checkEmpty(ctx context.Context) lastcheck.Verdict {
	ctx, cancel := context.WithTimeout(ctx, lastCheckTimeout)
	defer cancel()
	var k lastcheck.Kubelet
	if d.cfg.PodResources.Socket == podresources.Off {
		k.Off = true
	} else {
		pods, err := d.admitted.List(ctx)
		k.Err = err
		for _, p := range pods {
			k.Pods = append(k.Pods, p.Namespace+"/"+p.Name)
		}
	}
	var a lastcheck.API
	if d.podReader == nil {
		a.Err = fmt.Errorf("the agent reads no pods: %s", d.noPods)
	} else {
		a.Pods, a.Err = kubesync.BoundPods(ctx, d.podReader, d.cfg.NodeName)
	}
	return lastcheck.Check(k, a)
}
