// Package kubesync keeps one node's agent in step with the cluster, using
// the node-scoped identity of its kubeconfig:
//
//   - the node's NodePowerProfile is watched by an informer filtered to its
//     own name, so a new target reaches the agent within a second;
//   - the agent's results go to NodePowerProfile.status only when they
//     change, measured power at most once a minute or on a change over 10%;
//     a park's power-off waits until the status saying parked is written;
//   - NodeHardware is published when the hardware changes and refreshed by
//     a slow heartbeat;
//   - a light probe (one GET of the profile every failsafeTimeout/4)
//     confirms the API server still answers. Informer resyncs replay the
//     local cache and prove nothing, so they never refresh the target's
//     freshness; the probe does, and its failures start the failsafe
//     clock.
package kubesync

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/config"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	client "joulie.io/joulie/pkg/generated/clientset/versioned/typed/joulie/v1alpha1"
	listers "joulie.io/joulie/pkg/generated/listers/joulie/v1alpha1"
	"joulie.io/joulie/pkg/kubeclient"
	"joulie.io/joulie/pkg/version"
)

// Options tune a Syncer; zero values take the defaults.
type Options struct {
	// Interval is how often status and hardware are compared with what
	// was written (the reconcile interval).
	Interval time.Duration
	// Probe is how often the API server is asked for the profile
	// (failsafeTimeout/4, at most 1m).
	Probe time.Duration
	// Heartbeat refreshes NodeHardware even when nothing changed (10m).
	Heartbeat time.Duration
	Logger    *slog.Logger
	Now       func() time.Time
}

// Syncer syncs one node.
type Syncer struct {
	cs    client.JoulieV1alpha1Interface
	node  string
	agent *agent.Agent
	opts  Options
	log   *slog.Logger

	writtenStatus *joulie.NodePowerProfileStatus
	publishedPow  *joulie.MeasuredPower
	writtenHW     *joulie.NodeHardwareStatus
	hwAt          time.Time
}

// New builds the syncer of a daemon from its configuration.
func New(cfg config.Config, a *agent.Agent, log *slog.Logger) (*Syncer, error) {
	rc, err := RestConfig(cfg)
	if err != nil {
		return nil, err
	}
	cs, err := client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", rc.Host, err)
	}
	probe := cfg.FailsafeTimeout.Duration / 4
	return NewWithClient(cs, cfg.NodeName, a, Options{Interval: cfg.ReconcileInterval.Duration, Probe: probe, Logger: log}), nil
}

// RestConfig is the agent's client configuration from its kubeconfig.
// It is built here rather than by the config package, as the
// controller's and the extender's are, because joulie-agentctl links
// that package and has no use for client-go.
func RestConfig(cfg config.Config) (*rest.Config, error) {
	rc, err := kubeclient.Config(cfg.Kubeconfig, "--kubeconfig / JOULIE_KUBECONFIG", "joulie-agentd/"+version.Version+" ("+cfg.NodeName+")")
	if err != nil {
		return nil, err
	}
	// One node's agent makes a handful of requests a minute; a low limit
	// keeps a fleet of them from crowding the API server on restarts.
	rc.QPS, rc.Burst = 5, 10
	return rc, nil
}

// NewWithClient builds a syncer over the Joulie API group's typed client.
// The agent deliberately uses the group client and a hand-built informer
// rather than the full clientset and informer factory: those link
// client-go's discovery and every built-in API group, which would double
// the daemon's resident size on every host.
func NewWithClient(cs client.JoulieV1alpha1Interface, node string, a *agent.Agent, o Options) *Syncer {
	if o.Interval <= 0 {
		o.Interval = 5 * time.Second
	}
	if o.Probe <= 0 || o.Probe > time.Minute {
		o.Probe = time.Minute
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Syncer{cs: cs, node: node, agent: a, opts: o, log: o.Logger}
}

// Run syncs until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.node).String()
	}
	profiles := s.cs.NodePowerProfiles()
	// The wrapper lets a client that cannot stream a list as watch events
	// (client-go's fakes) say so; the API server's clients can.
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			byName(&o)
			return profiles.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			byName(&o)
			return profiles.Watch(ctx, o)
		},
	}, s.cs), &joulie.NodePowerProfile{}, 0, cache.Indexers{})
	lister := listers.NewNodePowerProfileLister(inf.GetIndexer())
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		s.agent.SyncFailed(fmt.Errorf("watch NodePowerProfile %s: %w", s.node, err))
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.desired(obj) },
		UpdateFunc: func(_, obj any) {
			s.desired(obj)
		},
		DeleteFunc: func(any) {
			s.log.Info("NodePowerProfile deleted; restoring the original settings", "node", s.node)
			s.agent.ClearDesired()
		},
	}); err != nil {
		return err
	}
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	if _, err := lister.Get(s.node); apierrors.IsNotFound(err) {
		s.log.Info("no NodePowerProfile for this node yet; nothing is enforced", "node", s.node)
		s.agent.ClearDesired()
	}

	tick := time.NewTicker(s.opts.Interval)
	defer tick.Stop()
	probe := time.NewTicker(s.opts.Probe)
	defer probe.Stop()
	s.publish(ctx, lister.Get)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			s.publish(ctx, lister.Get)
		case <-probe.C:
			s.probe(ctx)
		}
	}
}

func (s *Syncer) desired(obj any) {
	p, ok := obj.(*joulie.NodePowerProfile)
	if !ok || p.Name != s.node {
		return
	}
	s.agent.SetDesired(p.Spec, p.Generation)
}

// probe asks the API server for the profile: an answer, even NotFound,
// confirms the target in force.
func (s *Syncer) probe(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := s.cs.NodePowerProfiles().Get(ctx, s.node, metav1.GetOptions{ResourceVersion: ""})
	if err != nil && !apierrors.IsNotFound(err) {
		s.agent.SyncFailed(fmt.Errorf("get NodePowerProfile %s: %w", s.node, err))
		return
	}
	s.agent.SyncSucceeded()
}

// publish writes status and hardware when they differ from what was
// written last.
func (s *Syncer) publish(ctx context.Context, get func(string) (*joulie.NodePowerProfile, error)) {
	snap := s.agent.Snapshot()
	if p, err := get(s.node); err == nil && !snap.LastReconcile.IsZero() && snap.Source != agent.SourceNone {
		st := snap.ProfileStatus(s.publishedPow)
		if s.writtenStatus == nil || !reflect.DeepEqual(*s.writtenStatus, st) {
			upd := p.DeepCopy()
			upd.Status = st
			if _, err := s.cs.NodePowerProfiles().UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: "joulie-agentd"}); err != nil {
				s.log.Warn("writing NodePowerProfile status failed; retrying next tick", "node", s.node, "err", err)
				if !apierrors.IsConflict(err) {
					s.agent.SyncFailed(err)
				}
			} else {
				s.writtenStatus, s.publishedPow = &st, st.MeasuredPower
			}
		}
		// A park powers the host off only once the cluster knows: the
		// status saying parked, caps restored, is written first.
		if s.writtenStatus != nil && reflect.DeepEqual(*s.writtenStatus, st) && st.PowerState == joulie.PowerParked {
			s.agent.ParkReported(ctx)
		}
	}
	s.publishHardware(ctx)
}

func (s *Syncer) publishHardware(ctx context.Context) {
	now := s.opts.Now()
	hw := s.agent.HardwareStatus()
	cmp := hw
	cmp.LastUpdated = metav1.Time{}
	if s.writtenHW != nil && reflect.DeepEqual(*s.writtenHW, cmp) && now.Sub(s.hwAt) < s.opts.Heartbeat {
		return
	}
	client := s.cs.NodeHardwares()
	cur, err := client.Get(ctx, s.node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cur, err = client.Create(ctx, &joulie.NodeHardware{ObjectMeta: metav1.ObjectMeta{Name: s.node}}, metav1.CreateOptions{FieldManager: "joulie-agentd"})
	}
	if err != nil {
		s.log.Warn("publishing NodeHardware failed; retrying next tick", "node", s.node, "err", err)
		return
	}
	upd := cur.DeepCopy()
	upd.Status = hw
	if _, err := client.UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: "joulie-agentd"}); err != nil {
		s.log.Warn("publishing NodeHardware status failed; retrying next tick", "node", s.node, "err", err)
		return
	}
	s.writtenHW, s.hwAt = &cmp, now
	s.log.Debug("NodeHardware published", "node", s.node, "quality", hw.Quality)
}
