package parking

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"joulie.io/joulie/controller/internal/bmc"
)

// BMCOrLAN wakes a node through its BMC when an administrator has given
// it a BMC Secret (joulie-bmc-<node> in the BMC namespace), and through
// LAN (Wake-on-LAN from an awake neighbour) when not: a site that set up
// IPMI for a node means it to be used, and one that has not still has the
// network. Whether a node has a BMC is the Secret's to say, never the
// Node's, which its kubelet may write.
type BMCOrLAN struct {
	BMC BMC
	LAN Waker
	// CycleOnRetry power cycles, on a retry (WakeRequest.Cycle), a host
	// its BMC reports on (parking.ipmi.powerCycleOnRetry): one that did
	// not become Ready after a power up ignores another.
	CycleOnRetry bool
}

// BMC is what waking asks of a node's BMC (bmc.Client). Both calls fail
// with an error wrapping bmc.ErrNoSecret when the node has no BMC Secret.
type BMC interface {
	// PowerOn powers the host up unless it is on.
	PowerOn(ctx context.Context, node *corev1.Node) error
	// PowerCycle restarts a host that is on, and powers up one off.
	PowerCycle(ctx context.Context, node *corev1.Node) error
}

// Wake implements Waker. A BMC that fails is the error: falling back to
// Wake-on-LAN then would hide a wrong password or a dead BMC.
func (w BMCOrLAN) Wake(ctx context.Context, node *corev1.Node, req WakeRequest) error {
	var noSecret error
	if w.BMC != nil {
		call, what := w.BMC.PowerOn, "power up"
		if req.Cycle && w.CycleOnRetry {
			call, what = w.BMC.PowerCycle, "power cycle"
		}
		err := call(ctx, node)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, bmc.ErrNoSecret):
			return fmt.Errorf("wake %s through its BMC (%s, attempt %d): %w", node.Name, what, req.Attempt, err)
		}
		noSecret = err
	}
	if w.LAN == nil {
		if noSecret == nil {
			noSecret = errors.New("no BMC client")
		}
		return fmt.Errorf("wake %s: %w, and Wake-on-LAN is not available", node.Name, noSecret)
	}
	return w.LAN.Wake(ctx, node, req)
}
