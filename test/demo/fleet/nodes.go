package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// createNode creates a node KWOK-style: Ready, with the family's
// allocatable CPUs, memory and GPUs, selected for Joulie. The hardware
// labels and NodeHardware are left to the node's agent, which discovers
// them as on a real host.
func (f *Fleet) createNode(ctx context.Context, p planned) error {
	path := PathPool
	if p.daemon {
		path = PathDaemon
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: map[string]string{
		joulie.LabelManaged:      "true",
		LabelFleet:               f.cfg.NodePrefix,
		LabelFamily:              p.fam.Name,
		LabelPath:                path,
		"kubernetes.io/hostname": p.name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
	}}}
	if !p.daemon {
		// What an admin gives a simulated node: pool mode reads the
		// CPU model and the NIC here, as the HTTP telemetry has
		// neither. A daemon node's agent discovers both, as on a real
		// host.
		node.Labels[joulie.LabelHWCPUModel] = p.fam.CPUCatalog
		node.Annotations = map[string]string{joulie.AnnotationHWMACs: nodeMAC(p.name).String()}
		if f.cfg.ParkablePool {
			node.Labels[joulie.LabelParkable] = "true"
		}
	}
	node, err := f.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("fleet: node %s exists already: the fleet creates its own nodes; delete it or choose another Config.NodePrefix", p.name)
	}
	if err != nil {
		return fmt.Errorf("fleet: create node %s: %w", p.name, err)
	}
	f.created = append(f.created, p.name)
	now := metav1.Now()
	alloc := p.fam.Allocatable()
	node.Status = corev1.NodeStatus{
		Capacity: alloc, Allocatable: alloc, Phase: corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "simulated by joulie.io/joulie/test/demo/fleet", LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: p.name}},
	}
	if _, err := f.kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("fleet: mark node %s Ready: %w", p.name, err)
	}
	return f.renewLease(ctx, p.name)
}

// leaseNamespace holds the node heartbeats a kubelet renews.
const leaseNamespace = "kube-node-lease"

// leaseRenewal is how often the fleet renews its nodes' leases: a
// kubelet's default, well inside the 40 s after which a cluster's node
// lifecycle controller would mark a silent node NotReady and evict its
// pods (it matters on an existing cluster; the embedded one runs no such
// controller).
const leaseRenewal = 10 * time.Second

// renewLease creates or renews node's heartbeat lease, as a kubelet does.
func (f *Fleet) renewLease(ctx context.Context, node string) error {
	leases := f.kube.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: leaseNamespace},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: ptr.To(int32(40)), RenewTime: &now},
		}, metav1.CreateOptions{})
	} else if err == nil {
		l.Spec.RenewTime = &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("fleet: renew the heartbeat lease %s/%s of node %s: %w", leaseNamespace, node, node, err)
	}
	return nil
}

// heartbeat renews the leases of the fleet's nodes until ctx ends.
func (f *Fleet) heartbeat(ctx context.Context) {
	t := time.NewTicker(leaseRenewal)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, n := range f.created {
				// A switched-off node's kubelet is silent.
				if h, _ := f.sim.hostState(n); h != HostOn {
					continue
				}
				if err := f.renewLease(ctx, n); err != nil && ctx.Err() == nil {
					f.log.Warn("node heartbeat", "err", err)
				}
			}
		}
	}
}

// deleteObjects deletes the nodes Start created with the Joulie objects
// named after them (written by the controller and the agents), and the
// pool agent's identity.
func (f *Fleet) deleteObjects(ctx context.Context) error {
	var errs []error
	keep := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("fleet: delete %s: %w", what, err))
		}
	}
	j := f.jc.JoulieV1alpha1()
	for _, n := range f.created {
		keep("node "+n, f.kube.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}))
		keep("NodePowerProfile "+n, j.NodePowerProfiles().Delete(ctx, n, metav1.DeleteOptions{}))
		keep("NodeHardware "+n, j.NodeHardwares().Delete(ctx, n, metav1.DeleteOptions{}))
		keep("NodeTwin "+n, j.NodeTwins().Delete(ctx, n, metav1.DeleteOptions{}))
		keep("Lease "+n, f.kube.CoordinationV1().Leases(leaseNamespace).Delete(ctx, n, metav1.DeleteOptions{}))
	}
	errs = append(errs, f.deletePoolIdentity(ctx))
	return errors.Join(errs...)
}
