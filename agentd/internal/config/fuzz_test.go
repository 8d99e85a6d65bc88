package config

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzLoad: any file either fails with a usage error that says something,
// or gives a configuration that validates and that survives its own
// encoding (the table's Encode, loaded again) unchanged. Seeds in
// testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := table.Parse("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrUsage) || err.Error() == "" {
				t.Fatalf("error %q: not a usage error, or empty", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted a configuration that does not validate: %v", err)
		}
		var enc bytes.Buffer
		if err := table.Encode(&enc, c); err != nil {
			t.Fatalf("accepted configuration does not encode: %v", err)
		}
		again, err := table.Parse("again.yaml", enc.Bytes())
		if err != nil {
			t.Fatalf("own encoding refused: %v\n%s", err, enc.String())
		}
		wantEqual(t, again, c)
	})
}
