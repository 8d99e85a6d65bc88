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
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/agentd/internal/agent"
	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/daemon"
	"joulie.io/joulie/agentd/internal/kubesync"
	"joulie.io/joulie/pkg/version"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	app := &cli.App{
		Name:            "joulie-agentd",
		Usage:           "enforce Joulie power caps on this host",
		Version:         version.Version,
		Writer:          stdout,
		ErrWriter:       stderr,
		Flags:           config.Flags(),
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return cli.Exit(err.Error(), 2)
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cli.Exit(fmt.Sprintf("unexpected argument %q; every setting is a flag (see --help)", c.Args().First()), 2)
			}
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
		},
	}
	if err := app.Run(args); err != nil {
		fmt.Fprintf(stderr, "joulie-agentd: %v\n", err)
		var coder cli.ExitCoder
		if errors.As(err, &coder) {
			return coder.ExitCode()
		}
		return 1
	}
	return 0
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
