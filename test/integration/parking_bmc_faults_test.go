package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Waking through BMCs against the real API server with joulie-controller
// as a process: each node's BMC is Debian's ipmi_sim on a loopback UDP
// port, whose chassis power hook is the simulated host's power switch,
// or a UDP socket that never answers (a hung BMC).

// bmcHostHook is ipmi_sim's chassis_control program: "hook DIR get
// power", "hook DIR set power 0|1", "hook DIR set shutdown 1". Every
// switch is appended to DIR/commands.
const bmcHostHook = `#!/bin/sh
dir=$1
shift
case "$1 $2" in
"get power") printf 'power:%s\n' "$(cat "$dir/power")" ;;
"set power") echo "$*" >>"$dir/commands"; echo "$3" >"$dir/power" ;;
"set shutdown") echo "$*" >>"$dir/commands"; echo 0 >"$dir/power" ;;
*) echo "$*" >>"$dir/commands" ;;
esac
`

const bmcUser, bmcPassword = "joulie-wake", "right-horse-42"

// simHost is the host behind one ipmi_sim.
type simHost struct{ dir string }

// poweredOn is on for goroutines other than the test's: an unreadable
// state reads as off.
func (h simHost) poweredOn() bool {
	b, err := os.ReadFile(filepath.Join(h.dir, "power"))
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

func (h simHost) on(t *testing.T) bool {
	b, err := os.ReadFile(filepath.Join(h.dir, "power"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b)) == "1"
}

func (h simHost) commands(t *testing.T) []string {
	f, err := os.Open(filepath.Join(h.dir, "commands"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		out = append(out, sc.Text())
	}
	return out
}

// startSimBMC runs ipmi_sim with the host off until the test ends and
// returns its address.
func startSimBMC(t *testing.T) (string, simHost) {
	t.Helper()
	bin, err := exec.LookPath("ipmi_sim")
	if err != nil {
		t.Fatal("these tests run Debian's ipmi_sim as the nodes' BMCs: apt-get install openipmi")
	}
	dir := t.TempDir()
	hook := filepath.Join(dir, "power-hook")
	for name, body := range map[string]string{"power-hook": bmcHostHook, "power": "0\n",
		"cmds": "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\nmc_enable 0x20\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	for range 3 { // a free port may be taken before ipmi_sim binds it
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := c.LocalAddr().(*net.UDPAddr).Port
		c.Close()
		conf := fmt.Sprintf("name \"it\"\nset_working_mc 0x20\nstartlan 1\n  addr 127.0.0.1 %d\n  priv_limit admin\n"+
			"  guid a0a1a2a3a4a5a6a7a8a9aaabacadaeaf\nendlan\nchassis_control \"%s %s\"\n"+
			"user 1 false \"\" \"\" user 1 none md2 md5 straight\nuser 2 true \"%s\" \"%s\" operator 10 none md2 md5 straight\n",
			port, hook, dir, bmcUser, bmcPassword)
		if err := os.WriteFile(filepath.Join(dir, "lan.conf"), []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-c", filepath.Join(dir, "lan.conf"), "-f", filepath.Join(dir, "cmds"), "-s", filepath.Join(dir, "state"), "-n")
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if udpBound(port, exited) {
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), simHost{dir: dir}
		}
		_ = cmd.Process.Kill()
		<-exited
	}
	t.Fatal("ipmi_sim did not start")
	return "", simHost{}
}

// hungBMC is a UDP socket that takes every message and answers none.
func hungBMC(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := c.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	return c.LocalAddr().String()
}

// setBMC gives node a BMC at addr: the Secret joulie-bmc-<node> of the
// BMC namespace with its address and credentials, as an administrator
// sets it up. The one place these tests know how the controller finds a
// node's BMC.
func setBMC(t *testing.T, node, addr string) {
	t.Helper()
	ctx := context.Background()
	kube := cp.AdminClient(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "joulie-bmc-" + node, Namespace: chartBMCNamespace},
		StringData: map[string]string{"address": addr, "username": bmcUser, "password": bmcPassword}}
	if _, err := kube.CoreV1().Secrets(chartBMCNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Secrets(chartBMCNamespace).Delete(context.Background(), secret.Name, metav1.DeleteOptions{})
	})
}

// recordWaking leaves node as a controller that crashed between
// recording a wake and sending it does: waking, attempt 1, since now,
// tainted, its host off (NotReady, agent parked).
func (h *fakeHosts) recordWaking(node string) {
	h.t.Helper()
	h.switchOff(context.Background(), node)
	h.record(node, joulie.PowerWaking, time.Now(), 1)
}

// waitPowerOn waits until host is switched on, and says how long it took.
func waitPowerOn(t *testing.T, what string, host simHost, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for !host.on(t) {
		if time.Since(start) > limit {
			t.Fatalf("%s: the host is still off after %s (commands %q)", what, limit, host.commands(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// A node recorded waking whose wake no controller sent (the one that
// recorded it died first) is woken by the next controller at once, not
// after the resume timeout, and once it is Ready its taint goes.
func TestParkingWakesANodeRecordedWakingWhoseWakeWasNeverSent(t *testing.T) {
	const selector = "joulie.io/park-unsent"
	hosts := parkingNodes(t, selector, map[string]int{"park-unsent-fixed": 4, "park-unsent-p": 16}, "park-unsent-fixed")
	addr, host := startSimBMC(t)
	setBMC(t, "park-unsent-p", addr)
	hosts.recordWaking("park-unsent-p")

	runController(t, "joulie-controller", selector, parkingEnv("PARKING_RESUME_TIMEOUT=10m", "PARKING_IPMI_CIPHER_SUITES=3")...)
	waitPowerOn(t, "the new controller sends the recorded wake", host, 30*time.Second)
	if got := host.commands(t); !slices.Equal(got, []string{"set power 1"}) {
		t.Errorf("the host was sent %q, want one power up", got)
	}
	hosts.switchOn(context.Background(), "park-unsent-p")
	hosts.expect("the woken node is awake and untainted", "park-unsent-p", "awake#1/untainted/unlisted", 30*time.Second)
}

// Three BMCs that never answer hold up neither a fourth node's wake nor
// its taint's removal once it is Ready: each wake is a call of its own,
// outside the parking pass. (Woken one after another within the pass,
// the fourth waited for three call timeouts.)
func TestParkingHungBMCsDelayNoOtherWake(t *testing.T) {
	const selector = "joulie.io/park-hung"
	hosts := parkingNodes(t, selector, map[string]int{"park-hung-fixed": 4, "park-hung-a": 16, "park-hung-b": 16, "park-hung-c": 16, "park-hung-d": 16},
		"park-hung-fixed")
	for _, n := range []string{"park-hung-a", "park-hung-b", "park-hung-c"} {
		setBMC(t, n, hungBMC(t))
		hosts.recordWaking(n)
	}
	addr, host := startSimBMC(t)
	setBMC(t, "park-hung-d", addr)
	hosts.recordWaking("park-hung-d")

	// One call to a hung BMC lasts its 30 s limit: the fourth wake must
	// not come after three of them.
	ctl := runController(t, "joulie-controller", selector, parkingEnv("PARKING_RESUME_TIMEOUT=10m", "PARKING_IPMI_CIPHER_SUITES=3",
		"PARKING_IPMI_TIMEOUT=10s", "PARKING_IPMI_CALL_TIMEOUT=30s", "METRICS_ADDR=127.0.0.1:0")...)
	took := waitPowerOn(t, "the answering BMC's node is woken beside the hung ones", host, 25*time.Second)
	t.Logf("the answering BMC's host was on %s after the controller started", took.Round(100*time.Millisecond))
	if got := scrapeMetric(t, ctl, "joulie_controller_wake_calls_in_flight"); got != "3" {
		t.Errorf("joulie_controller_wake_calls_in_flight %q while three BMCs hang, want 3", got)
	}
	hosts.switchOn(context.Background(), "park-hung-d")
	hosts.expect("the woken node's taint goes once it is Ready, while the hung calls last", "park-hung-d", "awake#1/untainted/unlisted", 15*time.Second)
}
