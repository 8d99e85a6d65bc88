package settings

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
	"strings"

	"github.com/urfave/cli/v2"
	goyaml "go.yaml.in/yaml/v2"
)

// FlagConfig is the flag naming the configuration file.
const FlagConfig = "config"

// maxFileSize bounds what is read from the configuration file, so that a
// --config pointing at a device or a log file fails at once rather than
// filling memory. The programs' example files are a few kilobytes.
const maxFileSize = 1 << 20

// Source is how a configuration was put together: which file, which
// environment, which flags. Loading it again (SIGHUP) repeats that.
type Source[C any] struct {
	t *Table[C]
	// path is the file; "" means none.
	path string
	// namedBy is what named the file, for messages: "--config", the
	// table's ConfigEnv, or "config file" (Table.Load). Empty for the
	// default path, whose absence is no error.
	namedBy string
	// lookup reads the environment (os.LookupEnv); nil reads nothing.
	lookup func(string) (string, bool)
	// flags are the keys given on the command line at start.
	flags []flagValue[C]
}

// flagValue is a key's value as given on the command line.
type flagValue[C any] struct {
	k     *Key[C]
	value string
}

// NewSource reads the file at path (none when path is empty), which
// namedBy names in messages ("--config", "config file"); with namedBy
// empty, path is a default whose absence means all defaults. lookup reads
// the environment; nil reads nothing. It takes no flags: CLISource does.
func (t *Table[C]) NewSource(path, namedBy string, lookup func(string) (string, bool)) *Source[C] {
	return &Source[C]{t: t, path: path, namedBy: namedBy, lookup: lookup}
}

// CLISource is how a command line whose flags include Flags() is read:
// the file (--config, else ConfigEnv, else DefaultPath, which may be
// missing), the environment lookup reads, then the flags that were given.
func (t *Table[C]) CLISource(c *cli.Context, lookup func(string) (string, bool)) *Source[C] {
	s := &Source[C]{t: t, path: t.DefaultPath, lookup: lookup}
	if c.IsSet(FlagConfig) {
		s.path, s.namedBy = c.String(FlagConfig), "--"+FlagConfig
	} else if v, ok := lookupSet(lookup, t.ConfigEnv); ok && t.ConfigEnv != "" {
		s.path, s.namedBy = v, t.ConfigEnv
	}
	var zero C
	for i := range t.Keys {
		k := &t.Keys[i]
		name := k.FlagName()
		if !c.IsSet(name) {
			continue
		}
		v := c.String(name)
		if isBool(k.Ref(t.clone(zero))) {
			v = fmt.Sprint(c.Bool(name))
		}
		s.flags = append(s.flags, flagValue[C]{k, v})
	}
	return s
}

// Load puts the layers together and validates. It reports every problem
// it finds, not just the first, so one round of editing fixes them all.
func (s *Source[C]) Load() (C, error) {
	c, errs := s.gather()
	if len(errs) > 0 {
		var zero C
		return zero, usage(errs)
	}
	return c, nil
}

// LoadFor is Load for a command that reads only the keys in need
// (joulie-agentctl restore --offline needs the state directory, not the
// DVFS tunables). It fails only on a problem with one of those keys (an
// unknown key that looks like a misspelling of one counts) or with the
// file as a whole; every other problem comes back in warnings, and the
// other keys are then not to be used.
func (s *Source[C]) LoadFor(need []string) (C, []error, error) {
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
		var zero C
		return zero, warnings, usage(fatal)
	}
	return c, warnings, nil
}

// gather reads the file and layers it; see layer.
func (s *Source[C]) gather() (C, []error) {
	var data []byte
	if s.path != "" {
		var err error
		data, err = readFile(s.path, s.namedBy != "")
		if err != nil {
			var zero C
			return zero, []error{fmt.Errorf("%s: %w", orDefault(s.namedBy, "config file"), err)}
		}
	}
	return s.layer(data)
}

// Parse is Load with the file's content given, under the name name; for
// tests and fuzzing.
func (t *Table[C]) Parse(name string, data []byte) (C, error) {
	c, errs := (&Source[C]{t: t, path: name}).layer(data)
	if len(errs) > 0 {
		var zero C
		return zero, usage(errs)
	}
	return c, nil
}

// layer puts the file's content, the environment and the flags over the
// defaults, validates the result and, when nothing is wrong, completes
// it. With errors, the configuration holds what could be set, not
// completed.
func (s *Source[C]) layer(data []byte) (C, []error) {
	t := s.t
	c := t.Default()
	origin := map[string]string{} // key path -> where its value came from
	errs := t.decodeFile(&c, s.path, data, origin)
	errs = append(errs, t.overlayEnv(&c, s.lookup, origin)...)
	for _, f := range s.flags {
		flag := "--" + f.k.FlagName()
		if err := setString(f.k.Ref(&c), f.value); err != nil {
			errs = append(errs, keyErr(f.k.Path, fmt.Errorf("%s: %s=%v", f.k.Path, flag, err)))
			continue
		}
		origin[f.k.Path] = flag
	}
	problem := func(p Problem) {
		msg := p.Key + ": " + p.Msg
		if from, ok := origin[p.Key]; ok {
			msg += " (from " + from + ")"
		}
		errs = append(errs, keyErr(p.Key, errors.New(msg)))
	}
	if t.Check != nil {
		for _, p := range t.Check(c) {
			problem(p)
		}
	}
	if t.Complete != nil && len(errs) == 0 {
		for _, p := range t.Complete(&c) {
			problem(p)
		}
	}
	return c, errs
}

// Validate reports every problem Check finds in c, each naming its key
// and the bad value, without sources. The error wraps ErrUsage.
func (t *Table[C]) Validate(c C) error {
	var errs []error
	for _, p := range t.Check(c) {
		errs = append(errs, errors.New(p.Key+": "+p.Msg))
	}
	return usage(errs)
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
func (t *Table[C]) decodeFile(c *C, name string, data []byte, origin map[string]string) []error {
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
	errs := t.checkKeys(root, "", name)
	for i := range t.Keys {
		k := &t.Keys[i]
		v, found := lookupPath(root, k.Path)
		if !found {
			continue
		}
		if err := setYAML(k.Ref(c), v); err != nil {
			errs = append(errs, keyErr(k.Path, fmt.Errorf("%s: %s: %w", name, k.Path, err)))
			continue
		}
		if v != nil {
			origin[k.Path] = name
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
func (t *Table[C]) checkKeys(m map[string]any, prefix, name string) []error {
	var errs []error
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		p := join(prefix, k)
		switch {
		case t.leaves[p]:
		case t.children[p] != nil:
			switch v := m[k].(type) {
			case nil:
			case map[string]any:
				errs = append(errs, t.checkKeys(v, p, name)...)
			default:
				errs = append(errs, keyErr(p, fmt.Errorf("%s: %s: %s is not a block of keys", name, p, describe(v))))
			}
		default:
			msg, meant := fmt.Sprintf("%s: unknown key %q", name, p), p
			if guess := nearest(k, t.children[prefix]); guess != "" {
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
	if lookup == nil || name == "" {
		return "", false
	}
	v, ok := lookup(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// overlayEnv applies the variables: every key's Env names first, then
// the derived names, which therefore win when both are set.
func (t *Table[C]) overlayEnv(c *C, lookup func(string) (string, bool), origin map[string]string) []error {
	if lookup == nil {
		return nil
	}
	var errs []error
	apply := func(k *Key[C], name string, parse func(any, string) error) {
		v, ok := lookupSet(lookup, name)
		if !ok && k.EmptyIsValue && slices.Contains(k.Env, name) {
			_, ok = lookup(name)
		}
		if !ok {
			return
		}
		if err := parse(k.Ref(c), v); err != nil {
			errs = append(errs, keyErr(k.Path, fmt.Errorf("%s: %s=%v", k.Path, name, err)))
			return
		}
		origin[k.Path] = name
	}
	for i := range t.Keys {
		k := &t.Keys[i]
		parse := setString
		if k.ParseEnv != nil {
			parse = k.ParseEnv
		}
		for _, name := range k.Env {
			apply(k, name, parse)
		}
	}
	if t.Prefix != "" {
		for i := range t.Keys {
			apply(&t.Keys[i], t.derivedVar(&t.Keys[i]), setString)
		}
	}
	return errs
}
