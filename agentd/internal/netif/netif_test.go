package netif

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"joulie.io/joulie/agentd/internal/sysfs"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// iface is one entry of a fixture's sys/class/net, laid out as the kernel
// does: the interface's directory under its device (or under
// devices/virtual/net), and a class symlink to it.
type iface struct {
	name, address string
	typ           string // "1" when empty
	pci           string // the device's PCI address; empty: virtual
	vf            bool   // the device is an SR-IOV virtual function
	wakeup        string // device/power/wakeup; empty: absent
	bridge        bool
	permAddr      string // bonding_slave/perm_hwaddr
}

func write(t *testing.T, root string, ifs ...iface) {
	t.Helper()
	put := func(p, v string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, l string) {
		if err := os.MkdirAll(filepath.Dir(l), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range ifs {
		devDir := "sys/devices/virtual/net/" + f.name
		if f.pci != "" {
			pciDir := "sys/devices/pci0000:00/" + f.pci
			devDir = pciDir + "/net/" + f.name
			link("../../../"+f.pci, filepath.Join(root, devDir, "device"))
			if f.wakeup != "" {
				put(filepath.Join(root, pciDir, "power/wakeup"), f.wakeup)
			}
			if f.vf {
				link("../0000:3b:00.0", filepath.Join(root, pciDir, "physfn"))
			}
		}
		typ := f.typ
		if typ == "" {
			typ = "1"
		}
		put(filepath.Join(root, devDir, "address"), f.address)
		put(filepath.Join(root, devDir, "type"), typ)
		if f.bridge {
			if err := os.MkdirAll(filepath.Join(root, devDir, "bridge"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if f.permAddr != "" {
			put(filepath.Join(root, devDir, "bonding_slave/perm_hwaddr"), f.permAddr)
		}
		rel, err := filepath.Rel(filepath.Join(root, "sys/class/net"), filepath.Join(root, devDir))
		if err != nil {
			t.Fatal(err)
		}
		link(rel, filepath.Join(root, "sys/class/net", f.name))
	}
}

func TestDiscover(t *testing.T) {
	for _, tc := range []struct {
		name string
		ifs  []iface
		want []joulie.NetworkInterface
	}{
		{
			name: "no sys/class/net",
		},
		{
			name: "one-port server with docker",
			ifs: []iface{
				{name: "lo", address: "00:00:00:00:00:00", typ: "772"},
				{name: "eno1", address: "0C:C4:7A:12:34:56", pci: "0000:00:1f.6", wakeup: "enabled"},
				{name: "docker0", address: "02:42:ac:11:00:01", bridge: true},
				{name: "veth1a2b3c", address: "6a:1f:00:aa:bb:cc"},
			},
			want: []joulie.NetworkInterface{{Name: "eno1", MAC: "0c:c4:7a:12:34:56", WakeOnLAN: true}},
		},
		{
			name: "bonded ports, a VF, InfiniBand and a port without a MAC",
			ifs: []iface{
				{name: "bond0", address: "3c:ec:ef:00:00:01"},
				{name: "ens1f0", address: "3c:ec:ef:00:00:01", pci: "0000:3b:00.0", wakeup: "disabled", permAddr: "3c:ec:ef:00:00:01"},
				{name: "ens1f1", address: "3c:ec:ef:00:00:01", pci: "0000:3b:00.1", permAddr: "3c:ec:ef:00:00:02"},
				{name: "ens1f0v0", address: "ae:11:22:33:44:55", pci: "0000:3b:02.0", vf: true},
				{name: "ib0", address: "00:00:10:29:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:6b:1c:3e", typ: "32", pci: "0000:5e:00.0"},
				{name: "eno3", address: "00:00:00:00:00:00", pci: "0000:19:00.2"},
				{name: "br0", address: "3c:ec:ef:00:00:01", bridge: true, pci: "0000:3b:00.0"},
			},
			want: []joulie.NetworkInterface{
				{Name: "ens1f0", MAC: "3c:ec:ef:00:00:01"},
				{Name: "ens1f1", MAC: "3c:ec:ef:00:00:02"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, tc.ifs...)
			if got := Discover(sysfs.New(root)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
