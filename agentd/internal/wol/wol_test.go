package wol

import (
	"bytes"
	"encoding/hex"
	"net"
	"strings"
	"testing"
	"time"
)

// The packet of a known MAC, written out: six 0xff, then the MAC sixteen
// times.
func TestPacketOfAKnownMAC(t *testing.T) {
	mac, err := ParseMAC("0C:C4:7A:12:34:56")
	if err != nil {
		t.Fatal(err)
	}
	want := "ffffffffffff" + strings.Repeat("0cc47a123456", 16)
	p := Packet(mac)
	if got := hex.EncodeToString(p[:]); got != want {
		t.Fatalf("packet\n got %s\nwant %s", got, want)
	}
	if len(p) != 102 {
		t.Fatalf("%d bytes", len(p))
	}
}

func TestBadMACsAreRefused(t *testing.T) {
	for _, tc := range []struct{ mac, says string }{
		{"", "not a MAC address"},
		{"0c:c4:7a:12:34", "not a MAC address"},
		{"zz:c4:7a:12:34:56", "not a MAC address"},
		{"00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01", "20 bytes"}, // InfiniBand
		{"ff:ff:ff:ff:ff:ff", "group"},
		{"01:00:5e:00:00:01", "group"},
		{"00:00:00:00:00:00", "all-zero"},
	} {
		_, err := ParseMAC(tc.mac)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ParseMAC(%q) = %v, want an error saying %q", tc.mac, err, tc.says)
		}
		if err := (Sender{Addresses: []string{"127.0.0.1:9"}}).Send(tc.mac); err == nil {
			t.Errorf("Send(%q) sent", tc.mac)
		}
	}
}

// A UDP listener on the loopback receives exactly the magic packet, on
// each configured destination.
func TestSendReachesAListener(t *testing.T) {
	var conns []*net.UDPConn
	var addrs []string
	for range 2 {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns, addrs = append(conns, c), append(addrs, c.LocalAddr().String())
	}
	if err := (Sender{Addresses: addrs}).Send("0c-c4-7a-12-34-56"); err != nil {
		t.Fatal(err)
	}
	want := Packet(net.HardwareAddr{0x0c, 0xc4, 0x7a, 0x12, 0x34, 0x56})
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 1500)
		n, _, err := c.ReadFromUDP(buf)
		if err != nil {
			t.Fatalf("listener %d: %v", i, err)
		}
		if !bytes.Equal(buf[:n], want[:]) {
			t.Fatalf("listener %d got %x", i, buf[:n])
		}
	}
}

func TestParseAddresses(t *testing.T) {
	got, err := ParseAddresses(" 255.255.255.255:9, 10.0.0.255:7 ")
	if err != nil || len(got) != 2 || got[1] != "10.0.0.255:7" {
		t.Fatalf("%q %v", got, err)
	}
	for _, bad := range []string{"", " , ", "255.255.255.255", "10.0.0.255:port"} {
		if _, err := ParseAddresses(bad); err == nil {
			t.Errorf("ParseAddresses(%q) accepted", bad)
		}
	}
}
