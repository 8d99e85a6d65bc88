package settingstest

import (
	"os"
	"strings"
	"testing"

	"joulie.io/joulie/pkg/settings"
)

type demo struct {
	Addr  string
	Frac  float64
	Count int
}

var demoTable = settings.New(settings.Table[demo]{
	Keys: []settings.Key[demo]{
		{Path: "addr", Env: []string{"DEMO_ADDR"}, Usage: "listen address", Ref: func(c *demo) any { return &c.Addr }},
		{Path: "frac", Env: []string{"FRAC"}, Usage: "fraction", Ref: func(c *demo) any { return &c.Frac }},
		{Path: "count", Env: []string{"COUNT"}, Usage: "count", Ref: func(c *demo) any { return &c.Count }},
	},
	Default: func() demo { return demo{Addr: ":80", Frac: 0.5, Count: 1} },
})

// A stale table fails until rewritten; a mention of a key that is not
// one, or with another key's variable, fails, and sections are kept
// apart by their headings.
func TestDocumentsMustMatchTheTable(t *testing.T) {
	path := t.TempDir() + "/README.md"
	doc := "# x\n\n## Config\n\n" + MarkdownBegin + "\nstale\n" + MarkdownEnd + "\n\n### Chart\n\n| `a` | `count` (`COUNT`), `frac` (`FRACTION`), `nope` (`X`) |\n\n### Next\n\n`addr` (`WRONG`)\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckMarkdown(demoTable, path, false); err == nil {
		t.Error("a stale table passed")
	}
	if err := CheckMarkdown(demoTable, path, true); err != nil {
		t.Fatal(err)
	}
	if err := CheckMarkdown(demoTable, path, false); err != nil {
		t.Errorf("the rewritten table: %v", err)
	}
	err := CheckMentions(demoTable, path, "### Chart")
	if err == nil || !strings.Contains(err.Error(), "FRACTION") || !strings.Contains(err.Error(), "nope is not a key") || strings.Contains(err.Error(), "WRONG") {
		t.Errorf("mentions: %v", err)
	}
}

func TestEveryKeyShown(t *testing.T) {
	if err := CheckEveryKeyShown(demoTable, "ex", []byte("addr: x\nfrac:\ncount: 2\n")); err != nil {
		t.Errorf("a document setting every key (one to null): %v", err)
	}
	err := CheckEveryKeyShown(demoTable, "ex", []byte("addr: x\n"))
	if err == nil || !strings.Contains(err.Error(), "ex does not show frac") || !strings.Contains(err.Error(), "ex does not show count") {
		t.Errorf("a document lacking two keys: %v", err)
	}
}
