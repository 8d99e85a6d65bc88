package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// testBMC is Debian's ipmi_sim on a loopback UDP port, one operator
// account, its chassis power in the file power (0 or 1).
type testBMC struct {
	addr, dir string
}

const (
	testBMCUser     = "joulie-wake"
	testBMCPassword = "right-horse-42"
)

// The chassis_control program: "hook DIR get power" prints power:0|1,
// "hook DIR set power 0|1" and "set shutdown 1" switch.
const testBMCHook = `#!/bin/sh
dir=$1
shift
case "$1 $2" in
"get power") printf 'power:%s\n' "$(cat "$dir/power")" ;;
"set power") echo "$3" >"$dir/power" ;;
"set shutdown") echo 0 >"$dir/power" ;;
esac
`

func startTestBMC(t *testing.T) *testBMC {
	t.Helper()
	bin, err := exec.LookPath("ipmi_sim")
	if err != nil {
		t.Fatalf("this test runs Debian's ipmi_sim as a node's BMC: apt-get install openipmi (or make deps): %v", err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"hook":  testBMCHook,
		"power": "0\n",
		"cmds":  "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\nmc_enable 0x20\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A port found free may be taken before ipmi_sim binds it: it then
	// exits, and another is tried.
	for range 3 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := pc.LocalAddr().(*net.UDPAddr).Port
		pc.Close()
		conf := fmt.Sprintf("name \"joulie-it\"\nset_working_mc 0x20\nstartlan 1\n  addr 127.0.0.1 %d\n  priv_limit admin\n"+
			"  guid a0a1a2a3a4a5a6a7a8a9aaabacadaeaf\nendlan\nchassis_control \"%s/hook %s\"\n"+
			"user 1 false \"\" \"\" user 1 none md2 md5 straight\nuser 2 true \"%s\" \"%s\" operator 10 none md2 md5 straight\n",
			port, dir, dir, testBMCUser, testBMCPassword)
		if err := os.WriteFile(filepath.Join(dir, "lan.conf"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-c", filepath.Join(dir, "lan.conf"), "-f", filepath.Join(dir, "cmds"), "-s", filepath.Join(dir, "state"), "-n")
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		if udpBound(port, exited) {
			return &testBMC{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
		}
	}
	t.Fatal("ipmi_sim did not bind its port")
	return nil
}

// udpBound waits until 127.0.0.1:port is bound, read from /proc/net/udp
// (a probe of its own could take the port), or the process has exited.
func udpBound(port int, exited <-chan struct{}) bool {
	want := fmt.Sprintf("0100007F:%04X", port)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			return false
		default:
		}
		data, _ := os.ReadFile("/proc/net/udp")
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[1] == want {
				return true
			}
		}
	}
	return false
}

func (b *testBMC) poweredOn() bool {
	data, _ := os.ReadFile(filepath.Join(b.dir, "power"))
	return strings.TrimSpace(string(data)) == "1"
}

// powerOnByBMC is what a host does when its BMC powers it up.
func (h *fakeHosts) powerOnByBMC(ctx context.Context, node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.parked[node] {
		h.parked[node] = false
		h.woken[node] = append(h.woken[node], "bmc")
		h.switchOn(ctx, node)
	}
}

// The controller never logs in to a BMC address a Node names: two parked
// nodes carry joulie.io/bmc-address pointing at a UDP port the test owns
// (and joulie.io/bmc-secret naming another Secret). The one without a BMC
// Secret is woken by Wake-on-LAN, the one with a Secret through the
// ipmi_sim at the Secret's address, and the owned port hears nothing.
// Both nodes get one Event saying the annotations are ignored.
func TestParkingNeverLogsInToABMCAddressANodeWrote(t *testing.T) {
	const selector = "joulie.io/park-bmcaddr"
	const small, wol, ipmi = "park-bmcaddr-small", "park-bmcaddr-wol", "park-bmcaddr-ipmi"
	hosts := parkingNodes(t, selector, map[string]int{small: 4, wol: 32, ipmi: 16}, small)
	ctx := t.Context()
	admin := cp.AdminClient(t)

	trap, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var heard atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := trap.ReadFrom(buf); err != nil {
				return
			}
			heard.Add(1)
		}
	}()
	t.Cleanup(func() { trap.Close() })
	for _, n := range []string{wol, ipmi} {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:"joulie-bmc-%s"}}}`, joulie.AnnotationBMCAddress, trap.LocalAddr().String(), joulie.AnnotationBMCSecret, small)
		if _, err := admin.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	bmc := startTestBMC(t)
	for name, addr := range map[string]string{ipmi: bmc.addr, small: "127.0.0.1:9"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "joulie-bmc-" + name, Namespace: chartBMCNamespace},
			StringData: map[string]string{"address": addr, "username": testBMCUser, "password": testBMCPassword}}
		if _, err := admin.CoreV1().Secrets(chartBMCNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.CoreV1().Secrets(chartBMCNamespace).Delete(context.Background(), s.Name, metav1.DeleteOptions{})
		})
	}
	hosts.startParked(wol)
	hosts.startParked(ipmi)
	// The host of ipmi comes up when its BMC switches it on.
	go func() {
		for ctx.Err() == nil {
			if bmc.poweredOn() {
				hosts.powerOnByBMC(context.Background(), ipmi)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	cp.StartScheduler(t, nil)
	// ipmi_sim offers cipher suite 3 and not 17.
	runController(t, "joulie-controller", selector, parkingEnv("PARKING_IPMI_CIPHER_SUITES=3")...)

	// Only wol (32 CPUs) fits the first pod; then only ipmi the second.
	cp.CreatePod(t, cpuPod("park-bmcaddr-big-job", selector, 24))
	hosts.expect("the node without a BMC Secret is woken", wol, "awake#1/untainted/unlisted", 60*time.Second)
	if by := hosts.wokenBy(wol); !slices.Equal(by, []string{small}) {
		t.Errorf("%s was woken through %v, want once by Wake-on-LAN from %s", wol, by, small)
	}
	cp.CreatePod(t, cpuPod("park-bmcaddr-job", selector, 12))
	hosts.expect("the node with a BMC Secret is woken", ipmi, "awake#1/untainted/unlisted", 60*time.Second)
	if by := hosts.wokenBy(ipmi); !slices.Equal(by, []string{"bmc"}) {
		t.Errorf("%s was woken through %v, want once by its BMC", ipmi, by)
	}
	if n := heard.Load(); n != 0 {
		t.Errorf("the address in the nodes' %s annotation received %d datagrams, want none", joulie.AnnotationBMCAddress, n)
	}
	for _, n := range []string{wol, ipmi} {
		if ev := nodeEvents(t, n); !slices.Contains(ev, "BMCAnnotationIgnored") {
			t.Errorf("events on %s %v, want BMCAnnotationIgnored", n, ev)
		}
	}
}
