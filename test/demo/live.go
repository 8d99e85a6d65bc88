package demo

import (
	"fmt"
	"io"
	"strings"
	"time"

	"joulie.io/joulie/test/demo/demoreport"
)

// frame is what the live view shows at one refresh.
type frame struct {
	Run       string
	Elapsed   time.Duration
	Duration  time.Duration
	Submitted int
	Jobs      int
	Obs       demoreport.Observation
	// EnergyJ is the energy since the run's start (the fleet's counter
	// runs from the fleet's start).
	EnergyJ float64
}

// liveView draws frames: a full-screen table redrawn in place on a
// terminal, or one plain line every plainEvery otherwise (a log file, a
// CI job), so the output stays readable either way.
type liveView struct {
	w          io.Writer
	terminal   bool
	plainEvery time.Duration
	header     []string // settings, shown above the table on a terminal
	lastPlain  time.Duration
	lastRun    string // the run of the last plain line; a new run starts afresh
}

func (v *liveView) draw(f frame) {
	if !v.terminal {
		if v.lastRun == f.Run && f.Elapsed-v.lastPlain < v.plainEvery {
			return
		}
		v.lastRun, v.lastPlain = f.Run, f.Elapsed
		fmt.Fprintln(v.w, plainLine(f))
		return
	}
	var b strings.Builder
	// Home the cursor and clear the screen: one write per frame, so the
	// terminal never shows half a table.
	b.WriteString("\x1b[H\x1b[2J")
	for _, h := range v.header {
		b.WriteString(h + "\n")
	}
	b.WriteString(table(f))
	_, _ = io.WriteString(v.w, b.String())
}

// plainLine is one line of the non-terminal view.
func plainLine(f frame) string {
	eco, capped, draining := 0, 0, 0
	for _, n := range f.Obs.Nodes {
		switch {
		case n.Draining:
			draining++
		case n.Profile == demoreport.ProfileEco:
			eco++
			if n.CPUCapPct < 100 || n.GPUCapPct < 100 {
				capped++
			}
		}
	}
	return fmt.Sprintf("[%s %4.0fs] power %.1f kW, energy %.0f kJ, pods pending %d running %d done %d (submitted %d of %d), of %d nodes %d eco (%d capped) and %d draining, power states %s, performance pods on eco nodes %d",
		f.Run, f.Elapsed.Seconds(), f.Obs.PowerW/1000, f.EnergyJ/1000, f.Obs.Pending, f.Obs.Running, f.Obs.Done,
		f.Submitted, f.Jobs, len(f.Obs.Nodes), eco, capped, draining, stateCounts(f.Obs), f.Obs.PerfOnEco())
}

// stateCounts is "awake 5, parked 2, booting 1": the nodes per power
// state, in the report's order, the empty ones left out.
func stateCounts(o demoreport.Observation) string {
	n := map[string]int{}
	for _, s := range o.Nodes {
		n[s.State()]++
	}
	var parts []string
	for _, st := range demoreport.States {
		if n[st] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", st, n[st]))
		}
	}
	return strings.Join(parts, ", ")
}

// stateText is a node's power state for its row: the boot's progress
// while it boots, what it draws while parked.
func stateText(n demoreport.NodeState) string {
	switch st := n.State(); {
	case st == demoreport.StateBooting && n.WokenBy == demoreport.WokenByBMC:
		return fmt.Sprintf("booting %3.0f%% BMC", n.BootPct)
	case st == demoreport.StateBooting:
		return fmt.Sprintf("booting %3.0f%%", n.BootPct)
	case n.Host == "off":
		return st + " (off)"
	default:
		return st
	}
}

// table is the terminal view: a row per node, then the totals.
func table(f frame) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nrun %s   %s of %s   (Ctrl-C ends early and still writes the report)\n\n",
		f.Run, f.Elapsed.Round(time.Second), f.Duration)
	fmt.Fprintf(&b, "%-14s %-18s %-6s %-12s %-16s %7s %7s %9s %6s %6s\n",
		"node", "family", "path", "profile", "power state", "CPU cap", "GPU cap", "watts", "perf", "std")
	for _, n := range f.Obs.Nodes {
		profile := n.Profile
		if n.Draining {
			profile = demoreport.ProfileDraining
		}
		fmt.Fprintf(&b, "%-14s %-18s %-6s %s%-12s%s %-16s %7s %7s %9.0f %6d %6d\n",
			n.Name, n.Family, n.Path, color(profile), profile, reset, stateText(n), capText(n.CPUCapPct), capText(n.GPUCapPct),
			n.Watts, n.RunningPerf, n.RunningStd)
	}
	perfOnEco := f.Obs.PerfOnEco()
	fmt.Fprintf(&b, "\npower now %.1f kW   energy so far %.0f kJ\n", f.Obs.PowerW/1000, f.EnergyJ/1000)
	fmt.Fprintf(&b, "pods: pending %d, running %d, done %d (submitted %d of %d)\n",
		f.Obs.Pending, f.Obs.Running, f.Obs.Done, f.Submitted, f.Jobs)
	fmt.Fprintf(&b, "nodes per power state: %s\n", stateCounts(f.Obs))
	fmt.Fprintf(&b, "performance pods on eco nodes: %d\n", perfOnEco)
	return b.String()
}

func capText(pct float64) string {
	if pct >= 100 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", pct)
}

const reset = "\x1b[0m"

// color is the terminal colour of a profile, as demoreport.html draws it.
func color(profile string) string {
	switch profile {
	case demoreport.ProfileEco:
		return "\x1b[32m"
	case demoreport.ProfileDraining:
		return "\x1b[33m"
	default:
		return "\x1b[31m"
	}
}
