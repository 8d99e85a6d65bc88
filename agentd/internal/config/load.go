package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	goyaml "go.yaml.in/yaml/v2"
)

// Names of the configuration file's own flag and variable.
const (
	FlagConfig = "config"
	EnvConfig  = "JOULIE_CONFIG"
)

// maxFileSize bounds what is read from the configuration file, so that a
// --config pointing at a device or a log file fails at once rather than
// filling memory. The documented example is a few kilobytes.
const maxFileSize = 1 << 20

// source is how a Config was put together: which file, which
// environment, which flags. Reload repeats it.
type source struct {
	// path is the file; "" means none.
	path string
	// namedBy is what named the file, for messages: "--config",
	// "JOULIE_CONFIG", or "config file" (Load). Empty for the default
	// path, whose absence is no error.
	namedBy string
	// lookup reads the environment (os.LookupEnv); nil reads nothing.
	lookup func(string) (string, bool)
	// flags are the keys given on the command line at start.
	flags []setting
}

// setting is a key's value as given on the command line.
type setting struct {
	k     *key
	value string
}

// Load reads the file at path (none when path is empty; a missing file
// is an error), overlays the variables lookup finds (os.LookupEnv in the
// daemon) and validates the result. It takes no flags: a daemon started
// with flags reloads with Config.Reload, which re-applies them.
func Load(path string, lookup func(string) (string, bool)) (Config, error) {
	return (&source{path: path, namedBy: "config file", lookup: lookup}).load()
}

// FromCLI builds the configuration of a command line whose flags include
// Flags(): the file (--config, else JOULIE_CONFIG, else DefaultPath, which
// may be missing), the environment, then the flags that were given. The
// flags are kept in the Config, so Reload applies them again.
func FromCLI(c *cli.Context) (Config, error) {
	return fromCLI(c, os.LookupEnv)
}

func fromCLI(c *cli.Context, lookup func(string) (string, bool)) (Config, error) {
	return cliSource(c, lookup).load()
}

// FromCLIFor builds the configuration like FromCLI, for a command that
// reads only the keys in need (joulie-agentctl restore --offline needs
// the state directory, not the DVFS tunables). It fails, with an error
// wrapping ErrUsage, only on a problem with one of those keys (an
// unknown key that looks like a misspelling of one counts) or with the
// file as a whole (unreadable, not YAML). Every other problem comes back
// in warnings, and the Config's other keys are then not to be used.
func FromCLIFor(c *cli.Context, need ...string) (cfg Config, warnings []error, err error) {
	return cliSource(c, os.LookupEnv).loadFor(need)
}

// cliSource is how FromCLI finds the file, the environment and the flags.
func cliSource(c *cli.Context, lookup func(string) (string, bool)) *source {
	s := &source{path: DefaultPath, lookup: lookup}
	if c.IsSet(FlagConfig) {
		s.path, s.namedBy = c.String(FlagConfig), "--"+FlagConfig
	} else if v, ok := lookupSet(lookup, EnvConfig); ok {
		s.path, s.namedBy = v, EnvConfig
	}
	for i := range keys {
		k := &keys[i]
		name := k.flagName()
		if !c.IsSet(name) {
			continue
		}
		v := c.String(name)
		if _, isBool := k.ref(&Config{}).(*bool); isBool {
			v = strconv.FormatBool(c.Bool(name))
		}
		s.flags = append(s.flags, setting{k, v})
	}
	return s
}

// Reload builds the configuration again the way c was built: it re-reads
// the same file and environment and applies the flags given at start
// once more, so those flags still win over an edited file. It is meant for
// SIGHUP; on error the caller keeps c. A Config that was not loaded
// (Default()) reloads from DefaultPath and the process's environment.
func (c Config) Reload() (Config, error) {
	s := c.src
	if s == nil {
		s = &source{path: DefaultPath, lookup: os.LookupEnv}
	}
	return s.load()
}

// load puts the layers together and validates. It reports every problem
// it finds, not just the first, so one round of editing fixes them all.
func (s *source) load() (Config, error) {
	c, errs := s.gather()
	if len(errs) > 0 {
		return Config{}, usage(errs)
	}
	return c, nil
}

// loadFor is load for FromCLIFor: only problems with the keys in need,
// or with no key, are fatal.
func (s *source) loadFor(need []string) (Config, []error, error) {
	c, errs := s.gather()
	var fatal, warnings []error
	for _, err := range errs {
		var ke *keyError
		if errors.As(err, &ke) && !slices.Contains(need, ke.key) {
			warnings = append(warnings, err)
		} else {
			fatal = append(fatal, err)
		}
	}
	if len(fatal) > 0 {
		return Config{}, warnings, usage(fatal)
	}
	c.src = s
	return c, warnings, nil
}

// gather reads the file and layers it; see layer.
func (s *source) gather() (Config, []error) {
	var data []byte
	if s.path != "" {
		var err error
		data, err = readFile(s.path, s.namedBy != "")
		if err != nil {
			return Config{}, []error{fmt.Errorf("%s: %w", orDefault(s.namedBy, "config file"), err)}
		}
	}
	return s.layer(data)
}

// build is load with the file's content given.
func (s *source) build(data []byte) (Config, error) {
	c, errs := s.layer(data)
	if len(errs) > 0 {
		return Config{}, usage(errs)
	}
	return c, nil
}

// keyError is a problem with one key, so that FromCLIFor can tell the
// keys its caller needs from the rest. An error without one concerns the
// file as a whole.
type keyError struct {
	key string
	err error
}

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

func keyErr(key string, err error) error { return &keyError{key, err} }

// layer puts the file's content, the environment and the flags over the
// defaults and validates the result. The Config is complete when there
// are no errors; with errors, it holds what could be set.
func (s *source) layer(data []byte) (Config, []error) {
	c := Default()
	origin := map[string]string{} // key path -> where its value came from
	errs := decodeFile(&c, s.path, data, origin)
	errs = append(errs, overlayEnv(&c, s.lookup, origin)...)
	for _, f := range s.flags {
		flag := "--" + f.k.flagName()
		if err := setString(f.k.ref(&c), f.value); err != nil {
			errs = append(errs, keyErr(f.k.path, fmt.Errorf("%s: %s=%v", f.k.path, flag, err)))
			continue
		}
		origin[f.k.path] = flag
	}
	c.tidy()
	for _, p := range c.problems() {
		msg := p.key + ": " + p.msg
		if from, ok := origin[p.key]; ok {
			msg += " (from " + from + ")"
		}
		errs = append(errs, keyErr(p.key, errors.New(msg)))
	}
	c.src = s
	return c, errs
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// readFile reads the configuration file. A missing file that nobody named
// is no error and no content.
func readFile(path string, named bool) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if !named && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes; is it the right file?", path, maxFileSize)
	}
	return data, nil
}

// decodeFile applies the file's keys to c. Unknown keys are errors (a
// misspelt key would otherwise silently leave its default in force), and
// each error names the file and the key.
func decodeFile(c *Config, name string, data []byte, origin map[string]string) []error {
	tree, err := parseYAML(data)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", name, err)}
	}
	if tree == nil {
		return nil // empty file, or only comments
	}
	root, ok := tree.(map[string]any)
	if !ok {
		return []error{fmt.Errorf("%s: the file must be a block of keys, not %s", name, describe(tree))}
	}
	errs := checkKeys(root, "", name)
	for i := range keys {
		k := &keys[i]
		v, found := lookupPath(root, k.path)
		if !found {
			continue
		}
		if err := setYAML(k.ref(c), v); err != nil {
			errs = append(errs, keyErr(k.path, fmt.Errorf("%s: %s: %w", name, k.path, err)))
			continue
		}
		if v != nil {
			origin[k.path] = name
		}
	}
	return errs
}

// parseYAML turns the document into maps with string keys, lists,
// strings, bools, json.Numbers and nils, the shapes encoding/json gives
// with UseNumber, and float64 for YAML's .nan and .inf only: JSON has no
// form for those, and keeping them lets the key they sit under be named.
// Duplicate keys are refused: which of the two would win is not obvious
// to whoever edits the file.
func parseYAML(data []byte) (any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var tree any
	if err := goyaml.UnmarshalStrict(data, &tree); err != nil {
		return nil, err
	}
	return jsonShape(tree)
}

// jsonShape converts go-yaml's decoding of a document into parseYAML's
// shapes, as sigs.k8s.io/yaml's YAML-to-JSON conversion does (a
// non-string key becomes its text; no configuration key matches one).
func jsonShape(v any) (any, error) {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			ks, ok := k.(string)
			if !ok {
				ks = describe(k)
			}
			var err error
			if m[ks], err = jsonShape(e); err != nil {
				return nil, err
			}
		}
		return m, nil
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			var err error
			if l[i], err = jsonShape(e); err != nil {
				return nil, err
			}
		}
		return l, nil
	case nil, string, bool:
		return v, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return v, nil
		}
	case int, int64, uint64:
	default:
		return nil, fmt.Errorf("%v: a value of YAML type %T is not supported", v, v)
	}
	// The number as encoding/json writes it, so that what a key accepts
	// does not depend on how YAML typed the number (5.0 is a whole number).
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return json.Number(b), nil
}

// checkKeys reports the keys of m (at prefix) that are not configuration
// keys, and blocks that hold something other than keys. An unknown key
// is filed under the key it most likely meant, if any: a misspelt
// stateDir is a problem with stateDir.
func checkKeys(m map[string]any, prefix, name string) []error {
	var errs []error
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		p := join(prefix, k)
		switch {
		case leaves[p]:
		case children[p] != nil:
			switch v := m[k].(type) {
			case nil:
			case map[string]any:
				errs = append(errs, checkKeys(v, p, name)...)
			default:
				errs = append(errs, keyErr(p, fmt.Errorf("%s: %s: %s is not a block of keys", name, p, describe(v))))
			}
		default:
			msg, meant := fmt.Sprintf("%s: unknown key %q", name, p), p
			if guess := nearest(k, children[prefix]); guess != "" {
				meant = join(prefix, guess)
				msg += fmt.Sprintf(" (did you mean %q?)", meant)
			}
			errs = append(errs, keyErr(meant, errors.New(msg)))
		}
	}
	return errs
}

// lookupPath finds the value at a dotted path. A block that is null or
// not a block hides its keys (checkKeys reports the latter).
func lookupPath(m map[string]any, path string) (any, bool) {
	segs := strings.Split(path, ".")
	for _, s := range segs[:len(segs)-1] {
		next, ok := m[s].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	v, ok := m[segs[len(segs)-1]]
	return v, ok
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// leaves holds every key's path; children maps each block's path ("" for
// the top) to the names directly under it. Both are fixed at start.
var leaves, children = keyTree()

func keyTree() (map[string]bool, map[string][]string) {
	leaves := map[string]bool{}
	children := map[string][]string{}
	for _, k := range keys {
		leaves[k.path] = true
		segs := strings.Split(k.path, ".")
		prefix := ""
		for _, s := range segs {
			if !slices.Contains(children[prefix], s) {
				children[prefix] = append(children[prefix], s)
			}
			prefix = join(prefix, s)
		}
	}
	return leaves, children
}

// nearest returns the candidate the unknown name was most likely meant
// to be: the same but for case, or at most two edits away.
func nearest(name string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if strings.EqualFold(c, name) {
			return c
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// lookupSet reads a variable, treating empty (after trimming) as unset.
func lookupSet(lookup func(string) (string, bool), name string) (string, bool) {
	if lookup == nil {
		return "", false
	}
	v, ok := lookup(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// overlayEnv applies the variables: the seed's names first, then the
// JOULIE_ names, which therefore win when both are set.
func overlayEnv(c *Config, lookup func(string) (string, bool), origin map[string]string) []error {
	if lookup == nil {
		return nil
	}
	errs := dvfsEnv(c, lookup, origin)
	apply := func(k *key, name string) {
		v, ok := lookupSet(lookup, name)
		if !ok {
			return
		}
		if err := setString(k.ref(c), v); err != nil {
			errs = append(errs, keyErr(k.path, fmt.Errorf("%s: %s=%v", k.path, name, err)))
			return
		}
		origin[k.path] = name
	}
	for i := range keys {
		if k := &keys[i]; k.alias != "" && !isDVFS(k) {
			apply(k, k.alias)
		}
	}
	for i := range keys {
		apply(&keys[i], keys[i].envName())
	}
	return errs
}

func isDVFS(k *key) bool { return strings.HasPrefix(k.path, "dvfs.") }

// dvfsEnv reads the seed's DVFS_* variables through the dvfs package, so
// that they mean exactly what they mean there (DVFS_COOLDOWN takes plain
// seconds too).
func dvfsEnv(c *Config, lookup func(string) (string, bool), origin map[string]string) []error {
	d := c.DVFS.Config()
	err := d.LoadEnv(lookup)
	c.DVFS = dvfsFrom(d)
	for i := range keys {
		if k := &keys[i]; isDVFS(k) {
			if _, ok := lookupSet(lookup, k.alias); ok {
				origin[k.path] = k.alias
			}
		}
	}
	if err == nil {
		return nil
	}
	// LoadEnv ends by validating the tunables. Those findings come again,
	// under their YAML keys, from the final validation; only parse errors
	// are reported here.
	if v := d.Validate(); v != nil && v.Error() == err.Error() {
		return nil
	}
	return relabelDVFS(err, false)
}

// relabelDVFS puts the YAML key in front of each of the dvfs package's
// messages, which name the seed's variable. With strip, the variable's
// name is dropped: the value may have come from the file.
func relabelDVFS(err error, strip bool) []error {
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	out := make([]error, 0, len(parts))
	for _, e := range parts {
		msg := e.Error()
		label := "dvfs"
		for i := range keys {
			k := &keys[i]
			if isDVFS(k) && strings.HasPrefix(msg, k.alias) {
				label = k.path
				if strip {
					msg = strings.TrimSpace(strings.TrimPrefix(msg, k.alias))
				}
				break
			}
		}
		out = append(out, keyErr(label, fmt.Errorf("%s: %s", label, msg)))
	}
	return out
}

// Flags returns the command-line flags: --config and one per key. They
// carry no EnvVars on purpose: the variables are read by this package
// (one code path for FromCLI and Load), so each flag's help names its
// variable in the usage text instead.
func Flags() []cli.Flag {
	def := Default()
	flags := []cli.Flag{&cli.StringFlag{
		Name:        FlagConfig,
		Usage:       "YAML configuration file; a missing file at the default path means all defaults (env " + EnvConfig + ")",
		DefaultText: DefaultPath,
		TakesFile:   true,
	}}
	for i := range keys {
		k := &keys[i]
		env := "env " + k.envName()
		if k.alias != "" {
			env += " or " + k.alias
		}
		usage := k.usage + " (" + env + ")"
		cat := category(k.path)
		ref := k.ref(def.clone())
		if _, isBool := ref.(*bool); isBool {
			flags = append(flags, &cli.BoolFlag{Name: k.flagName(), Usage: usage, Category: cat})
			continue
		}
		text, _ := format(ref)
		if k.path == "nodeName" {
			text = "the host name"
		}
		flags = append(flags, &cli.StringFlag{Name: k.flagName(), Usage: usage, DefaultText: text, Category: cat})
	}
	return flags
}

// category groups the flags of a block in --help.
func category(path string) string {
	switch {
	case strings.HasPrefix(path, "dvfs."):
		return "DVFS fallback"
	case path == "backend" || strings.HasPrefix(path, "http."):
		return "Backend"
	case strings.HasPrefix(path, "standalone."):
		return "Standalone target"
	case strings.HasPrefix(path, "pool."):
		return "Pool mode"
	}
	return ""
}
