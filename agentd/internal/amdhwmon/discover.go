package amdhwmon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"

	"joulie.io/joulie/agentd/internal/pci"
)

const (
	// driverDir lists the PCI functions bound to amdgpu, one symlink per
	// function named by its address, next to bind/unbind/new_id files.
	driverDir = "sys/bus/pci/drivers/amdgpu"
	// drmDir is the second way in: cards whose device has AMD's vendor id,
	// which also finds a GPU while amdgpu is being rebound.
	drmDir = "sys/class/drm"
)

// cardPattern skips connector entries such as card1-DP-1.
var cardPattern = regexp.MustCompile(`^card[0-9]+$`)

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
		if pci.Address(e.Name()) && c.fs.Exists(dev) {
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
		if vendor, err := c.fs.ReadString(path.Join(dev, "vendor")); err != nil || vendor != pci.VendorAMD {
			continue
		}
		target, err := filepath.EvalSymlinks(c.fs.Path(dev))
		if err != nil {
			continue
		}
		addr := filepath.Base(target)
		if _, seen := found[addr]; !seen && pci.Address(addr) {
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
// the name the PCI device ID gives.
func (c *Capper) productName(dev string) string {
	if name, err := c.fs.ReadString(path.Join(dev, "product_name")); err == nil && name != "" {
		return name
	}
	id, _ := c.fs.ReadString(path.Join(dev, "device"))
	return pci.Model(pci.VendorAMD, id)
}
