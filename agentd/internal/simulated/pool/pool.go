// Package pool is the agent seed's pool mode: one process drives many
// logical nodes through the HTTP backend, for simulated scale runs. It
// lists the nodes matching pool.nodeSelector, keeps the ones its shard
// owns (pool.shards, pool.shardIndex: a hash of the node name, so
// processes split the nodes without talking to each other), and runs for
// each one the same agent loop and cluster sync a real node's daemon runs,
// over a simulator reached at the configured URLs with {node} replaced.
//
// The pool authenticates as its own identity (not an agent's, whose
// admission policy limits it to one node), which needs list on nodes,
// list and watch on pods, and the agent's rights on every selected
// node's objects.
//
// Each node's agent has the eco guard a real node's has: the pool follows
// the pods bound to any node with one watch (kubesync.NewBoundPods), and
// a node's agent refuses an eco target while a performance pod runs on
// its node, woken at once when one arrives.
package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/kubesync"
	"joulie.io/joulie/agentd/internal/lastcheck"
	"joulie.io/joulie/agentd/internal/simulated"
	"joulie.io/joulie/agentd/internal/wol"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	client "joulie.io/joulie/pkg/generated/clientset/versioned/typed/joulie/v1alpha1"
	"joulie.io/joulie/pkg/version"
)

// Resync is how often the pool lists its nodes: new nodes join, removed
// ones stop, within this time.
const Resync = 10 * time.Second

// Pool runs the nodes of one shard.
type Pool struct {
	cfg  config.Config
	log  *slog.Logger
	cs   client.JoulieV1alpha1Interface
	meta metadata.Interface
	pods *kubesync.NodePods // the pods bound to any node, for the eco guard
	// podReader reads a node's pods live for the last check before a
	// park switches the simulated node off.
	podReader dynamic.Interface

	mu    sync.Mutex
	nodes map[string]*member
}

type member struct {
	agent  *agent.Agent
	cancel context.CancelFunc
	done   chan struct{}
}

// New builds the pool's clients from the configuration.
func New(cfg config.Config, log *slog.Logger) (*Pool, error) {
	rc, err := kubesync.RestConfig(cfg)
	if err != nil {
		return nil, err
	}
	// A pool speaks for many nodes; give it the room of that many agents.
	rc.QPS, rc.Burst = 50, 100
	cs, err := client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	p := &Pool{cfg: cfg, log: log, cs: cs, meta: meta, pods: kubesync.NewBoundPods(dc), podReader: dc, nodes: map[string]*member{}}
	p.pods.OnNodeChange(p.kick)
	return p, nil
}

// kick wakes node's agent, if the pool runs it: a performance pod came
// or went there.
func (p *Pool) kick(node string) {
	p.mu.Lock()
	m := p.nodes[node]
	p.mu.Unlock()
	if m != nil {
		m.agent.Kick()
	}
}

// Run drives the shard's nodes until ctx ends, then stops them.
func (p *Pool) Run(ctx context.Context) error {
	var following sync.WaitGroup
	following.Go(func() { p.pods.Run(ctx) })
	defer following.Wait()
	t := time.NewTicker(Resync)
	defer t.Stop()
	for {
		if err := p.reconcile(ctx); err != nil {
			p.log.Warn("listing the pool's nodes failed; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			p.stopAll()
			return nil
		case <-t.C:
		}
	}
}

// reconcile starts the owned nodes that are not running and stops the
// ones no longer selected or owned.
func (p *Pool) reconcile(ctx context.Context) error {
	list, err := p.meta.Resource(simulated.Nodes).List(ctx, metav1.ListOptions{LabelSelector: p.cfg.Pool.NodeSelector})
	if err != nil {
		return fmt.Errorf("list nodes %q: %w", p.cfg.Pool.NodeSelector, err)
	}
	want := map[string]bool{}
	for _, n := range list.Items {
		if p.cfg.Pool.Owns(n.Name) {
			want[n.Name] = true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, m := range p.nodes {
		if !want[name] {
			p.log.Info("node left the pool", "node", name)
			m.cancel()
			<-m.done
			delete(p.nodes, name)
		}
	}
	for name := range want {
		if _, ok := p.nodes[name]; ok {
			continue
		}
		m, err := p.start(ctx, name, metaOf(list.Items, name))
		if err != nil {
			p.log.Warn("simulated node not started; retrying", "node", name, "err", err)
			continue
		}
		p.nodes[name] = m
		p.log.Info("node joined the pool", "node", name)
	}
	return nil
}

func (p *Pool) start(ctx context.Context, node string, meta metav1.PartialObjectMetadata) (*member, error) {
	hw, err := simulated.Open(simulated.Endpoints(p.cfg.HTTP, node), p.cfg, meta.Labels[joulie.LabelHWCPUModel],
		simulated.Network(meta.Annotations[joulie.AnnotationHWMACs]))
	if err != nil {
		return nil, err
	}
	// A park switches the simulated node off through the simulator, never
	// the host this pool runs on; parking.allowPowerOff still vetoes it.
	// The park record is kept per node, so a restarted pool does not
	// switch a parked node off twice. Magic packets for simulated MACs go
	// to parking.wakeAddress: point it at the simulator's listener (the
	// demo's fleet has one) rather than the LAN's broadcast.
	addrs, _ := wol.ParseAddresses(p.cfg.Parking.WakeAddress) // validated with the config
	a := agent.New(hw, agent.Options{
		Node: node, Interval: p.cfg.ReconcileInterval.Duration,
		Failsafe: string(p.cfg.Failsafe), FailsafeTimeout: p.cfg.FailsafeTimeout.Duration,
		KeepCapsOnStop: p.cfg.KeepCapsOnStop, Version: version.Version, Logger: p.log.With("node", node),
		Parking: agent.Parking{
			PowerOff: hw.PowerOff, AllowPowerOff: p.cfg.Parking.AllowPowerOff,
			// The last check as on a real node, from the API server
			// alone: a simulated node has no kubelet to ask.
			CheckEmpty: func(ctx context.Context) (string, string) {
				pods, err := kubesync.BoundPods(ctx, p.podReader, node)
				return lastcheck.Check(lastcheck.Kubelet{Off: true}, lastcheck.API{Pods: pods, Err: err}).Answer()
			},
			StateDir:  filepath.Join(p.cfg.StateDir, "pool", node),
			WakeOnLAN: wol.Sender{Addresses: addrs}.Send,
		},
		// The eco guard, as on a real node.
		PerformancePods: func() ([]string, error) { return p.pods.PerformancePodsOn(node) },
	})
	if err := a.Start(ctx); err != nil {
		// Stopped during start-up: put back what it may have written.
		return nil, errors.Join(err, a.Stop())
	}
	syncer := kubesync.NewWithClient(p.cs, node, a, kubesync.Options{
		Interval: p.cfg.ReconcileInterval.Duration, Probe: p.cfg.FailsafeTimeout.Duration / 4, Logger: p.log.With("node", node)})
	mctx, cancel := context.WithCancel(ctx)
	m := &member{agent: a, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); a.Run(mctx) }()
		go func() {
			defer wg.Done()
			if err := syncer.Run(mctx); err != nil {
				p.log.Warn("cluster sync stopped", "node", node, "err", err)
			}
		}()
		wg.Wait()
		_ = a.Stop()
	}()
	return m, nil
}

func (p *Pool) stopAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, m := range p.nodes {
		m.cancel()
		<-m.done
		delete(p.nodes, name)
	}
}

// Snapshots returns every running node's state, sorted by node, for
// metrics.
func (p *Pool) Snapshots() []agent.Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]agent.Snapshot, 0, len(p.nodes))
	for _, m := range p.nodes {
		out = append(out, m.agent.Snapshot())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// Nodes is the number of nodes running.
func (p *Pool) Nodes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.nodes)
}

func metaOf(nodes []metav1.PartialObjectMetadata, name string) metav1.PartialObjectMetadata {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return metav1.PartialObjectMetadata{}
}
