// Package podmeter measures each pod's energy on the host: after every
// agent tick it takes the tick's GPU readings and CPU power, asks the
// kubelet which pod holds which GPU (the pod-resources API), reads the
// pods' CPU time from their cgroups, and feeds a podenergy.Ledger. It runs
// on its own goroutine, signalled by the agent's tick, so a slow or absent
// kubelet never delays enforcement; every failure is a status, never an
// error of the tick.
package podmeter

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/podcgroup"
	"joulie.io/joulie/agentd/internal/podenergy"
	"joulie.io/joulie/agentd/internal/sysfs"
)

// DefaultRetention is how long an ended pod's totals stay in metrics and
// on the local socket.
const DefaultRetention = 10 * time.Minute

// Devices is the kubelet's answer: every pod on the node, and by GPU ID
// the containers holding that GPU.
type Devices struct {
	Pods    []podenergy.Key
	Holders map[string][]podenergy.Claim
}

// Kubelet answers which pod holds which device.
type Kubelet interface {
	// Devices asks the kubelet. ok is false when the kubelet could not be
	// asked (no socket, an error); status says why, or what it found, for
	// an operator.
	Devices(ctx context.Context) (d Devices, ok bool, status string)
}

// Options configure a Meter.
type Options struct {
	// Snapshot is the agent's last tick.
	Snapshot func() agent.Snapshot
	// Kubelet maps GPUs to pods; nil turns per-pod GPU energy off.
	Kubelet Kubelet
	// Cgroups is the host root the pods' cgroups and /proc/stat are read
	// under; nil turns the CPU estimate off.
	Cgroups *sysfs.FS
	// PodUIDs names the pods on the node by UID (from the API server):
	// the cgroups know pods only by UID. Nil in standalone mode, where
	// the CPU estimate is not made.
	PodUIDs func() map[string]podenergy.Key
	// PodsErr, when set, says why PodUIDs has no answer yet.
	PodsErr func() error
	// Ended receives each pod's final totals once it ended (the agent's
	// EnergyReport event). Called on the meter's goroutine.
	Ended func(podenergy.PodEnergy)
	// HoldersChanged, when set, is told on the meter's goroutine that the
	// pods holding the GPUs changed (the agent's Kick: per-GPU caps
	// follow within the tick that saw it). It must return at once.
	HoldersChanged func()
	Retention      time.Duration
	Logger         *slog.Logger
}

// Status says what the meter could do at its last observation.
type Status struct {
	// Kubelet is the pod-resources API's state, as Kubelet.Devices said;
	// KubeletUp is whether it answered.
	Kubelet   string
	KubeletUp bool
	// CPU says whether and how the CPU estimate is made.
	CPU string
	// At is the tick the last observation used.
	At time.Time
}

// Meter is one host's per-pod energy meter. Its methods are safe for
// concurrent use.
type Meter struct {
	opts   Options
	signal chan struct{}

	mu      sync.Mutex
	ledger  *podenergy.Ledger
	status  Status
	last    time.Time
	holders map[string][]podenergy.Claim // by GPU ID, at the last observation
}

// New builds a meter; Run starts it.
func New(o Options) *Meter {
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Meter{opts: o, signal: make(chan struct{}, 1), ledger: podenergy.NewLedger(o.Retention)}
}

// Ticked tells the meter a tick has finished. It never blocks: ticks that
// come while the meter is busy fold into one observation.
func (m *Meter) Ticked() {
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

// Run observes after every tick until ctx ends.
func (m *Meter) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.signal:
			m.Observe(ctx)
		}
	}
}

// Observe accounts the agent's last tick, once.
func (m *Meter) Observe(ctx context.Context) {
	snap := m.opts.Snapshot()
	m.mu.Lock()
	fresh := snap.LastReconcile.After(m.last)
	prev := m.last
	m.mu.Unlock()
	if !fresh {
		return
	}
	t := podenergy.Tick{Now: snap.LastReconcile}
	for _, g := range snap.GPUs {
		t.GPUs = append(t.GPUs, podenergy.GPU{ID: g.UUID, EnergyJoules: g.EnergyJoules, HasEnergy: g.HasEnergy, PowerWatts: g.PowerWatts, HasPower: g.HasPower})
	}
	st := Status{At: snap.LastReconcile, Kubelet: "per-pod GPU energy is off", CPU: "per-pod CPU estimate is off"}
	if m.opts.Kubelet != nil {
		d, ok, s := m.opts.Kubelet.Devices(ctx)
		st.Kubelet, st.KubeletUp = s, ok
		if ok {
			t.Holders = foldMIGs(byGPUID(d.Holders, snap.GPUs), snap.GPUs, t.GPUs)
			for _, k := range d.Pods {
				t.Pods = append(t.Pods, podenergy.Pod{Key: k})
			}
		} else {
			// Without the kubelet's list nobody can tell which pods
			// ended: keep the last list rather than end them all.
			t.Pods, t.Holders = m.lastPods()
		}
	}
	var names map[string]podenergy.Key
	if m.opts.PodUIDs != nil {
		names = m.opts.PodUIDs()
	}
	nameUIDs(&t, names)
	st.CPU = m.cpu(&t, snap, prev, names)

	m.mu.Lock()
	m.ledger.Observe(t)
	ended := m.ledger.Ended()
	m.status, m.last = st, snap.LastReconcile
	holders := m.ledger.Holders()
	changed := !maps.EqualFunc(holders, m.holders, slices.Equal)
	m.holders = holders
	m.mu.Unlock()
	if changed && m.opts.HoldersChanged != nil {
		m.opts.HoldersChanged()
	}
	for _, e := range ended {
		m.opts.Logger.Info("pod ended", "pod", e.Key.String(), "gpuJoules", e.GPUJoules, "cpuJoulesEstimate", e.CPUJoules, "gpus", e.GPUs())
		if m.opts.Ended != nil {
			m.opts.Ended(e)
		}
	}
}

// cpu fills the tick's CPU figures and says what it could do.
func (m *Meter) cpu(t *podenergy.Tick, snap agent.Snapshot, prev time.Time, names map[string]podenergy.Key) string {
	switch {
	case m.opts.Cgroups == nil:
		return "per-pod CPU estimate is off"
	case m.opts.PodUIDs == nil:
		return "no per-pod CPU estimate: pod cgroups are named by UID, and without the API server (standalone mode) the agent cannot tell which pod a UID is"
	}
	if names == nil {
		msg := "no per-pod CPU estimate yet: waiting for the node's pod list from the API server"
		if m.opts.PodsErr != nil {
			if err := m.opts.PodsErr(); err != nil {
				msg += " (" + err.Error() + ")"
			}
		}
		return msg
	}
	if !prev.IsZero() && snap.Power.HasCPU {
		t.CPUJoules, t.HasCPU = snap.Power.CPUWatts*snap.LastReconcile.Sub(prev).Seconds(), true
	}
	u := podcgroup.Read(m.opts.Cgroups)
	t.HostCPU, t.HasHostCPU = u.Host, u.HasHost
	t.PodCPU = map[podenergy.Key]time.Duration{}
	for uid, d := range u.Pods {
		if k, ok := names[uid]; ok {
			t.PodCPU[k] = d
			t.Pods = append(t.Pods, podenergy.Pod{Key: k, UID: uid})
		}
	}
	switch {
	case u.Layout == "":
		return "no per-pod CPU estimate: no pod cgroups under " + m.opts.Cgroups.Path("sys/fs/cgroup")
	case !u.HasHost:
		return "no per-pod CPU estimate: /proc/stat could not be read"
	case !snap.Power.HasCPU:
		return "no per-pod CPU estimate: the CPU packages' power is not measured (no RAPL energy counter)"
	}
	return "estimated from RAPL by CPU time (" + u.Layout + ")"
}

// nameUIDs gives the kubelet's pods, which it names without UIDs, the
// UIDs the API server knows them by: kubectl describe pod matches a pod's
// events by UID, and a UID that changes under the same name is a new pod.
func nameUIDs(t *podenergy.Tick, names map[string]podenergy.Key) {
	if len(names) == 0 {
		return
	}
	uids := make(map[podenergy.Key]string, len(names))
	for uid, k := range names {
		uids[k] = uid
	}
	for i := range t.Pods {
		if t.Pods[i].UID == "" {
			t.Pods[i].UID = uids[t.Pods[i].Key]
		}
	}
}

// lastPods is the pod list and GPU holders of the ledger's running pods,
// for a tick the kubelet did not answer.
func (m *Meter) lastPods() ([]podenergy.Pod, map[string][]podenergy.Claim) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var pods []podenergy.Pod
	holders := map[string][]podenergy.Claim{}
	for _, p := range m.ledger.Pods() {
		if p.Ended {
			continue
		}
		pods = append(pods, p.Pod)
	}
	for id, claims := range m.ledger.Holders() {
		holders[id] = claims
	}
	return pods, holders
}

// Holders is, by GPU ID, the pods holding each GPU at the last
// observation; GPUs nobody holds are absent.
func (m *Meter) Holders() map[string][]podenergy.Key {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]podenergy.Key, len(m.holders))
	for id, claims := range m.holders {
		for _, c := range claims {
			out[id] = append(out[id], c.Pod)
		}
	}
	return out
}

// Pods is every pod's energy so far, those ended within the retention
// included.
func (m *Meter) Pods() []podenergy.PodEnergy {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ledger.Pods()
}

// Unattributed is the energy of GPUs no pod held, by GPU ID, and the
// number of GPU energy counters seen reset.
func (m *Meter) Unattributed() (map[string]float64, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ledger.Unattributed(), m.ledger.CounterResets()
}

// Status is the meter's last status.
func (m *Meter) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

// byGPUID moves the holders of a GPU the kubelet names by its PCI address
// (the AMD device plugin's device IDs) onto the ID the agent's GPUs give
// it, where that is another: amd-smi lists an AMD GPU by its UUID. The
// readings, the holders and the per-GPU caps then all name the GPU alike.
// Addresses compare without regard to case. holders is not changed.
func byGPUID(holders map[string][]podenergy.Claim, gpus []backend.GPU) map[string][]podenergy.Claim {
	ids := map[string]string{}
	for _, g := range gpus {
		if g.PCIBusID != "" && g.UUID != "" && !strings.EqualFold(g.PCIBusID, g.UUID) {
			ids[strings.ToLower(g.PCIBusID)] = g.UUID
		}
	}
	if len(ids) == 0 {
		return holders
	}
	out := make(map[string][]podenergy.Claim, len(holders))
	for key, claims := range holders {
		id, ok := ids[strings.ToLower(key)]
		if !ok {
			id = key
		}
		for _, c := range claims {
			// A container the kubelet listed under both names holds
			// the GPU once.
			if !slices.ContainsFunc(out[id], func(o podenergy.Claim) bool { return o.Pod == c.Pod && o.Container == c.Container }) {
				out[id] = append(out[id], c)
			}
		}
	}
	for id := range out {
		slices.SortFunc(out[id], compareClaims)
	}
	return out
}

// foldMIGs moves the holders of MIG devices onto their parent GPU, whose
// energy counter is the only one NVML keeps: one share of the GPU per MIG
// device held, out of as many shares as the GPU has MIG devices (the
// readings in ticks get Shares), so an idle MIG device's part stays
// unattributed. A MIG device the agent's GPUs do not list keeps its own
// ID, and its energy is not measured. holders is not changed.
func foldMIGs(holders map[string][]podenergy.Claim, gpus []backend.GPU, ticks []podenergy.GPU) map[string][]podenergy.Claim {
	parent := map[string]string{}
	for i, g := range gpus {
		for _, m := range g.MIGs {
			parent[m] = g.UUID
		}
		if len(g.MIGs) > 0 && i < len(ticks) && ticks[i].ID == g.UUID {
			ticks[i].Shares = len(g.MIGs)
		}
	}
	if len(parent) == 0 {
		return holders
	}
	out := make(map[string][]podenergy.Claim, len(holders))
	for id, claims := range holders {
		p, ok := parent[id]
		if !ok {
			out[id] = append(out[id], claims...)
			continue
		}
		for _, c := range claims {
			c.Replicas = max(c.Replicas, 1)
			at := slices.IndexFunc(out[p], func(o podenergy.Claim) bool { return o.Pod == c.Pod && o.Container == c.Container })
			if at >= 0 {
				out[p][at].Replicas += c.Replicas
			} else {
				out[p] = append(out[p], c)
			}
		}
	}
	for id := range out {
		slices.SortFunc(out[id], compareClaims)
	}
	return out
}

// compareClaims orders claims by pod and container, so that a GPU's
// holders read the same from one tick to the next.
func compareClaims(a, b podenergy.Claim) int {
	return cmp.Or(cmp.Compare(a.Pod.Namespace, b.Pod.Namespace), cmp.Compare(a.Pod.Name, b.Pod.Name), cmp.Compare(a.Container, b.Container))
}
