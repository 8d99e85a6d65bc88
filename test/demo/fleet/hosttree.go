package fleet

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// hostTree is a daemon node's host as its joulie-agentd sees it: a root
// with proc/cpuinfo, proc/meminfo and the RAPL powercap zones of its
// packages, laid out and moded as Linux does (the agent decides what it
// may write from the mode), and a fake NVML state directory in the format
// of agentd/internal/nvml/fakenvml. The simulator advances the energy
// counters and power readings every tick and reads back the limits the
// agent wrote, which are the node's caps.
type hostTree struct {
	root, gpus string
}

// energyRangeUJ is where an Intel package's energy_uj wraps (61 µJ unit,
// 32-bit counter), as read on real hosts.
const energyRangeUJ = 262143328850

func zoneDir(root string, pkg int) string {
	return filepath.Join(root, "sys/devices/virtual/powercap/intel-rapl", fmt.Sprintf("intel-rapl:%d", pkg))
}

// writeHostTree lays out a family's host under root and its GPUs under
// gpus, uncapped and idle.
func writeHostTree(node, root, gpus string, f *Family) (*hostTree, error) {
	var files []struct {
		path, value string
		mode        os.FileMode
	}
	add := func(path, value string, mode os.FileMode) {
		files = append(files, struct {
			path, value string
			mode        os.FileMode
		}{path, value, mode})
	}
	var cpuinfo strings.Builder
	cpu := 0
	// Linux numbers the first thread of every core of every package,
	// then the second threads.
	for range 2 {
		for p := range f.Sockets {
			for c := range f.CoresPerSocket {
				fmt.Fprintf(&cpuinfo, "processor\t: %d\nvendor_id\t: %s\nmodel name\t: %s\nphysical id\t: %d\nsiblings\t: %d\ncore id\t\t: %d\ncpu cores\t: %d\n\n",
					cpu, f.CPUVendor, f.CPUModel, p, 2*f.CoresPerSocket, c, f.CoresPerSocket)
				topo := filepath.Join(root, "sys/devices/system/cpu", fmt.Sprintf("cpu%d", cpu), "topology")
				add(filepath.Join(topo, "physical_package_id"), strconv.Itoa(p), 0o444)
				add(filepath.Join(topo, "die_id"), "0", 0o444)
				add(filepath.Join(topo, "core_id"), strconv.Itoa(c), 0o444)
				cpu++
			}
		}
	}
	add(filepath.Join(root, "proc/cpuinfo"), cpuinfo.String(), 0o444)
	add(filepath.Join(root, "sys/devices/system/cpu/online"), fmt.Sprintf("0-%d", cpu-1), 0o444)
	add(filepath.Join(root, "proc/meminfo"), fmt.Sprintf("MemTotal:       %d kB\n", f.MemoryGiB<<20), 0o444)

	ct := filepath.Join(root, "sys/devices/virtual/powercap/intel-rapl")
	add(filepath.Join(ct, "enabled"), "1", 0o644)
	maxUW := int64(f.PackageMaxW * 1e6)
	for p := range f.Sockets {
		z := zoneDir(root, p)
		add(filepath.Join(z, "name"), fmt.Sprintf("package-%d", p), 0o444)
		add(filepath.Join(z, "enabled"), "1", 0o644)
		// Root-only since Linux 5.10 (CVE-2020-8694).
		add(filepath.Join(z, "energy_uj"), "0", 0o400)
		add(filepath.Join(z, "max_energy_range_uj"), strconv.FormatInt(energyRangeUJ, 10), 0o444)
		add(filepath.Join(z, "constraint_0_name"), "long_term", 0o444)
		add(filepath.Join(z, "constraint_0_power_limit_uw"), strconv.FormatInt(maxUW, 10), 0o644)
		add(filepath.Join(z, "constraint_0_time_window_us"), "999424", 0o644)
		add(filepath.Join(z, "constraint_0_max_power_uw"), strconv.FormatInt(maxUW, 10), 0o444)
		add(filepath.Join(z, "constraint_1_name"), "short_term", 0o444)
		add(filepath.Join(z, "constraint_1_power_limit_uw"), strconv.FormatInt(maxUW*12/10, 10), 0o644)
		add(filepath.Join(z, "constraint_1_time_window_us"), "2440", 0o644)
		add(filepath.Join(z, "constraint_1_max_power_uw"), strconv.FormatInt(2*maxUW, 10), 0o444)
	}
	// One Ethernet port armed for Wake-on-LAN, as netif finds it: the
	// agent publishes its MAC, and a magic packet to it boots the node.
	eth := filepath.Join(root, "sys/class/net/eth0")
	add(filepath.Join(eth, "address"), nodeMAC(node).String(), 0o444)
	add(filepath.Join(eth, "type"), "1", 0o444)
	add(filepath.Join(eth, "device/power/wakeup"), "enabled", 0o644)
	mw := func(w float64) string { return strconv.FormatInt(int64(math.Round(w*1000)), 10) }
	add(filepath.Join(gpus, "count"), strconv.Itoa(f.GPUs), 0o644)
	for i := range f.GPUs {
		d := filepath.Join(gpus, "gpu"+strconv.Itoa(i))
		add(filepath.Join(d, "name"), f.GPUName, 0o644)
		add(filepath.Join(d, "uuid"), gpuUUID(node, i), 0o644)
		add(filepath.Join(d, "pci_bus_id"), gpuBusID(i), 0o644)
		add(filepath.Join(d, "min_mw"), mw(f.GPUMinW), 0o644)
		add(filepath.Join(d, "max_mw"), mw(f.GPUMaxW), 0o644)
		add(filepath.Join(d, "default_mw"), mw(f.GPUMaxW), 0o644)
		add(filepath.Join(d, "limit_mw"), mw(f.GPUMaxW), 0o644)
		add(filepath.Join(d, "power_mw"), "0", 0o644)
		add(filepath.Join(d, "energy_mj"), "0", 0o644)
	}
	for _, fl := range files {
		if err := os.MkdirAll(filepath.Dir(fl.path), 0o755); err != nil {
			return nil, fmt.Errorf("fixture tree of %s: %w", node, err)
		}
		if !strings.HasSuffix(fl.value, "\n") {
			fl.value += "\n"
		}
		if err := os.WriteFile(fl.path, []byte(fl.value), fl.mode); err != nil {
			return nil, fmt.Errorf("fixture tree of %s: %w", node, err)
		}
	}
	// sys/class/powercap holds relative links into the device tree, which
	// is how the kernel, and so the agent, finds the zones.
	class := filepath.Join(root, "sys/class/powercap")
	if err := os.MkdirAll(class, 0o755); err != nil {
		return nil, fmt.Errorf("fixture tree of %s: %w", node, err)
	}
	links := map[string]string{"intel-rapl": "../../devices/virtual/powercap/intel-rapl"}
	for p := range f.Sockets {
		z := fmt.Sprintf("intel-rapl:%d", p)
		links[z] = "../../devices/virtual/powercap/intel-rapl/" + z
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(class, name)); err != nil {
			return nil, fmt.Errorf("fixture tree of %s: %w", node, err)
		}
	}
	return &hostTree{root: root, gpus: gpus}, nil
}

// readCaps takes the limits the agent last wrote as the node's caps: the
// highest package limit (the agent writes one per package) and each GPU's
// limit_mw. An unreadable or garbled value keeps the previous cap and is
// reported.
func (h *hostTree) readCaps(n *simNode) error {
	var errs []string
	var pkg float64
	for p := range n.fam.Sockets {
		v, err := readNumber(filepath.Join(zoneDir(h.root, p), "constraint_0_power_limit_uw"))
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		pkg = max(pkg, v/1e6)
	}
	if pkg > 0 {
		n.cpuCapW = pkg
	}
	for i := range n.fam.GPUs {
		v, err := readNumber(filepath.Join(h.gpus, "gpu"+strconv.Itoa(i), "limit_mw"))
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		n.gpuCapW[i] = v / 1000
	}
	if len(errs) > 0 {
		return fmt.Errorf("read caps of daemon node %s: %s", n.name, strings.Join(errs, "; "))
	}
	return nil
}

// writeReadings publishes the node's power: each package's energy
// counter (wrapping as the hardware's does) and each GPU's power and
// energy. Files are replaced whole (write and rename) so the agent never
// reads half a number.
func (h *hostTree) writeReadings(n *simNode) error {
	for p := range n.fam.Sockets {
		uj := uint64(n.pkgEnergyJ[p]*1e6) % energyRangeUJ
		if err := replace(filepath.Join(zoneDir(h.root, p), "energy_uj"), strconv.FormatUint(uj, 10), 0o400); err != nil {
			return fmt.Errorf("advance energy of daemon node %s: %w", n.name, err)
		}
	}
	for i := range n.fam.GPUs {
		d := filepath.Join(h.gpus, "gpu"+strconv.Itoa(i))
		if err := replace(filepath.Join(d, "power_mw"), strconv.FormatInt(int64(math.Round(n.gpuW[i]*1000)), 10), 0o644); err != nil {
			return fmt.Errorf("advance GPU %d of daemon node %s: %w", i, n.name, err)
		}
		if err := replace(filepath.Join(d, "energy_mj"), strconv.FormatUint(uint64(n.gpuEnergyJ[i]*1000), 10), 0o644); err != nil {
			return fmt.Errorf("advance GPU %d of daemon node %s: %w", i, n.name, err)
		}
	}
	return nil
}

func readNumber(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func replace(path, value string, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(value+"\n"), mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
