package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

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

	addr, bmcHost := startSimBMC(t)
	setBMC(t, ipmi, addr)
	setBMC(t, small, "127.0.0.1:9") // another node's Secret, which the annotations name
	hosts.startParked(wol)
	hosts.startParked(ipmi)
	// The host of ipmi comes up when its BMC switches it on.
	go func() {
		for ctx.Err() == nil {
			if bmcHost.poweredOn() {
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
