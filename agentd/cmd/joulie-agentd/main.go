// Command joulie-agentd is Joulie's host daemon: it discovers the host's
// CPU and GPU power controls, enforces the node's power target (from the
// cluster's NodePowerProfile, or from its config file in standalone mode)
// and reports what it applied. See agentd/README.md.
//
// Exit codes: 0 success, 1 runtime failure, 2 bad usage or bad config,
// 3 needs an operator (a journal of original settings it cannot read).
package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/daemon"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/systemd"
	"joulie.io/joulie/pkg/cliapp"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	app := cliapp.Daemon("joulie-agentd", "enforce Joulie power caps on this host", config.Flags(), stdout, stderr,
		func(c *cli.Context) error {
			// Before anything can write a power control, so that a stop
			// signal at any later moment ends in the restore.
			ctx, reload, release := daemon.CatchSignals(context.Background())
			defer release()
			cfg, err := config.FromCLI(c, os.LookupEnv)
			if err != nil {
				code := 1
				if errors.Is(err, config.ErrUsage) {
					code = 2
				}
				return cli.Exit(err.Error(), code)
			}
			log := slog.New(cfg.LogHandler(stderr))
			log.Info("configuration", "config", cfg)
			if cfg.Pool.Enabled {
				if err := daemon.RunPool(ctx, reload, cfg, log); err != nil {
					return cli.Exit(err.Error(), 1)
				}
				return nil
			}
			d, err := daemon.New(ctx, cfg, log)
			if errors.Is(err, state.ErrUnreadable) {
				// `systemctl status` shows it; the unit's
				// RestartPreventExitStatus= stops the restarts.
				_ = systemd.NewNotifier().Status(err.Error())
				return cli.Exit(err.Error(), cliapp.ExitNeedsOperator)
			} else if err != nil {
				return cli.Exit(err.Error(), 1)
			}
			if err := d.Run(ctx, reload); err != nil {
				return cli.Exit(err.Error(), 1)
			}
			return nil
		})
	app.UsageText = "joulie-agentd [--config FILE] [OPTIONS]"
	app.Description = "joulie-agentd discovers the host's CPU and GPU power controls (RAPL, cpufreq, NVML, amd-smi, " +
		"amdgpu hwmon), enforces the node's power target and reports what it applied. With a kubeconfig the " +
		"target is the node's NodePowerProfile; without one, the standalone profile of the configuration.\n\n" +
		"Every setting is a key of the YAML file (default " + config.DefaultPath + "), a flag and a JOULIE_* " +
		"environment variable; flags win over variables, variables over the file.\n\n" +
		"The original value of every control is journaled under the state directory before the first write " +
		"and restored on SIGTERM or SIGINT, unless keepCapsOnStop is set, even when the signal comes during " +
		"start-up; after a crash, the next start (or joulie-agentctl restore --offline) restores it. SIGHUP " +
		"reloads the configuration; during start-up it waits until the daemon is ready. Under systemd it " +
		"reports readiness and status, pings the watchdog and serves the socket systemd passes.\n\n" +
		"Exit status: 0 success, 1 runtime failure, 2 bad usage or bad configuration, 3 needs an operator: " +
		"the journal of original settings cannot be read (the message says which file and what to do); " +
		"joulie-agentd.service does not restart it."
	return cliapp.Run(app, args, stderr)
}
