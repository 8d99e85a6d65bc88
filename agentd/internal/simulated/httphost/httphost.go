// Package httphost is the hardware of a simulated node: the agent's
// Hardware interface over the HTTP control contract of package
// httpbackend. Pool mode runs one agent loop per logical node on it; a
// TelemetryProfile that routes a real node to a simulator does the same.
//
// It reuses the enforcers of a real host, so a simulated node follows the
// same backend order: the simulator's RAPL action first, its DVFS throttle
// steered by its CPU telemetry when RAPL is refused, per-GPU caps. Nothing
// on the agent's host changes, so nothing is journaled or restored.
package httphost

import (
	"context"
	"fmt"
	"sync"
	"time"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/dvfs"
	"joulie.io/joulie/agentd/internal/enforce"
	"joulie.io/joulie/agentd/internal/nodehardware"
	"joulie.io/joulie/agentd/internal/simulated/httpbackend"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/catalog"
)

// Options describe the simulated node.
type Options struct {
	// CPUModel and Sockets name the node's CPUs (from its
	// joulie.io/hw.cpu-model label in pool mode): telemetry has no model.
	CPUModel string
	Sockets  int
	// Network is the node's network interfaces (from its
	// joulie.io/hw.macs annotation in pool mode), which NodeHardware
	// lists so that Wake-on-LAN can reach the node: telemetry has no
	// NICs either.
	Network  []joulie.NetworkInterface
	DVFS     dvfs.Config
	RetryMin time.Duration
	Catalog  *catalog.Catalog
	Version  string
}

// Host drives one simulated node.
type Host struct {
	c    *httpbackend.Client
	opts Options

	mu        sync.Mutex
	gpu       *httpbackend.GPUCapper
	regulator *dvfs.Regulator
	cpuEnf    *enforce.CPUEnforcer
	gpuEnf    *enforce.GPUEnforcer
	packages  int
	lastCPU   *httpbackend.CPUTelemetry
}

// timeout bounds one call of the contract from the agent's loop.
const timeout = 5 * time.Second

// New reads the node's telemetry once to learn its packages and wires the
// enforcers.
func New(c *httpbackend.Client, opts Options) (*Host, error) {
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	if opts.DVFS == (dvfs.Config{}) {
		opts.DVFS = dvfs.DefaultConfig()
	}
	h := &Host{c: c, opts: opts, gpu: httpbackend.NewGPUCapper(c)}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	t, err := c.Telemetry(ctx)
	if err != nil {
		return nil, fmt.Errorf("simulated node %s: %w", c.Node(), err)
	}
	reg, err := dvfs.NewRegulator(opts.DVFS, throttle{c})
	if err != nil {
		return nil, err
	}
	h.regulator = reg
	var pkgs []enforce.Package
	if t.CPU != nil {
		h.packages = len(t.CPU.PackagePowerWatts)
		for i := range t.CPU.PackagePowerWatts {
			pkgs = append(pkgs, enforce.Package{ID: i, MaxWatts: t.CPU.MaxWattsPerPackage, Writable: true})
		}
	}
	entry, _ := opts.Catalog.ResolveCPU(opts.CPUModel)
	h.cpuEnf = enforce.NewCPUEnforcer(enforce.CPUConfig{
		Packages: pkgs, RAPL: &packageCap{c: c}, RAPLBackend: joulie.BackendHTTP,
		DVFS: reg, Meter: meter{h}, FallbackMaxWatts: entry.TDPWatts, RetryMin: opts.RetryMin,
	})
	h.gpuEnf = enforce.NewGPUEnforcer(h.gpu, nil, opts.RetryMin)
	return h, nil
}

// Enforce applies spec (nil: none, only measure) to the simulated node
// and reads its power.
func (h *Host) Enforce(now time.Time, spec *joulie.NodePowerProfileSpec) enforce.Result {
	h.mu.Lock()
	defer h.mu.Unlock()
	var r enforce.Result
	gpus, gpuErr := h.gpu.GPUs() // once per tick, for the caps and the report
	if spec != nil {
		h.lastCPU = nil // one telemetry read per tick, shared by DVFS and the report
		r.CPU, r.GPU = h.cpuEnf.Enforce(now, spec.CPU), h.gpuEnf.Enforce(now, spec.GPU, gpus, gpuErr, nil)
	}
	r.CPUMode = h.cpuEnf.Mode()
	r.Power = h.measuredPower(now, gpus, gpuErr)
	d := h.regulator.Last()
	r.DVFS = &d
	return r
}

// Hardware describes the simulated node from its telemetry.
func (h *Host) Hardware(now time.Time) joulie.NodeHardwareStatus {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	f := nodehardware.Facts{
		CPU:            nodehardware.CPUFacts{Model: h.opts.CPUModel, Sockets: h.opts.Sockets},
		PackageBackend: joulie.BackendHTTP, AgentVersion: h.opts.Version,
		GPUBackend: joulie.BackendHTTP, Network: h.opts.Network,
	}
	t, err := h.c.Telemetry(ctx)
	if err != nil {
		f.Warnings = append(f.Warnings, err.Error())
	} else {
		if t.CPU != nil {
			f.CPUEnergy = true
			if f.CPU.Sockets == 0 {
				f.CPU.Sockets = len(t.CPU.PackagePowerWatts)
			}
			for i := range t.CPU.PackagePowerWatts {
				f.Packages = append(f.Packages, nodehardware.PackageFacts{ID: i, Zone: "http", MinWatts: t.CPU.MinWattsPerPackage,
					MaxWatts: t.CPU.MaxWattsPerPackage, LimitWatts: t.CPU.CapWatts, Writable: true})
			}
			f.Frequency = &nodehardware.FrequencyFacts{Writable: true}
		}
		f.GPUs = t.PowerGPUs()
	}
	return nodehardware.Build(f, h.opts.Catalog, now)
}

// measuredPower reads the simulated node's CPU power and sums the GPUs'
// from the tick's list. h.mu is held.
func (h *Host) measuredPower(now time.Time, gpus []backend.GPU, gpuErr error) backend.Reading {
	var p backend.Reading
	if w, ok := (meter{h}).CPUPowerWatts(now); ok {
		p.CPUWatts, p.HasCPU = w, true
	}
	if gpuErr == nil && len(gpus) > 0 {
		p.HasGPU = true
		for _, g := range gpus {
			p.GPUWatts += g.PowerWatts
		}
	}
	return p
}

// PendingOriginals is always 0: a simulator keeps no host state.
func (h *Host) PendingOriginals() int { return 0 }

// PowerOff switches the simulated node off through the contract's
// host.power_off, for a park: the node, never the agent's own host.
func (h *Host) PowerOff(ctx context.Context) error {
	if err := h.c.PowerOff(ctx); err != nil {
		return fmt.Errorf("switch simulated node %s off: %w", h.c.Node(), err)
	}
	return nil
}

// Restore lifts the simulated node's throttle; caps are the simulator's
// and are lifted by the next target.
func (h *Host) Restore() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.regulator.Reset()
}

// Close releases nothing.
func (h *Host) Close() error { return nil }

// packageCap sends one per-package limit for the whole node: the contract
// sets every package at once, so the first package of a tick sends and the
// others share its answer.
type packageCap struct {
	c       *httpbackend.Client
	last    float64
	applied float64
	err     error
}

func (p *packageCap) SetPackageCap(id int, watts float64) (float64, error) {
	if id == 0 || watts != p.last {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		p.applied, p.err = p.c.SetPackageCapWatts(ctx, watts)
		p.last = watts
	}
	return p.applied, p.err
}

// throttle is the DVFS actuation of a simulated node.
type throttle struct{ c *httpbackend.Client }

func (t throttle) Apply(pct float64) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := t.c.SetThrottlePct(ctx, pct)
	return err
}

func (t throttle) Reset() error { return t.Apply(0) }

// meter reads the simulated node's package power once per tick. h.mu is
// held by the callers.
type meter struct{ h *Host }

func (m meter) CPUPowerWatts(time.Time) (float64, bool) {
	if m.h.lastCPU == nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cpu, err := m.h.c.CPUPower(ctx)
		if err != nil || cpu == nil {
			return 0, false
		}
		m.h.lastCPU = cpu
	}
	return m.h.lastCPU.TotalWatts(), true
}

var _ backend.GPUCapper = (*httpbackend.GPUCapper)(nil)
