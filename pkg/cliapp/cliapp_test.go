package cliapp

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		env    string
		action cli.ActionFunc
		code   int
		stderr string
	}{
		{"success", nil, "", func(*cli.Context) error { return nil }, 0, ""},
		{"runtime failure", nil, "", func(*cli.Context) error { return cli.Exit("disk on fire", 1) }, 1, "prog: disk on fire"},
		{"bad config", nil, "", func(*cli.Context) error { return cli.Exit("X=1: bad", 2) }, 2, "X=1: bad"},
		{"unknown flag", []string{"--nope"}, "", nil, 2, "nope"},
		{"argument", []string{"extra"}, "", nil, 2, `unexpected argument "extra"`},
		{"bad env value", nil, "maybe", nil, 2, "maybe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("CLIAPP_TEST_FLAG", tc.env)
			}
			var out, errb bytes.Buffer
			action := tc.action
			if action == nil {
				action = func(*cli.Context) error { t.Error("action ran"); return nil }
			}
			app := Daemon("prog", "test", []cli.Flag{&cli.BoolFlag{Name: "flag", EnvVars: []string{"CLIAPP_TEST_FLAG"}}}, &out, &errb, action)
			if code := Run(app, append([]string{"prog"}, tc.args...), &errb); code != tc.code || !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errb.String(), tc.code, tc.stderr)
			}
		})
	}
}

// TestDaemonPrintsItsManPage: every daemon answers --man-page with its
// section-8 page, flags included, and does not start.
func TestDaemonPrintsItsManPage(t *testing.T) {
	var out, errb bytes.Buffer
	app := Daemon("prog", "test", []cli.Flag{&cli.StringFlag{Name: "node-name", Usage: "the node"}}, &out, &errb,
		func(*cli.Context) error { t.Error("action ran"); return nil })
	if code := Run(app, []string{"prog", "--man-page"}, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{".TH prog 8", "node-name", "the node"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("manual page lacks %q:\n%s", want, out.String())
		}
	}
}

// The handler logs at the level named, as a name or as slog writes a
// level (the extender holds its level as a slog.Level), and at info when
// the name does not read.
func TestLogHandlerLevelAndFormat(t *testing.T) {
	for _, tc := range []struct {
		level, format string
		want          slog.Level
		json          bool
	}{
		{"debug", "text", slog.LevelDebug, false},
		{"warn", "json", slog.LevelWarn, true},
		{slog.LevelError.String(), "", slog.LevelError, false},
		{(slog.LevelInfo + 2).String(), "json", slog.LevelInfo + 2, true},
		{"loud", "text", slog.LevelInfo, false},
	} {
		h := LogHandler(io.Discard, tc.level, tc.format)
		if _, json := h.(*slog.JSONHandler); json != tc.json {
			t.Errorf("%q, %q: handler %T", tc.level, tc.format, h)
		}
		if !h.Enabled(t.Context(), tc.want) || h.Enabled(t.Context(), tc.want-1) {
			t.Errorf("%q: not enabled from %v on", tc.level, tc.want)
		}
	}
}
