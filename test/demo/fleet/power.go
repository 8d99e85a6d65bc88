package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
)

// Host power states of a simulated node: what the machine is doing, as
// opposed to the controller's power state in its NodePowerProfile.
const (
	HostOn      = "on"
	HostOff     = "off"     // switched off by its agent's park; the BMC stays powered
	HostBooting = "booting" // switched on by a magic packet or its BMC, not yet Ready
)

// What switched a node on.
const (
	WakeByLAN = "wake-on-lan"
	WakeByBMC = "bmc"
)

// nodeMAC is a node's one NIC address, stable across runs: a locally
// administered unicast address (02:...) hashed from the name, so it never
// clashes with a real vendor's.
func nodeMAC(node string) net.HardwareAddr {
	h := fnv.New32a()
	h.Write([]byte(node))
	s := h.Sum32()
	return net.HardwareAddr{0x02, 0x6a, byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)}
}

// magicTarget is the MAC a Wake-on-LAN magic packet wakes: six 0xff bytes
// then the address sixteen times, anywhere in the datagram (a NIC matches
// the pattern anywhere in a frame; a SecureOn password may follow).
func magicTarget(b []byte) (net.HardwareAddr, bool) {
	sync := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	for off := 0; off+6+16*6 <= len(b); off++ {
		if !bytes.Equal(b[off:off+6], sync) {
			continue
		}
		mac := b[off+6 : off+12]
		ok := true
		for i := 1; i < 16 && ok; i++ {
			ok = bytes.Equal(b[off+6+6*i:off+12+6*i], mac)
		}
		// Six more 0xff bytes after the sync would read as a broadcast
		// target, which no NIC has: look further.
		if ok && !bytes.Equal(mac, sync) {
			return append(net.HardwareAddr(nil), mac...), true
		}
	}
	return nil, false
}

// listenWakeOnLAN receives magic packets on a loopback UDP port, the
// fleet's stand-in for the NICs of its switched-off nodes: a packet for a
// node that is off starts its boot. It returns the address the agents
// send to (their parking.wakeAddress).
func (f *Fleet) listenWakeOnLAN() (string, error) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("fleet: Wake-on-LAN listener: %w", err)
	}
	f.wolConn = conn
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		buf := make([]byte, 1500)
		for {
			n, _, err := conn.ReadFrom(buf)
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					f.log.Error("Wake-on-LAN listener stopped", "err", err)
				}
				return
			}
			mac, ok := magicTarget(buf[:n])
			if !ok {
				continue
			}
			if node, booted := f.sim.wake(mac, time.Now()); booted {
				f.log.Info("magic packet: booting", "node", node, "mac", mac)
			}
		}
	}()
	return conn.LocalAddr().String(), nil
}

// WakeAddress is the host:port of the fleet's Wake-on-LAN listener.
func (f *Fleet) WakeAddress() string {
	if f.wolConn == nil {
		return ""
	}
	return f.wolConn.LocalAddr().String()
}

// readiness writes the Ready condition the simulator says each node has:
// Unknown from the moment its host is switched off (as the node lifecycle
// controller marks a node whose kubelet stopped posting, without its 40 s
// wait), True once a boot is done.
type readiness struct {
	f     *Fleet
	queue workqueue.TypedRateLimitingInterface[string]
}

func (r *readiness) run(ctx context.Context) {
	for {
		name, quit := r.queue.Get()
		if quit {
			return
		}
		if err := r.sync(ctx, name); err != nil && ctx.Err() == nil {
			r.f.log.Warn("node readiness: will retry", "node", name, "err", err)
			r.queue.AddRateLimited(name)
		} else {
			r.queue.Forget(name)
			// A host that is up again runs the pods bound to it
			// while it was off or booting, as its kubelet would.
			if host, _ := r.f.sim.hostState(name); host == HostOn && r.f.pods != nil {
				r.f.pods.admit(name)
			}
		}
		r.queue.Done(name)
	}
}

func (r *readiness) sync(ctx context.Context, name string) error {
	host, ok := r.f.sim.hostState(name)
	if !ok {
		return nil
	}
	want, reason, msg := corev1.ConditionTrue, "KubeletReady", "simulated by joulie.io/joulie/test/demo/fleet"
	if host != HostOn {
		want, reason, msg = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status: the simulated host is "+host
	}
	node, err := r.f.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read node %s: %w", name, err)
	}
	now := metav1.Now()
	found := false
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		if c.Type != corev1.NodeReady {
			continue
		}
		found = true
		if c.Status == want {
			return nil
		}
		c.Status, c.Reason, c.Message, c.LastHeartbeatTime, c.LastTransitionTime = want, reason, msg, now, now
	}
	if !found {
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: want,
			Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now})
	}
	if want == corev1.ConditionTrue {
		// The kubelet's first heartbeat after its boot.
		if err := r.f.renewLease(ctx, name); err != nil {
			return err
		}
	}
	if _, err := r.f.kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set node %s Ready %s: %w", name, want, err)
	}
	return nil
}

// WakeAll switches on every node that is off, as an operator would
// before a run without Joulie; it returns at once, the boots take
// Config.BootTime.
func (f *Fleet) WakeAll() {
	for _, name := range f.nodes {
		f.sim.wake(nodeMAC(name), time.Now())
	}
}
