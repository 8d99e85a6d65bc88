// Package daemon runs joulie-agentd: it builds the hardware layer and the
// agent from the configuration, serves the local socket and /metrics,
// talks to systemd, syncs with the cluster when a kubeconfig is set, and
// handles signals: SIGTERM and SIGINT stop (restoring the original power
// settings unless keepCapsOnStop), SIGHUP reloads the configuration. The
// signals are caught (CatchSignals) before the first write, so a stop at
// any moment of start-up still ends with the originals restored.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/dynamic"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/host"
	"joulie.io/joulie/agentd/internal/kubesync"
	"joulie.io/joulie/agentd/internal/localapi"
	"joulie.io/joulie/agentd/internal/logind"
	"joulie.io/joulie/agentd/internal/metrics"
	"joulie.io/joulie/agentd/internal/podmeter"
	"joulie.io/joulie/agentd/internal/podresources"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/systemd"
	"joulie.io/joulie/agentd/internal/wol"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/version"
)

// Daemon is one running joulie-agentd.
type Daemon struct {
	cfg    config.Config
	log    *slog.Logger
	hw     agent.Hardware
	agent  *agent.Agent
	notify *systemd.Notifier
	sync   *kubesync.Syncer // nil in standalone mode
	// meter measures each pod's energy; nil on simulated nodes. In
	// cluster mode pods follows the node's pods for it, and reports
	// writes the EnergyReport event of each pod that ended.
	meter   *podmeter.Meter
	pods    *kubesync.NodePods
	reports *kubesync.EnergyReporter
	// podReader reads the node's pods under podsKubeconfig's identity
	// (nil, noPods says why, when the agent reads none); admitted asks
	// the kubelet what it admitted. Both serve the last check before a
	// park powers the host off.
	podReader dynamic.Interface
	noPods    string
	admitted  *podresources.Client
	// onHost is true when the agent drives this machine, not a simulator:
	// only then may a park power it off or Wake-on-LAN packets go out.
	onHost bool
}

// New builds the daemon from cfg: the hardware layer, the agent and, in
// cluster mode, the cluster sync. In cluster mode with the host backend,
// a TelemetryProfile selecting the node may route it to a simulator
// instead (simulated.go); ctx ending cuts that lookup short. New writes
// no power control.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*Daemon, error) {
	var hw agent.Hardware
	var err error
	switch {
	case cfg.Backend == joulie.EndpointHTTP:
		hw, err = openSimulated(cfg)
	case !cfg.Standalone():
		hw = routed(ctx, cfg, log)
	}
	if err != nil {
		return nil, err
	}
	onHost := hw == nil
	// The host asks the daemon, which is made after it, which GPUs only
	// standard pods hold; nothing asks before the agent's first tick.
	var d *Daemon
	if onHost {
		if hw, err = openHost(cfg, func() map[string]bool { return d.standardGPUs() }); err != nil {
			return nil, err
		}
	}
	d = &Daemon{cfg: cfg, log: log, hw: hw, notify: systemd.NewNotifier(), onHost: onHost}
	var dc dynamic.Interface
	if onHost && !cfg.Standalone() {
		if dc, err = dynamicClient(cfg); err != nil {
			hw.Close()
			return nil, err
		}
		// The pods are read under the kubelet's identity, never the
		// agent's own, which may read no pod at all.
		if d.podReader, d.noPods, err = podsClient(cfg); err != nil {
			hw.Close()
			return nil, err
		}
		if d.podReader != nil {
			d.pods = kubesync.NewNodePods(d.podReader, cfg.NodeName)
		} else {
			log.Warn("the agent reads none of its node's pods: eco caps apply without the guard's check, per-pod energy has no names, and no park powers this host off",
				"why", d.noPods)
		}
		d.admitted = podresources.New(cfg.PodResources.Socket, podresources.DefaultTimeout)
	}
	d.agent = agent.New(hw, d.agentOptions(cfg))
	if d.pods != nil {
		// A performance pod bound to the node lifts an eco cap at once,
		// not at the next tick.
		d.pods.OnChange(d.agent.Kick)
	}
	if d.meter, err = d.newPodMeter(cfg, dc); err != nil {
		hw.Close()
		return nil, err
	}
	if !cfg.Standalone() {
		if d.sync, err = kubesync.New(cfg, d.agent, log); err != nil {
			hw.Close()
			return nil, err
		}
	}
	return d, nil
}

// openHost opens the host's own hardware, holding the state directory's
// lock.
func openHost(cfg config.Config, standardGPUs func() map[string]bool) (agent.Hardware, error) {
	// One writer per journal: a second daemon, or an offline restore by
	// joulie-agentctl, must not write the same controls at the same time.
	unlock, err := state.Lock(cfg.StateDir)
	if errors.Is(err, state.ErrLocked) {
		return nil, fmt.Errorf("%w: is another joulie-agentd running on this host?", err)
	} else if err != nil {
		return nil, err
	}
	h, err := host.Open(host.Config{
		Root: cfg.HostRoot, StateDir: cfg.StateDir,
		NVMLLibraryPath: cfg.NVMLLibraryPath, AMDSMILibraryPath: cfg.AMDSMILibraryPath,
		DVFS: cfg.DVFS, AgentVersion: version.Version, StandardGPUs: standardGPUs,
	})
	if err != nil {
		_ = unlock()
		return nil, err
	}
	return lockedHost{h, unlock}, nil
}

// lockedHost is the host backend holding the state directory's lock,
// which Close releases after the host's own Close (the daemon closes the
// hardware only after its stop-time restore).
type lockedHost struct {
	*host.Host
	unlock func() error
}

func (l lockedHost) Close() error {
	return errors.Join(l.Host.Close(), l.unlock())
}

func (d *Daemon) agentOptions(cfg config.Config) agent.Options {
	o := agent.Options{
		Node: cfg.NodeName, Interval: cfg.ReconcileInterval.Duration,
		Failsafe: string(cfg.Failsafe), FailsafeTimeout: cfg.FailsafeTimeout.Duration,
		KeepCapsOnStop: cfg.KeepCapsOnStop, Version: version.Version, Logger: d.log,
		Parking: agent.Parking{AllowPowerOff: cfg.Parking.AllowPowerOff, StateDir: cfg.StateDir},
		// The meter is made after the agent, whose snapshots it reads;
		// ticks before then find none.
		Ticked: func() {
			if d.meter != nil {
				d.meter.Ticked()
			}
		},
	}
	if cfg.Standalone() {
		o.Standalone = cfg.StandaloneMode.Profile.DeepCopy()
	}
	if d.pods != nil {
		o.PerformancePods = d.pods.PerformancePods
	}
	// Only the NodePowerProfile of cluster mode can park the node or list
	// Wake-on-LAN targets, and only a real host is switched off or sends
	// packets onto the network.
	if d.onHost && !cfg.Standalone() {
		o.Parking.PowerOff = logind.Client{}.PowerOff
		o.Parking.CheckEmpty = func(ctx context.Context) (string, string) { return d.checkEmpty(ctx).Answer() }
		o.Parking.BootID = host.BootID(cfg.HostRoot)
		addrs, _ := wol.ParseAddresses(cfg.Parking.WakeAddress) // validated with the config
		o.Parking.WakeOnLAN = wol.Sender{Addresses: addrs}.Send
	}
	return o
}

// Agent is the daemon's reconcile loop, for tests.
func (d *Daemon) Agent() *agent.Agent { return d.agent }

// Run enforces and serves until ctx ends (CatchSignals ends it on SIGTERM
// or SIGINT), then stops: originals are restored unless keepCapsOnStop.
// Once enforcement may have begun, every way out goes through that stop,
// a failure to start a server included. A SIGHUP waiting on reload is
// taken once the daemon is ready. Run returns an error only for failures
// that should make systemd restart the service.
func (d *Daemon) Run(ctx context.Context, reload <-chan os.Signal) error {
	defer d.hw.Close()
	listener, sock, err := d.listen()
	if err != nil {
		return err
	}
	err = d.serve(ctx, listener, sock, reload)
	if sock != nil {
		sock.Close()
	}
	msg := "stopping; restoring the original power settings"
	if d.cfg.KeepCapsOnStop {
		msg = "stopping; keeping the caps in force"
	}
	_ = d.notify.Stopping(msg)
	return errors.Join(err, d.agent.Stop())
}

// serve starts enforcing, says READY, and serves until ctx ends. A ctx
// that ends during start-up skips the rest of it.
func (d *Daemon) serve(ctx context.Context, listener net.Listener, sock *localapi.Socket, reload <-chan os.Signal) error {
	// Restore what an unclean stop left behind and run the first tick
	// before saying READY: readiness means "enforcing".
	if err := d.agent.Start(ctx); err != nil {
		if ctx.Err() != nil {
			d.log.Info("stopping during start-up", "cause", context.Cause(ctx))
			return nil
		}
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	serve := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && ctx.Err() == nil {
				d.log.Error(name+" stopped", "err", err)
			}
		}()
	}
	allowed := -1
	if sock != nil {
		allowed = sock.GID
	} else if gid, err := localapi.GroupID(localapi.DefaultGroup); err == nil {
		// systemd made the socket (joulie-agentd.socket sets its group);
		// the members of that group may read.
		allowed = gid
	}
	serve("local API", func() error {
		return localapi.Serve(ctx, listener, apiAdapter{d}, localapi.Options{AllowedGID: allowed, Logger: d.log})
	})
	if d.cfg.MetricsAddress != "" {
		srv, err := d.metricsServer()
		if err != nil {
			return err
		}
		serve("metrics", func() error { return runHTTP(ctx, srv) })
	}
	if d.sync != nil {
		serve("cluster sync", func() error { return d.sync.Run(ctx) })
	}
	if d.meter != nil {
		serve("pod energy meter", func() error { d.meter.Run(ctx); return nil })
	}
	if d.pods != nil {
		serve("node's pods", func() error { d.pods.Run(ctx); return nil })
		serve("EnergyReport events", func() error { d.reports.Run(ctx); return nil })
	}
	serve("reconcile loop", func() error { d.agent.Run(ctx); return nil })
	serve("watchdog", func() error { return d.notify.Watchdog(ctx, d.healthy) })

	_ = d.notify.Ready(d.statusLine())
	d.log.Info("joulie-agentd ready", "node", d.cfg.NodeName, "standalone", d.cfg.Standalone(), "socket", d.cfg.Socket, "version", version.Version)

	status := time.NewTicker(10 * time.Second)
	defer status.Stop()
	for {
		select {
		case <-ctx.Done():
			d.log.Info("stopping", "cause", context.Cause(ctx))
			return nil
		case <-reload:
			d.reload()
		case <-status.C:
			_ = d.notify.Status(d.statusLine())
		}
	}
}

// healthy is false when the loop has not ticked for three intervals: the
// watchdog then stops pinging and systemd restarts the daemon.
func (d *Daemon) healthy() bool {
	last := d.agent.Snapshot().LastReconcile
	return !last.IsZero() && time.Since(last) < 3*d.cfg.ReconcileInterval.Duration+5*time.Second
}

// listen takes the socket systemd passed, or makes one.
func (d *Daemon) listen() (net.Listener, *localapi.Socket, error) {
	l, err := systemd.ActivatedListener()
	if err != nil {
		return nil, nil, err
	}
	if l != nil {
		d.log.Info("local API on the socket systemd passed")
		return l, nil, nil
	}
	sock, err := localapi.Listen(d.cfg.Socket, localapi.DefaultGroup)
	if err != nil {
		return nil, nil, fmt.Errorf("local API socket %s: %w", d.cfg.Socket, err)
	}
	if sock.Warning != "" {
		d.log.Warn(sock.Warning)
	}
	return sock, sock, nil
}

// reload re-reads the configuration; what cannot change live is logged.
func (d *Daemon) reload() {
	_ = d.notify.Reloading()
	defer func() { _ = d.notify.Ready(d.statusLine()) }()
	next, err := d.cfg.Reload()
	if err != nil {
		d.log.Error("reload refused; the running configuration stays", "err", err)
		return
	}
	for _, c := range []struct {
		key       string
		old, next any
	}{
		{"nodeName", d.cfg.NodeName, next.NodeName}, {"kubeconfig", d.cfg.Kubeconfig, next.Kubeconfig},
		{"hostRoot", d.cfg.HostRoot, next.HostRoot}, {"stateDir", d.cfg.StateDir, next.StateDir},
		{"socket", d.cfg.Socket, next.Socket}, {"metricsAddress", d.cfg.MetricsAddress, next.MetricsAddress},
		{"backend", d.cfg.Backend, next.Backend}, {"reconcileInterval", d.cfg.ReconcileInterval, next.ReconcileInterval},
		{"parking.wakeAddress", d.cfg.Parking.WakeAddress, next.Parking.WakeAddress},
		{"podResources.socket", d.cfg.PodResources.Socket, next.PodResources.Socket},
		{"podsKubeconfig", d.cfg.PodsKubeconfig, next.PodsKubeconfig},
	} {
		if c.old != c.next {
			d.log.Warn("changing this key needs a restart; the running value stays", "key", c.key, "running", c.old, "configured", c.next)
		}
	}
	d.agent.Reconfigure(d.agentOptions(next))
	d.log.Info("configuration reloaded", "failsafe", next.Failsafe, "keepCapsOnStop", next.KeepCapsOnStop)
	d.cfg.Failsafe, d.cfg.FailsafeTimeout, d.cfg.KeepCapsOnStop, d.cfg.StandaloneMode = next.Failsafe, next.FailsafeTimeout, next.KeepCapsOnStop, next.StandaloneMode
	d.cfg.Parking.AllowPowerOff = next.Parking.AllowPowerOff
}

// statusLine is what `systemctl status` shows.
func (d *Daemon) statusLine() string {
	s := d.agent.Snapshot()
	line := fmt.Sprintf("%s: %s", s.Source, s.CPUMode)
	if s.Spec != nil {
		line = fmt.Sprintf("%s (%s), CPU %s via %s, GPU %s", s.Spec.Profile, s.Source, s.CPU.Result, s.CPU.Backend, s.GPU.Result)
	}
	if s.Failsafe.Active {
		line += "; failsafe " + s.Failsafe.Mode
	}
	if s.Park.Reason != "" {
		line += "; parked: " + s.Park.Reason
	}
	if p := s.MeasuredPower(); p != nil {
		line += fmt.Sprintf("; %.0f W", p.NodePowerWatts)
	}
	return line
}

func (d *Daemon) metricsServer() (*http.Server, error) {
	return newMetricsServer(d.cfg.MetricsAddress, func() []agent.Snapshot { return []agent.Snapshot{d.agent.Snapshot()} }, d.healthy, d.log, d.podCollectors()...)
}

// newMetricsServer serves /metrics and /healthz on addr.
func newMetricsServer(addr string, source metrics.Source, healthy func() bool, log *slog.Logger, extra ...prometheus.Collector) (*http.Server, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metrics.NewCollector(source))
	reg.MustRegister(extra...)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !healthy() {
			http.Error(w, "reconcile loop stalled", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics endpoint %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}

func runHTTP(ctx context.Context, srv *http.Server) error {
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
