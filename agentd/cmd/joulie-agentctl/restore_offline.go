package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/agentd/internal/config"
	"joulie.io/joulie/agentd/internal/host"
	"joulie.io/joulie/agentd/internal/localapi"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/pkg/cliapp"
	"joulie.io/joulie/pkg/version"
)

// restoreOffline puts the journaled originals back without the daemon,
// from the state directory the daemon's configuration names. It is what
// joulie-agentd.service runs as ExecStopPost=, so that a daemon killed by
// SIGKILL, the watchdog or a panic still leaves the host as it found it,
// and what the packages' removal scripts run on a host without systemd.
//
// It takes the state directory's lock first, so it refuses to run beside
// a live daemon. Nothing recorded is success, and it creates nothing; with
// keepCapsOnStop it leaves the caps in force, as the daemon's own stop
// would.
func restoreOffline(c *cli.Context, output string) error {
	cfg, err := offlineConfig(c)
	if err != nil {
		return err
	}
	report := localapi.RestoreReport{}
	write := func() error {
		if output == "json" {
			return writeJSON(c.App.Writer, report)
		}
		return writeRestore(c.App.Writer, report)
	}
	journal := filepath.Join(cfg.StateDir, state.FileName)
	if _, err := os.Stat(journal); errors.Is(err, os.ErrNotExist) {
		return write()
	} else if err != nil {
		return cli.Exit(fmt.Sprintf("journal of original power settings %s: %v", journal, err), exitFailure)
	}

	unlock, err := state.Lock(cfg.StateDir)
	if errors.Is(err, state.ErrLocked) {
		return cli.Exit(fmt.Sprintf("%v: joulie-agentd is running; use joulie-agentctl restore without --offline", err), exitFailure)
	} else if err != nil {
		return cli.Exit(err.Error(), exitFailure)
	}
	defer unlock()

	before, err := recorded(cfg.StateDir)
	if err != nil {
		return journalError(err)
	}
	if len(before) == 0 {
		return write()
	}
	if cfg.KeepCapsOnStop {
		report.Kept = len(before)
		report.Message = fmt.Sprintf("keepCapsOnStop is set: the caps stay in force and the originals stay recorded in %s.\n"+
			"To restore them anyway, run with JOULIE_KEEP_CAPS_ON_STOP=false.", journal)
		return write()
	}

	// No DVFS tunables: restoring writes back journaled values and runs
	// no controller, and offlineConfig leaves those keys unchecked.
	h, err := host.Open(host.Config{
		Root: cfg.HostRoot, StateDir: cfg.StateDir,
		NVMLLibraryPath: cfg.NVMLLibraryPath, AMDSMILibraryPath: cfg.AMDSMILibraryPath,
		AgentVersion: version.Version,
	})
	if err != nil {
		return cli.Exit(err.Error(), exitFailure)
	}
	restoreErr := h.Restore()
	closeErr := h.Close()
	after, err := recorded(cfg.StateDir)
	if err != nil {
		return cli.Exit(err.Error(), exitFailure)
	}
	left := map[[2]string]bool{}
	for _, e := range after {
		left[[2]string{e.Backend, e.ID}] = true
	}
	for _, e := range before {
		rc := localapi.RecordedControl{Backend: e.Backend, ID: e.ID, Original: e.Original}
		if left[[2]string{e.Backend, e.ID}] {
			rc.Error = entryError(restoreErr, e)
			report.Kept++
		} else {
			report.Restored++
		}
		report.Controls = append(report.Controls, rc)
	}
	if restoreErr != nil {
		report.Error = restoreErr.Error()
	}
	if werr := write(); werr != nil {
		return werr
	}
	if err := errors.Join(restoreErr, closeErr); err != nil {
		return cli.Exit(err.Error(), exitFailure)
	}
	return nil
}

// offlineKeys are the only keys restore --offline reads from the daemon's
// configuration.
var offlineKeys = []string{"stateDir", "hostRoot", "nvmlLibraryPath", "amdsmiLibraryPath", "keepCapsOnStop"}

// offlineConfig reads the daemon's configuration as joulie-agentd does:
// --config, else JOULIE_CONFIG, else the default path, which may be
// missing (all defaults). JOULIE_* variables apply, so a unit's
// Environment= reaches both, and so do --state-dir and --host-root.
//
// Only offlineKeys must be right. A problem elsewhere is likely why the
// daemon died or refuses to start, and must not keep the host capped: it
// is a warning. A problem with those keys, or a file that is not YAML at
// all, is bad usage (exit 2): restoring from the wrong place could say
// "nothing to restore" while the caps stay.
func offlineConfig(c *cli.Context) (config.Config, error) {
	cfg, warnings, err := config.FromCLIFor(c, os.LookupEnv, offlineKeys...)
	for _, w := range warnings {
		fmt.Fprintf(c.App.ErrWriter, "joulie-agentctl: warning: %v\n", w)
	}
	keys := strings.Join(offlineKeys, ", ")
	if err != nil {
		return config.Config{}, usageError("%v\nrestore --offline reads only %s from the configuration: "+
			"fix them, or name the directories and skip the file: --config \"\" --state-dir DIR --host-root DIR", err, keys)
	}
	if len(warnings) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "joulie-agentctl: warning: joulie-agentd will refuse this configuration; "+
			"restoring anyway, as restore --offline reads only %s\n", keys)
	}
	return cfg, nil
}

// journalError is the exit for a journal that cannot be opened: one that
// needs an operator has its own status (cliapp.ExitNeedsOperator).
func journalError(err error) error {
	if errors.Is(err, state.ErrUnreadable) {
		return cli.Exit(err.Error(), cliapp.ExitNeedsOperator)
	}
	return cli.Exit(err.Error(), exitFailure)
}

// recorded lists the journal's entries. Only called once the journal
// file is known to exist, so the state directory is never created here.
func recorded(dir string) ([]state.Entry, error) {
	j, err := state.Open(dir)
	if err != nil {
		return nil, err
	}
	return j.Entries(), nil
}

// entryError picks the line of a joined restore error that names e; the
// journal's errors begin "restore <backend> <id> to <original>".
func entryError(err error, e state.Entry) string {
	if err != nil {
		prefix := fmt.Sprintf("restore %s %s to %s: ", e.Backend, e.ID, e.Original)
		for _, line := range strings.Split(err.Error(), "\n") {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				return rest
			}
		}
	}
	return "not restored"
}
