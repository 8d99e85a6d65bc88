// Package pci lists the GPUs on a host's PCI bus from sysfs
// (sys/bus/pci/devices), whether or not a driver or a management library
// is there to reach them. The agent uses it to tell "this host has no GPU"
// from "this host has GPUs it cannot cap", and to name a GPU by its PCI
// device ID when no driver reports a product name.
//
// A GPU is a function whose vendor is NVIDIA (0x10de) or AMD (0x1002) and
// whose class is one the vendor's own kernel driver claims:
//
//   - NVIDIA (nvidia.ko): 0x0300 VGA controller (workstation and consumer
//     boards) and 0x0302 3D controller (A100, H100 and the other
//     data-centre boards, which have no display engine). NVSwitches
//     (0x0680, bridge) and the HDMI audio function of display boards
//     (0x0403) share the vendor ID and are not GPUs.
//   - AMD (amdgpu): 0x0300 VGA controller (Radeon), 0x0380 display
//     controller (Instinct MI100 to MI250) and 0x1200 processing
//     accelerator (Instinct MI300 and later). AMD's CPUs and chipsets use
//     vendor ID 0x1022, so they never match.
//
// 0x0301 (XGA) is claimed by neither driver and does not occur on servers.
package pci

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"joulie.io/joulie/agentd/internal/sysfs"
)

// devicesDir lists every PCI function as a link named by its address.
const devicesDir = "sys/bus/pci/devices"

// PCI vendor IDs as sysfs spells them.
const (
	VendorNVIDIA = "0x10de"
	VendorAMD    = "0x1002"
)

// gpuClasses are the class codes (base class and subclass, the upper 16
// bits of sysfs' 24-bit class) each vendor's GPUs use.
var gpuClasses = map[string][]uint32{
	VendorNVIDIA: {0x0300, 0x0302},
	VendorAMD:    {0x0300, 0x0380, 0x1200},
}

// vendorNames are the vendors as operators know them.
var vendorNames = map[string]string{VendorNVIDIA: "NVIDIA", VendorAMD: "AMD"}

// addrPattern is domain:bus:device.function. Domains are four hex digits,
// more behind a VMD bridge.
var addrPattern = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// Address reports whether s is a PCI address in sysfs' spelling.
func Address(s string) bool { return addrPattern.MatchString(s) }

// GPU is one GPU function on the bus.
type GPU struct {
	// Address is domain:bus:device.function, such as 0000:17:00.0.
	Address string
	// VendorID, DeviceID and Class are the sysfs attributes as read
	// (0x10de, 0x2330, 0x030200).
	VendorID, DeviceID, Class string
}

// Vendor is the vendor's name: NVIDIA or AMD.
func (g GPU) Vendor() string { return vendorNames[g.VendorID] }

// Model is the GPU's product name as Model gives it.
func (g GPU) Model() string { return Model(g.VendorID, g.DeviceID) }

// GPUs lists the NVIDIA and AMD GPUs on the PCI bus under fs's root, in
// address order. A host without PCI sysfs (a container, some VMs) has
// none, and a function whose attributes cannot be read is skipped: this
// is an inventory, and a missing file is missing data, not a failure.
func GPUs(fs *sysfs.FS) []GPU {
	devs, _ := fs.Glob(path.Join(devicesDir, "*"))
	var out []GPU
	for _, d := range devs {
		addr := path.Base(d)
		if !Address(addr) {
			continue
		}
		vendor, err := fs.ReadString(path.Join(d, "vendor"))
		if err != nil {
			continue
		}
		vendor = strings.ToLower(vendor)
		classes, ok := gpuClasses[vendor]
		if !ok {
			continue
		}
		class, err := fs.ReadString(path.Join(d, "class"))
		if err != nil {
			continue
		}
		code, err := strconv.ParseUint(class, 0, 32)
		if err != nil || !slices.Contains(classes, uint32(code>>8)) {
			continue
		}
		device, _ := fs.ReadString(path.Join(d, "device"))
		out = append(out, GPU{Address: addr, VendorID: vendor, DeviceID: strings.ToLower(device), Class: class})
	}
	// Glob sorts by name, and names are addresses: already in order.
	return out
}

// knownModels names data-centre GPUs by vendor and device ID, for when no
// driver reports a product name. The IDs are the PCI ID database's
// (pci.ids); the names are the ones the hardware catalog resolves
// exactly, so planning gets the right figures even without a driver. Two
// resolve to a relative instead: 0x740c, listed in pci.ids as
// "MI250X/MI250", one ID for both, and the MI300A, which the catalog
// does not list.
var knownModels = map[string]map[string]string{
	VendorNVIDIA: {
		"0x20b0": "NVIDIA A100 SXM4 40GB",
		"0x20b2": "NVIDIA A100 SXM4 80GB",
		"0x20b5": "NVIDIA A100 PCIe 80GB",
		"0x20f1": "NVIDIA A100 PCIe 40GB",
		"0x2321": "NVIDIA H100 NVL",
		"0x2330": "NVIDIA H100 SXM",
		"0x2331": "NVIDIA H100 PCIe",
		"0x2335": "NVIDIA H200 SXM",
		"0x233b": "NVIDIA H200 NVL",
		"0x26b5": "NVIDIA L40",
		"0x26b9": "NVIDIA L40S",
		"0x27b8": "NVIDIA L4",
		"0x2901": "NVIDIA B200",
		"0x2941": "NVIDIA GB200",
	},
	VendorAMD: {
		"0x738c": "AMD Instinct MI100",
		"0x7408": "AMD Instinct MI250X",
		"0x740c": "AMD Instinct MI250X/MI250",
		"0x740f": "AMD Instinct MI210",
		"0x74a0": "AMD Instinct MI300A",
		"0x74a1": "AMD Instinct MI300X",
		"0x74a5": "AMD Instinct MI325X",
		"0x75a0": "AMD Instinct MI350X",
		"0x75a3": "AMD Instinct MI355X",
	},
}

// ModelsOf names the GPUs of vendor among gpus by PCI address.
func ModelsOf(gpus []GPU, vendor string) map[string]string {
	out := make(map[string]string)
	for _, g := range gpus {
		if g.VendorID == vendor {
			out[strings.ToLower(g.Address)] = g.Model()
		}
	}
	return out
}

// Model names a GPU by its PCI vendor and device ID: the product name of
// a known data-centre part, else "<vendor> GPU <device ID>" (generic, but
// still enough for the catalog to pick the vendor's generic entry).
func Model(vendorID, deviceID string) string {
	vendorID, deviceID = strings.ToLower(vendorID), strings.ToLower(deviceID)
	if name, ok := knownModels[vendorID][deviceID]; ok {
		return name
	}
	vendor := vendorNames[vendorID]
	if vendor == "" {
		vendor = "PCI " + vendorID
	}
	if deviceID == "" {
		return vendor + " GPU"
	}
	return vendor + " GPU " + deviceID
}
