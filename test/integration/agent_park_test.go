package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
)

// The agent's side of a park through the real joulie-agentd binary, as
// its node's own identity, against the real API server (status
// subresource, CRD validation of the Parked condition, the chart's RBAC
// and admission policy), with logind's PowerOff going over a real D-Bus
// bus (a private dbus-daemon, found through DBUS_SYSTEM_BUS_ADDRESS as on
// a host) to a fake logind that reads the API when the call arrives.
func TestAgentParksThroughTheAPIServerAndLogind(t *testing.T) {
	const node = "agent-park-node"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	bus := startDBus(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", bus)
	var mu sync.Mutex
	var atCall []joulie.NodePowerProfileStatus
	serveFakeLogind(t, bus, func() {
		p, err := admin.JoulieV1alpha1().NodePowerProfiles().Get(context.Background(), node, metav1.GetOptions{})
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			atCall = append(atCall, p.Status)
		} else {
			atCall = append(atCall, joulie.NodePowerProfileStatus{})
		}
	})
	calls := func() []joulie.NodePowerProfileStatus {
		mu.Lock()
		defer mu.Unlock()
		return append([]joulie.NodePowerProfileStatus(nil), atCall...)
	}

	cp.CreateReadyNode(t, node, map[string]string{joulie.LabelManaged: "true", joulie.LabelParkable: "true"}, nil)
	if _, err := admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec:       joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco, CPU: &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(60.0)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteNodeObjects(t, admin, node)
	host, stateDir := minimalHost(t), t.TempDir()
	writeBootID(t, host, "boot-1")
	kubeconfig := cp.WriteKubeconfig(t, cp.AgentConfig(t, node))
	// The host's owner consents, and its kubelet runs nothing.
	socket, _ := startFakeKubelet(t, nil)
	hostArgs := []string{"--host-root", host, "--state-dir", stateDir, "--parking-allow-power-off", "--pod-resources-socket", socket}
	first := runAgent(t, node, kubeconfig, hostArgs...)

	an := agentNode{t: t, ctx: ctx, admin: admin, name: node, powerOffs: func() int { return len(calls()) }}
	status, poll := an.status, an.poll
	poll("the agent to report awake", func() bool { return status().PowerState == joulie.PowerAwake })

	an.park(time.Now())
	poll("logind's PowerOff", func() bool { return len(calls()) > 0 })
	if st := calls()[0]; st.PowerState != joulie.PowerParked || parkedCondition(st).Reason != "PoweringOff" || parkedCondition(st).Status != metav1.ConditionTrue {
		t.Fatalf("the API's status when PowerOff arrived: %+v", st)
	}
	poll("the status saying logind accepted", func() bool { return parkedCondition(status()).Reason == "PowerOffRequested" })

	// The shutdown stops the daemon; the host is woken, a new boot,
	// before the controller has moved the spec on from parked.
	stopAgent(t, first.pid)
	writeBootID(t, host, "boot-2")
	runAgent(t, node, kubeconfig, hostArgs...)
	poll("the new boot's status", func() bool { return parkedCondition(status()).Reason == "BootedAfterPark" })
	time.Sleep(3 * time.Second) // three ticks
	if n := len(calls()); n != 1 {
		t.Fatalf("the next boot powered off again for the same park: %d PowerOff calls", n)
	}
	if st := status(); st.PowerState != joulie.PowerAwake {
		t.Fatalf("status after the next boot: %+v", st)
	}
}

// agentNode reads and drives the NodePowerProfile of a node a real
// joulie-agentd runs on, as the controller would.
type agentNode struct {
	t     *testing.T
	ctx   context.Context
	admin versioned.Interface
	name  string
	// powerOffs counts logind's PowerOff calls so far, for the messages.
	powerOffs func() int
}

func (a agentNode) status() joulie.NodePowerProfileStatus {
	p, err := a.admin.JoulieV1alpha1().NodePowerProfiles().Get(a.ctx, a.name, metav1.GetOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	return p.Status
}

// parked is the status's Parked condition.
func (a agentNode) parked() metav1.Condition { return parkedCondition(a.status()) }

func parkedCondition(st joulie.NodePowerProfileStatus) metav1.Condition {
	for _, c := range st.Conditions {
		if c.Type == "Parked" {
			return c
		}
	}
	return metav1.Condition{}
}

// poll waits up to 30 s for cond.
func (a agentNode) poll(what string, cond func() bool) {
	a.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			a.t.Fatalf("timed out waiting for %s; status %+v, logind calls %d", what, a.status(), a.powerOffs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// park records the node parked since since, as a pass that chose it does.
func (a agentNode) park(since time.Time) {
	a.t.Helper()
	p, err := a.admin.JoulieV1alpha1().NodePowerProfiles().Get(a.ctx, a.name, metav1.GetOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	p.Spec.PowerState, p.Spec.PowerStateSince = joulie.PowerParked, &metav1.Time{Time: since}
	if _, err := a.admin.JoulieV1alpha1().NodePowerProfiles().Update(a.ctx, p, metav1.UpdateOptions{}); err != nil {
		a.t.Fatal(err)
	}
}

func writeBootID(t *testing.T, root, id string) {
	t.Helper()
	path := filepath.Join(root, "proc/sys/kernel/random/boot_id")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stopAgent sends SIGTERM and waits until the daemon has exited (a
// zombie until runAgent's cleanup reaps it), so its state directory's
// lock is free.
func stopAgent(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("joulie-agentd %d did not stop within 30s of SIGTERM", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startDBus runs Debian's dbus-daemon on a private socket and returns its
// address. (The agent's unit tests have the same helper, in an internal
// package this module cannot import.)
func startDBus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Fatalf("this test runs a private D-Bus bus and dbus-daemon is not installed (%v): run `make deps`", err)
	}
	dir, err := os.MkdirTemp("", "jdbus")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path=`+filepath.Join(dir, "bus")+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/>
  </policy>
</busconfig>
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file="+conf, "--nofork", "--nopidfile", "--nosyslog", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(addr) == "" {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(addr)
}

// serveFakeLogind owns org.freedesktop.login1 on the bus with a Manager
// whose PowerOff runs onCall and accepts.
func serveFakeLogind(t *testing.T, bus string, onCall func()) {
	t.Helper()
	conn, err := dbus.Connect(bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.ExportMethodTable(map[string]any{
		"PowerOff": func(interactive bool) *dbus.Error {
			if interactive {
				return dbus.NewError("org.freedesktop.DBus.Error.InvalidArgs", []any{"the agent must not ask for interactive authentication"})
			}
			onCall()
			return nil
		},
	}, "/org/freedesktop/login1", "org.freedesktop.login1.Manager"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName("org.freedesktop.login1", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.freedesktop.login1: %v %v", reply, err)
	}
}
