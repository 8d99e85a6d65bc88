// Command joulie-extender is Joulie's kube-scheduler extender: it keeps
// performance pods off eco and draining nodes (POST /filter) and ranks
// nodes by projected power headroom, cooling, power trend and profile
// (POST /prioritize), from the NodeTwins the controller writes. It also
// serves GET /debug/scoring, /readyz, /healthz and /metrics. See extender/README.md.
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
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/urfave/cli/v2"

	"joulie.io/joulie/extender/internal/config"
	"joulie.io/joulie/extender/internal/server"
	"joulie.io/joulie/extender/internal/state"
	"joulie.io/joulie/pkg/cliapp"
	"joulie.io/joulie/pkg/version"
)

// shutdownGrace is how long calls in flight may take to finish on
// SIGTERM; the scheduler's own timeout for an extender call is 5 s.
const shutdownGrace = 10 * time.Second

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	app := cliapp.Daemon("joulie-extender", "energy-aware kube-scheduler extender", config.Flags(), stdout, stderr,
		func(c *cli.Context) error {
			cfg, err := config.FromCLI(c, os.LookupEnv)
			if err != nil {
				return cli.Exit(err.Error(), 2)
			}
			return serve(cfg, stderr)
		})
	return cliapp.Run(app, args, stderr)
}

func serve(cfg config.Config, stderr io.Writer) error {
	log := slog.New(cfg.LogHandler(stderr))
	log.Info("starting", "version", version.Version, "config", cfg)
	rc, err := cfg.RESTConfig()
	if err != nil {
		code := 1
		if errors.Is(err, config.ErrUsage) {
			code = 2
		}
		return cli.Exit(err.Error(), code)
	}
	cache, err := state.NewForConfig(rc, log)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv := server.New(cfg.ServerOptions(), cache.Snapshot, reg, log)

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return cli.Exit(fmt.Sprintf("listen on %s: %v", cfg.Addr, err), 1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	var wg sync.WaitGroup
	wg.Go(func() { cache.Run(ctx) })
	defer wg.Wait()

	log.Info("serving", "addr", ln.Addr().String(), "tls", cfg.Certificate != nil)
	if err := server.Serve(ctx, srv.HTTPServer(), ln, cfg.Certificate, shutdownGrace); err != nil {
		stop()
		return cli.Exit(fmt.Sprintf("serve: %v", err), 1)
	}
	log.Info("stopped")
	return nil
}
