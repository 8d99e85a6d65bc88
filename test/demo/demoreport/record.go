package demoreport

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Profiles as the report and the live view name them. A draining node is
// still performance to the agent (uncapped); the controller has only
// stopped sending it new performance pods.
const (
	ProfilePerformance = "performance"
	ProfileEco         = "eco"
	ProfileDraining    = "draining"
)

// NodeState is one node at an observation: its profile as the controller
// set it, the caps as its agent applied them (100 = none) and what it
// draws and runs.
type NodeState struct {
	Name, Family, Path string
	Profile            string
	Draining           bool
	CPUCapPct          float64
	GPUCapPct          float64
	Watts              float64
	RunningPerf        int
	RunningStd         int
	// PowerState is the controller's (spec.powerState, "" for awake);
	// Host the machine's ("on", "off", "booting"), with BootPct done.
	PowerState, Host string
	BootPct          float64
	// WokenBy is what started the host's last boot: "bmc" or
	// "wake-on-lan".
	WokenBy string
}

// State is the node's power state as the report shows it (one of
// States): the controller's, except that a host switching on is booting
// whatever the controller last wrote (a wake in flight, or the
// comparison's switch-on without Joulie).
func (s NodeState) State() string {
	switch {
	case s.Host == "booting":
		return StateBooting
	case s.PowerState == "":
		return StateAwake
	}
	return s.PowerState
}

// Observation is the cluster at one moment.
type Observation struct {
	// Time is the moment the fleet's figures are for.
	Time            time.Time
	PowerW, EnergyJ float64
	// CapsSavedJ and ParkingSavedJ are the fleet's counters of what the
	// caps and the switched-off hosts kept from being drawn (the fleet's
	// Snapshot says how they are counted).
	CapsSavedJ, ParkingSavedJ float64
	Nodes                     []NodeState
	Pending                   int
	Running                   int
	Done                      int
}

// PerfOnEco counts the performance pods running on eco nodes. A
// draining node is labelled eco but keeps its performance caps (the
// controller's drain guard) while the performance pods placed before
// finish: those are not counted.
func (o Observation) PerfOnEco() int {
	n := 0
	for _, s := range o.Nodes {
		if s.Profile == ProfileEco && !s.Draining {
			n += s.RunningPerf
		}
	}
	return n
}

// Recorder builds a Run from successive observations. It is not safe for
// concurrent use.
type Recorder struct {
	run   Run
	nodes map[string]*Node
	last  map[string]NodeState
	prev  *Observation
}

// NewRecorder starts recording run name, whose times count from start.
func NewRecorder(name string, start time.Time) *Recorder {
	return &Recorder{
		run:   Run{Name: name, Start: start},
		nodes: map[string]*Node{},
		last:  map[string]NodeState{},
	}
}

func (r *Recorder) since(t time.Time) float64 { return t.Sub(r.run.Start).Seconds() }

// Observe records one observation; observations must come in time order.
func (r *Recorder) Observe(o Observation) {
	t := r.since(o.Time)
	states := map[string]int{}
	for _, s := range o.Nodes {
		states[s.State()]++
	}
	r.run.Samples = append(r.run.Samples, Sample{
		T: t, PowerW: o.PowerW, EnergyJ: o.EnergyJ, CapsSavedJ: o.CapsSavedJ, ParkingSavedJ: o.ParkingSavedJ,
		Pending: o.Pending, Running: o.Running, Done: o.Done, PerfOnEco: o.PerfOnEco(), States: states,
	})
	// A node's energy: its power held until the next observation, the
	// same left sum Summary.IntegralJ uses for the cluster.
	if r.prev != nil {
		dt := o.Time.Sub(r.prev.Time).Seconds()
		for _, s := range r.prev.Nodes {
			if n := r.nodes[s.Name]; n != nil {
				n.EnergyJ += s.Watts * dt
			}
		}
	}
	for _, s := range o.Nodes {
		n := r.nodes[s.Name]
		if n == nil {
			n = &Node{Name: s.Name, Family: s.Family, Path: s.Path}
			r.nodes[s.Name] = n
		}
		if s.Profile == ProfileEco && (s.CPUCapPct < 100 || s.GPUCapPct < 100) {
			n.EcoCapped = true
		}
		last, seen := r.last[s.Name]
		if !seen || last.Profile != s.Profile || last.Draining != s.Draining ||
			last.CPUCapPct != s.CPUCapPct || last.GPUCapPct != s.GPUCapPct || last.State() != s.State() {
			c := NodeChange{T: t, Profile: s.Profile, Draining: s.Draining,
				CPUCapPct: s.CPUCapPct, GPUCapPct: s.GPUCapPct, PowerState: s.State()}
			if c.PowerState == StateBooting {
				c.WokenBy = s.WokenBy
			}
			n.Timeline = append(n.Timeline, c)
		}
		r.last[s.Name] = s
	}
	r.prev = &o
}

// Finish ends the run with the pods' records and returns it summarized.
func (r *Recorder) Finish(pods []Pod) Run {
	run := r.run
	run.Pods = slices.Clone(pods)
	slices.SortFunc(run.Pods, func(a, b Pod) int {
		return cmp.Or(cmp.Compare(a.Created, b.Created), cmp.Compare(a.Name, b.Name))
	})
	for _, n := range r.nodes {
		for _, p := range run.Pods {
			if p.Node != n.Name || p.Started < 0 {
				continue
			}
			if p.Class == ClassPerformance {
				n.PerfPods++
			} else {
				n.StdPods++
			}
		}
		run.Nodes = append(run.Nodes, *n)
	}
	slices.SortFunc(run.Nodes, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	run.Summary = summarize(&run)
	return run
}

// Workload classes, the values of joulie.io/workload-class.
const (
	ClassPerformance = "performance"
	ClassStandard    = "standard"
)

func summarize(run *Run) Summary {
	s := Summary{EcoCappedNodes: map[string]int{}, Pods: len(run.Pods)}
	if n := len(run.Samples); n > 0 {
		first, last := run.Samples[0], run.Samples[n-1]
		s.DurationSeconds = last.T
		s.EnergyJ = last.EnergyJ - first.EnergyJ
		s.CapsSavedJ = last.CapsSavedJ - first.CapsSavedJ
		s.ParkingSavedJ = last.ParkingSavedJ - first.ParkingSavedJ
		s.IntegralJ = leftSum(run.Samples)
		if span := last.T - first.T; span > 0 {
			s.MeanPowerW = s.IntegralJ / span
		}
		for _, x := range run.Samples {
			s.PeakPowerW = max(s.PeakPowerW, x.PowerW)
			s.PerfOnEcoMax = max(s.PerfOnEcoMax, x.PerfOnEco)
		}
	}
	for _, n := range run.Nodes {
		if n.EcoCapped {
			s.EcoCappedNodes[n.Path]++
		}
		for k, c := range n.Timeline {
			prev := ""
			if k > 0 {
				prev = n.Timeline[k-1].PowerState
			}
			switch {
			case c.PowerState == StateParked && prev != StateParked:
				s.Parks++
			case c.PowerState == StateBooting && prev != StateBooting:
				s.Wakes++
				if c.WokenBy == WokenByBMC {
					s.WakesByBMC++
				}
			}
			if c.PowerState == StateParked {
				to := s.DurationSeconds
				if k+1 < len(n.Timeline) {
					to = n.Timeline[k+1].T
				}
				s.ParkedNodeSeconds += max(0, to-c.T)
			}
		}
	}
	for _, class := range []string{ClassPerformance, ClassStandard} {
		c := ClassSummary{Class: class}
		var wait, ran, stretch []float64
		for _, p := range run.Pods {
			if p.Class != class {
				continue
			}
			c.Pods++
			if p.Started >= 0 {
				wait = append(wait, p.Started-p.Created)
				if bootedFor(run.Nodes, p) {
					c.WaitedForBoot++
				}
				switch {
				case class != ClassPerformance:
				case p.startedOnEco():
					s.PerfStartedOnEco++
				case p.ProfileAtStart == ProfileDraining:
					s.PerfStartedDraining++
				}
			}
			if d := p.Ran(); d >= 0 {
				c.Done++
				ran = append(ran, d)
				if p.WorkSeconds > 0 {
					stretch = append(stretch, d/p.WorkSeconds)
				}
			}
		}
		c.MeanWaitSeconds, c.MeanRanSeconds, c.MeanStretch = mean(wait), mean(ran), mean(stretch)
		c.P95RanSeconds = percentile(ran, 0.95)
		c.P95WaitSeconds = percentile(wait, 0.95)
		s.Done += c.Done
		s.Classes = append(s.Classes, c)
	}
	return s
}

// bootedFor says pod p waited for a boot: the node it started on began
// booting after the pod was created and before it started.
func bootedFor(nodes []Node, p Pod) bool {
	for _, n := range nodes {
		if n.Name != p.Node {
			continue
		}
		for k, c := range n.Timeline {
			if c.PowerState == StateBooting && (k == 0 || n.Timeline[k-1].PowerState != StateBooting) &&
				c.T >= p.Created && c.T <= p.Started {
				return true
			}
		}
	}
	return false
}

// leftSum integrates the sampled power: each sample's power held until
// the next sample, as the fleet holds a step's power for the step.
func leftSum(samples []Sample) float64 {
	var e float64
	for i := 1; i < len(samples); i++ {
		e += samples[i-1].PowerW * (samples[i].T - samples[i-1].T)
	}
	return e
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// percentile is the nearest-rank percentile q of xs, 0 for none.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
