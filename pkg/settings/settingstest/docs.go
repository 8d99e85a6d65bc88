package settingstest

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"joulie.io/joulie/pkg/settings"
)

// The lines around the generated key table in a program's README.
const (
	MarkdownBegin = "<!-- generated from the key table; JOULIE_UPDATE_README=1 go test rewrites it -->"
	MarkdownEnd   = "<!-- end of the generated table -->"
)

// Markdown renders t's keys as a Markdown table, in key order: key, flag,
// variables, default and meaning.
func Markdown[C any](t *settings.Table[C]) string {
	defaults := map[string]string{} // an unset optional number has none
	t.Each(t.Default(), func(path, v string) { defaults[path] = v })
	var b strings.Builder
	b.WriteString("| key | flag | variable | default | meaning |\n|---|---|---|---|---|\n")
	for i := range t.Keys {
		k := &t.Keys[i]
		def := defaults[k.Path]
		if k.DefaultText != "" {
			def = k.DefaultText
		} else if def != "" {
			def = "`" + def + "`"
		}
		vars := t.Vars(k)
		for j := range vars {
			vars[j] = "`" + vars[j] + "`"
		}
		usage := strings.ReplaceAll(k.Usage, "|", `\|`)
		fmt.Fprintf(&b, "| `%s` | `--%s` | %s | %s | %s |\n", k.Path, k.FlagName(), strings.Join(vars, ", "), def, usage)
	}
	return b.String()
}

// CheckMarkdown compares the table between MarkdownBegin and MarkdownEnd
// in the file at path with Markdown(t); with update, it rewrites the
// table in the file instead of failing.
func CheckMarkdown[C any](t *settings.Table[C], path string, update bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(data)
	begin, end := strings.Index(text, MarkdownBegin), strings.Index(text, MarkdownEnd)
	if begin < 0 || end < begin {
		return fmt.Errorf("%s has no %q ... %q section", path, MarkdownBegin, MarkdownEnd)
	}
	want := MarkdownBegin + "\n" + Markdown(t) + MarkdownEnd
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
// starts at the line heading and runs to the next heading of its level:
// every key it names with a variable, "`key` (`VARIABLE`)", must be a key
// of t and that one of its variables. A section naming no key that way
// fails too, since the check would then guard nothing. The chart's README
// documents the programs' keys so.
func CheckMentions[C any](t *settings.Table[C], path, heading string) error {
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
		case !slices.Contains(t.Vars(k), m[2]):
			errs = append(errs, fmt.Errorf("%s, %s: the variable of %s is %v, not %s", path, heading, m[1], t.Vars(k), m[2]))
		}
	}
	return errors.Join(errs...)
}
