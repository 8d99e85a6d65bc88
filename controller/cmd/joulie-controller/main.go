// Command joulie-controller is Joulie's in-cluster decision engine: it
// decides which managed nodes supply performance and which run eco, guards
// the downgrades, writes each node's NodePowerProfile and labels, and
// computes its digital twin (NodeTwin). One replica at a time writes,
// holding a Lease. See controller/README.md.
//
// Exit codes: 0 success, 1 runtime failure, 2 bad usage or bad config.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"joulie.io/joulie/controller/internal/bmc"
	"joulie.io/joulie/controller/internal/config"
	"joulie.io/joulie/controller/internal/facility"
	"joulie.io/joulie/controller/internal/parking"
	"joulie.io/joulie/controller/internal/reconcile"
	"joulie.io/joulie/pkg/cliapp"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/pkg/generated/informers/externalversions"
	"joulie.io/joulie/pkg/plan"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	app := cliapp.Daemon("joulie-controller", "plan performance and eco nodes and compute their digital twins", config.Flags(), stdout, stderr,
		func(c *cli.Context) error {
			cfg, err := config.FromCLI(c, os.LookupEnv)
			if err != nil {
				return cli.Exit(err.Error(), 2)
			}
			log := slog.New(cfg.LogHandler(stderr))
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if err := serve(ctx, cfg, log); err != nil {
				return cli.Exit(err.Error(), 1)
			}
			return nil
		})
	return cliapp.Run(app, args, stderr)
}

// state is what /healthz and /readyz report.
type state struct {
	leading  atomic.Bool
	synced   atomic.Bool
	lastSync atomic.Int64 // unix nanos of the last finished reconcile
	interval time.Duration

	// lastPark is when the parking loop last finished a pass (or, before
	// its first, started), in unix nanos; 0 while parking does not run.
	// parkStall is how long it may go without one: 3 × parking.syncInterval
	// plus a minute, as for the reconcile.
	lastPark  atomic.Int64
	parkStall time.Duration
}

func (s *state) healthz(w http.ResponseWriter, _ *http.Request) {
	// A leader whose loop has not finished a reconcile in three intervals
	// is stuck: let the kubelet restart it so the Lease moves on.
	if s.leading.Load() && s.synced.Load() {
		if last := s.lastSync.Load(); last > 0 && time.Since(time.Unix(0, last)) > 3*s.interval+time.Minute {
			http.Error(w, "reconcile loop stalled", http.StatusServiceUnavailable)
			return
		}
	}
	// So is one whose parking loop is stuck (a pass blocked on an API
	// call that never returns): no node would be woken while it holds
	// the Lease.
	if s.leading.Load() {
		if last := s.lastPark.Load(); last > 0 {
			if since := time.Since(time.Unix(0, last)); since > s.parkStall {
				http.Error(w, fmt.Sprintf("parking loop stalled: no pass finished for %s (limit %s: 3 × parking.syncInterval + 1m)",
					since.Round(time.Second), s.parkStall), http.StatusServiceUnavailable)
				return
			}
		}
	}
	fmt.Fprintln(w, "ok")
}

// parkingStarted and parkingPassed feed the parking loop's liveness to
// /healthz; parkingStopped takes it out when the loop ends with the
// leadership.
func (s *state) parkingStarted() { s.lastPark.Store(time.Now().UnixNano()) }
func (s *state) parkingPassed()  { s.lastPark.Store(time.Now().UnixNano()) }
func (s *state) parkingStopped() { s.lastPark.Store(0) }

func (s *state) readyz(w http.ResponseWriter, _ *http.Request) {
	// A standby replica is ready: it is healthy and waiting for the Lease.
	if s.leading.Load() && !s.synced.Load() {
		http.Error(w, "leader: informer caches not synced yet", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	rc, err := cfg.RESTConfig()
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	jc, err := versioned.NewForConfig(rc)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r := &replica{cfg: cfg, log: log, kube: kube, joulie: jc, bmc: bmc.New(cfg.IPMI, kube.CoreV1().Secrets(cfg.IPMI.SecretNamespace), reg, log), metrics: reconcile.NewMetrics(reg), parkMetrics: parking.NewMetrics(reg),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "joulie_controller_leader", Help: "1 while this replica holds the Lease and writes."}),
		state:  &state{interval: cfg.Plan.Interval, parkStall: 3*cfg.Parking.SyncInterval + time.Minute}}
	reg.MustRegister(r.leader)

	if err := r.startPollers(ctx, reg); err != nil {
		return err
	}
	stopHTTP, err := serveHTTP(cfg.MetricsAddr, reg, r.state, log)
	if err != nil {
		return err
	}
	defer stopHTTP()

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	r.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "joulie-controller"})

	if !cfg.LeaderElect {
		r.lead(ctx)
		return nil
	}
	return r.elect(ctx)
}

// replica is one controller process: the pollers every replica runs, and
// what it needs to lead once it holds the Lease.
type replica struct {
	cfg     config.Config
	log     *slog.Logger
	kube    kubernetes.Interface
	joulie  versioned.Interface
	metrics *reconcile.Metrics
	// parkMetrics are registered on every replica, so the series exist
	// (at zero) before and without parking.
	parkMetrics *parking.Metrics
	// bmc wakes parked nodes through their BMCs; built once, as it
	// registers its metrics.
	bmc      *bmc.Client
	recorder record.EventRecorder
	leader   prometheus.Gauge
	state    *state

	// facility and keplerPower read the pollers' latest values; nil
	// keplerPower when Kepler is not read.
	facility    func() plan.Facility
	keplerPower func() map[string]plan.NodeReading
}

// startPollers starts the facility and Kepler pollers that cfg enables.
// They run on every replica, so a standby that takes over already has
// current values.
func (r *replica) startPollers(ctx context.Context, reg prometheus.Registerer) error {
	r.facility = func() plan.Facility { return plan.Facility{} }
	if r.cfg.Facility.Enabled {
		poller, err := facility.New(r.cfg.Facility, reg, r.log)
		if err != nil {
			return err
		}
		go poller.Run(ctx)
		r.facility = func() plan.Facility {
			f := poller.Latest()
			return plan.Facility{AmbientTempC: f.AmbientTempC, ITPowerW: f.ITPowerW, PUE: f.PUE}
		}
	}
	if r.cfg.Kepler {
		kp, err := facility.NewNodePower(r.cfg.Facility, r.cfg.KeplerQuery, r.cfg.KeplerNodeLabel, r.log)
		if err != nil {
			return err
		}
		go kp.Run(ctx)
		r.keplerPower = func() map[string]plan.NodeReading {
			latest := kp.Latest()
			out := make(map[string]plan.NodeReading, len(latest))
			for node, reading := range latest {
				out[node] = plan.NodeReading{Watts: reading.Watts, Time: reading.Time}
			}
			return out
		}
	}
	return nil
}

// serveHTTP serves /metrics, /healthz and /readyz on addr until stop is
// called; an empty addr serves nothing.
func serveHTTP(addr string, reg *prometheus.Registry, st *state, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", st.healthz)
	mux.HandleFunc("/readyz", st.readyz)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("METRICS_ADDR=%s: %w", addr, err)
	}
	log.Info("serving /metrics, /healthz and /readyz", "address", l.Addr().String())
	go func() { _ = srv.Serve(l) }()
	return func() { _ = srv.Close() }, nil
}

// lead runs the informers and the reconcile loop until ctx ends.
func (r *replica) lead(ctx context.Context) {
	r.setLeading(true)
	r.log.Info("leading: starting informers and the reconcile loop", "identity", r.cfg.Identity)
	kf := informers.NewSharedInformerFactory(r.kube, 0)
	jf := externalversions.NewSharedInformerFactory(r.joulie, 0)
	ctrl, err := reconcile.New(r.kube, r.joulie, kf, jf, reconcile.Options{
		Plan: r.cfg.Plan, TwinRefresh: r.cfg.TwinRefresh, Debounce: r.cfg.Debounce,
		Trends: plan.NewTrends(r.cfg.TrendWindow), Recorder: r.recorder, Metrics: r.metrics, Logger: r.log,
		Facility: r.facility, KeplerPower: r.keplerPower,
		OnSync: func(error) {
			r.state.synced.Store(true)
			r.state.lastSync.Store(time.Now().UnixNano())
		},
	})
	if err != nil {
		r.log.Error("building the controller failed", "err", err)
		return
	}
	var parker *parking.Controller
	if r.cfg.Parking.Enabled {
		// A node's BMC when an admin gave it a BMC Secret, else
		// Wake-on-LAN from an awake neighbour. The nodes' old BMC
		// annotations are ignored, and said to be once per node.
		waker := parking.BMCOrLAN{BMC: r.bmc, LAN: parking.NewWakeOnLAN(r.joulie, kf, jf), CycleOnRetry: r.cfg.Parking.PowerCycleOnRetry}
		legacy := &bmc.LegacyNotice{Namespace: r.cfg.IPMI.SecretNamespace, Recorder: r.recorder, Log: r.log}
		if _, err := kf.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { noticeLegacy(legacy, obj) },
			UpdateFunc: func(_, obj any) { noticeLegacy(legacy, obj) },
		}); err != nil {
			r.log.Error("watching nodes for their BMC annotations failed", "err", err)
			return
		}
		parker, err = parking.New(r.kube, r.joulie, kf, jf, parking.Options{
			Params: r.cfg.Parking.Params, Catalog: r.cfg.Plan.Catalog, Waker: waker,
			SyncInterval: r.cfg.Parking.SyncInterval, Debounce: r.cfg.Debounce,
			Recorder: r.recorder, Metrics: r.parkMetrics, Logger: r.log,
			MaxConcurrentWakes: r.cfg.Parking.MaxConcurrentWakes,
			OnSync:             func(error) { r.state.parkingPassed() },
		})
		if err != nil {
			r.log.Error("building parking failed", "err", err)
			return
		}
	}
	kf.Start(ctx.Done())
	jf.Start(ctx.Done())
	defer kf.Shutdown()
	defer jf.Shutdown()
	if parker != nil {
		// Counted from here: informer caches that never sync stall it too.
		r.state.parkingStarted()
		go func() {
			if err := parker.Run(ctx); err != nil {
				// Left stalling /healthz unless the leadership ended.
				r.log.Error("parking loop stopped", "err", err)
			}
			if ctx.Err() != nil {
				r.state.parkingStopped()
			}
		}()
	}
	if err := ctrl.Run(ctx); err != nil {
		r.log.Error("reconcile loop stopped", "err", err)
	}
}

func noticeLegacy(l *bmc.LegacyNotice, obj any) {
	if n, ok := obj.(*corev1.Node); ok {
		l.Check(n)
	}
}

func (r *replica) setLeading(leading bool) {
	if leading {
		r.leader.Set(1)
	} else {
		r.leader.Set(0)
	}
	r.state.leading.Store(leading)
}

// elect waits for the Lease, leads while it holds it, and returns when ctx
// ends or the Lease is lost.
func (r *replica) elect(ctx context.Context) error {
	cfg := r.cfg
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, cfg.LeaseNamespace, cfg.LeaseName,
		r.kube.CoreV1(), r.kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: cfg.Identity})
	if err != nil {
		return err
	}
	lost := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		// A stopping leader hands the Lease back so a standby takes over
		// at once instead of after the lease duration.
		ReleaseOnCancel: true, Name: "joulie-controller",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: r.lead,
			OnStoppedLeading: func() {
				r.setLeading(false)
				close(lost)
			},
			OnNewLeader: func(id string) {
				if id != cfg.Identity {
					r.log.Info("another replica leads; standing by", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	r.log.Info("waiting for the Lease", "lease", cfg.LeaseNamespace+"/"+cfg.LeaseName, "identity", cfg.Identity)
	le.Run(ctx)
	select {
	case <-lost:
		if ctx.Err() == nil {
			// Leadership lost while running: exit so the restart starts
			// clean (informers, in-memory trends) as a standby.
			return errors.New("lost the Lease; exiting so a clean restart stands by")
		}
	default:
	}
	r.log.Info("stopped")
	return nil
}
