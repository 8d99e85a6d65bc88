package enforce

import (
	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/dvfs"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Result is one tick of a host: what enforcing the target did, and what
// the host measured while doing it. The agent's loop gets everything it
// reports (status, metrics, the local socket) from it, in one call, so a
// tick reads the hardware once.
type Result struct {
	// CPU and GPU are the outcomes of the target's CPU and GPU blocks.
	CPU, GPU joulie.ControlStatus
	// CPUMode is the CPU backend in force after the tick: none, rapl,
	// amdsmi, http or dvfs (metric joulie_backend_mode).
	CPUMode joulie.ControlBackend
	// Power is the power measured during the tick.
	Power backend.Reading
	// GPUs are the tick's devices with their readings (energy counters
	// included), for the per-pod energy ledger; nil when the host has no
	// GPU backend or could not list them. The slice is the tick's own.
	GPUs []backend.GPU
	// DVFS is the DVFS controller's last decision; nil on a host without
	// cpufreq control.
	DVFS *dvfs.Decision
}
