package bmc

import (
	"net"
	"sync"
	"testing"
)

// RMCP+ payload types (IPMI 2.0 table 13-16) of the session setup.
const (
	payloadOpenSession = 0x10
	payloadRAKP1       = 0x12
)

// relay forwards UDP between IPMI clients and a BMC and counts what the
// clients send by RMCP+ payload type: how many logins a call made. With
// drop set it forwards nothing, a BMC that never answers.
type relay struct {
	conn net.PacketConn
	bmc  *net.UDPAddr
	drop bool

	mu       sync.Mutex
	upstream map[string]*net.UDPConn
	sent     map[byte]int
}

func startRelay(t *testing.T, bmcAddr string, drop bool) *relay {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{conn: conn, drop: drop, upstream: map[string]*net.UDPConn{}, sent: map[byte]int{}}
	if bmcAddr != "" {
		if r.bmc, err = net.ResolveUDPAddr("udp", bmcAddr); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); r.serve() }()
	t.Cleanup(func() {
		conn.Close()
		<-done
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, u := range r.upstream {
			u.Close()
		}
	})
	return r
}

func (r *relay) addr() string { return r.conn.LocalAddr().String() }

func (r *relay) serve() {
	buf := make([]byte, 4096)
	for {
		n, from, err := r.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		pkt := append([]byte(nil), buf[:n]...)
		r.mu.Lock()
		// RMCP header (4 bytes), then the IPMI 2.0 session header: auth
		// type 06h, then the payload type in its low six bits.
		if len(pkt) > 5 && pkt[4] == 0x06 {
			r.sent[pkt[5]&0x3f]++
		}
		up := r.upstream[from.String()]
		if up == nil && !r.drop {
			if up, err = net.DialUDP("udp", nil, r.bmc); err != nil {
				r.mu.Unlock()
				continue
			}
			r.upstream[from.String()] = up
			go r.back(up, from)
		}
		r.mu.Unlock()
		if up != nil {
			_, _ = up.Write(pkt)
		}
	}
}

// back copies the BMC's answers to the client.
func (r *relay) back(up *net.UDPConn, client net.Addr) {
	buf := make([]byte, 4096)
	for {
		n, err := up.Read(buf)
		if err != nil {
			return
		}
		_, _ = r.conn.WriteTo(buf[:n], client)
	}
}

func (r *relay) count(payload byte) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent[payload]
}
