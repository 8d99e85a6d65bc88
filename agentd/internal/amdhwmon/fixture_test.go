package amdhwmon

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"joulie.io/joulie/agentd/internal/pci"
)

// fakeGPU is one AMD GPU in a fixture tree laid out as the kernel lays out
// /sys: the device under sys/devices/pci<domain>:<bus>/<bridge>/<addr>, a
// driver link in sys/bus/pci/drivers/amdgpu, a DRM card and a class/hwmon
// link, with hwmon and card numbers unrelated to the PCI order.
type fakeGPU struct {
	addr     string // 0000:03:00.0
	bridge   string // pci0000:00/0000:00:01.1
	card     int
	hwmon    int
	deviceID string
	product  string            // product_name; "" for none
	attrs    map[string]string // hwmon attributes, in µW
	readOnly []string          // attributes the driver exposes 0444
	unbound  bool              // no amdgpu driver link (found through DRM only)
}

func (g fakeGPU) devDir() string { return filepath.Join("sys/devices", g.bridge, g.addr) }

func (g fakeGPU) hwmonDir() string {
	return filepath.Join(g.devDir(), "hwmon", "hwmon"+strconv.Itoa(g.hwmon))
}

// mi210 and mi300x are the two GPUs most tests use: on different PCI
// domains, card numbers in the opposite order of their addresses, and the
// two ways amdgpu reports draw (power1_average before MI300, power1_input
// on it).
func mi210() fakeGPU {
	return fakeGPU{
		addr: "0000:03:00.0", bridge: "pci0000:00/0000:00:01.1", card: 2, hwmon: 5,
		deviceID: "0x740f", product: "AMD Instinct MI210",
		attrs: map[string]string{
			"power1_cap": "300000000", "power1_cap_min": "100000000",
			"power1_cap_max": "300000000", "power1_cap_default": "300000000",
			"power1_average": "121000000",
		},
	}
}

func mi300x() fakeGPU {
	return fakeGPU{
		addr: "0001:41:00.0", bridge: "pci0001:40/0001:40:01.1", card: 1, hwmon: 2,
		deviceID: "0x74a1",
		attrs: map[string]string{
			"power1_cap": "750000000", "power1_cap_min": "200000000",
			"power1_cap_max": "750000000", "power1_cap_default": "750000000",
			"power1_input": "452500000",
		},
	}
}

// buildHost writes a fixture tree with the GPUs, an on-board VGA card
// (ASPEED, not AMD) and a CPU temperature hwmon, and returns its root.
func buildHost(t *testing.T, gpus ...fakeGPU) string {
	t.Helper()
	root := t.TempDir()
	file := func(rel, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	link := func(rel, target string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	// The driver directory holds control files beside the device links.
	for _, f := range []string{"bind", "unbind", "new_id", "remove_id", "uevent"} {
		file(filepath.Join(driverDir, f), "", 0o200)
	}
	link(filepath.Join(driverDir, "module"), "../../../../module/amdgpu")

	// BMC graphics on card0, and k10temp on hwmon0.
	vga := "sys/devices/pci0000:00/0000:00:1c.0/0000:02:00.0"
	file(filepath.Join(vga, "vendor"), "0x1a03", 0o444)
	file(filepath.Join(vga, "device"), "0x2000", 0o444)
	link(filepath.Join(vga, "drm/card0/device"), "../../../0000:02:00.0")
	link("sys/class/drm/card0", "../../devices/pci0000:00/0000:00:1c.0/0000:02:00.0/drm/card0")
	file("sys/devices/pci0000:00/0000:00:18.3/hwmon/hwmon0/name", "k10temp", 0o444)
	link("sys/class/hwmon/hwmon0", "../../devices/pci0000:00/0000:00:18.3/hwmon/hwmon0")

	for _, g := range gpus {
		dev := g.devDir()
		file(filepath.Join(dev, "vendor"), pci.VendorAMD, 0o444)
		file(filepath.Join(dev, "device"), g.deviceID, 0o444)
		file(filepath.Join(dev, "class"), "0x038000", 0o444)
		if g.product != "" {
			file(filepath.Join(dev, "product_name"), g.product, 0o444)
		}
		hw := g.hwmonDir()
		file(filepath.Join(hw, "name"), "amdgpu", 0o444)
		for attr, v := range g.attrs {
			mode := os.FileMode(0o444)
			if attr == "power1_cap" {
				mode = 0o644
			}
			for _, ro := range g.readOnly {
				if ro == attr {
					mode = 0o444
				}
			}
			file(filepath.Join(hw, attr), v, mode)
		}
		card := "card" + strconv.Itoa(g.card)
		link(filepath.Join(dev, "drm", card, "device"), "../../../"+g.addr)
		// A connector directory, which discovery must not take for a card.
		file(filepath.Join(dev, "drm", card, card+"-DP-1", "status"), "disconnected", 0o444)
		link(filepath.Join("sys/class/drm", card), filepath.Join("../../devices", g.bridge, g.addr, "drm", card))
		link(filepath.Join("sys/class/drm", card+"-DP-1"), filepath.Join("../../devices", g.bridge, g.addr, "drm", card, card+"-DP-1"))
		link(filepath.Join("sys/class/hwmon", "hwmon"+strconv.Itoa(g.hwmon)), filepath.Join("../../devices", g.bridge, g.addr, "hwmon", "hwmon"+strconv.Itoa(g.hwmon)))
		if !g.unbound {
			link(filepath.Join(driverDir, g.addr), filepath.Join("../../../../devices", g.bridge, g.addr))
		}
	}
	return root
}

// removeGPU makes a GPU disappear as hot removal does: device directory,
// driver link and class links go.
func removeGPU(t *testing.T, root string, g fakeGPU) {
	t.Helper()
	card := "card" + strconv.Itoa(g.card)
	for _, p := range []string{
		g.devDir(),
		filepath.Join(driverDir, g.addr),
		filepath.Join("sys/class/drm", card),
		filepath.Join("sys/class/drm", card+"-DP-1"),
		filepath.Join("sys/class/hwmon", "hwmon"+strconv.Itoa(g.hwmon)),
	} {
		if err := os.RemoveAll(filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
}

func readAttr(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// recordingWriter writes like the kernel interface does (no create, one
// write) and counts writes; paths ending in failSuffix fail with failErr.
type recordingWriter struct {
	mu         sync.Mutex
	writes     []string
	failSuffix string
	failErr    error
}

func (w *recordingWriter) WriteFile(p string, data []byte) error {
	w.mu.Lock()
	w.writes = append(w.writes, p+"="+string(data))
	fail := w.failSuffix != "" && strings.HasSuffix(p, w.failSuffix)
	w.mu.Unlock()
	if fail {
		return &os.PathError{Op: "write", Path: p, Err: w.failErr}
	}
	fh, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := fh.Write(data)
	if cerr := fh.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

func (w *recordingWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}
