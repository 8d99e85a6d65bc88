package fleet

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/workload"
	"joulie.io/joulie/test/energy/physics"
)

// sim is the state of every simulated host and of the pods running on
// them, advanced by step once per tick. Caps come in from the agents (the
// HTTP contract for pool nodes, the fixture tree for daemon nodes); power
// and progress go out to telemetry, the fixture trees and Snapshot.
type sim struct {
	model *physics.Model
	// boot is how long a switched-on node takes to be Ready; changed is
	// told the nodes whose host state changed, for their Ready condition.
	boot    time.Duration
	changed func(node string)
	// poweredOff is told of every switch-off of a host that was on or
	// booting (faults.go); nil tells no one.
	poweredOff func(PowerOff)

	mu      sync.Mutex
	nodes   map[string]*simNode
	order   []string           // node names in creation order, for Snapshot
	pods    map[string]*simPod // the pods that exist, by namespace/name
	seq     []*simPod          // every pod run, in start order: finished ones outlive their deletion
	now     time.Time
	powerW  float64 // the cluster's draw since the last tick
	energyJ float64
	// What the caps and the switched-off hosts kept from being drawn,
	// counted tick by tick as energyJ is (Snapshot says how).
	capsSavedJ, parkingSavedJ float64
}

type simNode struct {
	name     string
	fam      *Family
	hostTree *hostTree // nil for a pool node

	profile  string
	draining bool
	// powerState is the controller's, from the node's NodePowerProfile
	// spec; host is the machine's (HostOn, HostOff, HostBooting), with
	// the boot's start and end.
	powerState        string
	host              string
	mac               net.HardwareAddr
	bootFrom, bootEnd time.Time
	wokenBy           string // WakeByLAN or WakeByBMC: what started the last boot

	// Caps in force, as the agent left them: per package, and per GPU.
	cpuCapW     float64
	throttlePct float64
	gpuCapW     []float64

	// Power since the last tick, and the cap fractions it was computed
	// with, which also set how fast pods progress until the next tick.
	cpuFrac float64
	cpuLoad float64 // the host's CPU load at the last power()
	gpuFrac []float64
	pkgW    float64 // each package
	gpuW    []float64
	watts   float64
	// uncappedW is what the host would draw at the same loads with no
	// cap; idleW what it draws on, idle and uncapped: the two figures
	// the energy the caps and the parking save is counted against.
	uncappedW, idleW float64
	gpuOwner         []string // pod key holding each GPU, "" when free

	pkgEnergyJ []float64
	gpuEnergyJ []float64
}

type simPod struct {
	key       string
	uid       string
	rec       PodRecord
	boundness physics.Boundness
	cpus      float64
	gpus      []int
	done      time.Duration // work done, at full speed
	open      bool          // Work unknown: runs until deleted
}

func newSim(model *physics.Model, boot time.Duration, now time.Time) *sim {
	return &sim{model: model, boot: boot, changed: func(string) {}, nodes: map[string]*simNode{}, pods: map[string]*simPod{}, now: now}
}

// addNode adds a host, uncapped and idle.
func (s *sim) addNode(name string, fam *Family, host *hostTree) {
	n := &simNode{
		name: name, fam: fam, hostTree: host, host: HostOn, mac: nodeMAC(name),
		cpuCapW: fam.PackageMaxW, cpuFrac: 1,
		gpuCapW: make([]float64, fam.GPUs), gpuFrac: make([]float64, fam.GPUs),
		gpuW: make([]float64, fam.GPUs), gpuOwner: make([]string, fam.GPUs),
		pkgEnergyJ: make([]float64, fam.Sockets), gpuEnergyJ: make([]float64, fam.GPUs),
	}
	for i := range n.gpuCapW {
		n.gpuCapW[i], n.gpuFrac[i] = fam.GPUMaxW, 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes[name] = n
	s.order = append(s.order, name)
	s.power(n)
	s.powerW += n.watts
}

func (s *sim) setPowerState(name, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.nodes[name]; ok {
		n.powerState = state
	}
}

// hostState is node name's host power state.
func (s *sim) hostState(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[name]
	if !ok {
		return "", false
	}
	return n.host, true
}

// switchOff switches n off, for the contract's host.power_off (by
// PowerOffByAgent) or its BMC (PowerOffByBMC). Its limits go back to
// their defaults, as firmware sets them at the next boot. s.mu is held.
func (s *sim) switchOff(n *simNode, by string) {
	if n.host == HostOff {
		return
	}
	if s.poweredOff != nil {
		ev := s.powerOffEvent(n, by)
		// On a goroutine of its own: the receiver may read the API
		// server or the fleet, and s.mu is held here.
		go s.poweredOff(ev)
	}
	n.host = HostOff
	n.cpuCapW, n.throttlePct = n.fam.PackageMaxW, 0
	for i := range n.gpuCapW {
		n.gpuCapW[i] = n.fam.GPUMaxW
	}
	s.repower(n)
	s.changed(n.name)
}

// repower sets n's draw for its new host state at once, so a snapshot
// between ticks never pairs a state with the draw of the one before.
// The energy since the last tick is booked at the new draw, off by at
// most one tick's worth of the difference. s.mu is held.
func (s *sim) repower(n *simNode) {
	before := n.watts
	s.power(n)
	s.powerW += n.watts - before
}

// wake starts the boot of the node whose NIC has mac, if it is off: a
// magic packet for a node that is on or booting changes nothing, as on a
// real NIC. It returns the node and whether a boot started.
func (s *sim) wake(mac net.HardwareAddr, now time.Time) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range s.order {
		n := s.nodes[name]
		if bytes.Equal(n.mac, mac) {
			return name, s.boot1(n, WakeByLAN, now)
		}
	}
	return "", false
}

// bmcPower is the node's BMC switching its power: on boots a node that
// is off, off switches it off whatever it was doing.
func (s *sim) bmcPower(name string, on bool, now time.Time) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[name]
	if !ok {
		return "", false
	}
	if !on {
		s.switchOff(n, PowerOffByBMC)
		return name, false
	}
	return name, s.boot1(n, WakeByBMC, now)
}

// boot1 starts n's boot if it is off, and says whether it did. s.mu is
// held.
func (s *sim) boot1(n *simNode, by string, now time.Time) bool {
	if n.host != HostOff {
		return false
	}
	n.host, n.bootFrom, n.bootEnd, n.wokenBy = HostBooting, now, now.Add(s.boot), by
	s.repower(n)
	s.changed(n.name)
	return true
}

// profileNow is the node's profile label, or "draining" while it is
// labelled eco and draining: the controller's drain guard keeps such a
// node on its performance caps until its performance pods are gone.
func (n *simNode) profileNow() string {
	if n.draining {
		return "draining"
	}
	return n.profile
}

func (s *sim) setProfile(name, profile string, draining bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.nodes[name]; ok {
		n.profile, n.draining = profile, draining
	}
}

// start begins running pod on its node, unless it runs already or is
// done. It reports whether the pod is (now or still) tracked.
func (s *sim) start(pod *corev1.Pod, now time.Time) (bool, error) {
	key := pod.Namespace + "/" + pod.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pods[key]; ok {
		if p.uid == string(pod.UID) {
			return true, nil
		}
		// A new pod under a deleted one's name.
		s.drop(key)
	}
	n, ok := s.nodes[pod.Spec.NodeName]
	if !ok {
		return false, nil
	}
	if n.host != HostOn {
		// No kubelet runs on a host that is off or still booting: the
		// pod waits, bound, until the host is up (lifecycle.admit).
		return false, nil
	}
	cpus, gpus := requests(pod, n.fam)
	p := &simPod{key: key, uid: string(pod.UID), cpus: cpus, rec: PodRecord{
		Namespace: pod.Namespace, Name: pod.Name, Node: n.name,
		Class: podClass(pod), ProfileAtStart: n.profileNow(),
		Created: pod.CreationTimestamp.Time, Started: now, Phase: string(corev1.PodRunning),
	}}
	var err error
	if v, ok := pod.Annotations[AnnotationWork]; ok {
		if p.rec.Work, err = time.ParseDuration(v); err != nil || p.rec.Work <= 0 {
			p.open = true
			err = fmt.Errorf("pod %s: annotation %s=%q is not a positive Go duration (like 90s); it runs until deleted", key, AnnotationWork, v)
		}
	} else {
		p.open = true
	}
	p.boundness = physics.Boundness(pod.Annotations[AnnotationBoundness])
	if !p.boundness.Valid() {
		p.boundness = physics.CPUCompute
		if gpus > 0 {
			p.boundness = physics.GPUMixed
		}
	}
	p.rec.Boundness = string(p.boundness)
	for i, owner := range n.gpuOwner {
		if len(p.gpus) == gpus {
			break
		}
		if owner == "" {
			n.gpuOwner[i] = key
			p.gpus = append(p.gpus, i)
		}
	}
	s.pods[key] = p
	s.seq = append(s.seq, p)
	return true, err
}

// phase is what the pod's status should say: Running while it works,
// Succeeded once its work is done, "" for a pod the fleet does not run.
func (s *sim) phase(key string) corev1.PodPhase {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pods[key]; ok {
		return corev1.PodPhase(p.rec.Phase)
	}
	return ""
}

// forget drops a deleted pod. A running one frees its node and leaves no
// record, since it never finished; a finished one keeps its record.
func (s *sim) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop(key)
}

func (s *sim) drop(key string) {
	p, ok := s.pods[key]
	if !ok {
		return
	}
	delete(s.pods, key)
	if p.rec.Phase == string(corev1.PodRunning) {
		s.release(p)
		s.seq = slices.DeleteFunc(s.seq, func(q *simPod) bool { return q == p })
	}
}

func (s *sim) release(p *simPod) {
	n := s.nodes[p.rec.Node]
	for _, i := range p.gpus {
		n.gpuOwner[i] = ""
	}
}

// step advances the simulation to now: it books the energy of the power
// drawn since the last tick, moves running pods on at the speed their
// node's caps allowed, takes in the caps the agents have written since,
// and sets the power drawn until the next tick. It returns the keys of
// the pods that finished.
func (s *sim) step(now time.Time) (finished []string, errs []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dt := now.Sub(s.now)
	if dt <= 0 {
		return nil, nil
	}
	sec := dt.Seconds()
	s.energyJ += s.powerW * sec
	for _, n := range s.nodes {
		// Against the same tick's draw energyJ counts: a cap saves the
		// uncapped draw at the same loads less the capped one; a host off
		// or booting saves its idle draw less what it draws (a boot
		// drawing more than idle counts against the parking).
		if n.host == HostOn {
			s.capsSavedJ += (n.uncappedW - n.watts) * sec
		} else {
			s.parkingSavedJ += (n.idleW - n.watts) * sec
		}
		for i := range n.pkgEnergyJ {
			n.pkgEnergyJ[i] += n.pkgW * sec
		}
		for i := range n.gpuEnergyJ {
			n.gpuEnergyJ[i] += n.gpuW[i] * sec
		}
	}
	for _, p := range s.seq {
		if p.rec.Phase != string(corev1.PodRunning) || p.open {
			continue
		}
		n := s.nodes[p.rec.Node]
		if n.host != HostOn {
			continue // a host that is off runs nothing
		}
		// A pod started since the last tick works only from its start.
		ran := now.Sub(p.rec.Started)
		if ran > dt {
			ran = dt
		}
		p.done += time.Duration(float64(ran) / s.model.Stretch(p.boundness, n.podDevice(s.model, p), n.podCap(p)))
		if p.done >= p.rec.Work {
			p.rec.Phase, p.rec.Finished = string(corev1.PodSucceeded), now
			s.release(p)
			finished = append(finished, p.key)
		}
	}
	s.powerW = 0
	for _, name := range s.order {
		n := s.nodes[name]
		if n.host == HostBooting && !now.Before(n.bootEnd) {
			n.host = HostOn
			s.changed(name)
		}
		if n.hostTree != nil {
			if err := n.hostTree.readCaps(n); err != nil {
				errs = append(errs, err)
			}
		}
		s.power(n)
		s.powerW += n.watts
		if n.hostTree != nil {
			if err := n.hostTree.writeReadings(n); err != nil {
				errs = append(errs, err)
			}
		}
	}
	s.now = now
	return finished, errs
}

// podCap is the cap fraction that slows pod p: its GPUs' lowest for a
// GPU-bound pod holding GPUs, else the CPU cap.
func (n *simNode) podCap(p *simPod) float64 {
	if !p.boundness.GPU() || len(p.gpus) == 0 {
		return n.cpuFrac
	}
	f := 1.0
	for _, i := range p.gpus {
		f = min(f, n.gpuFrac[i])
	}
	return f
}

// podDevice is what pod p's cap binds on: one of its GPUs at its class's
// utilization for a GPU-bound pod holding GPUs, else the host's CPUs at
// their load (a package cap binds on the whole host's draw).
func (n *simNode) podDevice(m *physics.Model, p *simPod) physics.Device {
	if !p.boundness.GPU() || len(p.gpus) == 0 {
		return physics.NodeCPU(n.fam.Host, n.cpuLoad)
	}
	g := n.fam.gpuNode()
	return physics.Device{Idle: g.GPUIdleWatts, Natural: g.GPUWatts(m.Class(p.boundness).Utilization), Max: g.GPUMaxWatts()}
}

// power sets n's draw from its running pods and caps, with the physics'
// formulas: the host curve at the CPU load under the package cap, plus
// each GPU at its utilization under its own cap.
func (s *sim) power(n *simNode) {
	m := s.model
	f := n.fam
	g := f.gpuNode()
	n.idleW = f.Host.At(0) + float64(f.GPUs)*g.GPUWatts(0)
	if n.host != HostOn {
		// Off: the BMC's standby draw; booting: the boot's average draw
		// (physics.yaml's powerStates, measured on taurus nodes).
		n.watts = m.Power.OffWatts
		if n.host == HostBooting {
			n.watts = m.Power.BootWatts
		}
		n.pkgW = 0
		for i := range n.gpuW {
			n.gpuW[i] = 0
		}
		return
	}
	var cpuBusy float64
	util := make([]float64, f.GPUs)
	for _, p := range s.seq {
		if p.rec.Node != n.name || p.rec.Phase != string(corev1.PodRunning) {
			continue
		}
		u := m.Class(p.boundness).Utilization
		cpuBusy += p.cpus * u
		for _, i := range p.gpus {
			util[i] = u
		}
	}
	n.cpuFrac = capFraction(n.cpuCapW, f.PackageMaxW)
	if n.throttlePct > 0 {
		// A DVFS throttle of p% is taken as the cap that removes as
		// much: 100% is the physics' floor.
		n.cpuFrac = min(n.cpuFrac, 1-n.throttlePct/100*(1-m.MinCapFraction))
	}
	n.cpuLoad = cpuBusy / float64(f.LogicalCPUs())
	host := physics.Capped(f.Host.At(n.cpuLoad), m.EffectiveCap(n.cpuFrac)*f.Host.Max())
	// The packages draw the host's power in proportion to their share of
	// its maximum, so a package never draws more than its cap.
	n.pkgW = host * f.PackageMaxW / f.Host.Max()
	n.watts = host
	n.uncappedW = f.Host.At(n.cpuLoad)
	for i := range util {
		n.gpuFrac[i] = capFraction(n.gpuCapW[i], f.GPUMaxW)
		n.gpuW[i] = physics.Capped(g.GPUWatts(util[i]), m.EffectiveCap(n.gpuFrac[i])*g.GPUMaxWatts())
		n.watts += n.gpuW[i]
		n.uncappedW += g.GPUWatts(util[i])
	}
}

// capFraction is a limit as a fraction of the device's maximum, the way
// Joulie's profiles express caps; a limit at or above the maximum is no
// cap.
func capFraction(limitW, maxW float64) float64 {
	if !(limitW > 0) {
		// A zero limit never comes from the agent (it clamps to the
		// range); treat a broken reading as no cap rather than panic.
		return 1
	}
	return min(limitW/maxW, 1)
}

// requests are the CPUs and GPUs the pod asked for: the sum over its
// containers of requests, or limits where no request is given.
func requests(pod *corev1.Pod, f *Family) (cpus float64, gpus int) {
	for _, c := range pod.Spec.Containers {
		get := func(name corev1.ResourceName) (float64, bool) {
			if q, ok := c.Resources.Requests[name]; ok {
				return q.AsApproximateFloat64(), true
			}
			if q, ok := c.Resources.Limits[name]; ok {
				return q.AsApproximateFloat64(), true
			}
			return 0, false
		}
		v, _ := get(corev1.ResourceCPU)
		cpus += v
		if f.GPUs > 0 {
			v, _ = get(f.GPUResource)
			gpus += int(v)
		}
	}
	return cpus, gpus
}

// podClass is "performance" for a performance-sensitive pod, by the
// classification the controller and the extender share, else "standard".
func podClass(pod *corev1.Pod) string {
	if workload.Classify(pod) == workload.Performance {
		return joulie.WorkloadClassPerformance
	}
	return joulie.WorkloadClassStandard
}

// snapshot copies the state for Snapshot.
func (s *sim) snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{Time: s.now, PowerW: s.powerW, EnergyJ: s.energyJ, CapsSavedJ: s.capsSavedJ, ParkingSavedJ: s.parkingSavedJ}
	byNode := make(map[string]*NodeState, len(s.order))
	for _, name := range s.order {
		n := s.nodes[name]
		path := PathPool
		if n.hostTree != nil {
			path = PathDaemon
		}
		ns := NodeState{
			Name: n.name, Family: n.fam.Name, Path: path, Profile: n.profile, Draining: n.draining,
			CPUCapPct: 100 * capFraction(n.cpuCapW, n.fam.PackageMaxW), GPUCapPct: 100,
			GPUs: n.fam.GPUs, Watts: n.watts,
			PowerState: n.powerState, Host: n.host, MAC: n.mac.String(), WokenBy: n.wokenBy,
		}
		if n.host == HostBooting && n.bootEnd.After(n.bootFrom) {
			ns.BootPct = min(100, 100*float64(s.now.Sub(n.bootFrom))/float64(n.bootEnd.Sub(n.bootFrom)))
		}
		if len(n.gpuCapW) > 0 {
			var sum float64
			for _, w := range n.gpuCapW {
				sum += capFraction(w, n.fam.GPUMaxW)
			}
			ns.GPUCapPct = 100 * sum / float64(len(n.gpuCapW))
		}
		snap.Nodes = append(snap.Nodes, ns)
	}
	for i := range snap.Nodes {
		byNode[snap.Nodes[i].Name] = &snap.Nodes[i]
	}
	for _, p := range s.seq {
		snap.Pods = append(snap.Pods, p.rec)
		if p.rec.Phase != string(corev1.PodRunning) {
			continue
		}
		if p.rec.Class == joulie.WorkloadClassPerformance {
			byNode[p.rec.Node].RunningPerf++
		} else {
			byNode[p.rec.Node].RunningStd++
		}
	}
	return snap
}
