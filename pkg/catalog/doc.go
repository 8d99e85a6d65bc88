// Package catalog is Joulie's hardware inventory: the CPU and GPU models it
// knows, with vendor figures (cores, clocks, TDP, power-cap range, memory,
// compute throughput), and the resolution of a raw model string to one of
// them.
//
// The agent uses it for what the hardware does not report (a CPU's TDP when
// RAPL gives no maximum, so that "percent of max" becomes watts); the
// controller to order nodes by compute density and to name a node's
// hardware family from its NodeHardware or, before that exists, from the
// joulie.io/hw.cpu-model and joulie.io/hw.gpu-model labels; the digital
// twin for per-socket CPU and per-GPU maximum watts.
//
// The catalog is catalog.yaml, embedded in the binary and parsed once by
// [Default]. [Parse] reads another file of the same shape; the header of
// catalog.yaml documents the fields, units and sources.
//
// # Resolution
//
// [Catalog.ResolveCPU] and [Catalog.ResolveGPU] take what the host or an
// admin reports: a /proc/cpuinfo "model name" ("AMD EPYC 9654 96-Core
// Processor", "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz"), an NVML
// device name ("NVIDIA H100 80GB HBM3"), an amd-smi product name ("AMD
// Instinct MI300X"), or a label value, which cannot hold spaces or '+'
// ("AMD-EPYC-9654", "NVIDIA-H100-80GB-HBM3", "Intel-Xeon-Platinum-8480plus").
//
// The string is first normalized into words:
//   - ASCII letters are folded to lower case; runs of letters, digits and
//     '.' are words; every other byte (space, '-', '_', '/', ...) separates
//     words; '+' is spelled "plus", so "8480+" and "8480plus" agree;
//   - "(R)" and "(TM)" are dropped, and so is everything from '@' on;
//   - the words "CPU" and "Processor", frequencies ("2.30GHz") and core
//     counts ("96-Core") are dropped.
//
// Only the first 256 bytes and the first 24 words are considered. The
// comparison key is the words in order, joined without separators, leaving
// out the vendor words "amd", "intel" and "nvidia"; so "AMD EPYC 9654
// 96-Core Processor", "AMD-EPYC-9654" and "epyc_9654" have the same key.
//
// Then, in order:
//
//  1. [ExactnessGeneric] with the class-wide generic entry when no word is
//     left (the string was empty or held only noise such as "CPU").
//  2. [ExactnessExact]: the key equals the key of a model's ID, name or one
//     of its aliases.
//  3. [ExactnessProxy]: a family recognises the string. Families are tried
//     in catalog order; one recognises a string when no word is in its
//     rejectAny list, some word is in its requireAny list (if it has one),
//     and some word matches one of its model patterns (such as "9##5*" for
//     EPYC 9005 parts). The first such word is the model word. Among the
//     family's models the result is the one with the model number (the
//     first run of digits in the model word) nearest to the string's; ties
//     go to the model sharing the most words with the string, then, when
//     the string states a memory size ("94GB"), to the nearest memory size,
//     then to the model listed first. So an unlisted "AMD EPYC 9645" stands
//     in as the EPYC 9655, and "NVIDIA H100 94GB" as the H100 NVL.
//  4. [ExactnessGeneric]: the first generic entry of the class whose
//     requireAny list holds a word of the string (generic AMD EPYC on
//     "epyc", generic NVIDIA GPU on "nvidia" or "tesla", ...), else the
//     class-wide generic entry, which has no requireAny list.
//
// Resolution is deterministic, never fails, and does not allocate: it works
// in fixed buffers on the caller's stack, and the exact case is a single
// map lookup.
//
// # Compute density
//
// Density is a relative throughput figure used to rank nodes. For a CPU it
// is cores × base clock, relative to the AMD EPYC 9654 (96 × 2.4 GHz = 1.0):
// sustained all-core throughput from datasheet figures alone, without
// per-clock differences between microarchitectures, so E-core parts and
// older generations come out somewhat flattered. For a GPU it is the dense
// FP16/BF16 tensor throughput relative to the NVIDIA H100 SXM (989.5 TFLOPS
// = 1.0). The CPU figure is per socket and the GPU figure per device; the
// two are separate scales (1.0 is one reference socket or one reference
// GPU), so a consumer that adds them makes a choice of weights.
//
// # Idle power
//
// IdleWatts is an estimate of what one idle package or device draws: the
// class's idleFractionOfTdp (0.18 for CPUs, 0.10 for GPUs in the embedded
// catalog, each from a public measurement of the class's reference part,
// cited in catalog.yaml) times its TDP. The controller adds it to the marginal
// power of a node's pods to model the draw of a node nothing measures.
// Generic entries have no idle figure: their figures are stand-ins, fine
// for a cap but too rough to pass for a node's draw.
//
// # Power-cap ranges
//
// CapMinWatts..CapMaxWatts is a fallback for when the hardware does not
// report its range. For AMD EPYC it is AMD's configurable TDP range; Intel
// publishes none, so it is half the TDP up to the TDP. For GPUs it is the
// driver's power-limit range where known (NVML's minimum for A100 and H100)
// and otherwise half the TDP up to the TDP. The TDP always lies in the
// range.
package catalog
