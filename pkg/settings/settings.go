// Package settings is the configuration mechanism of Joulie's programs
// (joulie-agentd, joulie-controller, joulie-extender): each program
// describes its keys once, in a Table, and gets from it a YAML file with
// camelCase keys, environment variables, command-line flags, one
// validation pass, errors naming key, value and source, --help and the
// manual page.
//
// Layers, lowest first: the program's defaults, the file (--config or
// the table's ConfigEnv, else its DefaultPath), the environment, the
// flags given. A key's variables are its Env names (the seeds' names,
// kept so existing deployments go on working) and, when the table has a
// Prefix, the name derived from the path ("JOULIE_" + "DVFS_EMA_ALPHA"),
// which wins over the Env names. An empty variable counts as unset, so a
// systemd EnvironmentFile or a Helm template may list variables blank.
//
// Every error of this package wraps ErrUsage; the programs exit with
// code 2 on it (SPEC.md, "Command-line contract").
//
// What only tests need, the checks that keep the READMEs, the chart and
// the example file true to a table, is in settingstest.
package settings

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Key is one leaf of a program's configuration.
type Key[C any] struct {
	// Path is the key in the file, camelCase, blocks separated by dots
	// ("dvfs.emaAlpha").
	Path string
	// Usage says what the key does, for --help, the manual page and the
	// README tables.
	Usage string
	// Flag is the command-line flag without dashes; empty derives it from
	// Path in kebab-case ("dvfs-ema-alpha").
	Flag string
	// Env are the variables read for the key besides the table's derived
	// one, lowest precedence first: the seeds' names.
	Env []string
	// ParseEnv, when set, parses the values of the Env variables instead
	// of the key's type: for a seed variable whose syntax is wider than
	// the file's (DVFS_COOLDOWN takes plain seconds).
	ParseEnv func(dst any, s string) error
	// EmptyIsValue makes an empty Env variable set the key (parsed from
	// "") instead of counting as unset, for a seed variable that always
	// worked so (METRICS_ADDR= turns the controller's /metrics off,
	// GPU_PRODUCT_LABEL_KEYS= means no labels). The derived variable
	// still takes empty as unset.
	EmptyIsValue bool
	// DefaultText replaces the default shown in --help, for a default that
	// depends on the machine (the host name).
	DefaultText string
	// Ref returns a pointer to the key's field in c, creating optional
	// blocks on the way (so call it on a copy when only reading). The
	// field is a string kind, bool, int, int64, float64, *float64,
	// time.Duration or metav1.Duration; or Ref returns an
	// encoding.TextUnmarshaler (and TextMarshaler) that writes the field,
	// for a value with its own syntax (a size, a JSON map).
	Ref func(c *C) any
}

// FlagName is the key's command-line flag, without dashes.
func (k *Key[C]) FlagName() string {
	if k.Flag != "" {
		return k.Flag
	}
	return strings.Join(words(k.Path), "-")
}

// Problem is one validation finding, under the key to fix.
type Problem struct {
	Key, Msg string
}

// Table is a program's configuration: its keys and how to start, check
// and complete a Config. Build one with New.
type Table[C any] struct {
	// Keys in the order of the example file, --help and the README.
	Keys []Key[C]
	// Prefix, when set, gives every key a variable named Prefix plus its
	// path in upper snake case ("JOULIE_" gives JOULIE_DVFS_EMA_ALPHA).
	Prefix string
	// ConfigEnv names the file when --config is not given ("" for none).
	ConfigEnv string
	// DefaultPath is the file read when neither --config nor ConfigEnv
	// names one; a missing file there means all defaults. "" for none.
	DefaultPath string
	// Default returns the configuration with nothing set.
	Default func() C
	// Clone returns a deep copy of c, so that Ref on it creates optional
	// blocks in the copy only; nil when a plain copy is deep enough.
	Clone func(c C) *C
	// Check returns every problem of c, in the order of Keys. It takes c
	// by value: it only validates, so that what Validate accepts is what
	// Load accepts.
	Check func(c C) []Problem
	// Complete, if set, runs once the layers and Check found no problem,
	// to derive what the program works with from the checked values (a
	// parsed selector, a loaded key pair, optional blocks left empty
	// dropped). What fails there is reported as Check's problems are.
	Complete func(c *C) []Problem
	// Category groups a key's flag in --help; nil for no groups.
	Category func(path string) string

	leaves   map[string]bool
	children map[string][]string
	byPath   map[string]*Key[C]
}

// New completes t. It panics when two keys share a path, a flag or a
// variable: that is a programming error the tests of every program catch.
func New[C any](t Table[C]) *Table[C] {
	t.leaves, t.children, t.byPath = map[string]bool{}, map[string][]string{}, map[string]*Key[C]{}
	flags, vars := map[string]bool{}, map[string]bool{}
	for i := range t.Keys {
		k := &t.Keys[i]
		if t.leaves[k.Path] || flags[k.FlagName()] {
			panic(fmt.Sprintf("settings: key %s or flag --%s listed twice", k.Path, k.FlagName()))
		}
		t.leaves[k.Path], flags[k.FlagName()], t.byPath[k.Path] = true, true, k
		for _, v := range t.Vars(k) {
			if vars[v] {
				panic(fmt.Sprintf("settings: variable %s of %s used twice", v, k.Path))
			}
			vars[v] = true
		}
		prefix := ""
		for _, s := range strings.Split(k.Path, ".") {
			if !slices.Contains(t.children[prefix], s) {
				t.children[prefix] = append(t.children[prefix], s)
			}
			prefix = join(prefix, s)
		}
	}
	return &t
}

// Key returns the key at path, or nil.
func (t *Table[C]) Key(path string) *Key[C] { return t.byPath[path] }

// derivedVar is the variable the table's Prefix gives k, or "".
func (t *Table[C]) derivedVar(k *Key[C]) string {
	if t.Prefix == "" {
		return ""
	}
	return t.Prefix + strings.ToUpper(strings.Join(words(k.Path), "_"))
}

// Vars lists k's variables, highest precedence first: the one the
// table's Prefix derives, if any, then k.Env from the last.
func (t *Table[C]) Vars(k *Key[C]) []string {
	var out []string
	if v := t.derivedVar(k); v != "" {
		out = append(out, v)
	}
	for i := len(k.Env) - 1; i >= 0; i-- {
		out = append(out, k.Env[i])
	}
	return out
}

func (t *Table[C]) clone(c C) *C {
	if t.Clone != nil {
		return t.Clone(c)
	}
	return &c
}

// words splits a camelCase path into lowercase words: a capital after a
// lowercase letter or digit starts a word, and the path's dots separate
// words. So "http.telemetryURL" gives http, telemetry, url, and
// "dvfs.minFreqKHz" gives dvfs, min, freq, khz (the seed's
// DVFS_MIN_FREQ_KHZ), which is why capitals after capitals never split.
func words(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, ".") {
		r := []rune(seg)
		start := 0
		for i := 1; i < len(r); i++ {
			if unicode.IsUpper(r[i]) && (unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])) {
				out = append(out, strings.ToLower(string(r[start:i])))
				start = i
			}
		}
		out = append(out, strings.ToLower(string(r[start:])))
	}
	return out
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// ErrUsage is wrapped by every error of this package: the configuration
// (file, variables, flags) is at fault, and the program exits with code 2.
var ErrUsage = errors.New("bad configuration")

// usageError carries the problems and makes errors.Is(err, ErrUsage)
// hold without adding ErrUsage's text to the message.
type usageError struct{ err error }

func (e *usageError) Error() string   { return e.err.Error() }
func (e *usageError) Unwrap() []error { return []error{ErrUsage, e.err} }

// usage joins errs into one error wrapping ErrUsage; nil when errs is
// empty.
func usage(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return &usageError{errors.Join(errs...)}
}

// keyError is a problem with one key, so that LoadFor can tell the keys
// its caller needs from the rest. An error that is not a keyError
// concerns the file as a whole.
type keyError struct {
	key string
	err error
}

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

func keyErr(key string, err error) error { return &keyError{key, err} }
