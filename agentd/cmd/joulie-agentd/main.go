// Command joulie-agentd is Joulie's host daemon: it discovers the host's
// CPU and GPU power controls, enforces the node's power target (from the
// cluster's NodePowerProfile, or from its config file in standalone mode)
// and reports what it applied. See agentd/README.md.
//
// Exit codes: 0 success, 1 runtime failure, 2 bad usage or bad config.
package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/daemon"
	"joulie.io/joulie/agentd/internal/kubesync"
	"joulie.io/joulie/pkg/cliapp"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	app := cliapp.Daemon("joulie-agentd", "enforce Joulie power caps on this host", config.Flags(), stdout, stderr,
		func(c *cli.Context) error {
			cfg, err := config.FromCLI(c)
			if err != nil {
				code := 1
				if errors.Is(err, config.ErrUsage) {
					code = 2
				}
				return cli.Exit(err.Error(), code)
			}
			log := slog.New(cfg.NewLogHandler(stderr))
			log.Info("configuration", "config", cfg)
			if cfg.Pool.Enabled {
				if err := daemon.RunPool(context.Background(), cfg, log); err != nil {
					return cli.Exit(err.Error(), 1)
				}
				return nil
			}
			d, err := daemon.New(cfg, log, newSyncer, kubesync.Route)
			if err != nil {
				return cli.Exit(err.Error(), 1)
			}
			if err := d.Run(context.Background()); err != nil {
				return cli.Exit(err.Error(), 1)
			}
			return nil
		})
	return cliapp.Run(app, args, stderr)
}

// newSyncer builds the cluster sync; a nil *Syncer must not become a
// non-nil interface, hence the explicit error path.
func newSyncer(cfg config.Config, a *agent.Agent, log *slog.Logger) (daemon.Syncer, error) {
	s, err := kubesync.New(cfg, a, log)
	if err != nil {
		return nil, err
	}
	return s, nil
}
