package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/energy/physics"
)

// Pod annotations the stand-in reads.
const (
	// AnnotationWork is the pod's work: how long it runs at full speed,
	// as a Go duration ("90s"). A pod without it runs until deleted.
	AnnotationWork = "demo.joulie.io/work"
	// AnnotationBoundness is the pod's physics.Boundness, which sets how
	// busy it keeps its devices and how much a cap slows it. Without it,
	// a pod holding GPUs is gpu-mixed and any other cpu-compute.
	AnnotationBoundness = "demo.joulie.io/boundness"
)

// Node labels the fleet sets on its nodes (next to joulie.io/managed).
const (
	// LabelFleet marks the nodes of one fleet; its value is NodePrefix.
	LabelFleet = "demo.joulie.io/fleet"
	// LabelFamily is the node's Family name.
	LabelFamily = "demo.joulie.io/family"
	// LabelPath is PathPool or PathDaemon: which agent enforces the node.
	LabelPath = "demo.joulie.io/path"
)

// How a node's caps are enforced.
const (
	// PathPool: by the one pool-mode joulie-agentd, through the HTTP
	// backend, on the fleet's simulator.
	PathPool = "pool"
	// PathDaemon: by the node's own joulie-agentd in Kubernetes mode,
	// through sysfs RAPL and NVML on a fixture tree.
	PathDaemon = "daemon"
)

// Config says what fleet to run.
type Config struct {
	// Nodes is the number of nodes (default 16); DaemonNodes of them
	// (default 2, or Nodes if fewer) have their own daemon-mode agent, the
	// rest are driven by one pool-mode agent. Set DaemonNodes to -1 for
	// none.
	Nodes, DaemonNodes int
	// Model is the physics (physics.Default() if nil).
	Model *physics.Model
	// Kube is an identity allowed to create and delete nodes, update pod
	// status, and create the pool agent's ServiceAccount, token and
	// ClusterRole binding (an admin).
	Kube *rest.Config
	// AgentConfig gives the identity of a daemon node's agent: user
	// joulie:agent:<node> in group joulie:agents, which the chart's RBAC
	// and admission policy recognise. The pool agent runs as a
	// ServiceAccount the fleet creates (PoolServiceAccount).
	AgentConfig func(node string) (*rest.Config, error)
	// KubeletConfig gives the identity a daemon node's agent reads the
	// node's pods with (podsKubeconfig): its kubelet's, user
	// system:node:<node> in group system:nodes, which the Node authorizer
	// confines to the node's pods. Nil reads none.
	KubeletConfig func(node string) (*rest.Config, error)
	// AgentBinary is a built joulie-agentd.
	AgentBinary string
	// FakeNVMLSource is agentd/internal/nvml/fakenvml/testdata/fake_nvml.c;
	// empty finds it in the joulie.io/joulie module through the go command.
	// It is compiled once with gcc into Dir.
	FakeNVMLSource string
	// Dir holds fixture trees, configurations, sockets and logs. The
	// caller creates it and removes it after Stop.
	Dir string
	// NodePrefix starts every node name (default "sim"): <prefix>-<family>-<n>.
	NodePrefix string
	// Tick is the physics step (default 1s).
	Tick time.Duration
	// AgentInterval is the agents' reconcile interval (default 1s).
	AgentInterval time.Duration
	// Log receives the fleet's own log lines (default: discarded). The
	// agents log to files under Dir/logs.
	Log io.Writer
	// ParkablePool labels every pool node joulie.io/parkable=true, so
	// that a controller with parking on may switch it off through the
	// HTTP contract. Daemon nodes are never labelled, and their agents
	// run with parking.allowPowerOff false: they are the host path, and
	// a park there would ask this machine's logind to power it off.
	ParkablePool bool
	// BootTime is how long a switched-off node takes from a magic packet
	// to Ready (default: the physics' boot time of a CPU node, 151 s,
	// which a short demo compresses).
	BootTime time.Duration
	// BMCNodes of the parkable pool nodes (the first ones) get a BMC:
	// an ipmi_sim on loopback, its address and credentials in the Secret
	// joulie-bmc-<node> of BMCNamespace (default DefaultBMCNamespace, the
	// chart's for release joulie; created if missing), so the controller
	// wakes them over IPMI instead of Wake-on-LAN.
	BMCNodes     int
	BMCNamespace string
}

// Snapshot is the fleet at its last tick.
type Snapshot struct {
	Time  time.Time
	Nodes []NodeState
	// Pods are the pods the fleet has run or runs, in start order. A
	// finished pod keeps its record after it is deleted; a pod deleted
	// while running leaves none.
	Pods []PodRecord
	// PowerW is the cluster's draw from Time until the next tick.
	// EnergyJ is the energy drawn since Start: the sum over past ticks of
	// each tick's PowerW times its length, so the left Riemann sum of the
	// PowerW of successive snapshots, one per tick, equals it; sampled
	// less often, it agrees within one tick's energy per sample.
	PowerW, EnergyJ float64
	// CapsSavedJ and ParkingSavedJ take apart what Joulie kept EnergyJ
	// from being, counted over the same ticks. CapsSavedJ: on each host
	// that is on, the draw the physics gives its loads with no cap less
	// its capped draw. ParkingSavedJ: on each host that is off or
	// booting, its idle draw less its draw (a boot that draws more than
	// idle counts against). Neither counts that capped work runs longer,
	// nor that a pod waiting for a boot starts later: those show in the
	// runs' totals and times.
	CapsSavedJ, ParkingSavedJ float64
}

// NodeState is one node.
type NodeState struct {
	Name, Family string
	Path         string // PathPool or PathDaemon
	// Profile and Draining are the node's joulie.io/power-profile and
	// joulie.io/draining labels, as the controller set them.
	Profile  string
	Draining bool
	// CPUCapPct and GPUCapPct are the limits in force, as the agent
	// applied them, in percent of the device's maximum (100: none; the
	// GPU figure is the mean over the node's GPUs, 100 without GPUs).
	CPUCapPct, GPUCapPct float64
	GPUs                 int
	// Watts is the node's draw from the physics: the BMC's standby draw
	// while the host is off, the boot's average draw while it boots.
	Watts                   float64
	RunningPerf, RunningStd int
	// PowerState is the controller's (NodePowerProfile spec.powerState:
	// awake, parking, parked, waking, wake-failed; "" before it wrote
	// one). Host is the machine's: HostOn, HostOff or HostBooting, with
	// BootPct of the boot done. MAC is the address that wakes it.
	PowerState, Host string
	BootPct          float64
	MAC              string
	// WokenBy is what started the node's last boot: WakeByLAN,
	// WakeByBMC, or "" before any.
	WokenBy string
}

// PodRecord is one pod the fleet ran.
type PodRecord struct {
	Namespace, Name string
	// Class is "performance" or "standard" (pkg/workload's
	// classification).
	Class string
	Node  string
	// ProfileAtStart is the node's profile label when the pod started,
	// or "draining" while the node was labelled eco and draining.
	ProfileAtStart             string
	Created, Started, Finished time.Time
	Work                       time.Duration
	Boundness                  string
	// Phase is Running or Succeeded.
	Phase string
}

// Fleet is a running fleet.
type Fleet struct {
	cfg  Config
	log  *slog.Logger
	sim  *sim
	kube kubernetes.Interface
	jc   versioned.Interface

	nodes       []string
	created     []string // nodes Start created, deleted by Stop
	poolCreated bool     // the pool identity exists, deleted by Stop
	sockDir     string   // a short directory for sockets, removed by Stop
	srv         *http.Server
	simURL      string
	wolConn     net.PacketConn
	ready       *readiness
	agents      []*agent
	bmcs        []*bmc
	pods        *lifecycle

	cancel context.CancelFunc
	wg     sync.WaitGroup

	stopOnce sync.Once
	stopErr  error
}

// Start creates the nodes, the simulator and the agents, and runs the
// pod stand-in, until Stop. On error everything it started is stopped
// and everything it created deleted.
func Start(ctx context.Context, c Config) (_ *Fleet, err error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(c.Kube)
	if rc.QPS == 0 {
		// client-go's default of 5 requests a second would hold back
		// the two status writes per pod of a busy demo by minutes.
		rc.QPS, rc.Burst = 100, 200
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("fleet: client for Config.Kube: %w", err)
	}
	jc, err := versioned.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("fleet: client for Config.Kube: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	f := &Fleet{
		cfg: c, log: slog.New(slog.NewTextHandler(c.Log, nil)), sim: newSim(c.Model, c.BootTime, time.Now()),
		kube: kube, jc: jc, cancel: cancel,
	}
	f.ready = &readiness{f: f, queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	f.sim.changed = f.ready.queue.Add
	if _, err := f.listenWakeOnLAN(); err != nil {
		cancel()
		return nil, err
	}
	defer func() {
		if err != nil {
			stopCtx, done := context.WithTimeout(context.Background(), 30*time.Second)
			defer done()
			err = errors.Join(err, f.Stop(stopCtx))
		}
	}()
	for _, d := range []string{"logs", "hosts", "state", "run"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
	}
	plan := c.plan()
	var lib string
	if c.DaemonNodes > 0 {
		if lib, err = BuildFakeNVML(ctx, c.FakeNVMLSource, filepath.Join(c.Dir, "run")); err != nil {
			return nil, err
		}
	}
	// The simulator listens on loopback only: the pool agent runs here.
	// It serves once the nodes exist; the BMCs need its address before.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fleet: simulator listener: %w", err)
	}
	f.simURL = "http://" + ln.Addr().String()
	for i, p := range plan {
		var host *hostTree
		if p.daemon {
			base := filepath.Join(c.Dir, "hosts", p.name)
			if host, err = writeHostTree(p.name, filepath.Join(base, "root"), filepath.Join(base, "nvml"), p.fam); err != nil {
				ln.Close()
				return nil, err
			}
		}
		var b *bmc
		if !p.daemon && i < c.BMCNodes { // pool nodes come first
			if b, err = f.startBMC(p.name); err != nil {
				ln.Close()
				return nil, err
			}
			f.bmcs = append(f.bmcs, b)
			p.bmcAddr = b.addr
		}
		f.sim.addNode(p.name, p.fam, host)
		if err := f.createNode(ctx, p); err != nil {
			ln.Close()
			return nil, err
		}
		f.nodes = append(f.nodes, p.name)
		if b != nil {
			if err := f.createBMCSecret(ctx, b); err != nil {
				ln.Close()
				return nil, err
			}
		}
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/bmc/", f.serveBMC)
	mux.Handle("/", f.sim)
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		if err := f.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			f.log.Error("simulator server stopped", "err", err)
		}
	}()

	f.pods = newLifecycle(f.kube, f.jc, f.sim, f.log)
	if err := f.pods.start(runCtx, c.NodePrefix); err != nil {
		return nil, err
	}
	f.wg.Add(3)
	go func() {
		defer f.wg.Done()
		f.tick(runCtx)
	}()
	go func() {
		defer f.wg.Done()
		f.ready.run(runCtx)
	}()
	go func() {
		defer f.wg.Done()
		f.heartbeat(runCtx)
	}()

	for _, p := range plan {
		if !p.daemon {
			continue
		}
		a, err := f.startDaemon(ctx, p.name, lib)
		if err != nil {
			return nil, err
		}
		f.agents = append(f.agents, a)
	}
	if c.Nodes > c.DaemonNodes {
		a, err := f.startPool(ctx, f.simURL+"/nodes/{node}")
		if err != nil {
			return nil, err
		}
		f.agents = append(f.agents, a)
	}
	f.log.Info("fleet started", "nodes", len(plan), "simulator", ln.Addr().String())
	return f, nil
}

func (c *Config) defaults() error {
	if c.Nodes == 0 {
		c.Nodes = 16
	}
	switch {
	case c.DaemonNodes == 0:
		c.DaemonNodes = min(2, c.Nodes)
	case c.DaemonNodes < 0:
		c.DaemonNodes = 0
	}
	if c.Model == nil {
		c.Model = physics.Default()
	}
	if c.NodePrefix == "" {
		c.NodePrefix = "sim"
	}
	if c.Tick == 0 {
		c.Tick = time.Second
	}
	if c.AgentInterval == 0 {
		c.AgentInterval = time.Second
	}
	if c.BootTime == 0 {
		c.BootTime = c.Model.Power.BootTime(false)
	}
	if c.BMCNamespace == "" {
		c.BMCNamespace = DefaultBMCNamespace
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	switch {
	case c.Nodes < 1:
		return fmt.Errorf("fleet: Config.Nodes is %d: give at least 1 node", c.Nodes)
	case c.DaemonNodes > c.Nodes:
		return fmt.Errorf("fleet: Config.DaemonNodes is %d, more than Config.Nodes %d: lower it or add nodes", c.DaemonNodes, c.Nodes)
	case c.Kube == nil:
		return errors.New("fleet: Config.Kube is nil: give an admin identity on the cluster")
	case c.DaemonNodes > 0 && c.AgentConfig == nil:
		return errors.New("fleet: Config.AgentConfig is nil but daemon nodes need agent identities (joulie:agent:<node>)")
	case c.AgentBinary == "":
		return errors.New("fleet: Config.AgentBinary is empty: build joulie.io/joulie/agentd/cmd/joulie-agentd and give its path")
	case c.Dir == "":
		return errors.New("fleet: Config.Dir is empty: give a directory for trees, configurations and logs")
	case c.Tick < 10*time.Millisecond:
		return fmt.Errorf("fleet: Config.Tick %s is below 10ms", c.Tick)
	case c.BMCNodes > 0 && !c.ParkablePool:
		return errors.New("fleet: Config.BMCNodes gives parkable pool nodes a BMC: set Config.ParkablePool too")
	case c.BMCNodes > c.Nodes-c.DaemonNodes:
		return fmt.Errorf("fleet: Config.BMCNodes is %d, more than the %d pool nodes", c.BMCNodes, c.Nodes-c.DaemonNodes)
	}
	if _, err := os.Stat(c.AgentBinary); err != nil {
		return fmt.Errorf("fleet: Config.AgentBinary: %w", err)
	}
	return nil
}

// planned is one node to create.
type planned struct {
	name    string
	fam     *Family
	daemon  bool
	bmcAddr string // its BMC's address, for a BMC node
}

// plan names the nodes: pool nodes cycling through all families, then
// daemon nodes alternating between the families that may have one;
// numbers count per family from 1, so a family's daemon nodes come after
// its pool nodes. The controller's family floor keeps the first node of
// each family on performance (equal density goes by name), so daemon
// nodes numbered last are the ones a plan turns eco first, and the host
// path gets capped in a default run.
func (c *Config) plan() []planned {
	fams := Families(c.Model)
	var daemonFams []*Family
	for _, f := range fams {
		if !f.PoolOnly {
			daemonFams = append(daemonFams, f)
		}
	}
	count := map[string]int{}
	name := func(f *Family) string {
		count[f.Name]++
		return fmt.Sprintf("%s-%s-%d", c.NodePrefix, f.Name, count[f.Name])
	}
	var out []planned
	for i := range c.Nodes - c.DaemonNodes {
		f := fams[i%len(fams)]
		out = append(out, planned{name: name(f), fam: f})
	}
	for i := range c.DaemonNodes {
		f := daemonFams[i%len(daemonFams)]
		out = append(out, planned{name: name(f), fam: f, daemon: true})
	}
	return out
}

// tick advances the simulation and hands finished pods to the stand-in.
func (f *Fleet) tick(ctx context.Context) {
	t := time.NewTicker(f.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			finished, errs := f.sim.step(now)
			for _, err := range errs {
				f.log.Warn("simulator", "err", err)
			}
			for _, key := range finished {
				f.pods.enqueue(key)
			}
		}
	}
}

// Snapshot is the fleet at its last tick; it is cheap and safe to call
// from any goroutine.
func (f *Fleet) Snapshot() Snapshot { return f.sim.snapshot() }

// SimulatorURL is the base URL of the HTTP backend contract the pool
// agent talks to: GET <url>/nodes/<node>/telemetry?node=<node>.
func (f *Fleet) SimulatorURL() string { return f.simURL }

// Nodes are the names of the fleet's nodes.
func (f *Fleet) Nodes() []string { return append([]string(nil), f.nodes...) }

// Stop stops the agents with SIGTERM (the daemons restore the limits
// they changed), the pod stand-in and the simulator, and deletes the
// nodes, their Joulie objects and the pool agent's identity that Start
// created. It leaves no process or listener behind; calling it again
// returns the first call's result.
func (f *Fleet) Stop(ctx context.Context) error {
	f.stopOnce.Do(func() {
		var errs []error
		// All at once: each restores its host independently.
		for _, a := range f.agents {
			a.terminate()
		}
		for _, a := range f.agents {
			errs = append(errs, a.wait(ctx))
		}
		for _, b := range f.bmcs {
			b.stop()
		}
		f.cancel()
		if f.srv != nil {
			errs = append(errs, f.srv.Close())
		}
		if f.wolConn != nil {
			errs = append(errs, f.wolConn.Close())
		}
		f.ready.queue.ShutDown()
		f.wg.Wait()
		if f.pods != nil {
			f.pods.wait()
		}
		errs = append(errs, f.deleteObjects(ctx), f.deleteBMCSecrets(ctx))
		if f.sockDir != "" {
			errs = append(errs, os.RemoveAll(f.sockDir))
		}
		f.stopErr = errors.Join(errs...)
	})
	return f.stopErr
}

// BuildFakeNVML compiles the fake libnvidia-ml.so.1 into dir, from src
// (agentd/internal/nvml/fakenvml/testdata/fake_nvml.c when empty).
func BuildFakeNVML(ctx context.Context, src, dir string) (string, error) {
	if src == "" {
		out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "joulie.io/joulie").Output()
		if err != nil {
			return "", fmt.Errorf("fleet: find the fake NVML source through the go command (run from the repository, or set Config.FakeNVMLSource): %w", err)
		}
		src = filepath.Join(string(bytes.TrimSpace(out)), "agentd/internal/nvml/fakenvml/testdata/fake_nvml.c")
	}
	lib := filepath.Join(dir, "libnvidia-ml.so.1")
	cmd := exec.CommandContext(ctx, "gcc", "-shared", "-fPIC", "-O2", "-Wall", "-o", lib, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fleet: build the fake NVML library for the daemon nodes (needs gcc): %s: %w\n%s", cmd, err, out)
	}
	return lib, nil
}
