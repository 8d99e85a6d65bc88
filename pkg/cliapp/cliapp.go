// Package cliapp gives Joulie's daemons one command-line shape and the exit
// codes SPEC.md promises operators and tests: 0 success, 1 runtime
// failure, 2 bad usage or bad configuration, and 3 (ExitNeedsOperator)
// where the agent must not be retried; and one way to build their logger
// from their logLevel and logFormat keys.
package cliapp

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/pkg/version"
)

// ExitNeedsOperator is the exit status of joulie-agentd and joulie-agentctl
// when retrying cannot help until an operator acts, such as a corrupt
// journal of original power settings. joulie-agentd.service lists it in
// RestartPreventExitStatus=, so systemd leaves the unit failed instead of
// restarting it every few seconds for ever.
const ExitNeedsOperator = 3

// ManPageFlag prints the manual page instead of running; the packages
// and images build each program's page with it, so the page always
// matches the flags. Hidden: it is for the build, not for operators.
var ManPageFlag = &cli.BoolFlag{Name: "man-page", Hidden: true}

// WriteManPage renders app's manual page (troff) in section to w.
func WriteManPage(app *cli.App, section int, w io.Writer) error {
	page, err := app.ToManWithSection(section)
	if err != nil {
		return cli.Exit(fmt.Sprintf("render the manual page: %v", err), 1)
	}
	_, err = io.WriteString(w, page)
	return err
}

// Daemon returns an app that takes every setting as a flag (or its
// environment variable) and no arguments, and reports usage errors with
// exit code 2. action should return cli.Exit errors with code 1 or 2.
// --man-page prints the daemon's manual page (section 8) instead of
// running action.
func Daemon(name, usage string, flags []cli.Flag, stdout, stderr io.Writer, action cli.ActionFunc) *cli.App {
	return &cli.App{
		Name: name, Usage: usage, Version: version.Version,
		Writer: stdout, ErrWriter: stderr, Flags: append(flags, ManPageFlag), HideHelpCommand: true,
		// Run prints the error once, with the program's name.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   func(_ *cli.Context, err error, _ bool) error { return cli.Exit(err.Error(), 2) },
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cli.Exit(fmt.Sprintf("unexpected argument %q; every setting is a flag (see --help)", c.Args().First()), 2)
			}
			if c.Bool(ManPageFlag.Name) {
				return WriteManPage(c.App, 8, stdout)
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

// LogHandler is the slog handler of a program's logLevel and logFormat
// keys, writing to w: JSON when format is "json", else text, at level, a
// name slog.Level reads ("info", "debug"). The programs check both keys
// when they load their configuration; a level that does not read (a
// configuration nobody checked) logs at info rather than failing.
func LogHandler(w io.Writer, level, format string) slog.Handler {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}
