package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/agentd/internal/localapi"
)

func outputFlag() cli.Flag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "table or json"}
}

// outputFormat is the --output of a command, "table" or "json".
func outputFormat(c *cli.Context) (string, error) {
	output := c.String("output")
	if output != "table" && output != "json" {
		return "", usageError("--output must be table or json, not %q", output)
	}
	return output, nil
}

// daemonCommand checks what every verb that talks to the daemon shares:
// no arguments, a valid --output and a socket path.
func daemonCommand(c *cli.Context) (client *localapi.Client, output string, err error) {
	if c.NArg() > 0 {
		return nil, "", usageError("%s takes no arguments (got %q)", c.Command.FullName(), c.Args().First())
	}
	if output, err = outputFormat(c); err != nil {
		return nil, "", err
	}
	socket := c.String("socket")
	if socket == "" {
		return nil, "", usageError("--socket must name joulie-agentd's socket")
	}
	return localapi.NewClient(socket), output, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// sheet is a two-column view of one object: a label, then its value. An
// empty label continues the row above.
type sheet struct {
	rows [][2]string
}

func (s *sheet) add(label, format string, a ...any) {
	if label != "" {
		label += ":"
	}
	s.rows = append(s.rows, [2]string{label, fmt.Sprintf(format, a...)})
}

func (s *sheet) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range s.rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// watts prints a power figure with at most one decimal: "210 W", "388.5 W".
func watts(v float64) string {
	return trimZero(strconv.FormatFloat(v, 'f', 1, 64)) + " W"
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// wattsRange prints a cap range: "150-400 W".
func wattsRange(lo, hi float64) string {
	return trimZero(strconv.FormatFloat(lo, 'f', 1, 64)) + "-" + watts(hi)
}

func pct(v float64) string { return trimZero(strconv.FormatFloat(v, 'f', 1, 64)) + "%" }

// age says how long ago t was, to the second (to the minute past an hour).
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < -time.Second:
		return "in the future (is the clock right?)"
	case d < time.Second:
		return "just now"
	case d >= time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s") + " ago"
	}
	return d.Round(time.Second).String() + " ago"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
