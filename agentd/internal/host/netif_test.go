package host

import (
	"os"
	"path/filepath"
	"testing"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// NodeHardware lists the host's physical NIC, for Wake-on-LAN, and not
// its bridge; the boot ID is read under the host root.
func TestHardwareListsThePhysicalNICs(t *testing.T) {
	root, dgx := xeonDGX(t)
	files := map[string]string{
		"sys/devices/pci0000:00/0000:00:1f.6/net/eno1/address": "0c:c4:7a:12:34:56",
		"sys/devices/pci0000:00/0000:00:1f.6/net/eno1/type":    "1",
		"sys/devices/pci0000:00/0000:00:1f.6/power/wakeup":     "enabled",
		"sys/devices/virtual/net/cni0/address":                 "0a:58:0a:f4:00:01",
		"sys/devices/virtual/net/cni0/type":                    "1",
		BootIDFile:                                             "5b1f0c2e-7f4d-4c1a-9a53-2f0b6e4f9d11",
	}
	for p, v := range files {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(v+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"sys/devices/pci0000:00/0000:00:1f.6/net/eno1/device": "../../../0000:00:1f.6",
		"sys/class/net/eno1": "../../devices/pci0000:00/0000:00:1f.6/net/eno1",
		"sys/class/net/cni0": "../../devices/virtual/net/cni0",
	} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	h := open(t, root, t.TempDir(), dgx, newClock())
	defer h.Close()
	want := []joulie.NetworkInterface{{Name: "eno1", MAC: "0c:c4:7a:12:34:56", WakeOnLAN: true}}
	if got := h.Hardware(newClock().now()).Network; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("network %+v, want %+v", got, want)
	}
	if id := BootID(root); id != "5b1f0c2e-7f4d-4c1a-9a53-2f0b6e4f9d11" {
		t.Fatalf("boot ID %q", id)
	}
	if id := BootID(t.TempDir()); id != "" {
		t.Fatalf("boot ID without the file: %q", id)
	}
}
