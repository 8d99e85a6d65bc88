package settingstest

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	goyaml "go.yaml.in/yaml/v2"

	"joulie.io/joulie/pkg/settings"
)

// CheckFiles loads every file matching glob on its own, without the
// environment, and reports the problems of all of them; none matching is
// an error. It is for files another tool generates (the Helm chart's
// rendered configuration).
func CheckFiles[C any](t *settings.Table[C], glob string) error {
	paths, err := filepath.Glob(glob)
	if err != nil || len(paths) == 0 {
		return fmt.Errorf("no file matches %s (%v)", glob, err)
	}
	var errs []error
	for _, p := range paths {
		if _, err := t.NewSource(p, "config file", nil).Load(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// CheckEveryKeyShown reports each key of t that the YAML document data,
// called name, does not set (null counts as set): for an example file
// meant to show every key. Whether the values load is for the loader to
// say.
func CheckEveryKeyShown[C any](t *settings.Table[C], name string, data []byte) error {
	var doc map[any]any
	if err := goyaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var errs []error
	for _, k := range t.Keys {
		if !shows(doc, k.Path) {
			errs = append(errs, fmt.Errorf("%s does not show %s", name, k.Path))
		}
	}
	return errors.Join(errs...)
}

// shows reports whether the dotted path is set in doc.
func shows(doc map[any]any, path string) bool {
	segs := strings.Split(path, ".")
	for _, s := range segs[:len(segs)-1] {
		next, ok := doc[s].(map[any]any)
		if !ok {
			return false
		}
		doc = next
	}
	_, ok := doc[segs[len(segs)-1]]
	return ok
}
