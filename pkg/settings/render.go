package settings

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// Flags returns the command-line flags: --config and one per key. They
// carry no EnvVars on purpose: the variables are read by this package
// (one code path for flags, file and environment), so each flag's help
// names its variables in the usage text instead.
func (t *Table[C]) Flags() []cli.Flag {
	config := &cli.StringFlag{Name: FlagConfig, Usage: "YAML configuration file", TakesFile: true}
	if t.DefaultPath != "" {
		config.Usage += "; a missing file at the default path means all defaults"
		config.DefaultText = t.DefaultPath
	}
	if t.ConfigEnv != "" {
		config.Usage += " (env " + t.ConfigEnv + ")"
	}
	flags := []cli.Flag{config}
	def := t.Default()
	for i := range t.Keys {
		k := &t.Keys[i]
		usage := k.Usage
		if vars := t.vars(k); len(vars) > 0 {
			usage += " (env " + strings.Join(vars, " or ") + ")"
		}
		cat := ""
		if t.Category != nil {
			cat = t.Category(k.Path)
		}
		ref := k.Ref(t.clone(def))
		if IsBool(ref) {
			// Value only shows the default in --help; the loader reads a
			// switch only when it was given.
			flags = append(flags, &cli.BoolFlag{Name: k.FlagName(), Usage: usage, Category: cat, Value: *ref.(*bool)})
			continue
		}
		text, _ := Format(ref)
		if k.DefaultText != "" {
			text = k.DefaultText
		}
		flags = append(flags, &cli.StringFlag{Name: k.FlagName(), Usage: usage, DefaultText: text, Category: cat})
	}
	return flags
}

// Each calls fn with every key that has a value in c, in key order.
func (t *Table[C]) Each(c C, fn func(path, value string)) {
	r := t.clone(c)
	for i := range t.Keys {
		if v, ok := Format(t.Keys[i].Ref(r)); ok {
			fn(t.Keys[i].Path, v)
		}
	}
}

// Encode writes c as a configuration file: every key with a value, in
// blocks, in key order. Loading the result gives c back.
func (t *Table[C]) Encode(w io.Writer, c C) error {
	r := t.clone(c)
	var b strings.Builder
	var open []string // the blocks the last key was in
	for i := range t.Keys {
		k := &t.Keys[i]
		ref := k.Ref(r)
		v, ok := Format(ref)
		if !ok {
			continue
		}
		segs := strings.Split(k.Path, ".")
		same := 0
		for same < len(open) && same < len(segs)-1 && open[same] == segs[same] {
			same++
		}
		for d := same; d < len(segs)-1; d++ {
			fmt.Fprintf(&b, "%s%s:\n", strings.Repeat("  ", d), segs[d])
		}
		open = segs[:len(segs)-1]
		switch kindOf(ref) {
		case kindBool, kindFloat, kindOptFloat, kindInt:
		default:
			v = strconv.Quote(v)
		}
		fmt.Fprintf(&b, "%s%s: %s\n", strings.Repeat("  ", len(segs)-1), segs[len(segs)-1], v)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Markdown renders the keys as a Markdown table: key, flag, variables,
// default and meaning, in key order. The programs' READMEs hold it
// between MarkdownBegin and MarkdownEnd, and a test of each program keeps
// it equal to this (CheckMarkdown).
func (t *Table[C]) Markdown() string {
	var b strings.Builder
	b.WriteString("| key | flag | variable | default | meaning |\n|---|---|---|---|---|\n")
	def := t.Default()
	for i := range t.Keys {
		k := &t.Keys[i]
		text, _ := Format(k.Ref(t.clone(def)))
		if k.DefaultText != "" {
			text = k.DefaultText
		} else if text != "" {
			text = "`" + text + "`"
		}
		vars := t.vars(k)
		for j := range vars {
			vars[j] = "`" + vars[j] + "`"
		}
		usage := strings.ReplaceAll(k.Usage, "|", `\|`)
		fmt.Fprintf(&b, "| `%s` | `--%s` | %s | %s | %s |\n", k.Path, k.FlagName(), strings.Join(vars, ", "), text, usage)
	}
	return b.String()
}

// The lines around the generated table in a README.
const (
	MarkdownBegin = "<!-- generated from the key table; JOULIE_UPDATE_README=1 go test rewrites it -->"
	MarkdownEnd   = "<!-- end of the generated table -->"
)

// CheckMarkdown compares the table between MarkdownBegin and MarkdownEnd
// in the file at path with Markdown(); with update, it rewrites the file
// instead.
func (t *Table[C]) CheckMarkdown(path string, update bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(data)
	begin, end := strings.Index(text, MarkdownBegin), strings.Index(text, MarkdownEnd)
	if begin < 0 || end < begin {
		return fmt.Errorf("%s has no %q ... %q section", path, MarkdownBegin, MarkdownEnd)
	}
	want := MarkdownBegin + "\n" + t.Markdown() + MarkdownEnd
	if text[begin:end+len(MarkdownEnd)] == want {
		return nil
	}
	if update {
		return os.WriteFile(path, []byte(text[:begin]+want+text[end+len(MarkdownEnd):]), 0o644)
	}
	return fmt.Errorf("the configuration table of %s differs from the key table; run JOULIE_UPDATE_README=1 go test on the program's config package", path)
}

// mention is how a document names a key with its variable:
// "`nodeSelector` (`NODE_SELECTOR`)".
var mention = regexp.MustCompile("`([a-zA-Z][a-zA-Z0-9.]*)`:? \\(`([A-Z][A-Z0-9_]*)`\\)")

// CheckMentions checks the section of the Markdown file at path that
// starts at the line heading (up to the next heading of its level): every
// key it names with its variable, "`key` (`VARIABLE`)", must be a key of
// the table and that one of its variables. The chart's README documents
// the programs' keys that way. It also fails on a section naming none.
func (t *Table[C]) CheckMentions(path, heading string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(data)
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		return fmt.Errorf("%s has no heading %q", path, heading)
	}
	section := text[start+1:]
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if end := strings.Index(section[len(heading):], "\n"+level); end >= 0 {
		section = section[:len(heading)+end]
	}
	found := mention.FindAllStringSubmatch(section, -1)
	if len(found) == 0 {
		return fmt.Errorf("%s, %s: names no key with its variable", path, heading)
	}
	var errs []error
	for _, m := range found {
		k := t.Key(m[1])
		switch {
		case k == nil:
			errs = append(errs, fmt.Errorf("%s, %s: %s is not a key", path, heading, m[1]))
		case !slices.Contains(t.vars(k), m[2]):
			errs = append(errs, fmt.Errorf("%s, %s: the variable of %s is %v, not %s", path, heading, m[1], t.vars(k), m[2]))
		}
	}
	return errors.Join(errs...)
}
