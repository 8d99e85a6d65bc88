package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"
)

type statusOptions struct {
	output   string
	selector string
	watch    bool
	interval time.Duration
	// now is the clock; tests fix it.
	now func() time.Time
}

func newStatusCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &statusOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "One line per managed node (profile, power state, caps, power, headroom, pods), then the cluster's totals",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(o.output, "", "wide", "json", "yaml"); err != nil {
				return err
			}
			if o.interval <= 0 {
				return usageError{fmt.Errorf("--interval %s: must be positive", o.interval)}
			}
			c, err := newCluster(flags)
			if err != nil {
				return err
			}
			if !o.watch {
				return o.once(cmd.Context(), c, streams)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return o.watchLoop(ctx, c, streams)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: wide, json or yaml")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "show only the nodes this label selector selects (e.g. -l joulie.io/power-profile=eco)")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "refresh every --interval: in place on a terminal, as plain lines otherwise")
	cmd.Flags().DurationVar(&o.interval, "interval", 5*time.Second, "time between two refreshes with --watch")
	return cmd
}

// noArgs refuses arguments with exit status 2.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", args[0])}
	}
	return nil
}

func (o *statusOptions) once(ctx context.Context, c *cluster, streams genericiooptions.IOStreams) error {
	s, err := c.read(ctx, o.selector)
	if err != nil {
		return err
	}
	r := buildStatus(s, o.now())
	if err := writeStatus(streams.Out, r, o.output); err != nil {
		return err
	}
	if o.output == "" || o.output == "wide" {
		for _, w := range r.Warnings {
			fmt.Fprintln(streams.ErrOut, "warning: "+w)
		}
	}
	return nil
}

// watchLoop refreshes until ctx ends. On a terminal the screen is
// redrawn in place; to a pipe or a file, each changed status is written
// after a line with the time, so a log of it reads as plain text.
func (o *statusOptions) watchLoop(ctx context.Context, c *cluster, streams genericiooptions.IOStreams) error {
	f, isFile := streams.Out.(*os.File)
	tty := isFile && term.IsTerminal(int(f.Fd()))
	var last []byte
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	for {
		var buf bytes.Buffer
		s, err := c.read(ctx, o.selector)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			// A watch outlives a restart of the API server: say so and
			// keep going, unless nothing was ever shown.
			if last == nil {
				return err
			}
			fmt.Fprintf(streams.ErrOut, "%s: %v\n", o.now().Format(time.TimeOnly), err)
		} else {
			r := buildStatus(s, o.now())
			if err := writeStatus(&buf, r, o.output); err != nil {
				return err
			}
			if o.output == "" || o.output == "wide" {
				for _, w := range r.Warnings {
					fmt.Fprintln(&buf, "warning: "+w)
				}
			}
			switch {
			case tty:
				fmt.Fprintf(streams.Out, "\x1b[H\x1b[2J%s (every %s, Ctrl-C to stop)\n\n%s", o.now().Format(time.TimeOnly), o.interval, buf.Bytes())
			case !bytes.Equal(buf.Bytes(), last):
				fmt.Fprintf(streams.Out, "--- %s\n%s", o.now().Format(time.RFC3339), buf.Bytes())
			}
			last = buf.Bytes()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// writeStatus writes r in the output format.
func writeStatus(w io.Writer, r statusReport, output string) error {
	switch output {
	case "json":
		return writeJSON(w, r)
	case "yaml":
		return writeYAML(w, r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{"NODE", "PROFILE", "STATE", "AGENT", "CPU-CAP", "GPU-CAP", "POWER", "SOURCE", "HEADROOM", "PERF", "STD"}
	wide := output == "wide"
	if wide {
		head = append(head, "TWIN", "COOLING", "TREND", "CPU-BACKEND", "GPU-BACKEND", "HARDWARE", "CPU-REASON", "GPU-REASON")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for i := range r.Nodes {
		n := &r.Nodes[i]
		pw, headroom := "-", "-"
		if n.PowerW != nil {
			pw = power(*n.PowerW)
		}
		if n.HeadroomPct != nil {
			headroom = strconv.FormatFloat(*n.HeadroomPct, 'f', 0, 64) + "%"
		}
		row := []string{n.Name, orDash(n.Profile), n.PowerState, n.Agent, n.CPU.cell(), n.GPU.cell(), pw, orDash(n.PowerSource), headroom,
			strconv.Itoa(n.PerformancePods), strconv.Itoa(n.StandardPods)}
		if wide {
			twin, cooling, trend := "-", "-", "-"
			if n.TwinClass != "" || n.HeadroomPct != nil {
				twin = orDash(n.TwinClass)
				if n.TwinStale {
					twin += " (stale)"
				}
				cooling = strconv.FormatFloat(n.Cooling, 'f', 0, 64)
				trend = strconv.FormatFloat(n.TrendWPerMin, 'f', 1, 64) + " W/min"
			}
			gpuBackend, gpuReason := "-", "-"
			if n.GPU != nil {
				gpuBackend, gpuReason = orDash(n.GPU.Backend), orDash(n.GPU.Reason)
			}
			hw := orDash(n.CPUModel)
			if n.GPUCount > 0 {
				hw += fmt.Sprintf(" + %d × %s", n.GPUCount, orDash(n.GPUModel))
			}
			row = append(row, twin, cooling, trend, orDash(n.CPU.Backend), gpuBackend, hw, orDash(n.CPU.Reason), gpuReason)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	t := &r.Totals
	fmt.Fprintf(w, "\nPower now: %s over %d nodes (%s)", power(t.PowerW), t.Nodes-t.NodesWithoutPower,
		counts(t.PowerBySource, "agent", "kepler", "utilization"))
	if t.NodesWithoutPower > 0 {
		fmt.Fprintf(w, "; %d without a measurement (parked, no agent, or only the static cap estimate)", t.NodesWithoutPower)
	}
	fmt.Fprintf(w, "\nProfiles: %s\n", counts(t.Profiles, "performance", "eco", "draining"))
	fmt.Fprintf(w, "Power states: %s\n", counts(t.PowerStates, "awake", "parking", "parked", "waking", "wake-failed"))
	fmt.Fprintf(w, "Performance pods on eco nodes: %d", t.PerformancePodsOnEcoNodes)
	if t.PerformancePodsOnEcoNodes > 0 {
		fmt.Fprintf(w, " (must be 0; they run under eco caps): %s", strings.Join(t.PerformancePodsOnEco, ", "))
	}
	_, err := fmt.Fprintln(w)
	return err
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func writeYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
