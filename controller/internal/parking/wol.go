package parking

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/retry"

	"joulie.io/joulie/controller/internal/bmc"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/pkg/generated/informers/externalversions"
	listers "joulie.io/joulie/pkg/generated/listers/joulie/v1alpha1"
	"joulie.io/joulie/pkg/park"
)

// labelZone is the well-known topology label; a neighbour in the parked
// node's zone is the likeliest to share its network segment, which magic
// packets do not leave.
const labelZone = "topology.kubernetes.io/zone"

// WakeOnLAN wakes a parked node through an awake neighbour's agent: it
// lists the node's MAC addresses, from its NodeHardware status, in the
// neighbour's NodePowerProfile spec.wakeOnLAN, and that agent sends magic
// packets to them while they are listed. The controller removes them
// once the node is no longer waking (pruneWakeOnLAN).
type WakeOnLAN struct {
	joulie   versioned.Interface
	nodes    corelisters.NodeLister
	hardware listers.NodeHardwareLister
	profiles listers.NodePowerProfileLister
}

// NewWakeOnLAN builds the Wake-on-LAN waker over the shared informer
// factories.
func NewWakeOnLAN(jc versioned.Interface, kf informers.SharedInformerFactory, jf externalversions.SharedInformerFactory) *WakeOnLAN {
	return &WakeOnLAN{joulie: jc, nodes: kf.Core().V1().Nodes().Lister(),
		hardware: jf.Joulie().V1alpha1().NodeHardwares().Lister(), profiles: jf.Joulie().V1alpha1().NodePowerProfiles().Lister()}
}

// MACs are the addresses to wake a host at: the interfaces its agent found
// armed for Wake-on-LAN, or every interface it listed when it could tell
// of none (the agent cannot always read the setting).
func MACs(hw *joulie.NodeHardware) []string {
	if hw == nil {
		return nil
	}
	var armed, all []string
	for _, i := range hw.Status.Network {
		all = append(all, i.MAC)
		if i.WakeOnLAN {
			armed = append(armed, i.MAC)
		}
	}
	if len(armed) > 0 {
		return armed
	}
	return all
}

// Wake lists node's MACs in an awake neighbour's profile. A retry is
// the same: a magic packet cannot restart a host that is on.
func (w *WakeOnLAN) Wake(ctx context.Context, node *corev1.Node, _ WakeRequest) error {
	hw, err := w.hardware.Get(node.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("read NodeHardware %s from the cache: %w", node.Name, err)
	}
	macs := MACs(hw)
	if len(macs) == 0 {
		return fmt.Errorf("NodeHardware %s lists no network interface, so Wake-on-LAN cannot reach the node: check that its agent publishes status.network, or give the node a BMC (the Secret %s in the BMC namespace, with its address, username and password)",
			node.Name, bmc.SecretName(node.Name))
	}
	sender, err := w.sender(node)
	if err != nil {
		return err
	}
	// Wakes run concurrently, and beside the pass's pruning: each write
	// is conditional on the list it extends, so none drops another's MAC.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := w.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, sender, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read NodePowerProfile %s to list %s's MACs for Wake-on-LAN: %w", sender, node.Name, err)
		}
		list := slices.Clone(cur.Spec.WakeOnLAN)
		for _, m := range macs {
			if !slices.Contains(list, m) {
				list = append(list, m)
			}
		}
		slices.Sort(list)
		return applyWakeOnLAN(ctx, w.joulie, sender, cur.ResourceVersion, list)
	})
}

// sender chooses the awake node whose agent sends the packets: Ready, its
// profile awake and its agent reporting awake; one in the target's zone
// first, then by name.
func (w *WakeOnLAN) sender(target *corev1.Node) (string, error) {
	nodes, err := w.nodes.List(labels.Everything())
	if err != nil {
		return "", fmt.Errorf("list Nodes from the cache: %w", err)
	}
	zone := target.Labels[labelZone]
	best, bestSameZone := "", false
	for _, n := range nodes {
		if n.Name == target.Name || !park.NodeReady(n) {
			continue
		}
		p, err := w.profiles.Get(n.Name)
		if err != nil || !p.Spec.PowerState.Awake() || p.Status.PowerState != joulie.PowerAwake {
			continue
		}
		same := zone != "" && n.Labels[labelZone] == zone
		if best == "" || (same && !bestSameZone) || (same == bestSameZone && n.Name < best) {
			best, bestSameZone = n.Name, same
		}
	}
	if best == "" {
		return "", fmt.Errorf("no awake node with a running agent to send Wake-on-LAN to %s: give the node a BMC (the Secret %s in the BMC namespace)", target.Name, bmc.SecretName(target.Name))
	}
	return best, nil
}

// applyWakeOnLAN sets a profile's spec.wakeOnLAN under WOLFieldManager,
// if the profile is still at resourceVersion; an empty list gives up the
// field.
func applyWakeOnLAN(ctx context.Context, jc versioned.Interface, name, resourceVersion string, macs []string) error {
	spec := map[string]any{}
	if len(macs) > 0 {
		spec["wakeOnLAN"] = macs
	}
	body, err := json.Marshal(map[string]any{"apiVersion": joulie.SchemeGroupVersion.String(), "kind": "NodePowerProfile",
		"metadata": map[string]any{"name": name, "resourceVersion": resourceVersion}, "spec": spec})
	if err != nil {
		return fmt.Errorf("encode NodePowerProfile %s spec.wakeOnLAN: %w", name, err)
	}
	force := true
	if _, err := jc.JoulieV1alpha1().NodePowerProfiles().Patch(ctx, name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: WOLFieldManager, Force: &force}); err != nil {
		// Wrapped with %w: RetryOnConflict must see a conflict.
		return fmt.Errorf("set NodePowerProfile %s spec.wakeOnLAN to %v: %w", name, macs, err)
	}
	return nil
}

// pruneWakeOnLAN removes from every profile's spec.wakeOnLAN the MACs of
// nodes no longer waking, so that no agent wakes a node that was parked
// again or gave up on.
func (c *Controller) pruneWakeOnLAN(ctx context.Context, v *view, states map[string]joulie.PowerState) error {
	waking := map[string]bool{}
	for name, s := range states {
		if s == joulie.PowerWaking {
			for _, m := range MACs(v.hardware[name]) {
				waking[m] = true
			}
		}
	}
	for name, p := range v.profiles {
		if len(p.Spec.WakeOnLAN) == 0 {
			continue
		}
		if !slices.ContainsFunc(p.Spec.WakeOnLAN, func(m string) bool { return !waking[m] }) {
			continue
		}
		// The list from the cache may miss a MAC a wake has just added:
		// filter the one on the server, conditional on it, as a wake in
		// flight may be adding one now.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			fresh, err := c.joulie.JoulieV1alpha1().NodePowerProfiles().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("read NodePowerProfile %s to prune its Wake-on-LAN list: %w", name, err)
			}
			keep := slices.DeleteFunc(slices.Clone(fresh.Spec.WakeOnLAN), func(m string) bool { return !waking[m] })
			if len(keep) == len(fresh.Spec.WakeOnLAN) {
				return nil
			}
			return applyWakeOnLAN(ctx, c.joulie, name, fresh.ResourceVersion, keep)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
