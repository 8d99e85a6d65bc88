package config_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/agentd/internal/config"
)

// The daemon's main: bad configuration exits with code 2, the effective
// configuration is logged once, and SIGHUP reloads it with the start
// flags still in force.
func ExampleFromCLI() {
	app := &cli.App{
		Name:  "joulie-agentd",
		Flags: config.Flags(),
		Action: func(c *cli.Context) error {
			cfg, err := config.FromCLI(c, os.LookupEnv)
			if err != nil {
				return err // wraps config.ErrUsage
			}
			log := slog.New(cfg.LogHandler(os.Stderr))
			log.Info("starting", "config", cfg)

			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			for range hup {
				next, err := cfg.Reload()
				if err != nil {
					log.Error("configuration not reloaded; keeping the running one", "err", err)
					continue
				}
				cfg = next
				log.Info("reloaded", "config", cfg)
			}
			return nil
		},
	}
	if err := app.Run(os.Args); err != nil {
		code := 1
		if errors.Is(err, config.ErrUsage) {
			code = 2
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(code)
	}
}
