package httpbackend

import (
	"slices"
	"time"

	"joulie.io/joulie/agentd/internal/backend"
)

// APIVersion names this version of the contract. It is carried in every
// JSON body, both ways, and in the VersionHeader of every request.
const APIVersion = "joulie.io/http-backend/v1"

// VersionHeader is the request header that carries APIVersion, so that a
// simulator can pick a telemetry layout for a GET, which has no body.
const VersionHeader = "Joulie-Api-Version"

// MaxBodyBytes bounds every body of the contract, request or response.
const MaxBodyBytes = 1 << 20

// Limits on telemetry, so that a broken simulator cannot make the agent
// hold absurd values or publish them in NodeHardware.
const (
	// MaxWatts bounds any power value (per package, per GPU, per node).
	MaxWatts = 1e6
	// MaxPackages bounds len(cpu.packagePowerWatts).
	MaxPackages = 64
	// MaxGPUs bounds len(gpus) and a GPU's index.
	MaxGPUs = 256
	// MaxStringBytes bounds node names, UUIDs, product names, bus IDs
	// and messages.
	MaxStringBytes = 1024
)

// Action is a control the agent asks for.
type Action string

const (
	// ActionSetPackageCap sets the power limit of every CPU package to
	// ControlRequest.Watts (per package, like the host's RAPL backend).
	ActionSetPackageCap Action = "rapl.set_power_cap_watts"
	// ActionSetThrottle sets the DVFS throttle to ControlRequest.Pct
	// percent: 0 is full speed, 100 the deepest throttle.
	ActionSetThrottle Action = "dvfs.set_throttle_pct"
	// ActionSetGPUCap sets the power limit of GPU ControlRequest.GPU to
	// ControlRequest.Watts.
	ActionSetGPUCap Action = "gpu.set_power_cap_watts"
	// ActionPowerOff switches the simulated node off, as a park's
	// power-off through logind switches off a real host. It takes no
	// field; switching it on again is the simulator's business (its
	// Wake-on-LAN or BMC), as it is the hardware's on a real host.
	ActionPowerOff Action = "host.power_off"
)

// Result is the outcome of a control, with the meaning NodePowerProfile
// status gives it.
type Result string

const (
	// ResultApplied: the control is in force; the applied value is in
	// the response.
	ResultApplied Result = "applied"
	// ResultBlocked: the simulated node cannot enforce this control
	// (not modeled, read-only), as opposed to a failed attempt.
	ResultBlocked Result = "blocked"
	// ResultError: the attempt failed.
	ResultError Result = "error"
)

// ControlRequest is the body of POST <base>/control.
type ControlRequest struct {
	APIVersion string `json:"apiVersion"`
	Node       string `json:"node"`
	Action     Action `json:"action"`
	// Watts is the limit for ActionSetPackageCap (per package) and
	// ActionSetGPUCap (for the one device).
	Watts *float64 `json:"watts,omitempty"`
	// Pct is the throttle for ActionSetThrottle, 0..100.
	Pct *float64 `json:"pct,omitempty"`
	// GPU is the device index for ActionSetGPUCap.
	GPU *int `json:"gpu,omitempty"`
}

// ControlResponse is the body of every answer to a control, and of every
// non-2xx answer of either route.
type ControlResponse struct {
	APIVersion string `json:"apiVersion"`
	Result     Result `json:"result"`
	Message    string `json:"message,omitempty"`
	// AppliedWatts is the limit in force after a watts action, as the
	// simulated device reads it back; required with result applied.
	AppliedWatts *float64 `json:"appliedWatts,omitempty"`
	// AppliedPct is the throttle in force after ActionSetThrottle;
	// required with result applied.
	AppliedPct *float64 `json:"appliedPct,omitempty"`
}

// Telemetry is the body of GET <base>/telemetry: one node's readings and
// the facts the agent needs to clamp its writes.
type Telemetry struct {
	APIVersion string `json:"apiVersion"`
	// Node is the node the readings belong to; it must be the node asked
	// for.
	Node string `json:"node"`
	// Time is when the simulator took the readings.
	Time time.Time `json:"time"`
	// NodePowerWatts is the whole node's draw when the simulator models
	// more than CPU packages and GPUs (memory, fans, PSU losses).
	NodePowerWatts *float64 `json:"nodePowerWatts,omitempty"`
	// CPU is absent when the simulator does not model CPU power.
	CPU *CPUTelemetry `json:"cpu,omitempty"`
	// GPUs is sorted by Index; absent or empty for a node without GPUs.
	GPUs []GPUTelemetry `json:"gpus,omitempty"`
}

// CPUTelemetry is the CPU side of Telemetry. Watts are per package,
// matching packagePowerCapWatts in NodePowerProfile.
type CPUTelemetry struct {
	// PackagePowerWatts is the current draw of each package, in package
	// order; its length is the package count.
	PackagePowerWatts []float64 `json:"packagePowerWatts"`
	// CapWatts is the per-package limit in force (MaxWattsPerPackage when
	// uncapped).
	CapWatts float64 `json:"capWatts"`
	// MinWattsPerPackage and MaxWattsPerPackage bound the limit a
	// package accepts; the agent clamps to them before writing.
	MinWattsPerPackage float64 `json:"minWattsPerPackage"`
	MaxWattsPerPackage float64 `json:"maxWattsPerPackage"`
	// ThrottlePct is the DVFS throttle in force, 0..100.
	ThrottlePct float64 `json:"throttlePct"`
}

// HottestPackageWatts is the draw of the package nearest its limit. The
// cap is per package, so this is the reading a per-package control loop
// must hold under the cap.
func (c *CPUTelemetry) HottestPackageWatts() float64 {
	if c == nil || len(c.PackagePowerWatts) == 0 {
		return 0
	}
	return slices.Max(c.PackagePowerWatts)
}

// TotalWatts is the draw of all packages together.
func (c *CPUTelemetry) TotalWatts() float64 {
	if c == nil {
		return 0
	}
	var sum float64
	for _, w := range c.PackagePowerWatts {
		sum += w
	}
	return sum
}

// GPUTelemetry is one simulated accelerator.
type GPUTelemetry struct {
	// Index is the device index the control action takes.
	Index int `json:"index"`
	// UUID identifies the device; unique within the node.
	UUID     string `json:"uuid"`
	Name     string `json:"name,omitempty"`
	PCIBusID string `json:"pciBusId,omitempty"`
	// PowerWatts is the current draw.
	PowerWatts float64 `json:"powerWatts"`
	// EnergyJoules is a counter of energy since the simulated driver
	// loaded, when the simulator keeps one.
	EnergyJoules *float64 `json:"energyJoules,omitempty"`
	// CapWatts is the limit in force; MinWatts..MaxWatts is the range the
	// device accepts; DefaultWatts is its out-of-the-box limit.
	CapWatts     float64 `json:"capWatts"`
	MinWatts     float64 `json:"minWatts"`
	MaxWatts     float64 `json:"maxWatts"`
	DefaultWatts float64 `json:"defaultWatts"`
}

// MeasuredWatts is the node's draw: NodePowerWatts when the simulator
// reports it, else the sum of CPU packages and GPUs.
func (t *Telemetry) MeasuredWatts() float64 {
	if t.NodePowerWatts != nil {
		return *t.NodePowerWatts
	}
	sum := t.CPU.TotalWatts()
	for _, g := range t.GPUs {
		sum += g.PowerWatts
	}
	return sum
}

// PowerGPUs converts the GPUs to the shape the agent's GPU backends share.
func (t *Telemetry) PowerGPUs() []backend.GPU {
	out := make([]backend.GPU, 0, len(t.GPUs))
	for _, g := range t.GPUs {
		pg := backend.GPU{
			Index:        g.Index,
			UUID:         g.UUID,
			Name:         g.Name,
			PCIBusID:     g.PCIBusID,
			MinWatts:     g.MinWatts,
			MaxWatts:     g.MaxWatts,
			DefaultWatts: g.DefaultWatts,
			CapWatts:     g.CapWatts,
			PowerWatts:   g.PowerWatts,
			HasPower:     true,
		}
		if g.EnergyJoules != nil {
			pg.EnergyJoules, pg.HasEnergy = *g.EnergyJoules, true
		}
		out = append(out, pg)
	}
	return out
}

// gpu returns the device with the given index.
func (t *Telemetry) gpu(index int) (*GPUTelemetry, bool) {
	for i := range t.GPUs {
		if t.GPUs[i].Index == index {
			return &t.GPUs[i], true
		}
	}
	return nil, false
}

// Clone is a deep copy, so a caller may keep or change it freely.
func (t *Telemetry) Clone() *Telemetry {
	if t == nil {
		return nil
	}
	c := *t
	if t.NodePowerWatts != nil {
		w := *t.NodePowerWatts
		c.NodePowerWatts = &w
	}
	if t.CPU != nil {
		cpu := *t.CPU
		cpu.PackagePowerWatts = slices.Clone(t.CPU.PackagePowerWatts)
		c.CPU = &cpu
	}
	if t.GPUs != nil {
		c.GPUs = make([]GPUTelemetry, len(t.GPUs))
		for i, g := range t.GPUs {
			if g.EnergyJoules != nil {
				e := *g.EnergyJoules
				g.EnergyJoules = &e
			}
			c.GPUs[i] = g
		}
	}
	return &c
}
