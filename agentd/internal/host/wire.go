package host

import (
	"fmt"
	"slices"
	"strings"

	"joulie.io/joulie/agentd/internal/amdhwmon"
	"joulie.io/joulie/agentd/internal/amdsmi"
	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/cpufreq"
	"joulie.io/joulie/agentd/internal/dvfs"
	"joulie.io/joulie/agentd/internal/enforce"
	"joulie.io/joulie/agentd/internal/nvml"
	"joulie.io/joulie/agentd/internal/pci"
	"joulie.io/joulie/agentd/internal/rapl"
	"joulie.io/joulie/agentd/internal/state"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// openCPUControls picks the CPU package capper (RAPL, else the amd-smi
// socket cap when the RAPL limits are read-only), the energy meter and
// the cpufreq-based DVFS fallback.
func (h *Host) openCPUControls() {
	pkgs, warns := h.cfg.DiscoverRAPL(h.fs)
	h.warnings = append(h.warnings, warns...)
	h.raplPkgs = pkgs
	if len(pkgs) > 0 {
		c, err := rapl.NewCapper(h.fs, h.journal, pkgs, rapl.Options{MaxWatts: h.tdpWatts, Vendor: h.cpu.Vendor})
		if err != nil {
			h.warnings = append(h.warnings, "RAPL: "+err.Error())
		} else {
			h.raplCapper = c
			h.restorers[rapl.Backend] = c
		}
		var warn string
		h.meter, warn = rapl.NewCPUMeter(h.fs, pkgs, rapl.MeterOptions{Now: h.cfg.Now, MaxWatts: h.tdpWatts})
		if warn != "" {
			h.warnings = append(h.warnings, warn)
		}
	}
	h.pkgBackend = joulie.BackendRAPL
	raplWritable := false
	for _, p := range pkgs {
		h.pkgs = append(h.pkgs, enforce.Package{ID: p.ID, MaxWatts: p.MaxWatts(), Writable: p.LimitsWritable, Reason: p.LimitsReason})
		raplWritable = raplWritable || p.LimitsWritable
	}

	h.freq = cpufreq.Discover(h.fs)
	h.warnings = append(h.warnings, h.freq.Warnings...)
	if h.freq.Available() {
		h.setter = cpufreq.NewSetter(h.fs, h.journal, h.freq)
		h.restorers[cpufreq.Backend] = h.setter
		act, err := dvfs.NewActuator(h.setter, h.freq, h.cfg.DVFS.MinFreqKHz)
		if err == nil {
			h.regulator, err = dvfs.NewRegulator(h.cfg.DVFS, act)
		}
		if err != nil {
			h.warnings = append(h.warnings, "DVFS: "+err.Error())
			h.regulator = nil
		}
	}

	// amd-smi: the socket power cap is EPYC's answer to read-only RAPL
	// limits, and its GPU side a second AMD GPU path.
	if h.cfg.AMDSMILibraryPath != Skip {
		lib, err := amdsmi.Open(h.cfg.AMDSMILibraryPath)
		h.amdsmiErr = err
		if err == nil {
			h.amdsmiLib = lib
			h.restorers[amdsmi.Backend] = lib
		} else if h.cfg.AMDSMILibraryPath != "" || strings.Contains(strings.ToLower(h.cpu.Vendor), "amd") && !raplWritable {
			// "blocked:" is the enforcers' vocabulary; a warning says it plainly.
			h.warnings = append(h.warnings, plain(err)+" (the EPYC socket power cap needs ROCm's amd-smi)")
		}
	}
	if h.amdsmiLib != nil && !raplWritable {
		sc := amdsmi.NewSocketCapper(h.amdsmiLib, h.journal)
		if sockets, err := sc.Sockets(); err == nil && len(sockets) > 0 {
			h.socketCap, h.pkgBackend, h.pkgs = sc, joulie.BackendAMDSMI, nil
			for _, s := range sockets {
				h.pkgs = append(h.pkgs, enforce.Package{ID: s.ID, MaxWatts: s.MaxWatts, Writable: true})
			}
		}
	}
}

// openGPU picks the first GPU backend that finds devices: NVML, then
// amd-smi, then amdgpu's hwmon files. When none does but the PCI bus shows
// GPUs, they are listed from PCI and every cap on them is blocked, with
// the reason and what to install: a GPU the agent cannot reach is a
// control it cannot enforce, not a GPU that is not there.
func (h *Host) openGPU() {
	var why struct{ nvml, amdsmi, hwmon string }
	if h.cfg.NVMLLibraryPath == Skip {
		why.nvml = "nvmlLibraryPath is none, so NVML is not loaded; set nvmlLibraryPath to libnvidia-ml.so.1's path (or leave it empty for the loader's default) to cap them"
	} else {
		open := h.cfg.OpenNVML
		if open == nil {
			open = func(j *state.Journal) *nvml.Backend { return nvml.Open(h.cfg.NVMLLibraryPath, j) }
		}
		b := open(h.journal)
		h.nvmlBackend = b
		h.restorers[nvml.BackendName] = b
		gpus, err := b.GPUs()
		switch {
		case err == nil && len(gpus) > 0:
			h.gpu = h.alsoOnBus(b, gpus, pci.VendorNVIDIA, "the AMD GPUs on the PCI bus are not capped: the agent drives one GPU backend, NVML, which reaches only the NVIDIA GPUs")
			return
		case backend.IsBlocked(err):
			why.nvml = plain(err) + "; install the NVIDIA driver (it ships libnvidia-ml.so.1) or set nvmlLibraryPath to the library's path"
		case err != nil:
			why.nvml = plain(err) + "; check the NVIDIA driver with nvidia-smi"
		default:
			why.nvml = "NVML lists none of them; check that the nvidia kernel module is loaded and has bound them (nvidia-smi)"
		}
	}
	switch {
	case h.amdsmiLib != nil:
		g := amdsmi.NewGPUCapper(h.amdsmiLib, h.journal).WithModels(pci.ModelsOf(pci.GPUs(h.fs), pci.VendorAMD))
		gpus, err := g.GPUs()
		if err == nil && len(gpus) > 0 {
			h.gpu = h.alsoOnBus(g, gpus, pci.VendorAMD, "NVML cannot reach the NVIDIA GPUs on the PCI bus: "+why.nvml)
			return
		}
		why.amdsmi = "amd-smi lists none of them"
		if err != nil {
			why.amdsmi = "amd-smi: " + plain(err)
		}
	case h.cfg.AMDSMILibraryPath == Skip:
		why.amdsmi = "amd-smi is not loaded (amdsmiLibraryPath is none)"
	case h.amdsmiErr != nil:
		why.amdsmi = plain(h.amdsmiErr)
	}
	hw := amdhwmon.New(h.fs, h.journal)
	h.restorers[amdhwmon.Backend] = hw
	gpus, err := hw.GPUs()
	if err == nil && len(gpus) > 0 {
		h.gpu = h.alsoOnBus(hw, gpus, pci.VendorAMD, "NVML cannot reach the NVIDIA GPUs on the PCI bus: "+why.nvml)
		return
	}
	why.hwmon = "the amdgpu driver has bound none of them"
	if err != nil {
		why.hwmon = "amdgpu: " + err.Error()
	}

	onBus := pci.GPUs(h.fs)
	if len(onBus) == 0 {
		return
	}
	reasons := map[string]string{
		pci.VendorNVIDIA: "NVML cannot reach the NVIDIA GPUs on the PCI bus: " + why.nvml,
		pci.VendorAMD: "no backend reaches the AMD GPUs on the PCI bus: " + why.hwmon + ", and " + why.amdsmi +
			"; load the amdgpu kernel module (it gives each GPU a hwmon power1_cap) or install ROCm's amd-smi (libamd_smi.so)",
	}
	u := unreachableGPUs{}
	for i, g := range onBus {
		u = append(u, backend.GPU{Index: i, Name: g.Model(), PCIBusID: g.Address, CapBlocked: reasons[g.VendorID]})
	}
	h.gpu = u
}

// alsoOnBus is b, which drives the GPUs of vendor drives (gpus, as it
// lists them), with the GPUs of the other vendor on the PCI bus listed
// after them, each blocked with why: a GPU the backend cannot reach is a
// control the agent cannot enforce, not a GPU that is not there.
func (h *Host) alsoOnBus(b backend.GPUCapper, gpus []backend.GPU, drives, why string) backend.GPUCapper {
	next := 0
	for _, g := range gpus {
		next = max(next, g.Index+1)
	}
	var others unreachableGPUs
	for _, g := range pci.GPUs(h.fs) {
		if g.VendorID == drives {
			continue
		}
		others = append(others, backend.GPU{Index: next, Name: g.Model(), PCIBusID: g.Address, CapBlocked: why})
		next++
	}
	if len(others) == 0 {
		return b
	}
	return withUnreachable{GPUCapper: b, others: others}
}

// withUnreachable is a GPU backend with, after its own GPUs, GPUs on the
// bus it cannot reach, which it lists and never writes.
type withUnreachable struct {
	backend.GPUCapper
	others unreachableGPUs
}

func (w withUnreachable) GPUs() ([]backend.GPU, error) {
	gpus, err := w.GPUCapper.GPUs()
	return append(gpus, w.others...), err
}

func (w withUnreachable) SetCap(index int, watts float64) (float64, error) {
	if w.others.has(index) {
		return w.others.SetCap(index, watts)
	}
	return w.GPUCapper.SetCap(index, watts)
}

func (h *Host) wireEnforcers() {
	cpuCfg := enforce.CPUConfig{
		Packages:         h.pkgs,
		RAPLBackend:      h.pkgBackend,
		FallbackMaxWatts: h.tdpWatts,
		RetryMin:         h.cfg.RetryMin,
		Restore:          h.restoreCPU,
	}
	switch {
	case h.socketCap != nil:
		cpuCfg.RAPL = h.socketCap
	case h.raplCapper != nil:
		cpuCfg.RAPL = h.raplCapper
	}
	if h.regulator != nil {
		cpuCfg.DVFS = h.regulator
	}
	if h.meter != nil {
		cpuCfg.Meter = h.meter
	}
	h.cpuEnf = enforce.NewCPUEnforcer(cpuCfg)
	var restoreGPU func() error
	if _, unreachable := h.gpu.(unreachableGPUs); h.gpu != nil && !unreachable {
		name := h.gpu.Name()
		restoreGPU = func() error {
			h.gpusFresh = false
			return h.journal.RestoreWhere(func(e state.Entry) bool {
				return e.Kind == state.KindGPU && e.Backend == name
			}, h.restorers)
		}
	}
	h.gpuEnf = enforce.NewGPUEnforcer(h.gpu, restoreGPU, h.cfg.RetryMin)
}

// restoreCPU puts the CPU controls' originals back: RAPL limits, cpufreq
// ceilings and amd-smi socket caps.
func (h *Host) restoreCPU() error {
	return h.journal.RestoreWhere(func(e state.Entry) bool { return e.Kind == state.KindCPU }, h.restorers)
}

// unreachableGPUs stands in for a GPU backend on a host whose GPUs are on
// the PCI bus but out of every backend's reach. It lists them as the bus
// shows them, each with the reason it cannot be capped, and never writes:
// every cap is blocked, and the class reports it instead of "no GPUs".
type unreachableGPUs []backend.GPU

func (u unreachableGPUs) Name() string { return string(joulie.BackendNone) }

func (u unreachableGPUs) GPUs() ([]backend.GPU, error) { return slices.Clone(u), nil }

// SetCap refuses: no backend reaches GPU index. Indexes are the GPUs'
// own, which after a backend's GPUs (withUnreachable) start past them.
func (u unreachableGPUs) SetCap(index int, _ float64) (float64, error) {
	for _, g := range u {
		if g.Index == index {
			return 0, fmt.Errorf("%w: GPU %d (%s): %s", backend.ErrBlocked, index, g.PCIBusID, g.CapBlocked)
		}
	}
	return 0, fmt.Errorf("set power cap of GPU %d: no such GPU (%d found)", index, len(u))
}

func (u unreachableGPUs) has(index int) bool {
	return slices.ContainsFunc(u, func(g backend.GPU) bool { return g.Index == index })
}

func (u unreachableGPUs) Restore(id, _ string) error {
	return fmt.Errorf("restore %s: no GPU backend reaches this host's GPUs", id)
}

// plain is a backend's error without the "blocked: " marker the enforcers
// use, for warnings and reasons that say it in words.
func plain(err error) string {
	return strings.TrimPrefix(err.Error(), backend.ErrBlocked.Error()+": ")
}
