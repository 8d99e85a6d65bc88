package daemon

// This file is the daemon's one seam to package simulated: the node's
// power lives in a simulator instead of in its hardware when backend is
// http, when a TelemetryProfile routes the node there, or in pool mode.
// The rest of the daemon drives the host.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/simulated"
	"joulie.io/joulie/agentd/internal/simulated/pool"
	"joulie.io/joulie/agentd/internal/systemd"
)

// openSimulated opens the simulator the http.* keys name (backend: http).
func openSimulated(cfg config.Config) (agent.Hardware, error) {
	hw, err := simulated.Open(simulated.Endpoints(cfg.HTTP, cfg.NodeName), cfg, "", nil)
	if err != nil {
		return nil, err // not a nil *Host inside the interface
	}
	return hw, nil
}

// routed opens the simulator a TelemetryProfile routes the node to, or
// returns nil to stay on the host. Routing is optional: an API server that
// cannot be asked, or a simulator that does not answer, leaves the node on
// its own hardware, and the log says why.
func routed(ctx context.Context, cfg config.Config, log *slog.Logger) agent.Hardware {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	hc, profile, ok, err := simulated.Route(ctx, cfg, log)
	switch {
	case err != nil:
		log.Warn("could not look up TelemetryProfiles; using the host's backends", "err", err)
		return nil
	case !ok:
		return nil
	}
	hw, err := simulated.Open(hc, cfg, "", nil)
	if err != nil {
		log.Error("TelemetryProfile routes this node to an HTTP backend that does not work; using the host's backends",
			"profile", profile, "err", err)
		return nil
	}
	log.Info("TelemetryProfile routes this node to an HTTP backend", "profile", profile,
		"telemetry", hc.Telemetry.URL, "control", hc.Control.URL)
	return hw
}

// RunPool runs pool mode until ctx ends (CatchSignals ends it on SIGTERM
// or SIGINT). It serves /metrics for every node it drives and talks to
// systemd; it has no local socket, since it speaks for many nodes. Pool
// mode does not reload: a SIGHUP on reload is logged and otherwise
// ignored.
func RunPool(ctx context.Context, reload <-chan os.Signal, cfg config.Config, log *slog.Logger) error {
	p, err := pool.New(cfg, log)
	if err != nil {
		return err
	}
	go func() {
		for {
			select {
			case <-reload:
				log.Warn("pool mode does not reload its configuration; restart joulie-agentd to apply changes")
			case <-ctx.Done():
				return
			}
		}
	}()
	notify := systemd.NewNotifier()
	if cfg.MetricsAddress != "" {
		srv, err := newMetricsServer(cfg.MetricsAddress, p.Snapshots, func() bool { return true }, log)
		if err != nil {
			return err
		}
		go func() { _ = runHTTP(ctx, srv) }()
	}
	go func() { _ = notify.Watchdog(ctx, nil) }()
	_ = notify.Ready(fmt.Sprintf("pool shard %d/%d: nodes %q", cfg.Pool.ShardIndex, cfg.Pool.Shards, cfg.Pool.NodeSelector))
	log.Info("joulie-agentd pool ready", "selector", cfg.Pool.NodeSelector, "shard", cfg.Pool.ShardIndex, "shards", cfg.Pool.Shards)
	err = p.Run(ctx)
	_ = notify.Stopping("stopping the pool's nodes")
	return err
}
