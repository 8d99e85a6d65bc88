package facility

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"
)

// Node power from Kepler, through the same Prometheus: the twin's
// powerMeasurement source "kepler" for nodes whose agent publishes no
// reading of its own.
const (
	EnvKeplerQuery     = "KEPLER_NODE_POWER_QUERY"
	EnvKeplerNodeLabel = "KEPLER_NODE_LABEL"
	// DefaultKeplerQuery is Kepler's platform energy counter as watts per
	// node.
	DefaultKeplerQuery     = "sum by (node_name) (rate(kepler_node_platform_joules_total[1m]))"
	DefaultKeplerNodeLabel = "node_name"
)

// NodePower is one node's power as Kepler measured it.
type NodePower struct {
	Watts float64
	Time  time.Time
}

// NodePowerPoller reads per-node power from a PromQL query whose series
// are labelled with the node name.
type NodePowerPoller struct {
	cfg      Config
	query    string
	label    string
	endpoint string
	client   *http.Client
	log      *slog.Logger

	mu     sync.RWMutex
	nodes  map[string]NodePower
	failed bool
}

// NewNodePower returns a poller of query, taking the node name from label,
// against cfg's Prometheus, interval and timeout.
func NewNodePower(cfg Config, query, label string, log *slog.Logger) (*NodePowerPoller, error) {
	if err := cfg.validate(true); err != nil {
		return nil, err
	}
	if query == "" || label == "" {
		return nil, fmt.Errorf("%s and %s must not be empty", EnvKeplerQuery, EnvKeplerNodeLabel)
	}
	base, _ := parseBaseURL(cfg.PrometheusURL)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &NodePowerPoller{cfg: cfg, query: query, label: label, endpoint: base.JoinPath("api", "v1", "query").String(),
		client: &http.Client{}, log: log.With("prometheus", cfg.PrometheusURL, "query", query), nodes: map[string]NodePower{}}, nil
}

// Run polls at once and then every interval until ctx ends.
func (p *NodePowerPoller) Run(ctx context.Context) {
	pollEvery(ctx, p.cfg.Interval, p.Poll)
}

// Poll runs the query once. A failed poll keeps the previous readings,
// which age out through their timestamps on the consumer's side.
func (p *NodePowerPoller) Poll(ctx context.Context) error {
	samples, err := instantQuery(ctx, p.client, p.endpoint, p.query, p.cfg.Timeout)
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if !p.failed {
			p.log.Warn("reading node power from Kepler failed; the twin falls back to agent or static power", "err", err)
		}
		p.failed = true
		return err
	}
	if p.failed {
		p.log.Info("reading node power from Kepler works again")
	}
	p.failed = false
	for _, s := range samples {
		node := s.labels[p.label]
		if node == "" || math.IsNaN(s.value) || math.IsInf(s.value, 0) || s.value < 0 {
			continue
		}
		p.nodes[node] = NodePower{Watts: s.value, Time: now}
	}
	return nil
}

// Latest returns a copy of the readings by node.
func (p *NodePowerPoller) Latest() map[string]NodePower {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[string]NodePower, len(p.nodes))
	for k, v := range p.nodes {
		out[k] = v
	}
	return out
}
