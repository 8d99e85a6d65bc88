package settings

import (
	"fmt"
	"io"
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
		if vars := t.Vars(k); len(vars) > 0 {
			usage += " (env " + strings.Join(vars, " or ") + ")"
		}
		cat := ""
		if t.Category != nil {
			cat = t.Category(k.Path)
		}
		ref := k.Ref(t.clone(def))
		if isBool(ref) {
			// Value only shows the default in --help; the loader reads a
			// switch only when it was given.
			flags = append(flags, &cli.BoolFlag{Name: k.FlagName(), Usage: usage, Category: cat, Value: *ref.(*bool)})
			continue
		}
		text, _ := format(ref)
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
		if v, ok := format(t.Keys[i].Ref(r)); ok {
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
		v, ok := format(ref)
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
