package config

import (
	"errors"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzLoad: any file either fails with a usage error that says something,
// or gives a configuration that validates and that survives its own
// encoding (yaml.Marshal, loaded again) unchanged. Seeds in
// testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := (&source{path: "fuzz.yaml"}).build(data)
		if err != nil {
			if !errors.Is(err, ErrUsage) || err.Error() == "" {
				t.Fatalf("error %q: not a usage error, or empty", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted a configuration that does not validate: %v", err)
		}
		enc, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("accepted configuration does not encode: %v", err)
		}
		again, err := (&source{path: "again.yaml"}).build(enc)
		if err != nil {
			t.Fatalf("own encoding refused: %v\n%s", err, enc)
		}
		wantEqual(t, again, c)
	})
}
