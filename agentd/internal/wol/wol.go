// Package wol sends Wake-on-LAN magic packets. An awake agent sends them,
// when its NodePowerProfile lists a parked neighbour's MAC address in
// spec.wakeOnLAN, to wake that neighbour on the network they share; the
// controller reaches a node's BMC directly and needs no agent for that.
//
// A magic packet is six 0xff bytes followed by the target's MAC address
// sixteen times (102 bytes), sent as one UDP datagram to a broadcast
// address: the sleeping NIC matches the pattern anywhere in a frame, so
// the UDP port is only convention (9, discard; 7, echo, for old NICs).
package wol

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// PacketSize is the length of a magic packet.
const PacketSize = 6 + 16*6

// DefaultAddress is where packets go unless configured: the limited
// broadcast on the discard port, which stays on the local segment, as the
// parked node's NIC must be on it.
const DefaultAddress = "255.255.255.255:9"

// ParseMAC reads a 48-bit MAC address (0c:c4:7a:12:34:56, dashes or upper
// case too) that can be woken: not all zeros, not a group address.
func ParseMAC(s string) (net.HardwareAddr, error) {
	mac, err := net.ParseMAC(strings.TrimSpace(s))
	switch {
	case err != nil:
		return nil, fmt.Errorf("Wake-on-LAN target %q is not a MAC address such as 0c:c4:7a:12:34:56", s)
	case len(mac) != 6:
		return nil, fmt.Errorf("Wake-on-LAN target %q has %d bytes: magic packets wake 6-byte Ethernet MAC addresses", s, len(mac))
	case mac[0]&1 == 1:
		return nil, fmt.Errorf("Wake-on-LAN target %q is a group (multicast or broadcast) address, not one NIC's", s)
	case allZero(mac):
		return nil, fmt.Errorf("Wake-on-LAN target %q is the all-zero address, which no NIC has", s)
	}
	return mac, nil
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// Packet is the magic packet that wakes mac.
func Packet(mac net.HardwareAddr) [PacketSize]byte {
	var p [PacketSize]byte
	for i := range 6 {
		p[i] = 0xff
	}
	for i := range 16 {
		copy(p[6+6*i:], mac)
	}
	return p
}

// Sender sends magic packets over UDP.
type Sender struct {
	// Addresses are the host:port destinations of every packet
	// (DefaultAddress when empty): a broadcast address, or a directed
	// broadcast such as 10.0.0.255:9 on a host with several networks.
	Addresses []string
}

// ParseAddresses reads a comma-separated list of host:port destinations,
// as the configuration gives them.
func ParseAddresses(s string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if _, err := net.ResolveUDPAddr("udp4", a); err != nil {
			return nil, fmt.Errorf("Wake-on-LAN destination %q is not an IPv4 host:port such as %s: %v", a, DefaultAddress, err)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Wake-on-LAN destination in %q; the default is %s", s, DefaultAddress)
	}
	return out, nil
}

// Send sends the magic packet of mac to every destination. Sending to
// one destination does not wait on another: the error names every
// destination that failed.
func (s Sender) Send(mac string) error {
	hw, err := ParseMAC(mac)
	if err != nil {
		return err
	}
	addrs := s.Addresses
	if len(addrs) == 0 {
		addrs = []string{DefaultAddress}
	}
	// Go sets SO_BROADCAST on UDP sockets, so a broadcast destination
	// needs nothing more.
	conn, err := net.ListenUDP("udp4", nil)
	if err != nil {
		return fmt.Errorf("open a UDP socket for Wake-on-LAN: %w", err)
	}
	defer conn.Close()
	p := Packet(hw)
	var errs []error
	for _, a := range addrs {
		dst, err := net.ResolveUDPAddr("udp4", a)
		if err == nil {
			_, err = conn.WriteTo(p[:], dst)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("send Wake-on-LAN packet for %s to %s: %w", hw, a, err))
		}
	}
	return errors.Join(errs...)
}
