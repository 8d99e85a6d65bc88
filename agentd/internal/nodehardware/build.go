// Package nodehardware turns what the agent's backends found on a host into
// the NodeHardware status the controller plans with: models resolved
// against the shared hardware catalog, per-package and per-GPU cap ranges,
// which controls and telemetry work, and warnings for what is missing.
//
// Build is pure: the backends gather the facts, Build only maps them, so
// the mapping is tested with tables. Missing pieces are warnings and a
// lower quality grade, never a failure: a host that reports little still
// gets a NodeHardware, filled in from the catalog.
package nodehardware

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"joulie.io/joulie/agentd/internal/backend"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/catalog"
)

// Facts is everything the backends found on one host.
type Facts struct {
	CPU CPUFacts
	// Packages are the CPU packages a package capper (RAPL or the amd-smi
	// socket cap) sees.
	Packages []PackageFacts
	// PackageBackend names that capper: rapl or amdsmi.
	PackageBackend joulie.ControlBackend
	// CPUEnergy is true when package energy can be read (RAPL energy_uj).
	CPUEnergy bool
	// Frequency holds the cpufreq landmarks; nil without cpufreq.
	Frequency *FrequencyFacts
	// GPUBackend names the GPU backend (nvml, amdsmi, hwmon, http); empty
	// when none was found.
	GPUBackend joulie.ControlBackend
	GPUs       []backend.GPU
	// GPUError is why GPU enumeration failed, if it did.
	GPUError error
	// MemoryBytes is the host's physical memory.
	MemoryBytes int64
	// Network is the host's physical Ethernet interfaces (netif).
	Network []joulie.NetworkInterface
	// Warnings come from the backends' discovery.
	Warnings     []string
	AgentVersion string
}

// CPUFacts identify the host's processors.
type CPUFacts struct {
	Vendor, Model                                    string
	Sockets, CoresPerSocket, TotalCores, LogicalCPUs int
}

// PackageFacts describe one CPU package's power-limit zone.
type PackageFacts struct {
	ID   int
	Zone string
	// MinWatts and MaxWatts are the zone's limits; 0 when not exposed.
	MinWatts, MaxWatts float64
	// LimitWatts is the long-term limit in force.
	LimitWatts float64
	Writable   bool
}

// FrequencyFacts are the host's cpufreq landmarks.
type FrequencyFacts struct {
	Driver, Governor        string
	MinKHz, BaseKHz, MaxKHz int64
	// Writable is true when scaling_max_freq can be written (DVFS works).
	Writable bool
}

// Build maps facts onto a NodeHardware status.
func Build(f Facts, cat *catalog.Catalog, now time.Time) joulie.NodeHardwareStatus {
	warnings := append([]string(nil), f.Warnings...)
	st := joulie.NodeHardwareStatus{
		MemoryBytes:  f.MemoryBytes,
		Network:      f.Network,
		AgentVersion: f.AgentVersion,
		LastUpdated:  metav1.NewTime(now.UTC().Truncate(time.Second)),
	}
	st.CPU, warnings = buildCPU(f, cat, warnings)
	st.GPU, warnings = buildGPU(f, cat, warnings)
	st.Quality = quality(f, warnings)
	st.Warnings = warnings
	return st
}

func buildCPU(f Facts, cat *catalog.Catalog, warnings []string) (joulie.CPUHardware, []string) {
	if f.PackageBackend == "" {
		f.PackageBackend = joulie.BackendRAPL
	}
	c := joulie.CPUHardware{
		Vendor:         f.CPU.Vendor,
		Model:          f.CPU.Model,
		Sockets:        int32(f.CPU.Sockets),
		CoresPerSocket: int32(f.CPU.CoresPerSocket),
		TotalCores:     int32(f.CPU.TotalCores),
		LogicalCPUs:    int32(f.CPU.LogicalCPUs),
	}
	entry, ex := cat.ResolveCPU(f.CPU.Model)
	c.CatalogModel, c.Exactness = entry.ID, joulie.Exactness(ex)
	switch {
	case f.CPU.Model == "":
		warnings = append(warnings, "CPU model unknown; planning with the catalog's generic CPU "+entry.ID)
	case ex != catalog.ExactnessExact:
		warnings = append(warnings, fmt.Sprintf("CPU model %q is not in the catalog; using %s (%s)", f.CPU.Model, entry.ID, ex))
	}

	var zoneRange *joulie.PowerRange
	for _, p := range f.Packages {
		pkg := joulie.CPUPackage{ID: int32(p.ID), Zone: p.Zone, LimitsWritable: p.Writable}
		if p.LimitWatts > 0 {
			pkg.CurrentCapWatts = ptr.To(p.LimitWatts)
		}
		if p.MaxWatts > 0 {
			pkg.CapRange = &joulie.PowerRange{MinWatts: p.MinWatts, MaxWatts: p.MaxWatts, DefaultWatts: entry.TDPWatts, Source: string(f.PackageBackend)}
			zoneRange = narrowest(zoneRange, pkg.CapRange)
		}
		c.Packages = append(c.Packages, pkg)
	}
	// The per-socket range planners use: the kernel's when it gives one
	// (the narrowest over packages), else the catalog's, with the TDP as
	// the maximum that percentages are taken of (SPEC.md).
	if zoneRange != nil {
		c.CapRange = zoneRange
	} else {
		c.CapRange = &joulie.PowerRange{MinWatts: entry.CapMinWatts, MaxWatts: entry.TDPWatts, DefaultWatts: entry.TDPWatts, Source: "catalog"}
	}

	if f.Frequency != nil {
		c.Frequency = &joulie.FrequencyLandmarks{Driver: f.Frequency.Driver, Governor: f.Frequency.Governor,
			MinKHz: f.Frequency.MinKHz, BaseKHz: f.Frequency.BaseKHz, MaxKHz: f.Frequency.MaxKHz}
	}

	// Controls in the enforcer's order of preference.
	var reasons []string
	writable := false
	for _, p := range f.Packages {
		writable = writable || p.Writable
	}
	switch {
	case writable:
		c.Control.Available = append(c.Control.Available, f.PackageBackend)
	case len(f.Packages) > 0:
		reasons = append(reasons, fmt.Sprintf("%s package limits are read-only", f.PackageBackend))
	default:
		reasons = append(reasons, "no RAPL package zones")
	}
	switch {
	case f.Frequency != nil && f.Frequency.Writable:
		c.Control.Available = append(c.Control.Available, joulie.BackendDVFS)
	case f.Frequency != nil:
		reasons = append(reasons, "cpufreq scaling_max_freq is read-only")
	default:
		reasons = append(reasons, "no cpufreq")
	}
	c.Control.Backend = joulie.BackendNone
	if len(c.Control.Available) > 0 {
		c.Control.Backend = c.Control.Available[0]
	}
	if c.Control.Backend != f.PackageBackend || c.Control.Backend == joulie.BackendNone {
		c.Control.Reason = strings.Join(reasons, "; ")
	}
	if c.Control.Backend == joulie.BackendNone {
		warnings = append(warnings, "CPU power cannot be capped: "+c.Control.Reason)
	}
	if c.Control.Backend == joulie.BackendDVFS && !f.CPUEnergy {
		warnings = append(warnings, "DVFS fallback has no CPU power reading to steer by")
	}

	c.Telemetry.Source = joulie.TelemetryNone
	if f.CPUEnergy {
		c.Telemetry.Source = joulie.TelemetryRAPL
	} else {
		c.Telemetry.Reason = "no readable RAPL energy counter"
	}
	return c, warnings
}

func buildGPU(f Facts, cat *catalog.Catalog, warnings []string) (*joulie.GPUHardware, []string) {
	if f.GPUError != nil {
		warnings = append(warnings, "GPU discovery: "+f.GPUError.Error())
	}
	if len(f.GPUs) == 0 {
		return nil, warnings
	}
	g := &joulie.GPUHardware{
		Vendor: gpuVendor(f.GPUBackend, f.GPUs[0].Name),
		Model:  f.GPUs[0].Name,
		Count:  int32(len(f.GPUs)),
	}
	entry, ex := cat.ResolveGPU(g.Model)
	g.CatalogModel, g.Exactness = entry.ID, joulie.Exactness(ex)
	if ex != catalog.ExactnessExact {
		warnings = append(warnings, fmt.Sprintf("GPU model %q is not in the catalog; using %s (%s)", g.Model, entry.ID, ex))
	}
	hasPower := true
	for _, d := range f.GPUs {
		dev := joulie.GPUDevice{Index: int32(d.Index), UUID: d.UUID, Name: d.Name, PCIBusID: d.PCIBusID}
		if d.Name != g.Model {
			warnings = append(warnings, fmt.Sprintf("GPU %d is a %q, unlike GPU %d (%q); the node's figures use the first", d.Index, d.Name, f.GPUs[0].Index, g.Model))
		}
		if d.MaxWatts > 0 {
			dev.CapRange = &joulie.PowerRange{MinWatts: d.MinWatts, MaxWatts: d.MaxWatts, DefaultWatts: d.DefaultWatts, Source: string(f.GPUBackend)}
			g.CapRange = narrowest(g.CapRange, dev.CapRange)
		}
		if d.CapWatts > 0 {
			dev.CurrentCapWatts = ptr.To(d.CapWatts)
		}
		hasPower = hasPower && d.HasPower
		g.Devices = append(g.Devices, dev)
	}
	if g.CapRange == nil {
		g.CapRange = &joulie.PowerRange{MinWatts: entry.CapMinWatts, MaxWatts: entry.CapMaxWatts, DefaultWatts: entry.TDPWatts, Source: "catalog"}
	}
	reachable := f.GPUBackend != "" && f.GPUBackend != joulie.BackendNone
	g.Control = joulie.ControlCapability{Backend: joulie.BackendNone}
	if reachable {
		g.Control = joulie.ControlCapability{Backend: f.GPUBackend, Available: []joulie.ControlBackend{f.GPUBackend}}
	}
	if why, n := blockedGPUs(f.GPUs); n == len(f.GPUs) {
		g.Control = joulie.ControlCapability{Backend: joulie.BackendNone, Reason: why}
		warnings = append(warnings, "GPU power cannot be capped: "+why)
	} else if n > 0 {
		g.Control.Reason = why
		warnings = append(warnings, fmt.Sprintf("%d of %d GPUs cannot be capped: %s", n, len(f.GPUs), why))
	}
	switch {
	case !reachable:
		g.Telemetry.Source, g.Telemetry.Reason = joulie.TelemetryNone, "no GPU backend reaches the GPUs"
	case !hasPower:
		g.Telemetry.Source, g.Telemetry.Reason = joulie.TelemetryNone, "the driver reports no power draw for some GPUs"
	default:
		g.Telemetry.Source = joulie.TelemetrySource(f.GPUBackend)
	}
	return g, warnings
}

// blockedGPUs says why GPUs cannot be capped and how many cannot. A
// reason shared by every GPU is said once, without device numbers (eight
// GPUs without a driver are one problem); otherwise each reason names its
// GPUs.
func blockedGPUs(gpus []backend.GPU) (string, int) {
	var reasons []string
	ids := map[string][]string{}
	n := 0
	for _, d := range gpus {
		if d.CapBlocked == "" {
			continue
		}
		n++
		if _, seen := ids[d.CapBlocked]; !seen {
			reasons = append(reasons, d.CapBlocked)
		}
		ids[d.CapBlocked] = append(ids[d.CapBlocked], strconv.Itoa(d.Index))
	}
	if n == len(gpus) && len(reasons) == 1 {
		return reasons[0], n
	}
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		label := "GPU "
		if len(ids[r]) > 1 {
			label = "GPUs "
		}
		parts[i] = label + strings.Join(ids[r], ", ") + ": " + r
	}
	return strings.Join(parts, "; "), n
}

func gpuVendor(backend joulie.ControlBackend, name string) string {
	switch {
	case backend == joulie.BackendNVML:
		return "nvidia"
	case backend == joulie.BackendAMDSMI || backend == joulie.BackendHwmon:
		return "amd"
	case strings.Contains(strings.ToLower(name), "nvidia"):
		return "nvidia"
	case strings.Contains(strings.ToLower(name), "amd"):
		return "amd"
	}
	return ""
}

// narrowest intersects two ranges: what every device accepts.
func narrowest(acc, r *joulie.PowerRange) *joulie.PowerRange {
	if acc == nil {
		c := *r
		return &c
	}
	out := *acc
	out.MinWatts = math.Max(acc.MinWatts, r.MinWatts)
	out.MaxWatts = math.Min(acc.MaxWatts, r.MaxWatts)
	if r.DefaultWatts != acc.DefaultWatts {
		out.DefaultWatts = math.Min(acc.DefaultWatts, r.DefaultWatts)
	}
	return &out
}

// quality grades the discovery: minimal when the CPU itself is unknown,
// partial when anything was missing, complete otherwise.
func quality(f Facts, warnings []string) joulie.DiscoveryQuality {
	switch {
	case f.CPU.Model == "" || f.CPU.Sockets == 0:
		return joulie.DiscoveryMinimal
	case len(warnings) > 0:
		return joulie.DiscoveryPartial
	}
	return joulie.DiscoveryComplete
}
