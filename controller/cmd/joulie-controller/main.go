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
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"joulie.io/joulie/controller/internal/config"
	"joulie.io/joulie/controller/internal/facility"
	"joulie.io/joulie/controller/internal/reconcile"
	"joulie.io/joulie/pkg/cliapp"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/pkg/generated/informers/externalversions"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/settings"
	"joulie.io/joulie/pkg/version"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	app := cliapp.Daemon("joulie-controller", "plan performance and eco nodes and compute their digital twins", append(config.Flags(), settings.ManPageFlag), stdout, stderr,
		func(c *cli.Context) error {
			if c.Bool(settings.ManPageFlag.Name) {
				return settings.WriteManPage(c.App, 8, stdout)
			}
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
	fmt.Fprintln(w, "ok")
}

func (s *state) readyz(w http.ResponseWriter, _ *http.Request) {
	// A standby replica is ready: it is healthy and waiting for the Lease.
	if s.leading.Load() && !s.synced.Load() {
		http.Error(w, "leader: informer caches not synced yet", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	rc, err := restConfig(cfg)
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
	metrics := reconcile.NewMetrics(reg)
	leader := prometheus.NewGauge(prometheus.GaugeOpts{Name: "joulie_controller_leader", Help: "1 while this replica holds the Lease and writes."})
	reg.MustRegister(leader)
	st := &state{interval: cfg.Settings.Interval}

	// The facility and Kepler pollers run on every replica, so a standby
	// that takes over already has current values.
	facilityReading := func() plan.Facility { return plan.Facility{} }
	if cfg.Facility.Enabled {
		poller, err := facility.New(cfg.Facility, reg, log)
		if err != nil {
			return err
		}
		go poller.Run(ctx)
		facilityReading = func() plan.Facility {
			r := poller.Latest()
			return plan.Facility{AmbientTempC: r.AmbientTempC, ITPowerW: r.ITPowerW, PUE: r.PUE}
		}
	}
	var keplerPower func() map[string]plan.NodeReading
	if cfg.Kepler {
		kp, err := facility.NewNodePower(cfg.Facility, cfg.KeplerQuery, cfg.KeplerNodeLabel, log)
		if err != nil {
			return err
		}
		go kp.Run(ctx)
		keplerPower = func() map[string]plan.NodeReading {
			latest := kp.Latest()
			out := make(map[string]plan.NodeReading, len(latest))
			for node, r := range latest {
				out[node] = plan.NodeReading{Watts: r.Watts, Time: r.Time}
			}
			return out
		}
	}

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", st.healthz)
	mux.HandleFunc("/readyz", st.readyz)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if cfg.MetricsAddr != "" {
		l, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("METRICS_ADDR=%s: %w", cfg.MetricsAddr, err)
		}
		log.Info("serving /metrics, /healthz and /readyz", "address", l.Addr().String())
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
	}

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "joulie-controller"})

	lead := func(ctx context.Context) {
		leader.Set(1)
		st.leading.Store(true)
		log.Info("leading: starting informers and the reconcile loop", "identity", cfg.Identity)
		kf := informers.NewSharedInformerFactory(kube, 0)
		jf := externalversions.NewSharedInformerFactory(jc, 0)
		ctrl, err := reconcile.New(kube, jc, kf, jf, reconcile.Options{
			Settings: cfg.Settings, TwinRefresh: cfg.TwinRefresh, Debounce: cfg.Debounce,
			Trends: plan.NewTrends(cfg.TrendWindow), Recorder: recorder, Metrics: metrics, Logger: log,
			Facility: facilityReading, KeplerPower: keplerPower,
			OnSync: func(error) {
				st.synced.Store(true)
				st.lastSync.Store(time.Now().UnixNano())
			},
		})
		if err != nil {
			log.Error("building the controller failed", "err", err)
			return
		}
		kf.Start(ctx.Done())
		jf.Start(ctx.Done())
		defer kf.Shutdown()
		defer jf.Shutdown()
		if err := ctrl.Run(ctx); err != nil {
			log.Error("reconcile loop stopped", "err", err)
		}
	}

	if !cfg.LeaderElect {
		lead(ctx)
		return nil
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, cfg.LeaseNamespace, cfg.LeaseName,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: cfg.Identity})
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
			OnStartedLeading: lead,
			OnStoppedLeading: func() {
				leader.Set(0)
				st.leading.Store(false)
				close(lost)
			},
			OnNewLeader: func(id string) {
				if id != cfg.Identity {
					log.Info("another replica leads; standing by", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	log.Info("waiting for the Lease", "lease", cfg.LeaseNamespace+"/"+cfg.LeaseName, "identity", cfg.Identity)
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
	log.Info("stopped")
	return nil
}

func restConfig(cfg config.Config) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if cfg.Kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("client configuration (KUBECONFIG=%q): %w", cfg.Kubeconfig, err)
	}
	rc.QPS, rc.Burst = float32(cfg.QPS), cfg.Burst
	rc.UserAgent = "joulie-controller/" + version.Version
	return rc, nil
}
