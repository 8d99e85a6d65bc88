package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/agentd/internal/host"
	"joulie.io/joulie/agentd/internal/localapi"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/pkg/version"
)

// forgetReport is what restore --forget prints with --output json.
type forgetReport struct {
	Forgotten localapi.RecordedControl `json:"forgotten"`
	Journal   string                   `json:"journal"`
}

// forgetOffline drops one control's original from the journal without
// writing anything to the host. It is the way out for a control that is
// gone for good (a RAPL zone whose driver will not come back, a GPU taken
// out): its entry would fail every restore, and so every stop, until the
// control came back.
//
// Like restore --offline it needs the daemon stopped and takes the state
// directory's lock. It refuses an ID the journal does not hold, and a
// control that is still on the host or whose backend cannot tell: that
// one's original can still be put back, and forgetting it would lose it.
func forgetOffline(c *cli.Context, id, output string) error {
	cfg, err := offlineConfig(c)
	if err != nil {
		return err
	}
	journal := filepath.Join(cfg.StateDir, state.FileName)
	if _, err := os.Stat(journal); errors.Is(err, os.ErrNotExist) {
		return cli.Exit(fmt.Sprintf("no original of %q is recorded: there is no journal at %s", id, journal), exitFailure)
	} else if err != nil {
		return cli.Exit(fmt.Sprintf("journal of original power settings %s: %v", journal, err), exitFailure)
	}
	unlock, err := state.Lock(cfg.StateDir)
	if errors.Is(err, state.ErrLocked) {
		return cli.Exit(fmt.Sprintf("%v: joulie-agentd is running; stop it first (systemctl stop joulie-agentd)", err), exitFailure)
	} else if err != nil {
		return cli.Exit(err.Error(), exitFailure)
	}
	defer unlock()

	j, err := state.Open(cfg.StateDir)
	if err != nil {
		return journalError(err)
	}
	var e state.Entry
	var ids []string
	for _, rec := range j.Entries() {
		ids = append(ids, rec.ID)
		if rec.ID == id {
			e = rec
		}
	}
	if e.ID == "" {
		recorded := "none"
		if len(ids) > 0 {
			recorded = strings.Join(ids, ", ")
		}
		return cli.Exit(fmt.Sprintf("no original of %q is recorded in %s (recorded: %s); nothing was forgotten", id, journal, recorded), exitFailure)
	}

	h, err := host.Open(host.Config{
		Root: cfg.HostRoot, StateDir: cfg.StateDir,
		NVMLLibraryPath: cfg.NVMLLibraryPath, AMDSMILibraryPath: cfg.AMDSMILibraryPath,
		DVFS: cfg.DVFS, AgentVersion: version.Version,
	})
	if err != nil {
		return cli.Exit(err.Error(), exitFailure)
	}
	present, err := h.Present(e.Backend, e.ID)
	_ = h.Close()
	switch {
	case err != nil:
		return cli.Exit(fmt.Sprintf("cannot tell whether %s control %s is still on this host (%v); nothing was forgotten", e.Backend, e.ID, err), exitFailure)
	case present:
		return cli.Exit(fmt.Sprintf("%s control %s is still on this host, so its original %s can be put back: "+
			"run joulie-agentctl restore --offline instead; nothing was forgotten", e.Backend, e.ID, e.Original), exitFailure)
	}
	if err := j.Forget(e.Backend, e.ID); err != nil {
		return cli.Exit(fmt.Sprintf("forget %s control %s: %v", e.Backend, e.ID, err), exitFailure)
	}
	report := forgetReport{Forgotten: localapi.RecordedControl{Backend: e.Backend, ID: e.ID, Original: e.Original}, Journal: journal}
	if output == "json" {
		return writeJSON(c.App.Writer, report)
	}
	return writeForget(c.App.Writer, report)
}

func writeForget(w io.Writer, r forgetReport) error {
	_, err := fmt.Fprintf(w, "Forgot %s control %s: it is no longer on this host, and its original (%s) is no longer recorded in %s.\n",
		r.Forgotten.Backend, r.Forgotten.ID, r.Forgotten.Original, r.Journal)
	return err
}
