package amdgpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

const (
	// driverDir lists the PCI functions bound to amdgpu, one symlink per
	// function named by its address, next to bind/unbind/new_id files.
	driverDir = "sys/bus/pci/drivers/amdgpu"
	// drmDir is the second way in: cards whose device has AMD's vendor id,
	// which also finds a GPU while amdgpu is being rebound.
	drmDir = "sys/class/drm"

	amdVendor = "0x1002"
)

var (
	// pciAddrPattern is domain:bus:device.function. Domains are four hex
	// digits, more behind a VMD bridge.
	pciAddrPattern = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
	// cardPattern skips connector entries such as card1-DP-1.
	cardPattern = regexp.MustCompile(`^card[0-9]+$`)
)

func pciAddress(s string) bool { return pciAddrPattern.MatchString(s) }

// knownDevices names the Instinct parts by PCI device id, for boards whose
// driver has no product_name attribute. Names follow the PCI ID database
// (pci.ids): 0x740c is listed there as "MI250X/MI250", one id for both.
var knownDevices = map[string]string{
	"0x738c": "AMD Instinct MI100",
	"0x7408": "AMD Instinct MI250X",
	"0x740c": "AMD Instinct MI250X/MI250",
	"0x740f": "AMD Instinct MI210",
	"0x74a0": "AMD Instinct MI300A",
	"0x74a1": "AMD Instinct MI300X",
	"0x74a5": "AMD Instinct MI325X",
}

// scan returns the AMD GPUs present, as PCI address → device directory
// (relative to the host root).
func (c *Capper) scan() (map[string]string, error) {
	found := make(map[string]string)
	entries, err := os.ReadDir(c.fs.Path(driverDir))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// amdgpu is not loaded; the DRM scan may still find cards.
	case err != nil:
		return nil, fmt.Errorf("list AMD GPUs in %s: %w", c.fs.Path(driverDir), err)
	}
	for _, e := range entries {
		dev := path.Join(driverDir, e.Name())
		// A link whose device is gone (hot removal in progress) does
		// not count as a GPU.
		if pciAddress(e.Name()) && c.fs.Exists(dev) {
			found[e.Name()] = dev
		}
	}

	cards, err := c.fs.Glob(path.Join(drmDir, "card*"))
	if err != nil {
		return nil, err
	}
	for _, card := range cards {
		if !cardPattern.MatchString(path.Base(card)) {
			continue
		}
		dev := path.Join(card, "device")
		if vendor, err := c.fs.ReadString(path.Join(dev, "vendor")); err != nil || vendor != amdVendor {
			continue
		}
		target, err := filepath.EvalSymlinks(c.fs.Path(dev))
		if err != nil {
			continue
		}
		addr := filepath.Base(target)
		if _, seen := found[addr]; !seen && pciAddress(addr) {
			found[addr] = dev
		}
	}
	return found, nil
}

// hwmonDir finds the GPU's hwmon directory below its PCI device. There is
// normally one; when there are more, the one amdgpu names wins.
func (c *Capper) hwmonDir(dev string) (string, error) {
	dirs, err := c.fs.Glob(path.Join(dev, "hwmon", "hwmon*"))
	if err != nil {
		return "", err
	}
	for _, d := range dirs {
		if name, err := c.fs.ReadString(path.Join(d, "name")); err == nil && name == "amdgpu" {
			return d, nil
		}
	}
	for _, d := range dirs {
		if c.fs.Exists(path.Join(d, capAttr)) {
			return d, nil
		}
	}
	if len(dirs) == 0 {
		return "", fs.ErrNotExist
	}
	return dirs[0], nil
}

// productName is amdgpu's product_name (read from the board's FRU), else
// the name of a known device id, else "AMD GPU <device id>".
func (c *Capper) productName(dev string) string {
	if name, err := c.fs.ReadString(path.Join(dev, "product_name")); err == nil && name != "" {
		return name
	}
	id, err := c.fs.ReadString(path.Join(dev, "device"))
	if err != nil {
		return "AMD GPU"
	}
	id = strings.ToLower(id)
	if name, ok := knownDevices[id]; ok {
		return name
	}
	return "AMD GPU " + id
}
