package fleet

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// Fault switches and observations for tests that break the fleet on
// purpose (test/integration's parking fault test): BMCs that hang or
// refuse their credentials, and a report of every host switch-off with
// what the stand-in kubelet was running there at that instant.

// What switched a host off.
const (
	// PowerOffByAgent: the pool agent's host.power_off, a park's end.
	PowerOffByAgent = "agent"
	// PowerOffByBMC: the node's BMC, told "power off" (or the first half
	// of a power cycle).
	PowerOffByBMC = "bmc"
)

// PowerOff is one switch-off of a host that was on or booting.
type PowerOff struct {
	Node string
	// At is the instant the simulated host went off, on this process's
	// clock.
	At time.Time
	// By is PowerOffByAgent or PowerOffByBMC.
	By string
	// Host is what the host was doing: HostOn or HostBooting.
	Host string
	// Running are the pods the stand-in kubelet was running on the node
	// at At (admitted and not finished): what a real switch-off would
	// kill.
	Running []RunningPod
}

// RunningPod is a pod the stand-in runs.
type RunningPod struct {
	Namespace, Name, UID string
	// Started is when the stand-in admitted it, after it saw the pod
	// bound: the pod was bound at or before Started.
	Started time.Time
}

// OnPowerOff has fn told of every switch-off from now on, each on a
// goroutine of its own (so fn may read the API server or the fleet, and
// two calls may overlap). A later call replaces fn; nil stops it.
func (f *Fleet) OnPowerOff(fn func(PowerOff)) {
	f.sim.mu.Lock()
	defer f.sim.mu.Unlock()
	f.sim.poweredOff = fn
}

// powerOffEvent is n's switch-off now. s.mu is held.
func (s *sim) powerOffEvent(n *simNode, by string) PowerOff {
	ev := PowerOff{Node: n.name, At: time.Now(), By: by, Host: n.host}
	for _, p := range s.seq {
		if p.rec.Node == n.name && p.rec.Phase == string(corev1.PodRunning) {
			ev.Running = append(ev.Running, RunningPod{Namespace: p.rec.Namespace, Name: p.rec.Name, UID: p.uid, Started: p.rec.Started})
		}
	}
	return ev
}

// BMCNodes are the names of the nodes with a BMC, in creation order.
func (f *Fleet) BMCNodes() []string {
	var out []string
	for _, b := range f.bmcs {
		out = append(out, b.node)
	}
	return out
}

func (f *Fleet) bmcOf(node string) (*bmc, error) {
	i := slices.IndexFunc(f.bmcs, func(b *bmc) bool { return b.node == node })
	if i < 0 {
		return nil, fmt.Errorf("fleet: node %s has no BMC (Config.BMCNodes gives the first pool nodes one: %v)", node, f.BMCNodes())
	}
	return f.bmcs[i], nil
}

// HangBMC makes node's BMC hang (true) or answer again (false): its
// ipmi_sim is stopped with SIGSTOP, so it takes IPMI messages into its
// socket and answers none, as a wedged BMC does, until SIGCONT. Messages
// that arrived meanwhile are answered late, after SIGCONT, as a real BMC
// coming back may.
func (f *Fleet) HangBMC(node string, hang bool) error {
	b, err := f.bmcOf(node)
	if err != nil {
		return err
	}
	sig, what := syscall.SIGCONT, "resume"
	if hang {
		sig, what = syscall.SIGSTOP, "stop"
	}
	if err := b.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("fleet: %s the BMC of %s (ipmi_sim pid %d): %w", what, node, b.cmd.Process.Pid, err)
	}
	f.log.Info("BMC fault", "node", node, "hang", hang)
	return nil
}

// RefuseBMC makes node's BMC refuse the controller's login (true), as a
// BMC whose password was changed under the cluster does, or take it
// again (false): the password in the node's BMC Secret is changed to a
// wrong one, or put back. The BMC itself keeps its account.
func (f *Fleet) RefuseBMC(ctx context.Context, node string, refuse bool) error {
	b, err := f.bmcOf(node)
	if err != nil {
		return err
	}
	password := b.password
	if refuse {
		password = "wrong-" + b.password
	}
	secrets := f.kube.CoreV1().Secrets(f.cfg.BMCNamespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := secrets.Get(ctx, bmcSecret(node), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data["password"] = []byte(password)
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("fleet: set the password in the BMC Secret %s/%s of %s: %w", f.cfg.BMCNamespace, bmcSecret(node), node, err)
	}
	f.log.Info("BMC fault", "node", node, "refuse", refuse)
	return nil
}
