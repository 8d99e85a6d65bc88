// Package demoreport is what joulie-demo measured and how it shows it: the
// data of report.json, the recorder that builds it from the fleet's
// snapshots while the demo runs, report.html with its plots (made with
// gonum.org/v1/plot, embedded as SVG data: URIs, so the page opens
// offline), and the checks the demo's own test asserts.
//
// Nothing here starts a process or talks to a cluster: the recorder is fed
// observations, the renderer writes files.
package demoreport

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Version is report.json's format; a change of its fields changes it.
const Version = "joulie.io/demo-report/v3"

// Files in the report directory.
const (
	FileJSON = "report.json"
	FileHTML = "report.html"
)

// Report is everything one joulie-demo invocation measured: one run, or
// two with --compare (the same workload with Joulie and without).
type Report struct {
	Version string    `json:"version"`
	Started time.Time `json:"started"`
	// Cluster is "embedded" or the API server of --kubeconfig.
	Cluster  string    `json:"cluster"`
	Workload Workload  `json:"workload"`
	Settings []Setting `json:"settings"`
	Runs     []Run     `json:"runs"`
	// KubectlJoulieStatus is what `kubectl joulie status` printed against
	// the cluster at the end of the Joulie run; empty when the plugin was
	// not there to run.
	KubectlJoulieStatus string `json:"kubectlJoulieStatus,omitempty"`
	// Comparison sets the run with Joulie against the run without it,
	// when both ran (Compare).
	Comparison *Comparison `json:"comparison,omitempty"`
}

// Workload says which job list the runs replayed.
type Workload struct {
	Seed int64 `json:"seed"`
	Jobs int   `json:"jobs"`
	// Hash is workload.Hash of the job list: runs with the same hash ran
	// the same work.
	Hash string `json:"hash"`
	// Arrivals is how long after a run's start the last pod is created.
	ArrivalsSeconds float64 `json:"arrivalsSeconds"`
}

// Setting is one value the demo chose and shows on screen, such as a
// controller's interval shortened for the demo.
type Setting struct {
	Component string `json:"component"`
	Name      string `json:"name"`
	Value     string `json:"value"`
}

// Run is one pass of the workload over the fleet.
type Run struct {
	// Name is RunJoulie or RunBaseline.
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	// Samples are the cluster's totals at every observation, in order.
	Samples []Sample `json:"samples"`
	Nodes   []Node   `json:"nodes"`
	Pods    []Pod    `json:"pods"`
	Summary Summary  `json:"summary"`
}

// Run names.
const (
	RunJoulie   = "joulie"
	RunBaseline = "without-joulie"
)

// Sample is the cluster at one observation.
type Sample struct {
	// T is seconds since the run's start.
	T float64 `json:"t"`
	// PowerW is the fleet's power now; EnergyJ the energy it has
	// integrated since it started (per physics step).
	PowerW  float64 `json:"powerW"`
	EnergyJ float64 `json:"energyJ"`
	// CapsSavedJ and ParkingSavedJ are the fleet's counters, since it
	// started, of the energy the caps and the switched-off hosts kept
	// from being drawn.
	CapsSavedJ    float64 `json:"capsSavedJ"`
	ParkingSavedJ float64 `json:"parkingSavedJ"`
	Pending       int     `json:"pending"`
	Running       int     `json:"running"`
	Done          int     `json:"done"`
	// PerfOnEco counts performance pods running on nodes whose profile
	// is eco and that are not draining.
	PerfOnEco int `json:"perfOnEco"`
	// States counts the nodes in each power state (States: awake,
	// parking, parked, waking, booting, wake-failed); absent ones are 0.
	States map[string]int `json:"states,omitempty"`
}

// Power states of a node as the report shows them: the controller's
// (NodePowerProfile spec.powerState), with booting for a host the fleet
// is switching on (boot progress in the live view).
const (
	StateAwake      = "awake"
	StateParking    = "parking"
	StateParked     = "parked"
	StateWaking     = "waking"
	StateBooting    = "booting"
	StateWakeFailed = "wake-failed"
)

// States are the power states in the order the report lists them.
var States = []string{StateAwake, StateParking, StateParked, StateWaking, StateBooting, StateWakeFailed}

// Node is one simulated host over a run.
type Node struct {
	Name   string `json:"name"`
	Family string `json:"family"`
	// Path is how its caps reach it: "pool" (the pool-mode agent and the
	// HTTP backend) or "daemon" (its own agent on sysfs and NVML).
	Path string `json:"path"`
	// Timeline holds the node's state at the first observation and at
	// every observation where profile, draining, an applied cap or the
	// power state changed.
	Timeline []NodeChange `json:"timeline"`
	// EcoCapped says an observation saw the node eco with a CPU or GPU cap
	// below 100% applied by its agent.
	EcoCapped bool    `json:"ecoCapped"`
	EnergyJ   float64 `json:"energyJ"`
	PerfPods  int     `json:"perfPods"`
	StdPods   int     `json:"stdPods"`
}

// NodeChange is a node's state from time T on.
type NodeChange struct {
	T         float64 `json:"t"`
	Profile   string  `json:"profile"`
	Draining  bool    `json:"draining"`
	CPUCapPct float64 `json:"cpuCapPct"`
	GPUCapPct float64 `json:"gpuCapPct"`
	// PowerState is one of States.
	PowerState string `json:"powerState"`
	// WokenBy, on a change to booting, is what switched the node on:
	// WokenByBMC or WokenByLAN.
	WokenBy string `json:"wokenBy,omitempty"`
}

// What switched a node on, as the fleet says.
const (
	WokenByBMC = "bmc"
	WokenByLAN = "wake-on-lan"
)

// Pod is one workload pod. Times are seconds since the run's start; a
// pod that did not start or finish has -1 there.
type Pod struct {
	Name      string `json:"name"`
	Class     string `json:"class"`
	Boundness string `json:"boundness"`
	GPUs      int    `json:"gpus"`
	Node      string `json:"node"`
	// ProfileAtStart is the node's joulie.io/power-profile label when the
	// pod started running: performance, eco, draining (labelled eco and
	// draining: the drain guard keeps the node's performance caps while
	// the performance pods placed before finish) or empty before the
	// controller planned the node.
	ProfileAtStart string  `json:"profileAtStart"`
	Created        float64 `json:"created"`
	Started        float64 `json:"started"`
	Finished       float64 `json:"finished"`
	// WorkSeconds is the pod's runtime at full speed.
	WorkSeconds float64 `json:"workSeconds"`
	Phase       string  `json:"phase"`
}

// startedOnEco says the pod started on a node under its eco caps: a
// performance pod there is a promise broken. A node that began draining
// after the scheduler placed a pod there, before the kubelet started it,
// is no eco node: it keeps its performance caps (policy.GuardDrain).
func (p Pod) startedOnEco() bool { return p.ProfileAtStart == ProfileEco }

// Ran is how long the pod ran, or -1.
func (p Pod) Ran() float64 {
	if p.Started < 0 || p.Finished < 0 {
		return -1
	}
	return p.Finished - p.Started
}

// Summary is a run's figures.
type Summary struct {
	DurationSeconds float64 `json:"durationSeconds"`
	// EnergyJ is the fleet's own integral from the first sample to the
	// last; IntegralJ is the left Riemann sum of the sampled power over
	// the same span. They agree to within the power's change over one
	// physics step per sample (Check).
	EnergyJ   float64 `json:"energyJ"`
	IntegralJ float64 `json:"integralJ"`
	// CapsSavedJ and ParkingSavedJ are what the caps and the parked
	// hosts kept from being drawn over the same span.
	CapsSavedJ    float64 `json:"capsSavedJ"`
	ParkingSavedJ float64 `json:"parkingSavedJ"`
	MeanPowerW    float64 `json:"meanPowerW"`
	PeakPowerW    float64 `json:"peakPowerW"`
	Pods          int     `json:"pods"`
	Done          int     `json:"done"`
	// PerfOnEcoMax is the most performance pods any sample saw running
	// on eco nodes; PerfStartedOnEco the performance pods that started
	// on an eco node, PerfStartedDraining those that started on a
	// draining one (on its performance caps).
	PerfOnEcoMax        int            `json:"perfOnEcoMax"`
	PerfStartedOnEco    int            `json:"perfStartedOnEco"`
	PerfStartedDraining int            `json:"perfStartedDraining"`
	EcoCappedNodes      map[string]int `json:"ecoCappedNodes"` // by path
	Classes             []ClassSummary `json:"classes"`
	// Parks counts the nodes' changes into parked, Wakes their boots;
	// ParkedNodeSeconds is the time nodes spent parked, summed.
	Parks             int     `json:"parks"`
	Wakes             int     `json:"wakes"`
	WakesByBMC        int     `json:"wakesByBMC"`
	ParkedNodeSeconds float64 `json:"parkedNodeSeconds"`
}

// ClassSummary is how long the pods of one workload class took.
type ClassSummary struct {
	Class string `json:"class"`
	Pods  int    `json:"pods"`
	Done  int    `json:"done"`
	// Wait is from creation to start, Ran from start to end; Stretch is
	// Ran over the pod's work (1 at full speed).
	MeanWaitSeconds float64 `json:"meanWaitSeconds"`
	P95WaitSeconds  float64 `json:"p95WaitSeconds"`
	MeanRanSeconds  float64 `json:"meanRanSeconds"`
	P95RanSeconds   float64 `json:"p95RanSeconds"`
	MeanStretch     float64 `json:"meanStretch"`
	// WaitedForBoot counts the pods that started on a node whose boot
	// began while they waited.
	WaitedForBoot int `json:"waitedForBoot"`
}

// Write writes report.json and report.html into dir, creating it.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create report directory: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", FileJSON, err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileJSON), append(data, '\n'), 0o644); err != nil {
		return err
	}
	html, err := r.HTML()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, FileHTML), html, 0o644)
}

// Read reads the report.json of dir.
func Read(dir string) (*Report, error) {
	data, err := os.ReadFile(filepath.Join(dir, FileJSON))
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode %s: %w", filepath.Join(dir, FileJSON), err)
	}
	if r.Version != Version {
		return nil, fmt.Errorf("%s: version %q, want %q", filepath.Join(dir, FileJSON), r.Version, Version)
	}
	return &r, nil
}
