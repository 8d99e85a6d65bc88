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
	BMC, LAN Waker
}

// Wake implements Waker.
func (w ByBMCAddress) Wake(ctx context.Context, node *corev1.Node) error {
	if node.Annotations[joulie.AnnotationBMCAddress] != "" && w.BMC != nil {
		if err := w.BMC.Wake(ctx, node); err != nil {
			return fmt.Errorf("wake %s through its BMC: %w", node.Name, err)
		}
		return nil
	}
	if w.LAN == nil {
		return fmt.Errorf("wake %s: it has no %s annotation and Wake-on-LAN is not available", node.Name, joulie.AnnotationBMCAddress)
	}
	return w.LAN.Wake(ctx, node)
}
