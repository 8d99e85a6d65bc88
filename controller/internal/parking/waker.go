package parking

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// ByBMCAddress wakes a node through BMC when the node names its BMC
// (the joulie.io/bmc-address annotation), and through LAN (Wake-on-LAN
// from an awake neighbour) otherwise: a site that has set up IPMI for a
// node means it to be used, and one that has not still has the network.
type ByBMCAddress struct {
	BMC BMC
	LAN Waker
	// CycleOnRetry power cycles, on a retry (WakeRequest.Cycle), a host
	// its BMC reports on (parking.ipmi.powerCycleOnRetry): one that did
	// not become Ready after a power up ignores another.
	CycleOnRetry bool
}

// BMC is what waking asks of a node's BMC (bmc.Client).
type BMC interface {
	// PowerOn powers the host up unless it is on.
	PowerOn(ctx context.Context, node *corev1.Node) error
	// PowerCycle restarts a host that is on, and powers up one off.
	PowerCycle(ctx context.Context, node *corev1.Node) error
}

// Wake implements Waker.
func (w ByBMCAddress) Wake(ctx context.Context, node *corev1.Node, req WakeRequest) error {
	if node.Annotations[joulie.AnnotationBMCAddress] != "" && w.BMC != nil {
		call, what := w.BMC.PowerOn, "power up"
		if req.Cycle && w.CycleOnRetry {
			call, what = w.BMC.PowerCycle, "power cycle"
		}
		if err := call(ctx, node); err != nil {
			return fmt.Errorf("wake %s through its BMC (%s, attempt %d): %w", node.Name, what, req.Attempt, err)
		}
		return nil
	}
	if w.LAN == nil {
		return fmt.Errorf("wake %s: it has no %s annotation and Wake-on-LAN is not available", node.Name, joulie.AnnotationBMCAddress)
	}
	return w.LAN.Wake(ctx, node, req)
}
