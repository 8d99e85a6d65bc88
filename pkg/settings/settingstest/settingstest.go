// Package settingstest holds what the configuration tests of
// joulie-agentd, joulie-controller and joulie-extender need from
// pkg/settings beyond loading: a command line run the way the program
// would run it, and the checks that keep the documents and generated
// files (the READMEs' key tables, the chart's README and rendered
// configuration, the example file) true to a key table. Tests only:
// nothing in a binary imports it, so pkg/settings stays the loader.
package settingstest

import (
	"io"

	"github.com/urfave/cli/v2"
)

// RunCLI parses args (without the program's name) with flags, calls load
// with the parsed command line, and returns what the cli package said of
// the flags themselves (an unknown flag, a value it refuses).
func RunCLI(name string, flags []cli.Flag, args []string, load func(*cli.Context)) error {
	app := &cli.App{
		Name: name, Flags: flags, Writer: io.Discard, ErrWriter: io.Discard,
		ExitErrHandler: func(*cli.Context, error) {},
		Action: func(c *cli.Context) error {
			load(c)
			return nil
		},
	}
	return app.Run(append([]string{name}, args...))
}
