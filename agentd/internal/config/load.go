package config

import (
	"os"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/pkg/settings"
)

// Names of the configuration file's own flag and variable.
const (
	FlagConfig = settings.FlagConfig
	EnvConfig  = "JOULIE_CONFIG"
)

// Load reads the file at path (none when path is empty; a missing file
// is an error), overlays the variables lookup finds (os.LookupEnv in the
// daemon) and validates the result. It takes no flags: a daemon started
// with flags reloads with Config.Reload, which re-applies them.
func Load(path string, lookup func(string) (string, bool)) (Config, error) {
	return load(table.NewSource(path, "config file", lookup))
}

// FromCLI builds the configuration of a command line whose flags include
// Flags(): the file (--config, else JOULIE_CONFIG, else DefaultPath, which
// may be missing), the variables lookup finds (os.LookupEnv in the
// daemon), then the flags that were given. The flags are kept in the
// Config, so Reload applies them again.
func FromCLI(c *cli.Context, lookup func(string) (string, bool)) (Config, error) {
	return load(table.CLISource(c, lookup))
}

// FromCLIFor builds the configuration like FromCLI, for a command that
// reads only the keys in need (joulie-agentctl restore --offline needs
// the state directory, not the DVFS tunables). It fails, with an error
// wrapping ErrUsage, only on a problem with one of those keys (an
// unknown key that looks like a misspelling of one counts) or with the
// file as a whole (unreadable, not YAML). Every other problem comes back
// in warnings, and the Config's other keys are then not to be used.
func FromCLIFor(c *cli.Context, lookup func(string) (string, bool), need ...string) (cfg Config, warnings []error, err error) {
	s := table.CLISource(c, lookup)
	cfg, warnings, err = s.LoadFor(need)
	if err == nil {
		cfg.src = s
	}
	return cfg, warnings, err
}

// Reload builds the configuration again the way c was built: it re-reads
// the same file and environment and applies the flags given at start
// once more, so those flags still win over an edited file. It is meant for
// SIGHUP; on error the caller keeps c. A Config that was not loaded
// (Default()) reloads from DefaultPath and the process's environment.
func (c Config) Reload() (Config, error) {
	s := c.src
	if s == nil {
		s = table.NewSource(DefaultPath, "", os.LookupEnv)
	}
	return load(s)
}

// load loads s and remembers it in the Config, for Reload.
func load(s *settings.Source[Config]) (Config, error) {
	c, err := s.Load()
	if err == nil {
		c.src = s
	}
	return c, err
}

// Flags returns the command-line flags: --config and one per key, each
// naming its variables in its help.
func Flags() []cli.Flag { return table.Flags() }
