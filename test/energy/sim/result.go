package sim

import "time"

// JobResult is what happened to one job in one arm.
type JobResult struct {
	ID                  string
	Class               string // performance or standard
	Boundness           string
	GPUs                int
	CPUMilli            int64
	Work                time.Duration // full-speed runtime
	Arrival, Start, End time.Duration // from the simulation's start
	// BootWait is the job's wait for capacity, Start − Arrival, when it
	// waited for a boot by BootWaitRule; 0 when it did not.
	BootWait  time.Duration
	Node      string
	Profile   string // node's profile when the job started: performance, eco, draining or none
	Truncated bool
}

// Unplaceable is a job that fit no node, with the requests that did not.
type Unplaceable struct {
	ID                  string
	Class               string
	CPUMilli, MemoryMiB int64
	GPUs                int
}

// BootWaitRule is the one definition of a wait for a boot that every arm
// counts by, as the report states it. Where a node comes back from
// (cluster-autoscaler's scale-up, Joulie's parking, a wake for another
// pod) does not matter: only that the capacity the pod got came from a
// boot that ended while it waited. A boot already under way when the pod
// arrived counts, since the pod still waits for it.
const BootWaitRule = "a pod waited for a boot when it found no awake node that would take it on arrival (it queued) and it started on a node that became Ready after the pod was created; its wait for capacity is then its whole wait, start − arrival"

// Parts splits the cluster's IT power by where it goes. Their sum is the
// cluster's power.
type Parts struct {
	// IdleAwake is the idle draw of the awake nodes: what they would draw
	// with nothing running.
	IdleAwake float64
	// Dynamic is the awake nodes' draw above their idle draw.
	Dynamic float64
	// Booting is the draw of nodes booting or shutting down.
	Booting float64
	// Off is the draw of switched-off nodes (their BMCs).
	Off float64
}

// Total is the cluster's power.
func (p Parts) Total() float64 { return p.IdleAwake + p.Dynamic + p.Booting + p.Off }

func (p Parts) add(q Parts, scale float64) Parts {
	return Parts{p.IdleAwake + scale*q.IdleAwake, p.Dynamic + scale*q.Dynamic, p.Booting + scale*q.Booting, p.Off + scale*q.Off}
}

// Sample is a step of the cluster's IT power: Watts (and its Parts) hold
// from T until the next sample's T.
type Sample struct {
	T     time.Duration
	Watts float64
	Parts Parts
}

// Window is an interval of simulated time, [Start, End).
type Window struct {
	Start, End time.Duration
}

// Length is End − Start.
func (w Window) Length() time.Duration { return w.End - w.Start }

// Result is one arm's run over one job list.
type Result struct {
	Arm      Arm
	Seed     int64
	JobsHash string
	// Level is the load level the job list was generated for (the
	// expected allocated share of the cluster inside Window), 0 when not
	// known (a replayed trace).
	Level                     float64
	Nodes, CPUNodes, GPUNodes int
	// Jobs are the jobs that ran; Unplaceable the jobs of the list that
	// fit no node (they ask for more CPU, memory or GPUs than any node
	// has), which stayed pending through the run in every arm, as on a
	// real cluster, and did no work.
	Jobs        []JobResult
	Unplaceable []Unplaceable
	// Power is the cluster's power over the whole run, from 0 to the last
	// completion, one sample per change.
	Power []Sample

	// Window is the steady-state accounting window (Options.Window); the
	// fields below up to Alloc are measured inside it.
	Window Window
	// EnergyJ is the IT energy over Window, ∫ power dt; EnergyParts splits
	// it as Parts splits power (joules).
	EnergyJ     float64
	EnergyParts Parts
	// CoreHours and GPUHours are the work done inside Window at
	// full-speed-equivalent rates: a job progressing at rate r (1 at full
	// speed) for dt credits r × dt × its CPUs (its GPUs). A job running
	// across an edge of the window counts only the part done inside.
	CoreHours, GPUHours float64
	// AllocCPU and AllocGPU are the mean shares of the cluster's CPUs and
	// GPUs requested by running jobs inside Window.
	AllocCPU, AllocGPU float64

	// PerfOnEcoOrDraining counts performance pods placed on an eco or
	// draining node (must be 0).
	PerfOnEcoOrDraining int
	// PerfBootWaits counts performance pods that waited for a boot;
	// PerfBootWaitsInWindow those of them that arrived inside Window (the
	// others arrived in the warm-up, which starts with every node awake
	// and no arrival history, or in the tail).
	PerfBootWaits, PerfBootWaitsInWindow int
	// Boots and Shutdowns count node power-state changes over the run.
	Boots, Shutdowns int
	// Makespan is the latest completion less the first arrival.
	Makespan time.Duration
	// SeedMethod is the seed document's accounting of the same run.
	SeedMethod *SeedMethod
}

// SeedMethod is the seed document's accounting of a run: a fixed window
// from 0, the jobs that started on arrival (the seed's experiment dropped
// the others) and the energy over that window.
type SeedMethod struct {
	Window                              time.Duration
	EnergyJ                             float64
	Accepted, Dropped                   int
	AcceptedCoreHours, AcceptedGPUHours float64
}
