// Command joulie-agentctl is the operator's view of joulie-agentd on a host.
//
// For now it carries the verbs that need no running daemon: `catalog`
// resolves this host's CPU, or given model names, against Joulie's hardware
// catalog, so an operator can see which figures Joulie will plan with.
//
// Exit codes: 0 success, 1 runtime failure, 2 bad usage.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

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
	app := newApp(stdout, stderr)
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

func newApp(stdout, stderr io.Writer) *cli.App {
	onUsageError := func(_ *cli.Context, err error, _ bool) error {
		return usageError("%v", err)
	}
	commands := []*cli.Command{catalogCommand()}
	// Each command parses its own flags, so each needs the handler that
	// turns a bad flag into exit code 2.
	for _, cmd := range commands {
		cmd.OnUsageError = onUsageError
	}
	return &cli.App{
		Name:            "joulie-agentctl",
		Usage:           "inspect and steer joulie-agentd on this host",
		Version:         version.Version,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		// urfave/cli would exit the process itself on some errors; the
		// exit code is decided in run so tests can see it.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
		Commands:       commands,
	}
}

// usageError is a bad command line: exit code 2.
func usageError(format string, a ...any) error {
	return cli.Exit(fmt.Sprintf(format, a...), exitUsage)
}
