package settings

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// demo is a program's configuration of the controller's and extender's
// shape: seed variables only, no derived names, a flag named apart from
// its path.
type demo struct {
	Addr     string
	Interval time.Duration
	Level    slog.Level
	Enabled  bool
	Frac     float64
	Count    int
}

var demoTable = New(Table[demo]{
	Keys: []Key[demo]{
		{Path: "addr", Env: []string{"DEMO_ADDR"}, Usage: "listen address", Ref: func(c *demo) any { return &c.Addr }},
		{Path: "reconcileInterval", Flag: "interval", Env: []string{"RECONCILE_INTERVAL"}, Usage: "tick", Ref: func(c *demo) any { return &c.Interval }},
		{Path: "log.level", Env: []string{"LOG_LEVEL"}, Usage: "level", Ref: func(c *demo) any { return &c.Level }},
		{Path: "enabled", Env: []string{"ENABLED"}, Usage: "switch", Ref: func(c *demo) any { return &c.Enabled }},
		{Path: "frac", Env: []string{"FRAC"}, Usage: "fraction", Ref: func(c *demo) any { return &c.Frac }},
		{Path: "count", Env: []string{"COUNT"}, Usage: "count", Ref: func(c *demo) any { return &c.Count }},
	},
	ConfigEnv: "DEMO_CONFIG",
	Default:   func() demo { return demo{Addr: ":80", Interval: time.Minute, Frac: 0.5, Count: 1} },
	Check: func(c demo) []Problem {
		var ps []Problem
		if c.Frac > 1 {
			ps = append(ps, Problem{Key: "frac", Msg: FormatFloat(c.Frac) + " is more than 1"})
		}
		if c.Count < 1 {
			ps = append(ps, Problem{Key: "count", Msg: "must be at least 1"})
		}
		return ps
	},
})

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// run parses args with the table's flags and loads the configuration.
func run(t *testing.T, lookup func(string) (string, bool), args ...string) (demo, error) {
	t.Helper()
	var got demo
	var loadErr error
	app := &cli.App{Name: "demo", Flags: demoTable.Flags(), Writer: io.Discard, ErrWriter: io.Discard,
		Action: func(c *cli.Context) error {
			got, loadErr = demoTable.CLISource(c, lookup).Load()
			return nil
		}}
	if err := app.Run(append([]string{"demo"}, args...)); err != nil {
		t.Fatal(err)
	}
	return got, loadErr
}

func TestLayersFileEnvFlags(t *testing.T) {
	file := t.TempDir() + "/demo.yaml"
	data := "addr: \":81\"\nreconcileInterval: 30s\nlog:\n  level: warn\nfrac: 0.25\ncount: 3\n"
	if err := writeTestFile(file, data); err != nil {
		t.Fatal(err)
	}
	got, err := run(t, env(map[string]string{"DEMO_CONFIG": file, "COUNT": "4", "ENABLED": "true", "FRAC": " "}), "--interval", "10s")
	if err != nil {
		t.Fatal(err)
	}
	want := demo{Addr: ":81", Interval: 10 * time.Second, Level: slog.LevelWarn, Enabled: true, Frac: 0.25, Count: 4}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// Every problem at once, each naming key, value and source.
func TestErrorsNameKeyValueAndSource(t *testing.T) {
	file := t.TempDir() + "/demo.yaml"
	if err := writeTestFile(file, "frac: 2\nadr: x\nlog:\n  level: loud\n"); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, env(map[string]string{"RECONCILE_INTERVAL": "soon"}), "--config", file, "--count", "0")
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("error %v does not wrap ErrUsage", err)
	}
	for _, want := range []string{
		file + `: unknown key "adr" (did you mean "addr"?)`,
		file + `: log.level: "loud"`,
		`reconcileInterval: RECONCILE_INTERVAL="soon" is not a duration`,
		"frac: 2 is more than 1 (from " + file + ")",
		"count: must be at least 1 (from --count)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\nlacks %q", err, want)
		}
	}
}

func TestHelpNamesVariablesAndDefaults(t *testing.T) {
	help := map[string]string{}
	for _, f := range demoTable.Flags() {
		help[f.Names()[0]] = f.String()
	}
	if h := help["interval"]; !strings.Contains(h, "RECONCILE_INTERVAL") || !strings.Contains(h, "(default: 1m0s)") {
		t.Errorf("help of --interval: %s", h)
	}
	if h := help["config"]; !strings.Contains(h, "DEMO_CONFIG") {
		t.Errorf("help of --config: %s", h)
	}
}

func TestEncodeReadsBack(t *testing.T) {
	c := demo{Addr: "a \"b\"", Interval: 90 * time.Second, Level: slog.LevelDebug, Enabled: true, Frac: 0.125, Count: 7}
	var b bytes.Buffer
	if err := demoTable.Encode(&b, c); err != nil {
		t.Fatal(err)
	}
	got, err := demoTable.Parse("encoded", b.Bytes())
	if err != nil || got != c {
		t.Errorf("Parse(Encode(%+v)) = %+v, %v\n%s", c, got, err, b.String())
	}
}

func TestWords(t *testing.T) {
	if got := strings.Join(words("a.b2C.telemetryURL"), " "); got != "a b2 c telemetry url" {
		t.Errorf("Words = %q", got)
	}
	if got := strings.Join(words("dvfs.minFreqKHz"), " "); got != "dvfs min freq khz" {
		t.Errorf("Words = %q", got)
	}
}

func TestNewRefusesDuplicates(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New accepted two keys with one variable")
		}
	}()
	New(Table[demo]{Keys: []Key[demo]{
		{Path: "a", Env: []string{"X"}, Ref: func(c *demo) any { return &c.Addr }},
		{Path: "b", Env: []string{"X"}, Ref: func(c *demo) any { return &c.Count }},
	}})
}

func writeTestFile(path, data string) error { return os.WriteFile(path, []byte(data), 0o600) }

// A switch that defaults to on says so, and --name=false turns it off.
func TestSwitchDefaultingOn(t *testing.T) {
	on := New(Table[demo]{
		Keys:    []Key[demo]{{Path: "enabled", Usage: "switch", Ref: func(c *demo) any { return &c.Enabled }}},
		Default: func() demo { return demo{Enabled: true} },
	})
	if h := on.Flags()[1].String(); !strings.Contains(h, "(default: true)") {
		t.Errorf("help of a switch that defaults to on: %s", h)
	}
	for args, want := range map[string]bool{"": true, "--enabled=false": false, "--enabled": true} {
		var got demo
		app := &cli.App{Name: "demo", Flags: on.Flags(), Action: func(c *cli.Context) error {
			var err error
			got, err = on.CLISource(c, nil).Load()
			return err
		}}
		argv := []string{"demo"}
		if args != "" {
			argv = append(argv, args)
		}
		if err := app.Run(argv); err != nil || got.Enabled != want {
			t.Errorf("%q: enabled %v, %v; want %v", args, got.Enabled, err, want)
		}
	}
}

// Complete runs only on a configuration Check found sound, and what it
// reports names key, value and source as Check's problems do.
func TestCompleteRunsAfterACleanCheck(t *testing.T) {
	var completed []string
	tbl := New(Table[demo]{
		Keys:    demoTable.Keys,
		Default: demoTable.Default,
		Check:   demoTable.Check,
		Complete: func(c *demo) []Problem {
			completed = append(completed, c.Addr)
			if c.Addr == "unbindable" {
				return []Problem{{Key: "addr", Msg: `"unbindable" cannot be bound`}}
			}
			c.Addr = "[" + c.Addr + "]"
			return nil
		},
	})
	got, err := tbl.Parse("f.yaml", []byte("addr: x\n"))
	if err != nil || got.Addr != "[x]" {
		t.Errorf("completed %+v, %v; want addr [x]", got, err)
	}
	if _, err := tbl.Parse("f.yaml", []byte("addr: y\ncount: 0\n")); err == nil || len(completed) != 1 {
		t.Errorf("a configuration Check refused: %v, completed %q", err, completed)
	}
	_, err = tbl.Parse("f.yaml", []byte("addr: unbindable\n"))
	if want := `addr: "unbindable" cannot be bound (from f.yaml)`; err == nil || err.Error() != want || !errors.Is(err, ErrUsage) {
		t.Errorf("error %v, want %q wrapping ErrUsage", err, want)
	}
}
