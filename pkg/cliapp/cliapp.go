// Package cliapp gives Joulie's daemons one command-line shape and the exit
// codes SPEC.md promises operators and tests: 0 success, 1 runtime
// failure, 2 bad usage or bad configuration, and 3 (ExitNeedsOperator)
// where the agent must not be retried.
package cliapp

import (
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/pkg/version"
)

// ExitNeedsOperator is the exit status of joulie-agentd and joulie-agentctl
// when retrying cannot help until an operator acts, such as a corrupt
// journal of original power settings. joulie-agentd.service lists it in
// RestartPreventExitStatus=, so systemd leaves the unit failed instead of
// restarting it every few seconds for ever.
const ExitNeedsOperator = 3

// Daemon returns an app that takes every setting as a flag (or its
// environment variable) and no arguments, and reports usage errors with
// exit code 2. action should return cli.Exit errors with code 1 or 2.
func Daemon(name, usage string, flags []cli.Flag, stdout, stderr io.Writer, action cli.ActionFunc) *cli.App {
	return &cli.App{
		Name: name, Usage: usage, Version: version.Version,
		Writer: stdout, ErrWriter: stderr, Flags: flags, HideHelpCommand: true,
		// Run prints the error once, with the program's name.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   func(_ *cli.Context, err error, _ bool) error { return cli.Exit(err.Error(), 2) },
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cli.Exit(fmt.Sprintf("unexpected argument %q; every setting is a flag (see --help)", c.Args().First()), 2)
			}
			return action(c)
		},
	}
}

// Run runs app and returns its exit code, printing a failure on stderr
// prefixed with the program's name. An error that carries no exit code
// comes from the cli package refusing a flag or an environment variable
// (ENABLE_X=maybe), which is bad configuration: 2.
func Run(app *cli.App, args []string, stderr io.Writer) int {
	err := app.Run(args)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", app.Name, err)
	var coder cli.ExitCoder
	if errors.As(err, &coder) {
		return coder.ExitCode()
	}
	return 2
}
