package fleet

import (
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"joulie.io/joulie/test/energy/physics"
)

// magic is a Wake-on-LAN magic packet for mac, as agentd's wol package
// sends it.
func magic(mac net.HardwareAddr) []byte {
	p := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	for range 16 {
		p = append(p, mac...)
	}
	return p
}

// The contract's power-off switches the node's host off: it draws the
// physics' standby watts, refuses controls, and tells the fleet to mark
// it NotReady; a magic packet boots it for the boot time at the boot's
// draw, and then it is on again, uncapped, and Ready.
func TestPowerOffAndWakeRoundTrip(t *testing.T) {
	m := physics.Default()
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	s := newSim(m, 20*time.Second, t0)
	var changed []string
	s.changed = func(n string) { changed = append(changed, n) }
	s.addNode("n", family(t, "epyc"), nil)
	s.addNode("other", family(t, "epyc"), nil)
	srv := httptest.NewServer(s)
	defer srv.Close()

	if status, a := control(t, srv, `{"apiVersion":"joulie.io/http-backend/v1","node":"n","action":"rapl.set_power_cap_watts","watts":200}`); status != http.StatusOK || a.Result != "applied" {
		t.Fatalf("cap: %d %+v", status, a)
	}
	if status, a := control(t, srv, `{"apiVersion":"joulie.io/http-backend/v1","node":"n","action":"host.power_off"}`); status != http.StatusOK || a.Result != "applied" {
		t.Fatalf("power-off: %d %+v", status, a)
	}
	s.step(t0.Add(time.Second))
	node := func(name string) NodeState {
		for _, n := range s.snapshot().Nodes {
			if n.Name == name {
				return n
			}
		}
		t.Fatalf("no node %s", name)
		return NodeState{}
	}
	if n := node("n"); n.Host != HostOff || n.Watts != m.Power.OffWatts || n.CPUCapPct != 100 {
		t.Fatalf("after power-off: host %s, %v W, CPU cap %v%%; want off at %v W with the cap gone", n.Host, n.Watts, n.CPUCapPct, m.Power.OffWatts)
	}
	if n := node("other"); n.Host != HostOn {
		t.Fatalf("the other node is %s", n.Host)
	}
	if status, a := control(t, srv, `{"apiVersion":"joulie.io/http-backend/v1","node":"n","action":"rapl.set_power_cap_watts","watts":200}`); status != http.StatusOK || a.Result != "error" || !strings.Contains(a.Message, "is off") {
		t.Fatalf("cap on a node that is off: %d %+v", status, a)
	}
	if got, ok := s.wake(nodeMAC("nobody"), t0.Add(2*time.Second)); ok {
		t.Fatalf("a MAC of no node booted %q", got)
	}
	if got, ok := s.wake(nodeMAC("n"), t0.Add(2*time.Second)); !ok || got != "n" {
		t.Fatalf("wake(n's MAC) = %q, %v", got, ok)
	}
	s.step(t0.Add(12 * time.Second))
	if n := node("n"); n.Host != HostBooting || n.Watts != m.Power.BootWatts || n.BootPct != 50 {
		t.Fatalf("10 s into a 20 s boot: host %s, %v W, %v%%; want booting at %v W, 50%%", n.Host, n.Watts, n.BootPct, m.Power.BootWatts)
	}
	s.step(t0.Add(22 * time.Second))
	if n := node("n"); n.Host != HostOn || n.Watts <= m.Power.OffWatts {
		t.Fatalf("after the boot: host %s at %v W", n.Host, n.Watts)
	}
	if want := "n,n,n"; strings.Join(changed, ",") != want {
		t.Errorf("readiness told of %v, want %s (off, booting, on)", changed, want)
	}
}

// A switch of the host changes its draw at once, not at the next tick:
// a snapshot taken between ticks never shows a node that is off drawing
// what it drew while on, nor a booting node drawing the standby watts.
func TestHostSwitchChangesDrawBeforeTheNextTick(t *testing.T) {
	m := physics.Default()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	s := newSim(m, 20*time.Second, t0)
	s.changed = func(string) {}
	s.addNode("n", family(t, "epyc"), nil)
	s.addNode("other", family(t, "epyc"), nil)
	s.step(t0.Add(time.Second))
	on := s.snapshot()
	s.mu.Lock()
	s.switchOff(s.nodes["n"], PowerOffByAgent)
	s.mu.Unlock()
	off := s.snapshot()
	if n := off.Nodes[0]; n.Host != HostOff || n.Watts != m.Power.OffWatts {
		t.Fatalf("just switched off: host %s at %v W, want off at %v W", n.Host, n.Watts, m.Power.OffWatts)
	}
	if want := on.PowerW - on.Nodes[0].Watts + m.Power.OffWatts; math.Abs(off.PowerW-want) > 1e-9 {
		t.Errorf("the cluster draws %v W after the switch, want %v W", off.PowerW, want)
	}
	if _, ok := s.wake(nodeMAC("n"), t0.Add(2*time.Second)); !ok {
		t.Fatal("the magic packet did not boot n")
	}
	if n := s.snapshot().Nodes[0]; n.Host != HostBooting || n.Watts != m.Power.BootWatts {
		t.Fatalf("just woken: host %s at %v W, want booting at %v W", n.Host, n.Watts, m.Power.BootWatts)
	}
}

// The fleet's Wake-on-LAN listener boots the node whose MAC a magic
// packet names, and only that one; anything else on the port is ignored.
func TestWakeOnLANListenerWakesTheMatchingNodeOnly(t *testing.T) {
	s := newSim(physics.Default(), time.Minute, time.Now())
	for _, n := range []string{"a", "b", "c"} {
		s.addNode(n, family(t, "epyc"), nil)
	}
	s.mu.Lock()
	for _, n := range s.nodes {
		s.switchOff(n, PowerOffByAgent)
	}
	s.mu.Unlock()
	f := &Fleet{sim: s, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	addr, err := f.listenWakeOnLAN()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { f.wolConn.Close(); f.wg.Wait() }()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	broken := magic(nodeMAC("a"))
	broken[50] ^= 1 // one repetition differs: not a magic packet
	for _, p := range [][]byte{[]byte("hello"), broken, magic(nodeMAC("nobody")),
		append([]byte{1, 2, 3}, magic(nodeMAC("b"))...)} { // the pattern may start anywhere
		if _, err := conn.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		hb, _ := s.hostState("b")
		if hb == HostBooting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b is %s 5 s after its magic packet", hb)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The listener handles packets in order: b's came last.
	for _, n := range []string{"a", "c"} {
		if h, _ := s.hostState(n); h != HostOff {
			t.Errorf("node %s is %s; only b was sent a valid magic packet", n, h)
		}
	}
}

func TestMagicTarget(t *testing.T) {
	mac := nodeMAC("x")
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"packet", magic(mac), true},
		{"with a SecureOn password", append(magic(mac), 1, 2, 3, 4, 5, 6), true},
		{"after a header", append([]byte{0xff, 0, 9}, magic(mac)...), true},
		{"short", magic(mac)[:101], false},
		{"empty", nil, false},
		{"broadcast target", magic(net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := magicTarget(tc.b)
			if ok != tc.ok || ok && got.String() != mac.String() {
				t.Errorf("magicTarget = %v, %v; want %v, %v", got, ok, mac, tc.ok)
			}
		})
	}
	if a, b := nodeMAC("sim-epyc-1"), nodeMAC("sim-epyc-2"); a.String() == b.String() || a[0]&0x03 != 0x02 {
		t.Errorf("MACs %v, %v: want distinct, locally administered unicast", a, b)
	}
}
