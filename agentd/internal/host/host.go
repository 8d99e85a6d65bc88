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
	"slices"
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
	"joulie.io/joulie/agentd/internal/pci"
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
	// DiscoverRAPL replaces rapl.Discover; tests count discoveries.
	DiscoverRAPL func(fs *sysfs.FS) ([]rapl.Package, []string)
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
	raplPkgs    []rapl.Package // as discovered, limits as of the last publish
	raplCapper  *rapl.Capper
	meter       *rapl.CPUMeter
	freq        cpufreq.Host
	setter      *cpufreq.Setter
	regulator   *dvfs.Regulator
	amdsmiLib   *amdsmi.Library
	amdsmiErr   error // why amd-smi did not open
	socketCap   *amdsmi.SocketCapper
	pkgBackend  joulie.ControlBackend
	pkgs        []enforce.Package
	gpu         power.GPUCapper
	nvmlBackend *nvml.Backend
	restorers   map[string]state.Restorer

	mu     sync.Mutex
	cpuEnf *enforce.CPUEnforcer
	gpuEnf *enforce.GPUEnforcer
	// gpus is the GPU backend's list of the last tick, with the limits it
	// applied, shared by enforcement, measured power and the hardware
	// facts so that a tick enumerates the GPUs once (NVML asks every
	// device for its readings). gpusFresh is false until a tick lists
	// them, and after a restore has put limits back behind its back.
	gpus      []power.GPU
	gpusErr   error
	gpusFresh bool
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
	if cfg.DiscoverRAPL == nil {
		cfg.DiscoverRAPL = rapl.Discover
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
			h.gpu = b
			return
		case power.IsBlocked(err):
			why.nvml = plain(err) + "; install the NVIDIA driver (it ships libnvidia-ml.so.1) or set nvmlLibraryPath to the library's path"
		case err != nil:
			why.nvml = plain(err) + "; check the NVIDIA driver with nvidia-smi"
		default:
			why.nvml = "NVML lists none of them; check that the nvidia kernel module is loaded and has bound them (nvidia-smi)"
		}
	}
	switch {
	case h.amdsmiLib != nil:
		g := amdsmi.NewGPUCapper(h.amdsmiLib, h.journal)
		gpus, err := g.GPUs()
		if err == nil && len(gpus) > 0 {
			h.gpu = g
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
	hw := amdgpu.New(h.fs, h.journal)
	h.restorers[amdgpu.Backend] = hw
	gpus, err := hw.GPUs()
	if err == nil && len(gpus) > 0 {
		h.gpu = hw
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
		u = append(u, power.GPU{Index: i, Name: g.Model(), PCIBusID: g.Address, CapBlocked: reasons[g.VendorID]})
	}
	h.gpu = u
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

// Enforce applies a NodePowerProfile spec (nil: none, only measure) and
// returns the outcomes with the power measured during the tick.
func (h *Host) Enforce(now time.Time, spec *joulie.NodePowerProfileSpec) enforce.Result {
	h.mu.Lock()
	defer h.mu.Unlock()
	var r enforce.Result
	h.listGPUs()
	if spec != nil {
		r.CPU = h.cpuEnf.Enforce(now, spec.CPU)
		r.GPU = h.gpuEnf.Enforce(now, spec.GPU, h.gpus, h.gpusErr)
		h.noteApplied(r.GPU)
	}
	r.CPUMode = h.cpuEnf.Mode()
	r.Power = h.measuredPower(now)
	if h.regulator != nil {
		d := h.regulator.Last()
		r.DVFS = &d
	}
	return r
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
	}
	if h.socketCap != nil {
		if sockets, err := h.socketCap.Sockets(); err == nil {
			for _, s := range sockets {
				f.Packages = append(f.Packages, discovery.PackageFacts{ID: s.ID, Zone: fmt.Sprintf("cpu-socket/%d", s.ID), MaxWatts: s.MaxWatts, LimitWatts: s.CapWatts, Writable: true})
			}
		}
	} else {
		for _, p := range h.currentRAPL() {
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
		if !h.gpusFresh {
			h.listGPUs()
		}
		f.GPUs, f.GPUError = slices.Clone(h.gpus), h.gpusErr
	}
	return discovery.Build(f, h.cat, now)
}

// listGPUs enumerates the GPUs for this tick. h.mu is held.
func (h *Host) listGPUs() {
	h.gpus, h.gpusErr, h.gpusFresh = nil, nil, true
	if h.gpu != nil {
		h.gpus, h.gpusErr = h.gpu.GPUs()
	}
}

// noteApplied updates the tick's GPU list with the limits the GPU
// enforcer has just set, so the list still says what is in force. The
// enforcer reports one device per listed GPU, in list order. When a write
// failed, what the device holds is uncertain, and the list is read again
// when next needed. h.mu is held.
func (h *Host) noteApplied(st joulie.ControlStatus) {
	if len(st.Devices) != len(h.gpus) {
		return // nothing was written (no cap asked, or no devices)
	}
	for i, d := range st.Devices {
		switch {
		case d.Result == joulie.ResultError:
			h.gpusFresh = false
		case d.AppliedCapWatts != nil:
			h.gpus[i].CapWatts = *d.AppliedCapWatts
		}
	}
}

// currentRAPL is the RAPL packages with the limits in force now, for
// publication. The zones were discovered at Open; only their limits are
// read again, unless a zone no longer answers (its driver was unloaded):
// then the zones are discovered again, so the status shows what is left.
// Enforcement keeps the zones of Open either way, as it always has; a
// changed RAPL setup takes a restart. h.mu is held.
func (h *Host) currentRAPL() []rapl.Package {
	pkgs, err := rapl.CurrentLimits(h.fs, h.raplPkgs)
	if err != nil {
		pkgs, _ = h.cfg.DiscoverRAPL(h.fs)
	}
	h.raplPkgs = pkgs
	return pkgs
}

// measuredPower reads the CPU power of the tick at now (RAPL energy) and
// sums the GPUs' draw from the tick's list. h.mu is held.
func (h *Host) measuredPower(now time.Time) power.Reading {
	var p power.Reading
	if h.meter != nil {
		p.CPUWatts, p.HasCPU = h.meter.CPUPowerWatts(now)
	}
	if h.gpu != nil {
		if gpus, err := h.gpus, h.gpusErr; err == nil && len(gpus) > 0 {
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
	h.gpusFresh = false
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

// unreachableGPUs stands in for a GPU backend on a host whose GPUs are on
// the PCI bus but out of every backend's reach. It lists them as the bus
// shows them, each with the reason it cannot be capped, and never writes:
// every cap is blocked, and the class reports it instead of "no GPUs".
type unreachableGPUs []power.GPU

func (u unreachableGPUs) Name() string { return string(joulie.BackendNone) }

func (u unreachableGPUs) GPUs() ([]power.GPU, error) { return slices.Clone(u), nil }

func (u unreachableGPUs) SetCap(index int, _ float64) (float64, error) {
	if index < 0 || index >= len(u) {
		return 0, fmt.Errorf("set power cap of GPU %d: no such GPU (%d found)", index, len(u))
	}
	return 0, fmt.Errorf("%w: GPU %d (%s): %s", power.ErrBlocked, index, u[index].PCIBusID, u[index].CapBlocked)
}

func (u unreachableGPUs) Restore(id, _ string) error {
	return fmt.Errorf("restore %s: no GPU backend reaches this host's GPUs", id)
}

// plain is a backend's error without the "blocked: " marker the enforcers
// use, for warnings and reasons that say it in words.
func plain(err error) string {
	return strings.TrimPrefix(err.Error(), power.ErrBlocked.Error()+": ")
}
