package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/pool"
	"joulie.io/joulie/agentd/internal/systemd"
)

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
