// Package host assembles the agent's hardware layer for one machine. Open
// discovers which backends the host has (RAPL, cpufreq, amd-smi, NVML,
// amdgpu hwmon) under the configured host root, wires them to the
// enforcers, and registers every backend that writes as a restorer of the
// state journal. The agent's loop then hands it a NodePowerProfile target
// each tick and gets back the outcomes with the power measured in the
// same pass, publishes its NodeHardware facts, and has it restore the
// originals on stop.
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
	"sync"
	"time"

	"joulie.io/joulie/agentd/internal/amdsmi"
	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/cpufreq"
	"joulie.io/joulie/agentd/internal/cpuinfo"
	"joulie.io/joulie/agentd/internal/dvfs"
	"joulie.io/joulie/agentd/internal/enforce"
	"joulie.io/joulie/agentd/internal/netif"
	"joulie.io/joulie/agentd/internal/nodehardware"
	"joulie.io/joulie/agentd/internal/nvml"
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
	// StandardGPUs, when set, names by UUID the GPUs only standard pods
	// hold; it is asked on a tick whose target sets a standard GPU cap,
	// and must answer at once (from what the per-pod meter last saw).
	StandardGPUs func() map[string]bool
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
	gpu         backend.GPUCapper
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
	gpus      []backend.GPU
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

// Enforce applies a NodePowerProfile spec (nil: none, only measure) and
// returns the outcomes with the power measured during the tick.
func (h *Host) Enforce(now time.Time, spec *joulie.NodePowerProfileSpec) enforce.Result {
	h.mu.Lock()
	defer h.mu.Unlock()
	var r enforce.Result
	h.listGPUs()
	if spec != nil {
		r.CPU = h.cpuEnf.Enforce(now, spec.CPU)
		var standard map[string]bool
		if spec.GPU != nil && spec.GPU.StandardPowerCap != nil && h.cfg.StandardGPUs != nil {
			standard = h.cfg.StandardGPUs()
		}
		r.GPU = h.gpuEnf.Enforce(now, spec.GPU, h.gpus, h.gpusErr, standard)
		h.noteApplied(r.GPU)
	}
	r.CPUMode = h.cpuEnf.Mode()
	r.Power = h.measuredPower(now)
	if h.gpusErr == nil {
		r.GPUs = slices.Clone(h.gpus)
	}
	if h.regulator != nil {
		d := h.regulator.Last()
		r.DVFS = &d
	}
	return r
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

// measuredPower reads the CPU power of the tick at now (RAPL energy) and
// sums the GPUs' draw from the tick's list. h.mu is held.
func (h *Host) measuredPower(now time.Time) backend.Reading {
	var p backend.Reading
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

// Hardware returns the NodeHardware status of the host as it is now.
func (h *Host) Hardware(now time.Time) joulie.NodeHardwareStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := nodehardware.Facts{
		CPU: nodehardware.CPUFacts{Vendor: h.cpu.Vendor, Model: h.cpu.ModelName, Sockets: h.cpu.Sockets,
			CoresPerSocket: h.cpu.CoresPerSocket, TotalCores: h.cpu.TotalCores, LogicalCPUs: h.cpu.LogicalCPUs},
		PackageBackend: h.pkgBackend,
		CPUEnergy:      h.meter != nil,
		MemoryBytes:    int64(h.cpu.MemTotalBytes),
		Network:        netif.Discover(h.fs),
		Warnings:       append([]string(nil), h.warnings...),
		AgentVersion:   h.cfg.AgentVersion,
	}
	if h.socketCap != nil {
		if sockets, err := h.socketCap.Sockets(); err == nil {
			for _, s := range sockets {
				f.Packages = append(f.Packages, nodehardware.PackageFacts{ID: s.ID, Zone: fmt.Sprintf("cpu-socket/%d", s.ID), MaxWatts: s.MaxWatts, LimitWatts: s.CapWatts, Writable: true})
			}
		}
	} else {
		for _, p := range h.currentRAPL() {
			f.Packages = append(f.Packages, nodehardware.PackageFacts{ID: p.ID, Zone: p.Zone,
				MinWatts: float64(p.MinPowerUW) / 1e6, MaxWatts: p.MaxWatts(), LimitWatts: p.LimitWatts(), Writable: p.LimitsWritable})
		}
	}
	if h.freq.Available() {
		f.Frequency = &nodehardware.FrequencyFacts{Driver: h.freq.Driver, Governor: h.freq.Governor,
			MinKHz: h.freq.MinKHz, BaseKHz: h.freq.BaseKHz, MaxKHz: h.freq.MaxKHz, Writable: h.freq.Writable}
	}
	if h.gpu != nil {
		f.GPUBackend = joulie.ControlBackend(h.gpu.Name())
		if !h.gpusFresh {
			h.listGPUs()
		}
		f.GPUs, f.GPUError = slices.Clone(h.gpus), h.gpusErr
	}
	return nodehardware.Build(f, h.cat, now)
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
		if err := h.nvmlBackend.Close(); err != nil && !backend.IsBlocked(err) {
			errs = append(errs, err)
		}
	}
	if h.amdsmiLib != nil {
		errs = append(errs, h.amdsmiLib.Close())
	}
	return errors.Join(errs...)
}

// BootIDFile is where the kernel gives this boot's random ID, under the
// host root.
const BootIDFile = "proc/sys/kernel/random/boot_id"

// BootID is the kernel's ID of this boot, which the park record compares
// to tell a restart of the daemon from the next boot; empty when
// unreadable (a restart and a reboot then look alike, and a park still
// never powers off twice).
func BootID(root string) string {
	id, err := sysfs.New(root).ReadString(BootIDFile)
	if err != nil {
		return ""
	}
	return id
}
