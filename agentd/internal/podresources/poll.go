package podresources

import (
	"context"
	"errors"
	"fmt"
)

// State is where the agent stands with the kubelet's pod-resources API.
type State string

const (
	// StateConnected: the kubelet answered; the snapshot holds its pods.
	StateConnected State = "connected"
	// StateAbsent: no socket at the path. Normal on a standalone host or
	// under a kubelet without the API; per-pod figures are not available.
	StateAbsent State = "absent"
	// StateError: the socket is there but the call failed.
	StateError State = "error"
	// StateOff: the socket path is Off.
	StateOff State = "off"
)

// Status is the outcome of one Poll, for the operator.
type Status struct {
	State State
	// Socket is the path asked.
	Socket string
	// Pods is how many pods the kubelet listed, and GPUs how many GPUs
	// (map keys of Snapshot.GPUs) at least one of them holds.
	Pods, GPUs int
	// Err is what failed, with StateError.
	Err error
}

// String says, in a line fit for a log or joulie-agentctl, what the
// agent knows of the node's pods and, when it knows nothing, why and
// what would change that.
func (s Status) String() string {
	switch s.State {
	case StateConnected:
		return fmt.Sprintf("kubelet pod-resources API at %s: %d %s, %d %s assigned",
			s.Socket, s.Pods, plural(s.Pods, "pod", "pods"), s.GPUs, plural(s.GPUs, "GPU", "GPUs"))
	case StateAbsent:
		return fmt.Sprintf("no kubelet pod-resources socket at %s: per-pod figures need a kubelet serving "+
			"the pod-resources API (standard since Kubernetes 1.28); per-node figures are unaffected", s.Socket)
	case StateOff:
		return "per-pod attribution switched off (podResources.socket is " + Off + ")"
	case StateError:
		return fmt.Sprintf("per-pod figures unavailable: %v", s.Err)
	}
	return "pod-resources status unknown"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Snapshot is what one Poll learnt: the pods and the GPUs they hold, as
// List and GPUHolders give them, and the Status. With any State but
// StateConnected, Pods is nil and GPUs empty.
type Snapshot struct {
	Status Status
	Pods   []Pod
	GPUs   map[string][]Holder
}

// Poll lists the kubelet's pods and maps the GPUs among the given
// resources (as GPUHolders takes them) to their holders. It is meant to
// be called once per agent tick: it never fails, never panics and never
// takes longer than the client's timeout, and every outcome, a missing
// socket included, is in Snapshot.Status.
func (c *Client) Poll(ctx context.Context, resources []string) Snapshot {
	snap := Snapshot{Status: Status{Socket: c.socket}, GPUs: map[string][]Holder{}}
	pods, err := c.List(ctx)
	switch {
	case errors.Is(err, ErrOff):
		snap.Status.State = StateOff
	case errors.Is(err, ErrNoSocket):
		snap.Status.State = StateAbsent
	case err != nil:
		snap.Status.State, snap.Status.Err = StateError, err
	default:
		snap.Pods, snap.GPUs = pods, GPUHolders(pods, resources)
		snap.Status.State = StateConnected
		snap.Status.Pods, snap.Status.GPUs = len(pods), len(snap.GPUs)
	}
	return snap
}
