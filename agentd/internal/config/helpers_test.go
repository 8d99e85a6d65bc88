package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/pkg/settings/settingstest"
)

// env is a lookup over m.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// defaults is what a load with nothing set gives.
func defaults() Config { return Default() }

// plain drops how c was loaded, so that configs compare by value.
func plain(c Config) Config {
	c.src = nil
	return c
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentd.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runCLI parses args (without the program name) with Flags() and
// returns what FromCLI makes of them.
func runCLI(t *testing.T, lookup func(string) (string, bool), args ...string) (Config, error) {
	t.Helper()
	var cfg Config
	var loadErr error
	if err := settingstest.RunCLI("joulie-agentd", Flags(), args, func(c *cli.Context) { cfg, loadErr = FromCLI(c, lookup) }); err != nil {
		t.Fatalf("command line %q: %v", args, err)
	}
	return cfg, loadErr
}

// envName is the JOULIE_ variable of k.
func envName(k key) string { return table.Vars(&k)[0] }

// alias is the seed's variable of k, or "".
func alias(k key) string {
	if len(k.Env) == 0 {
		return ""
	}
	return k.Env[0]
}

func f64(v float64) *float64 { return &v }

// wantErr checks that err is a usage error containing every one of want.
func wantErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one containing %q", want)
	}
	if !errors.Is(err, ErrUsage) {
		t.Errorf("error %q does not wrap ErrUsage", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error\n%s\ndoes not contain %q", err, w)
		}
	}
}

func wantEqual(t *testing.T, got, want Config) {
	t.Helper()
	if !reflect.DeepEqual(plain(got), plain(want)) {
		t.Errorf("config\n got %s\nwant %s", got, want)
	}
}
