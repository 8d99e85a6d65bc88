// Package host assembles the agent's hardware layer for one machine. Open
// discovers which backends the host has (RAPL, cpufreq, amd-smi, NVML,
// amdgpu hwmon) under the configured host root, wires them to the
// enforcers, and registers every backend that writes as a restorer of the
// state journal. The daemon then asks it for the NodeHardware facts,
// hands it NodePowerProfile targets, reads measured power, and restores
// the originals on stop.
//
// A host with nothing to control (this kind of VM) still opens: every
// missing piece becomes a warning and a blocked or none result, never an
// error. Open fails only when the journal of originals cannot be read,
// since then restoring would be unsafe.
package host

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"joulie.io/joulie/agentd/internal/amdgpu"
	"joulie.io/joulie/agentd/internal/amdsmi"
	"joulie.io/joulie/agentd/internal/cpufreq"
	"joulie.io/joulie/agentd/internal/cpuinfo"
	"joulie.io/joulie/agentd/internal/discovery"
	"joulie.io/joulie/agentd/internal/dvfs"
	"joulie.io/joulie/agentd/internal/enforce"
	"joulie.io/joulie/agentd/internal/nvml"
	"joulie.io/joulie/agentd/internal/power"
	"joulie.io/joulie/agentd/internal/rapl"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/catalog"
)

// Config says where the host's files and libraries are.
type Config struct {
	// Root is the directory under which sys/ and proc/ are read ("/").
	Root string
	// StateDir holds the journal of originals (/var/lib/joulie).
	StateDir string
	// NVMLLibraryPath is libnvidia-ml's path ("" for the loader's
	// default); "none" skips NVML.
	NVMLLibraryPath string
	// AMDSMILibraryPath is libamd_smi's path ("" tries the usual places);
	// "none" skips amd-smi.
	AMDSMILibraryPath string
	// DVFS tunes the fallback controller (dvfs.DefaultConfig when zero).
	DVFS dvfs.Config
	// RetryMin spaces out retries of failed controls (default 30s).
	RetryMin time.Duration
	// Catalog resolves models (catalog.Default when nil).
	Catalog *catalog.Catalog
	// AgentVersion is published in NodeHardware.
	AgentVersion string
	// OpenNVML replaces the NVML loader; tests pass go-nvml's mock.
	OpenNVML func(journal *state.Journal) *nvml.Backend
	// Now is the clock energy readings are timed with (time.Now).
	Now func() time.Time
	// Writer replaces how attribute files are written; tests inject the
	// driver errors (EIO) a fixture file cannot produce.
	Writer sysfs.Writer
}

// Skip is the library path that turns a library backend off.
const Skip = "none"

// Host is one machine's hardware layer. Its methods are safe for
// concurrent use; enforcement is serialized.
type Host struct {
	cfg     Config
	fs      *sysfs.FS
	journal *state.Journal
	cat     *catalog.Catalog

	cpu         cpuinfo.Info
	warnings    []string
	tdpWatts    float64
	raplCapper  *rapl.Capper
	meter       *cpuMeter
	freq        cpufreq.Host
	setter      *cpufreq.Setter
	regulator   *dvfs.Regulator
	amdsmiLib   *amdsmi.Library
	socketCap   *amdsmi.SocketCapper
	pkgBackend  joulie.ControlBackend
	pkgs        []enforce.Package
	gpu         power.GPUCapper
	gpuErr      error
	nvmlBackend *nvml.Backend
	restorers   map[string]state.Restorer

	mu     sync.Mutex
	cpuEnf *enforce.CPUEnforcer
	gpuEnf *enforce.GPUEnforcer
}

// Open discovers the host and wires its backends.
func Open(cfg Config) (*Host, error) {
	if cfg.Root == "" {
		cfg.Root = "/"
	}
	if cfg.Catalog == nil {
		cfg.Catalog = catalog.Default()
	}
	if cfg.DVFS == (dvfs.Config{}) {
		cfg.DVFS = dvfs.DefaultConfig()
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	journal, err := state.Open(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, fs: sysfs.New(cfg.Root), journal: journal, cat: cfg.Catalog, restorers: map[string]state.Restorer{}}
	if cfg.Writer != nil {
		h.fs = h.fs.WithWriter(cfg.Writer)
	}

	info, warns, err := cpuinfo.Discover(h.fs)
	h.warnings = append(h.warnings, warns...)
	if err != nil {
		h.warnings = append(h.warnings, "CPU discovery: "+err.Error())
	}
	h.cpu = info
	entry, _ := h.cat.ResolveCPU(info.ModelName)
	h.tdpWatts = entry.TDPWatts

	h.openCPUControls()
	h.openGPU()
	h.wireEnforcers()
	return h, nil
}

func (h *Host) openCPUControls() {
	pkgs, warns := rapl.Discover(h.fs)
	h.warnings = append(h.warnings, warns...)
	if len(pkgs) > 0 {
		c, err := rapl.NewCapper(h.fs, h.journal, pkgs, rapl.Options{MaxWatts: h.tdpWatts, Vendor: h.cpu.Vendor})
		if err != nil {
			h.warnings = append(h.warnings, "RAPL: "+err.Error())
		} else {
			h.raplCapper = c
			h.restorers[rapl.Backend] = c
		}
		var meters []*rapl.EnergyMeter
		for _, p := range pkgs {
			if p.HasEnergy {
				meters = append(meters, rapl.NewEnergyMeter(h.fs, p, rapl.MeterOptions{Now: h.cfg.Now, MaxWatts: maxOr(p.MaxWatts(), h.tdpWatts)}))
			}
		}
		if len(meters) == len(pkgs) {
			h.meter = &cpuMeter{meters: meters}
		} else if len(meters) > 0 {
			h.warnings = append(h.warnings, "RAPL energy is readable on only some packages; CPU power is not measured")
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
		if err == nil {
			h.amdsmiLib = lib
			h.restorers[amdsmi.Backend] = lib
		} else if h.cfg.AMDSMILibraryPath != "" || strings.Contains(strings.ToLower(h.cpu.Vendor), "amd") && !raplWritable {
			// "blocked:" is the enforcers' vocabulary; a warning says it plainly.
			h.warnings = append(h.warnings, strings.TrimPrefix(err.Error(), power.ErrBlocked.Error()+": ")+" (the EPYC socket power cap needs ROCm's amd-smi)")
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
// amd-smi, then amdgpu's hwmon files.
func (h *Host) openGPU() {
	var reasons []string
	if h.cfg.NVMLLibraryPath != Skip {
		open := h.cfg.OpenNVML
		if open == nil {
			open = func(j *state.Journal) *nvml.Backend { return nvml.Open(h.cfg.NVMLLibraryPath, j) }
		}
		b := open(h.journal)
		h.nvmlBackend = b
		h.restorers[nvml.BackendName] = b
		if gpus, err := b.GPUs(); err == nil && len(gpus) > 0 {
			h.gpu = b
			return
		} else if err != nil {
			reasons = append(reasons, err.Error())
		}
	}
	if h.amdsmiLib != nil {
		g := amdsmi.NewGPUCapper(h.amdsmiLib, h.journal)
		if gpus, err := g.GPUs(); err == nil && len(gpus) > 0 {
			h.gpu = g
			return
		}
	}
	hw := amdgpu.New(h.fs, h.journal)
	h.restorers[amdgpu.Backend] = hw
	if gpus, err := hw.GPUs(); err == nil && len(gpus) > 0 {
		h.gpu = hw
		return
	} else if err != nil {
		reasons = append(reasons, err.Error())
	}
	// No backend found a GPU. That is only worth a warning when the PCI
	// bus shows one the agent cannot reach.
	if vendor := gpuOnPCIBus(h.fs); vendor != "" {
		h.gpuErr = fmt.Errorf("%s GPUs are on the PCI bus but no backend can reach them: %s", vendor, strings.Join(reasons, "; "))
	}
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
		cpuCfg.RAPL = socketCapper{h.socketCap}
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
	if h.gpu != nil {
		name := h.gpu.Name()
		restoreGPU = func() error {
			return h.journal.RestoreWhere(func(e state.Entry) bool {
				return e.Backend == name && (name != amdsmi.Backend || strings.HasPrefix(e.ID, "gpu/"))
			}, h.restorers)
		}
	}
	h.gpuEnf = enforce.NewGPUEnforcer(h.gpu, restoreGPU, h.cfg.RetryMin)
}

// restoreCPU puts the CPU controls' originals back: RAPL limits, cpufreq
// ceilings and amd-smi socket caps.
func (h *Host) restoreCPU() error {
	return h.journal.RestoreWhere(func(e state.Entry) bool {
		switch e.Backend {
		case rapl.Backend, cpufreq.Backend:
			return true
		case amdsmi.Backend:
			return strings.HasPrefix(e.ID, "cpu-socket/")
		}
		return false
	}, h.restorers)
}

// Enforce applies a NodePowerProfile spec and returns the CPU and GPU
// outcomes.
func (h *Host) Enforce(now time.Time, spec joulie.NodePowerProfileSpec) (cpu, gpu joulie.ControlStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cpuEnf.Enforce(now, spec.CPU), h.gpuEnf.Enforce(now, spec.GPU)
}

// CPUMode is the CPU backend in force: none, rapl, amdsmi or dvfs.
func (h *Host) CPUMode() joulie.ControlBackend {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cpuEnf.Mode()
}

// DVFS returns the DVFS controller's last decision, for metrics; ok is
// false on a host without cpufreq control.
func (h *Host) DVFS() (d dvfs.Decision, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.regulator == nil {
		return dvfs.Decision{}, false
	}
	return h.regulator.Last(), true
}

// Hardware returns the NodeHardware status of the host as it is now.
func (h *Host) Hardware(now time.Time) joulie.NodeHardwareStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := discovery.Facts{
		CPU: discovery.CPUFacts{Vendor: h.cpu.Vendor, Model: h.cpu.ModelName, Sockets: h.cpu.Sockets,
			CoresPerSocket: h.cpu.CoresPerSocket, TotalCores: h.cpu.TotalCores, LogicalCPUs: h.cpu.LogicalCPUs},
		PackageBackend: h.pkgBackend,
		CPUEnergy:      h.meter != nil,
		MemoryBytes:    int64(h.cpu.MemTotalBytes),
		Warnings:       append([]string(nil), h.warnings...),
		AgentVersion:   h.cfg.AgentVersion,
		GPUError:       h.gpuErr,
	}
	if h.socketCap != nil {
		if sockets, err := h.socketCap.Sockets(); err == nil {
			for _, s := range sockets {
				f.Packages = append(f.Packages, discovery.PackageFacts{ID: s.ID, Zone: fmt.Sprintf("cpu-socket/%d", s.ID), MaxWatts: s.MaxWatts, LimitWatts: s.CapWatts, Writable: true})
			}
		}
	} else {
		// Re-read the zones so the published limits are the ones in force.
		pkgs, _ := rapl.Discover(h.fs)
		for _, p := range pkgs {
			f.Packages = append(f.Packages, discovery.PackageFacts{ID: p.ID, Zone: p.Zone,
				MinWatts: float64(p.MinPowerUW) / 1e6, MaxWatts: p.MaxWatts(), LimitWatts: p.LimitWatts(), Writable: p.LimitsWritable})
		}
	}
	if h.freq.Available() {
		f.Frequency = &discovery.FrequencyFacts{Driver: h.freq.Driver, Governor: h.freq.Governor,
			MinKHz: h.freq.MinKHz, BaseKHz: h.freq.BaseKHz, MaxKHz: h.freq.MaxKHz, Writable: h.freq.Writable}
	}
	if h.gpu != nil {
		f.GPUBackend = joulie.ControlBackend(h.gpu.Name())
		gpus, err := h.gpu.GPUs()
		f.GPUs = gpus
		if err != nil {
			f.GPUError = err
		}
	}
	return discovery.Build(f, h.cat, now)
}

// Power is a reading of the host's measured power.
type Power struct {
	CPUWatts, GPUWatts float64
	HasCPU, HasGPU     bool
}

// MeasuredPower reads the CPU power the last tick measured (RAPL energy)
// and the GPUs' current draw.
func (h *Host) MeasuredPower(now time.Time) Power {
	h.mu.Lock()
	defer h.mu.Unlock()
	var p Power
	if h.meter != nil {
		p.CPUWatts, p.HasCPU = h.meter.CPUPowerWatts(now)
	}
	if h.gpu != nil {
		if gpus, err := h.gpu.GPUs(); err == nil && len(gpus) > 0 {
			p.HasGPU = true
			for _, g := range gpus {
				if !g.HasPower {
					p.HasGPU = false
					break
				}
				p.GPUWatts += g.PowerWatts
			}
			if !p.HasGPU {
				p.GPUWatts = 0
			}
		}
	}
	return p
}

// PendingOriginals is how many originals the journal holds: after a crash,
// the controls the previous run left changed.
func (h *Host) PendingOriginals() int { return h.journal.Len() }

// Restore puts every journaled original back. Controls whose backend is
// gone stay in the journal and are named in the error.
func (h *Host) Restore() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.regulator != nil {
		_ = h.regulator.Reset() // the journal restores the ceilings too
	}
	err := h.journal.Restore(h.restorers)
	// The enforcers start over: the next target is applied afresh.
	h.wireEnforcers()
	return err
}

// Present reports, without writing, whether the control a journal entry
// names still exists on this host, for joulie-agentctl restore --forget,
// which drops only the entries of controls that are gone. With no backend
// for the entry on this host, nothing here can reach the control: not
// present. An error means the backend cannot tell.
func (h *Host) Present(backend, id string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.restorers[backend]
	if !ok {
		return false, nil
	}
	p, ok := r.(interface{ Present(id string) (bool, error) })
	if !ok {
		return false, fmt.Errorf("the %s backend cannot tell whether its controls exist", backend)
	}
	return p.Present(id)
}

// Close releases the GPU libraries. It does not restore: the daemon
// decides that (SPEC: unless told to keep the current caps).
func (h *Host) Close() error {
	var errs []error
	if h.nvmlBackend != nil {
		if err := h.nvmlBackend.Close(); err != nil && !power.IsBlocked(err) {
			errs = append(errs, err)
		}
	}
	if h.amdsmiLib != nil {
		errs = append(errs, h.amdsmiLib.Close())
	}
	return errors.Join(errs...)
}

// socketCapper adapts the amd-smi socket cap to enforce.PackageCapper.
type socketCapper struct{ c *amdsmi.SocketCapper }

func (s socketCapper) SetPackageCap(id int, watts float64) (float64, error) {
	return s.c.SetSocketCap(id, watts)
}

// cpuMeter sums the packages' RAPL energy meters. Each meter turns the
// energy since its previous read into watts, so the host reads them once
// per tick and hands the same figure to DVFS and to the status report.
type cpuMeter struct {
	meters []*rapl.EnergyMeter
	at     time.Time
	watts  float64
	ok     bool
}

func (m *cpuMeter) CPUPowerWatts(now time.Time) (float64, bool) {
	if now.Equal(m.at) {
		return m.watts, m.ok
	}
	m.at, m.watts, m.ok = now, 0, true
	for _, e := range m.meters {
		w, ok, err := e.Read()
		if err != nil || !ok {
			m.ok = false
			continue
		}
		m.watts += w
	}
	if !m.ok {
		m.watts = 0
	}
	return m.watts, m.ok
}

// gpuOnPCIBus names the vendor of a display or 3D controller on the PCI
// bus (nvidia, amd), or "" when there is none.
func gpuOnPCIBus(fs *sysfs.FS) string {
	devs, _ := fs.Glob("sys/bus/pci/devices/*")
	for _, d := range devs {
		class, err := fs.ReadString(d + "/class")
		if err != nil || !strings.HasPrefix(class, "0x03") {
			continue
		}
		switch vendor, _ := fs.ReadString(d + "/vendor"); vendor {
		case "0x10de":
			return "NVIDIA"
		case "0x1002":
			return "AMD"
		}
	}
	return ""
}

func maxOr(v, fallback float64) float64 {
	if v > 0 {
		return v
	}
	return fallback
}
