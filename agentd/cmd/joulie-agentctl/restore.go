package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/localapi"
)

func restoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "restore",
		Usage:     "put back every power control the agent changed (root)",
		ArgsUsage: " ",
		Description: "Asks joulie-agentd to write back the original values it recorded\n" +
			"before its first change to each control (RAPL limits, cpufreq\n" +
			"ceilings, GPU power limits) and prints what it did. The daemon keeps\n" +
			"running and says when it enforces a target again (joulie-agentd\n" +
			"pauses enforcement until the target changes).\n\n" +
			"With --offline, the daemon must be stopped: the originals are read\n" +
			"from the journal in the state directory its configuration names and\n" +
			"written back directly. Nothing recorded is success. keepCapsOnStop\n" +
			"is honoured as on the daemon's own stop. joulie-agentd.service runs\n" +
			"this after every stop, so a killed or crashed daemon leaves no caps.\n\n" +
			"Of the configuration, --offline reads only stateDir, hostRoot, the\n" +
			"library paths and keepCapsOnStop (--state-dir and --host-root win over\n" +
			"the file): problems elsewhere in it are warnings, so a configuration\n" +
			"the daemon refuses does not keep the host capped. A file that is not\n" +
			"YAML is refused; skip it with --config \"\" and the two flags.\n\n" +
			"With --forget ID, also with the daemon stopped, the original of one\n" +
			"control that is gone from the host for good (a RAPL zone, a GPU\n" +
			"taken out) is dropped from the journal without writing anything;\n" +
			"until then every restore, and every stop, fails on it. ID is the\n" +
			"CONTROL column of a failed restore (e.g.\n" +
			"intel-rapl:1/constraint_0_power_limit_uw). It refuses while the\n" +
			"control is still on the host, or its backend cannot tell.",
		Flags: []cli.Flag{
			outputFlag(),
			&cli.BoolFlag{Name: "offline", Usage: "restore from the state directory's journal, without the daemon (which must not run)"},
			&cli.StringFlag{Name: "forget", Usage: "drop the journaled original of control `ID`, gone from this host for good, without restoring it (the daemon must not run)"},
			&cli.StringFlag{Name: config.FlagConfig, Usage: "with --offline or --forget: joulie-agentd's configuration file (env " + config.EnvConfig + ")",
				DefaultText: config.DefaultPath, TakesFile: true},
			// Named as joulie-agentd's flags, which config.FromCLIFor reads.
			&cli.StringFlag{Name: "state-dir", Usage: "with --offline or --forget: the state directory, over the configuration's (env JOULIE_STATE_DIR)", TakesFile: true},
			&cli.StringFlag{Name: "host-root", Usage: "with --offline or --forget: the host root, over the configuration's (env JOULIE_HOST_ROOT)", TakesFile: true},
		},
		Action: func(c *cli.Context) error {
			if c.IsSet("forget") {
				if c.NArg() > 0 {
					return usageError("%s takes no arguments (got %q)", c.Command.FullName(), c.Args().First())
				}
				if c.String("forget") == "" {
					return usageError("--forget needs the ID of a recorded control (the CONTROL column of restore)")
				}
				output, err := outputFormat(c)
				if err != nil {
					return err
				}
				return forgetOffline(c, c.String("forget"), output)
			}
			if c.Bool("offline") {
				if c.NArg() > 0 {
					return usageError("%s takes no arguments (got %q)", c.Command.FullName(), c.Args().First())
				}
				output, err := outputFormat(c)
				if err != nil {
					return err
				}
				return restoreOffline(c, output)
			}
			for _, name := range []string{config.FlagConfig, "state-dir", "host-root"} {
				if c.IsSet(name) {
					return usageError("--%s is only used with --offline or --forget; the running daemon has its own", name)
				}
			}
			client, output, err := daemonCommand(c)
			if err != nil {
				return err
			}
			report, err := client.Restore(c.Context)
			var apiErr *localapi.APIError
			// A failed restore still reports what it did restore; any
			// other failure has nothing to show.
			if err != nil && !(errors.As(err, &apiErr) && apiErr.StatusCode == 500) {
				return err
			}
			if output == "json" {
				if werr := writeJSON(c.App.Writer, report); werr != nil {
					return werr
				}
			} else if werr := writeRestore(c.App.Writer, report); werr != nil {
				return werr
			}
			return err
		},
	}
}

func writeRestore(w io.Writer, r localapi.RestoreReport) error {
	var restored, kept []localapi.RecordedControl
	for _, rc := range r.Controls {
		if rc.Error == "" {
			restored = append(restored, rc)
		} else {
			kept = append(kept, rc)
		}
	}
	if r.Restored == 0 && r.Kept == 0 && r.Error == "" {
		fmt.Fprintln(w, "Nothing to restore: joulie-agentd had changed no control.")
	}
	if r.Restored > 0 {
		fmt.Fprintf(w, "Restored %s to the values recorded before Joulie changed them", plural(r.Restored, "control", "controls"))
		if err := writeControls(w, restored, false); err != nil {
			return err
		}
	}
	if r.Kept > 0 {
		fmt.Fprintf(w, "Could not restore %s; the originals stay recorded for the next attempt", plural(r.Kept, "control", "controls"))
		if err := writeControls(w, kept, true); err != nil {
			return err
		}
		if len(kept) > 0 {
			fmt.Fprintln(w, "If a control is gone from this host for good, stop joulie-agentd and drop its original with:\n"+
				"  joulie-agentctl restore --forget CONTROL")
		}
	}
	if r.Message != "" {
		fmt.Fprintln(w, r.Message)
	}
	return nil
}

// writeControls ends the sentence above it, with a list when the daemon
// named the controls.
func writeControls(w io.Writer, controls []localapi.RecordedControl, withError bool) error {
	if len(controls) == 0 {
		fmt.Fprintln(w, ".")
		return nil
	}
	fmt.Fprintln(w, ":")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if withError {
		fmt.Fprintln(tw, "  BACKEND\tCONTROL\tORIGINAL\tERROR")
	} else {
		fmt.Fprintln(tw, "  BACKEND\tCONTROL\tORIGINAL")
	}
	for _, rc := range controls {
		if withError {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", rc.Backend, rc.ID, rc.Original, rc.Error)
		} else {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", rc.Backend, rc.ID, rc.Original)
		}
	}
	return tw.Flush()
}
