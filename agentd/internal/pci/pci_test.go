package pci_test

import (
	"reflect"
	"testing"

	"joulie.io/joulie/agentd/internal/pci"
	"joulie.io/joulie/agentd/internal/pci/pcitest"
	"joulie.io/joulie/agentd/internal/sysfs"
)

func TestGPUsAreTheVendorsDisplayAndAcceleratorFunctionsOnly(t *testing.T) {
	root := t.TempDir()
	pcitest.Write(t, root, pcitest.HGX(2)...)
	pcitest.Write(t, root,
		pcitest.MI300X("0001:41:00.0"),
		pcitest.MI210("0000:c1:00.0"),
		// A workstation board: the VGA function is a GPU, its HDMI audio
		// function is not.
		pcitest.Device{Address: "0000:65:00.0", Vendor: "0x10de", Device: "0x2684", Class: "0x030000", Driver: "nvidia"},
		pcitest.Device{Address: "0000:65:00.1", Vendor: "0x10de", Device: "0x22ba", Class: "0x040300"},
		// An EPYC's own functions carry AMD's CPU vendor ID, 0x1022.
		pcitest.Device{Address: "0000:00:18.3", Vendor: "0x1022", Device: "0x14e3", Class: "0x060000"},
		// A Radeon's audio function shares the GPU vendor ID.
		pcitest.Device{Address: "0000:c1:00.1", Vendor: "0x1002", Device: "0xab28", Class: "0x040300"},
	)
	got := pci.GPUs(sysfs.New(root))
	want := []pci.GPU{
		{Address: "0000:18:00.0", VendorID: "0x10de", DeviceID: "0x2330", Class: "0x030200"},
		{Address: "0000:2a:00.0", VendorID: "0x10de", DeviceID: "0x2330", Class: "0x030200"},
		{Address: "0000:65:00.0", VendorID: "0x10de", DeviceID: "0x2684", Class: "0x030000"},
		{Address: "0000:c1:00.0", VendorID: "0x1002", DeviceID: "0x740f", Class: "0x038000"},
		{Address: "0001:41:00.0", VendorID: "0x1002", DeviceID: "0x74a1", Class: "0x120000"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GPUs:\n got  %+v\n want %+v", got, want)
	}
	var models []string
	for _, g := range got {
		models = append(models, g.Vendor()+": "+g.Model())
	}
	wantModels := []string{
		"NVIDIA: NVIDIA H100 SXM", "NVIDIA: NVIDIA H100 SXM", "NVIDIA: NVIDIA GPU 0x2684",
		"AMD: AMD Instinct MI210", "AMD: AMD Instinct MI300X",
	}
	if !reflect.DeepEqual(models, wantModels) {
		t.Errorf("models %q, want %q", models, wantModels)
	}
	amd := map[string]string{"0000:c1:00.0": "AMD Instinct MI210", "0001:41:00.0": "AMD Instinct MI300X"}
	if byAddr := pci.ModelsOf(got, pci.VendorAMD); !reflect.DeepEqual(byAddr, amd) {
		t.Errorf("AMD models by address %v, want %v", byAddr, amd)
	}
}

func TestNoPCISysfsMeansNoGPUs(t *testing.T) {
	if got := pci.GPUs(sysfs.New(t.TempDir())); len(got) != 0 {
		t.Fatalf("GPUs on an empty root: %+v", got)
	}
	// Only the BMC's VGA and NVSwitches: still no GPU.
	root := t.TempDir()
	pcitest.Write(t, root, pcitest.HGX(0)...)
	if got := pci.GPUs(sysfs.New(root)); len(got) != 0 {
		t.Fatalf("GPUs on a host without GPUs: %+v", got)
	}
}

func TestModelNamesResolveInTheCatalogOrSayTheVendor(t *testing.T) {
	for _, tc := range []struct{ vendor, device, want string }{
		{"0x10de", "0x2330", "NVIDIA H100 SXM"},
		{"0x10DE", "0x20B2", "NVIDIA A100 SXM4 80GB"},
		{"0x1002", "0x74a1", "AMD Instinct MI300X"},
		{"0x1002", "0x7fff", "AMD GPU 0x7fff"},
		{"0x10de", "", "NVIDIA GPU"},
		{"0x8086", "0x0bd5", "PCI 0x8086 GPU 0x0bd5"},
	} {
		if got := pci.Model(tc.vendor, tc.device); got != tc.want {
			t.Errorf("Model(%s, %s) = %q, want %q", tc.vendor, tc.device, got, tc.want)
		}
	}
}

func TestAddress(t *testing.T) {
	for s, want := range map[string]bool{
		"0000:17:00.0": true, "10000:e1:00.3": true,
		"0000:17:00.8": false, "17:00.0": false, "card0": false, "0000:17:00.0-DP-1": false,
	} {
		if pci.Address(s) != want {
			t.Errorf("Address(%q) = %v", s, !want)
		}
	}
}
