package catalog

import (
	_ "embed"
	"slices"
	"sync"
)

// Exactness says how closely a resolved entry matches the raw model string.
type Exactness string

const (
	// ExactnessExact: the normalized string equals the normalized name, an
	// alias or the ID of the entry.
	ExactnessExact Exactness = "exact"
	// ExactnessProxy: the string names a part of a known family that the
	// catalog does not list; the entry is that family's nearest member.
	ExactnessProxy Exactness = "proxy"
	// ExactnessGeneric: nothing more specific matched; the entry is the
	// vendor's generic entry, or the class-wide one. An empty string, or
	// one that holds nothing once normalized ("CPU @ 2.00GHz"), gets the
	// class-wide entry: callers that must tell "unknown model" apart check
	// the raw string themselves.
	ExactnessGeneric Exactness = "generic"
)

// CPU describes one CPU package (socket) model. Figures are per package.
type CPU struct {
	// ID is the stable, label-safe identifier, such as "amd-epyc-9654".
	ID string `json:"id"`
	// Vendor is "AMD" or "Intel" (or "x86" for the class-wide generic).
	Vendor string `json:"vendor"`
	// Name is the marketing name, such as "AMD EPYC 9654".
	Name string `json:"name"`
	// Family is the ID of the family (generation) the model belongs to,
	// such as "amd-epyc-9004"; empty for generic entries.
	Family string `json:"family,omitempty"`
	// Generic marks the conservative stand-ins used when nothing else
	// matches.
	Generic bool `json:"generic,omitempty"`
	// Aliases are other spellings, mostly the exact strings the kernel
	// shows. Shared with the catalog: read only.
	Aliases []string `json:"aliases,omitempty"`
	// Cores and Threads per package.
	Cores   int `json:"cores"`
	Threads int `json:"threads"`
	// BaseMHz is the all-core base frequency, BoostMHz the maximum boost.
	BaseMHz  int `json:"baseMHz"`
	BoostMHz int `json:"boostMHz"`
	// TDPWatts is the default thermal design power of one package.
	TDPWatts float64 `json:"tdpWatts"`
	// CapMinWatts and CapMaxWatts bound the package power limit: the
	// vendor's configurable TDP range where published, else the catalog's
	// documented floor (half the TDP) up to the TDP.
	CapMinWatts float64 `json:"capMinWatts"`
	CapMaxWatts float64 `json:"capMaxWatts"`
	// Density is Cores × BaseMHz relative to the class's reference part
	// (AMD EPYC 9654 = 1.0), rounded to three decimals.
	Density float64 `json:"density"`
	// IdleWatts is the estimated draw of one idle package: the class's
	// idleFractionOfTdp × TDPWatts, rounded to 0.1 W. It is 0 (unknown)
	// for generic entries, whose figures are stand-ins too rough to model
	// a node's draw from, and when the catalog sets no fraction.
	IdleWatts float64 `json:"idleWatts,omitempty"`
	// Source names where the figures come from.
	Source string `json:"source"`
}

// GPU describes one GPU (accelerator) model. Figures are per device as the
// vendor specifies it.
type GPU struct {
	// ID is the stable, label-safe identifier, such as "nvidia-h100-sxm".
	ID string `json:"id"`
	// Vendor is "NVIDIA" or "AMD" (or "any" for the class-wide generic).
	Vendor string `json:"vendor"`
	// Name is the marketing name, such as "NVIDIA H100 SXM".
	Name string `json:"name"`
	// Family is the ID of the family the model belongs to, such as
	// "nvidia-h100"; empty for generic entries.
	Family string `json:"family,omitempty"`
	// Generic marks the conservative stand-ins used when nothing else
	// matches.
	Generic bool `json:"generic,omitempty"`
	// Aliases are other spellings, mostly the exact names NVML or amd-smi
	// report. Shared with the catalog: read only.
	Aliases []string `json:"aliases,omitempty"`
	// MemoryGiB is the vendor's nominal memory size.
	MemoryGiB int `json:"memoryGiB"`
	// TDPWatts is the default maximum board power.
	TDPWatts float64 `json:"tdpWatts"`
	// CapMinWatts and CapMaxWatts bound the power limit: the driver's
	// range where known, else the catalog's documented floor (half the
	// TDP) up to the TDP.
	CapMinWatts float64 `json:"capMinWatts"`
	CapMaxWatts float64 `json:"capMaxWatts"`
	// FP16TFLOPS is the dense (no sparsity) FP16/BF16 tensor or matrix
	// throughput in TFLOPS.
	FP16TFLOPS float64 `json:"fp16TFLOPS"`
	// Density is FP16TFLOPS relative to the class's reference part
	// (NVIDIA H100 SXM = 1.0), rounded to three decimals.
	Density float64 `json:"density"`
	// IdleWatts is the estimated draw of one idle device, as for CPU.
	IdleWatts float64 `json:"idleWatts,omitempty"`
	// Source names where the figures come from.
	Source string `json:"source"`
}

// Catalog is a validated, indexed hardware catalog. It is immutable and
// safe for concurrent use.
type Catalog struct {
	cpus []CPU
	gpus []GPU
	cpu  class
	gpu  class
}

//go:embed catalog.yaml
var embedded []byte

var parseDefault = sync.OnceValue(func() *Catalog {
	c, err := Parse(embedded)
	if err != nil {
		// The file is compiled in and covered by the tests, so this is a
		// build defect, not a runtime condition to handle.
		panic("catalog: embedded catalog.yaml is invalid: " + err.Error())
	}
	return c
})

// Default returns the catalog embedded in the binary, parsed on first use.
func Default() *Catalog { return parseDefault() }

// CPUs returns every CPU entry: the models in catalog order, then the
// generic entries.
func (c *Catalog) CPUs() []CPU { return slices.Clone(c.cpus) }

// GPUs returns every GPU entry: the models in catalog order, then the
// generic entries.
func (c *Catalog) GPUs() []GPU { return slices.Clone(c.gpus) }

// CPUByID returns the CPU entry with the given ID.
func (c *Catalog) CPUByID(id string) (CPU, bool) {
	if i, ok := c.cpu.byID[id]; ok {
		return c.cpus[i], true
	}
	return CPU{}, false
}

// GPUByID returns the GPU entry with the given ID.
func (c *Catalog) GPUByID(id string) (GPU, bool) {
	if i, ok := c.gpu.byID[id]; ok {
		return c.gpus[i], true
	}
	return GPU{}, false
}

// ResolveCPU finds the entry for a raw CPU model string: a /proc/cpuinfo
// "model name" or a label-safe joulie.io/hw.cpu-model value. It always
// returns an entry; the Exactness says how far to trust it.
func (c *Catalog) ResolveCPU(raw string) (CPU, Exactness) {
	var text, key [bufLen]byte
	w := normalize(raw, text[:0], key[:0])
	i, ex := c.cpu.resolve(&w)
	return c.cpus[i], ex
}

// ResolveGPU finds the entry for a raw GPU model string: an NVML device
// name, an amd-smi product name or a label-safe joulie.io/hw.gpu-model
// value. It always returns an entry; the Exactness says how far to trust
// it.
func (c *Catalog) ResolveGPU(raw string) (GPU, Exactness) {
	var text, key [bufLen]byte
	w := normalize(raw, text[:0], key[:0])
	i, ex := c.gpu.resolve(&w)
	return c.gpus[i], ex
}
