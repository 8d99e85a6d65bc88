package podenergy

import (
	"cmp"
	"slices"
	"time"
)

// Key names a pod.
type Key struct {
	Namespace, Name string
}

func (k Key) String() string { return k.Namespace + "/" + k.Name }

// Pod is a pod on the node at a tick. UID is empty when the caller does
// not know it (no API access); a pod whose UID changes under the same name
// is a new pod.
type Pod struct {
	Key
	UID string
}

// Claim is a container's hold on a GPU at a tick. Replicas is how many of
// the device's time-slicing replicas it holds (1 for a whole GPU).
type Claim struct {
	Pod       Key
	Container string
	Replicas  int
}

// GPU is one device's readings at a tick.
type GPU struct {
	// ID is the device's identity as the device plugin reports it (the
	// NVIDIA UUID).
	ID string
	// EnergyJoules is the device's cumulative energy counter.
	EnergyJoules float64
	HasEnergy    bool
	PowerWatts   float64
	HasPower     bool
	// Shares, when above 0, splits the device into that many equal parts
	// (its MIG devices) of which a claim's Replicas are its own; the
	// parts nobody holds keep their energy unattributed. Without it the
	// holders share the whole device.
	Shares int
}

// Tick is what the agent read in one tick.
type Tick struct {
	Now  time.Time
	GPUs []GPU
	// Holders lists, by GPU ID, the containers holding the device now.
	Holders map[string][]Claim
	// Pods are the pods on the node now, with or without GPUs. A pod
	// named only in Holders is on the node too.
	Pods []Pod
	// CPUJoules is the CPU packages' energy since the previous tick.
	CPUJoules float64
	HasCPU    bool
	// HostCPU is the host's cumulative busy CPU time (all CPUs, every
	// mode but idle and iowait), PodCPU each pod's cumulative CPU time
	// from its cgroup.
	HostCPU    time.Duration
	HasHostCPU bool
	PodCPU     map[Key]time.Duration
}

// ContainerEnergy is one container's GPU energy.
type ContainerEnergy struct {
	Name string
	// GPUJoules is the GPU energy attributed so far, GPUWatts the mean
	// power of the last interval.
	GPUJoules, GPUWatts float64
	// GPUs are the devices it has held.
	GPUs []string
}

// PodEnergy is one pod's energy so far.
type PodEnergy struct {
	Pod
	// Containers holding GPUs, by name.
	Containers []ContainerEnergy
	// GPUJoules and GPUWatts sum the containers'. GPUEstimated says part
	// of it was integrated from power readings (a device without an energy
	// counter, or a counter reset) rather than read from the counter.
	GPUJoules, GPUWatts float64
	GPUEstimated        bool
	// CPUJoules and CPUWatts are the estimate of the CPU packages' energy
	// by the pod's share of CPU time; HasCPU is false until an interval
	// could be estimated.
	CPUJoules, CPUWatts float64
	HasCPU              bool
	// Since is the first tick that listed the pod, Until the last one.
	Since, Until time.Time
	// Ended is set once a tick no longer lists the pod.
	Ended bool
}

// GPUs lists the devices the pod's containers have held, sorted.
func (p PodEnergy) GPUs() []string {
	var ids []string
	for _, c := range p.Containers {
		ids = append(ids, c.GPUs...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Ledger accumulates per-pod energy over ticks. It is not safe for
// concurrent use; the agent feeds it from its tick loop and copies out.
type Ledger struct {
	retention time.Duration
	last      time.Time
	started   bool

	gpus    map[string]gpuState
	pods    map[Key]*podState
	hostCPU time.Duration
	hasHost bool

	ended        []PodEnergy
	unattributed map[string]float64
	resets       int
}

type gpuState struct {
	GPU
	holders []Claim
}

type podState struct {
	PodEnergy
	containers map[string]*ContainerEnergy
	cpuTime    time.Duration
	hasCPUTime bool
}

// NewLedger keeps an ended pod's totals for retention after it ended.
func NewLedger(retention time.Duration) *Ledger {
	return &Ledger{retention: retention, gpus: map[string]gpuState{}, pods: map[Key]*podState{}, unattributed: map[string]float64{}}
}

// Observe accounts one tick. Ticks must come in time order; one at or
// before the previous is ignored.
func (l *Ledger) Observe(t Tick) {
	if l.started && !t.Now.After(l.last) {
		return
	}
	dt := t.Now.Sub(l.last).Seconds()
	first := !l.started
	l.started, l.last = true, t.Now

	present := l.present(t)
	for _, p := range l.pods {
		p.GPUWatts, p.CPUWatts = 0, 0
		for _, c := range p.containers {
			c.GPUWatts = 0
		}
	}
	seen := make(map[string]bool, len(t.GPUs))
	for _, g := range t.GPUs {
		seen[g.ID] = true
		holders := t.Holders[g.ID]
		if prev, ok := l.gpus[g.ID]; ok && !first {
			l.attributeGPU(prev, g, holders, dt)
		}
		l.gpus[g.ID] = gpuState{GPU: g, holders: holders}
	}
	// A device missing from a tick (lost, or the backend failed) starts
	// afresh when it is back: no interval spans the gap.
	for id := range l.gpus {
		if !seen[id] {
			delete(l.gpus, id)
		}
	}
	l.attributeCPU(t, dt, first)
	l.endAbsent(present, t.Now)
	for k, p := range l.pods {
		if p.Ended && t.Now.Sub(p.Until) > l.retention {
			delete(l.pods, k)
		}
	}
	for _, p := range l.pods {
		p.sum()
	}
}

// present registers the tick's pods and returns their keys. A pod seen
// again after it ended, or under a new UID, starts a new record.
func (l *Ledger) present(t Tick) map[Key]bool {
	keys := map[Key]bool{}
	see := func(p Pod) {
		keys[p.Key] = true
		s, ok := l.pods[p.Key]
		if ok && !s.Ended && (p.UID == "" || s.UID == "" || s.UID == p.UID) {
			if s.UID == "" {
				s.UID = p.UID
			}
			s.Until = t.Now
			return
		}
		if ok && !s.Ended {
			l.end(s, t.Now)
		}
		l.pods[p.Key] = &podState{PodEnergy: PodEnergy{Pod: p, Since: t.Now, Until: t.Now}, containers: map[string]*ContainerEnergy{}}
	}
	for _, p := range t.Pods {
		see(p)
	}
	for _, claims := range t.Holders {
		for _, c := range claims {
			if !keys[c.Pod] {
				see(Pod{Key: c.Pod})
			}
		}
	}
	return keys
}

// attributeGPU shares the device's energy since prev between the holders.
func (l *Ledger) attributeGPU(prev gpuState, now GPU, holders []Claim, dt float64) {
	var joules float64
	estimated := false
	switch {
	case prev.HasEnergy && now.HasEnergy && now.EnergyJoules >= prev.EnergyJoules:
		joules = now.EnergyJoules - prev.EnergyJoules
	case prev.HasEnergy && now.HasEnergy:
		// The counter went backwards: the driver was reloaded. What it
		// counted before the reload is lost; the power reading stands in.
		l.resets++
		if now.HasPower {
			joules, estimated = now.PowerWatts*dt, true
		}
	case prev.HasPower && now.HasPower:
		joules, estimated = (prev.PowerWatts+now.PowerWatts)/2*dt, true
	case now.HasPower:
		joules, estimated = now.PowerWatts*dt, true
	}
	if joules <= 0 {
		return
	}
	if sameClaims(prev.holders, holders) {
		l.give(now.ID, joules, dt, holders, estimated, now.Shares)
		return
	}
	l.give(now.ID, joules/2, dt, prev.holders, estimated, now.Shares)
	l.give(now.ID, joules/2, dt, holders, estimated, now.Shares)
}

// give shares joules of device id between claims by replicas, out of
// shares parts when the device is split (MIG).
func (l *Ledger) give(id string, joules, dt float64, claims []Claim, estimated bool, shares int) {
	total := 0
	for _, c := range claims {
		total += max(c.Replicas, 1)
	}
	if total > 0 && total < shares {
		l.unattributed[id] += joules * float64(shares-total) / float64(shares)
		total = shares
	}
	if total == 0 {
		l.unattributed[id] += joules
		return
	}
	for _, c := range claims {
		p := l.pods[c.Pod]
		if p == nil {
			// Only a pod retention has dropped; not reachable within
			// one interval, but its energy must not vanish unseen.
			l.unattributed[id] += joules * float64(max(c.Replicas, 1)) / float64(total)
			continue
		}
		ce := p.containers[c.Container]
		if ce == nil {
			ce = &ContainerEnergy{Name: c.Container}
			p.containers[c.Container] = ce
		}
		share := joules * float64(max(c.Replicas, 1)) / float64(total)
		ce.GPUJoules += share
		ce.GPUWatts += share / dt
		if !slices.Contains(ce.GPUs, id) {
			ce.GPUs = append(ce.GPUs, id)
			slices.Sort(ce.GPUs)
		}
		p.GPUEstimated = p.GPUEstimated || estimated
	}
}

// attributeCPU shares the packages' energy of the interval by CPU time.
func (l *Ledger) attributeCPU(t Tick, dt float64, first bool) {
	dHost := t.HostCPU - l.hostCPU
	usable := !first && t.HasCPU && t.HasHostCPU && l.hasHost && dHost > 0
	for k, cpu := range t.PodCPU {
		p := l.pods[k]
		if p == nil {
			continue
		}
		d := cpu - p.cpuTime
		// A pod's CPU time going backwards is a new cgroup under the same
		// name: that interval is not estimated.
		if usable && p.hasCPUTime && d >= 0 {
			share := min(d.Seconds()/dHost.Seconds(), 1)
			p.CPUJoules += t.CPUJoules * share
			p.CPUWatts = t.CPUJoules * share / dt
			p.HasCPU = true
		}
		p.cpuTime, p.hasCPUTime = cpu, true
	}
	l.hostCPU, l.hasHost = t.HostCPU, t.HasHostCPU
}

// endAbsent ends the pods the tick no longer lists.
func (l *Ledger) endAbsent(present map[Key]bool, now time.Time) {
	for k, p := range l.pods {
		if !p.Ended && !present[k] {
			l.end(p, now)
		}
	}
}

func (l *Ledger) end(p *podState, now time.Time) {
	p.Ended, p.Until = true, now
	p.GPUWatts, p.CPUWatts = 0, 0
	for _, c := range p.containers {
		c.GPUWatts = 0
	}
	p.sum()
	l.ended = append(l.ended, p.copy())
}

// sum refreshes the pod's totals from its containers.
func (p *podState) sum() {
	p.GPUJoules, p.GPUWatts = 0, 0
	for _, c := range p.containers {
		p.GPUJoules += c.GPUJoules
		p.GPUWatts += c.GPUWatts
	}
}

func (p *podState) copy() PodEnergy {
	e := p.PodEnergy
	e.Containers = make([]ContainerEnergy, 0, len(p.containers))
	for _, c := range p.containers {
		cc := *c
		cc.GPUs = slices.Clone(c.GPUs)
		e.Containers = append(e.Containers, cc)
	}
	slices.SortFunc(e.Containers, func(a, b ContainerEnergy) int { return cmp.Compare(a.Name, b.Name) })
	return e
}

// Pods lists every pod the ledger holds, those ended within the retention
// included, by namespace and name.
func (l *Ledger) Pods() []PodEnergy {
	out := make([]PodEnergy, 0, len(l.pods))
	for _, p := range l.pods {
		out = append(out, p.copy())
	}
	slices.SortFunc(out, func(a, b PodEnergy) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Ended returns the pods that ended since the last call, each once, with
// their final totals.
func (l *Ledger) Ended() []PodEnergy {
	e := l.ended
	l.ended = nil
	return e
}

// Unattributed is, per GPU, the energy no pod held the device for.
func (l *Ledger) Unattributed() map[string]float64 {
	out := make(map[string]float64, len(l.unattributed))
	for id, j := range l.unattributed {
		out[id] = j
	}
	return out
}

// Holders is, by GPU ID, who held each device at the last tick.
func (l *Ledger) Holders() map[string][]Claim {
	out := make(map[string][]Claim, len(l.gpus))
	for id, g := range l.gpus {
		if len(g.holders) > 0 {
			out[id] = slices.Clone(g.holders)
		}
	}
	return out
}

// CounterResets counts the GPU energy counters seen going backwards.
func (l *Ledger) CounterResets() int { return l.resets }

// sameClaims reports whether a and b hold the device the same way.
func sameClaims(a, b []Claim) bool {
	if len(a) != len(b) {
		return false
	}
	for _, c := range a {
		if !slices.Contains(b, c) {
			return false
		}
	}
	return true
}
