// Package pcitest builds PCI device trees for tests, laid out as the
// kernel lays them out: each function's directory under
// sys/devices/pci<domain>:<bus>/<address> with vendor, device and class
// attributes (mode 0444), a link to it in sys/bus/pci/devices/, and, for
// a bound function, a link in sys/bus/pci/drivers/<driver>/ and a driver
// link in the device directory.
//
//	root := t.TempDir()
//	pcitest.Write(t, root, pcitest.HGX(8)...)
//	gpus := pci.GPUs(sysfs.New(root))
package pcitest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Device is one PCI function.
type Device struct {
	// Address is domain:bus:device.function (0000:18:00.0).
	Address string
	// Vendor, Device and Class are the attributes' text (0x10de, 0x2330,
	// 0x030200).
	Vendor, Device, Class string
	// Driver is the driver bound to the function; "" for none.
	Driver string
}

// H100 is an H100 SXM5 (a 3D controller) at addr, unbound: what a host
// shows before the NVIDIA driver is installed.
func H100(addr string) Device {
	return Device{Address: addr, Vendor: "0x10de", Device: "0x2330", Class: "0x030200"}
}

// NVSwitch is an HGX board's NVSwitch: NVIDIA's vendor ID on a bridge
// class, which is not a GPU.
func NVSwitch(addr string) Device {
	return Device{Address: addr, Vendor: "0x10de", Device: "0x22a3", Class: "0x068000"}
}

// BMCGraphics is the ASPEED VGA controller of a server's BMC.
func BMCGraphics(addr string) Device {
	return Device{Address: addr, Vendor: "0x1a03", Device: "0x2000", Class: "0x030000", Driver: "ast"}
}

// MI300X is an AMD Instinct MI300X (a processing accelerator) at addr,
// bound to amdgpu.
func MI300X(addr string) Device {
	return Device{Address: addr, Vendor: "0x1002", Device: "0x74a1", Class: "0x120000", Driver: "amdgpu"}
}

// MI210 is an AMD Instinct MI210 (a display controller) at addr, bound to
// amdgpu.
func MI210(addr string) Device {
	return Device{Address: addr, Vendor: "0x1002", Device: "0x740f", Class: "0x038000", Driver: "amdgpu"}
}

// HGXBuses are the PCI buses of an HGX H100 board's eight GPUs.
var HGXBuses = [8]int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}

// HGX is a host with n H100s (n <= 8) on an HGX board, its four NVSwitches
// and the BMC's graphics: only the H100s are GPUs.
func HGX(n int) []Device {
	devs := []Device{BMCGraphics("0000:03:00.0")}
	for i := range n {
		devs = append(devs, H100(fmt.Sprintf("0000:%02x:00.0", HGXBuses[i])))
	}
	for i := range 4 {
		devs = append(devs, NVSwitch(fmt.Sprintf("0000:%02x:00.0", 0x05+i)))
	}
	return devs
}

// DevDir is the function's directory relative to the root.
func DevDir(addr string) string {
	domain, rest, _ := strings.Cut(addr, ":")
	bus, _, _ := strings.Cut(rest, ":")
	return filepath.Join("sys/devices", "pci"+domain+":"+bus, addr)
}

// Write lays the devices out under root.
func Write(t testing.TB, root string, devs ...Device) {
	t.Helper()
	for _, d := range devs {
		dir := DevDir(d.Address)
		for attr, v := range map[string]string{"vendor": d.Vendor, "device": d.Device, "class": d.Class} {
			WriteAttr(t, root, d.Address, attr, v, 0o444)
		}
		link(t, root, filepath.Join("sys/bus/pci/devices", d.Address), dir)
		if d.Driver != "" {
			drv := filepath.Join("sys/bus/pci/drivers", d.Driver)
			link(t, root, filepath.Join(drv, d.Address), dir)
			link(t, root, filepath.Join(dir, "driver"), drv)
		}
	}
}

// WriteAttr writes one attribute file below a function's directory (rel
// may name a subdirectory, such as hwmon/hwmon3/power1_cap) with the
// kernel's mode for it.
func WriteAttr(t testing.TB, root, addr, rel, value string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(root, DevDir(addr), rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(value+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile leaves an existing file's mode alone.
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// link makes rel a relative symlink to target (both relative to root), as
// sysfs' links are, so the tree can be moved.
func link(t testing.TB, root, rel, target string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	to, err := filepath.Rel(filepath.Dir(rel), target)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(to, p); err != nil {
		t.Fatal(err)
	}
}
