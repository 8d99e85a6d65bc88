// Package netif lists the host's physical network interfaces and their
// MAC addresses, read from sysfs under the host root, for NodeHardware
// status.network: when the node is parked, an awake neighbour's agent
// wakes it by sending Wake-on-LAN packets to these MACs.
//
// Only what a magic packet can reach is listed: Ethernet ports of a real
// device (a sys/class/net entry with a device link), not the loopback,
// bridges, bonds, VLANs, tunnels or container veths (no device link),
// not SR-IOV virtual functions (their device has a physfn link), not
// InfiniBand or other non-Ethernet links, and not ports without a MAC.
package netif

import (
	"net"
	"path"
	"slices"
	"strings"

	"joulie.io/joulie/agentd/internal/sysfs"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// classNet is where the kernel lists network interfaces.
const classNet = "sys/class/net"

// arphrdEther is the type of an Ethernet link (linux/if_arp.h).
const arphrdEther = "1"

// Discover lists the physical Ethernet interfaces, sorted by name. A host
// without sys/class/net, or an interface whose files cannot be read, is
// no error: it is simply not listed.
func Discover(fs *sysfs.FS) []joulie.NetworkInterface {
	entries, err := fs.Glob(classNet + "/*")
	if err != nil {
		return nil
	}
	var out []joulie.NetworkInterface
	for _, e := range entries {
		name := path.Base(e)
		if ni, ok := read(fs, name); ok {
			out = append(out, ni)
		}
	}
	slices.SortFunc(out, func(a, b joulie.NetworkInterface) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func read(fs *sysfs.FS, name string) (joulie.NetworkInterface, bool) {
	dir := classNet + "/" + name
	switch {
	case name == "lo",
		!fs.Exists(dir + "/device"),       // virtual: bridge, bond, vlan, veth, tun
		fs.Exists(dir + "/bridge"),        // a bridge, whatever else it has
		fs.Exists(dir + "/device/physfn"): // an SR-IOV virtual function
		return joulie.NetworkInterface{}, false
	}
	if t, err := fs.ReadString(dir + "/type"); err == nil && t != arphrdEther {
		return joulie.NetworkInterface{}, false
	}
	// A bond rewrites its ports' address to its own; the port's NIC
	// answers magic packets for its permanent one.
	addr, err := fs.ReadString(dir + "/bonding_slave/perm_hwaddr")
	if err != nil {
		addr, err = fs.ReadString(dir + "/address")
	}
	if err != nil {
		return joulie.NetworkInterface{}, false
	}
	mac, err := net.ParseMAC(addr)
	if err != nil || len(mac) != 6 || isZero(mac) {
		return joulie.NetworkInterface{}, false
	}
	// The device's wakeup switch is what drivers such as e1000e, igb,
	// ixgbe, tg3 and r8169 turn on when Wake-on-LAN is armed (ethtool -s
	// IF wol g); reading the exact wake events needs an ethtool ioctl,
	// which a fixture tree cannot answer. Unknown is false.
	wake, _ := fs.ReadString(dir + "/device/power/wakeup")
	return joulie.NetworkInterface{Name: name, MAC: mac.String(), WakeOnLAN: wake == "enabled"}, true
}

func isZero(mac net.HardwareAddr) bool {
	for _, b := range mac {
		if b != 0 {
			return false
		}
	}
	return true
}
