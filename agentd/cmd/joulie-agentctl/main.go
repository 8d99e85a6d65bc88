// Command joulie-agentctl is the operator's view of joulie-agentd on a host.
//
// `status`, `hardware`, `profile` and `restore` ask the running daemon over
// its local socket (--socket, default /run/joulie/agentd.sock). Reading
// needs root or membership in group joulie; `profile set` and `restore`
// change the host and need root. `catalog` needs no daemon: it resolves
// this host's CPU, or given model names, against Joulie's hardware
// catalog, so an operator can see which figures Joulie will plan with.
// `restore --offline` needs no daemon either: it restores from the state
// directory's journal, for systemd's ExecStopPost= and the packages'
// removal scripts, and refuses while a daemon holds that directory.
//
// Every verb takes --output table|json; JSON uses the field names of the
// joulie.io/v1alpha1 API types.
//
// Exit codes: 0 success, 1 runtime failure (including a daemon that is
// not running or refuses the caller), 2 bad usage, 3 needs an operator
// (an offline restore finds a journal it cannot read).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/agentd/internal/localapi"
	"joulie.io/joulie/pkg/cliapp"
	"joulie.io/joulie/pkg/version"
)

// Exit codes of the command-line contract (SPEC.md).
const (
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// run executes the command line and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runAt(args, stdout, stderr, time.Now)
}

// runAt is run with a clock, which the ages in tables are taken against.
func runAt(args []string, stdout, stderr io.Writer, now func() time.Time) int {
	app := newApp(stdout, stderr, now)
	err := app.Run(args)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "joulie-agentctl: %v\n", err)
	var coder cli.ExitCoder
	if errors.As(err, &coder) {
		return coder.ExitCode()
	}
	return exitFailure
}

func newApp(stdout, stderr io.Writer, now func() time.Time) *cli.App {
	onUsageError := func(_ *cli.Context, err error, _ bool) error {
		return usageError("%v", err)
	}
	commands := []*cli.Command{
		statusCommand(now),
		hardwareCommand(),
		podsCommand(),
		profileCommand(),
		restoreCommand(),
		catalogCommand(),
	}
	// Each command parses its own flags, so each needs the handler that
	// turns a bad flag into exit code 2.
	var setHandler func([]*cli.Command)
	setHandler = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			cmd.OnUsageError = onUsageError
			setHandler(cmd.Subcommands)
		}
	}
	setHandler(commands)
	return &cli.App{
		Name:      "joulie-agentctl",
		Usage:     "inspect and steer joulie-agentd on this host",
		UsageText: "joulie-agentctl [--socket PATH] COMMAND [--output table|json] [OPTIONS]",
		Description: "status, hardware, pods, profile and restore ask the running joulie-agentd over its local socket. " +
			"Members of group joulie may read; profile set and restore need root. catalog and " +
			"restore --offline need no daemon. --output json uses the field names of the joulie.io/v1alpha1 API types.\n\n" +
			"Exit status: 0 success, 1 runtime failure (including a daemon that is not running or refuses the caller), 2 bad usage, " +
			"3 needs an operator (restore --offline or --forget finds a journal it cannot read; the message says what to do).",
		Version:         version.Version,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		// urfave/cli would exit the process itself on some errors; the
		// exit code is decided in run so tests can see it.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "socket", Value: localapi.DefaultSocketPath, EnvVars: []string{"JOULIE_SOCKET"},
				Usage: "joulie-agentd's local socket", TakesFile: true},
			cliapp.ManPageFlag,
		},
		Commands: commands,
		// Without a command: the manual page for the package build, else
		// help. An unknown command lands here too, and is bad usage.
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError("unknown command %q (see --help)", c.Args().First())
			}
			if !c.Bool(cliapp.ManPageFlag.Name) {
				return cli.ShowAppHelp(c)
			}
			// The packages build joulie-agentctl.1 with it.
			return cliapp.WriteManPage(c.App, 1, c.App.Writer)
		},
	}
}

// usageError is a bad command line: exit code 2.
func usageError(format string, a ...any) error {
	return cli.Exit(fmt.Sprintf(format, a...), exitUsage)
}
