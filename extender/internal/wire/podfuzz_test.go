package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"joulie.io/joulie/extender/internal/fixture"
)

// fullPod is the pod as encoding/json decodes it into podJSON, the
// reference the streaming decoder answers to.
func fullPod(raw []byte) (*podJSON, error) {
	var p podJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// streamPod is the pod as the streaming decoder reads it.
func streamPod(raw []byte) (*podJSON, error) {
	var a Args
	a.scan.reset(raw)
	var p podJSON
	if err := a.readPod(&a.scan, &p); err != nil {
		return nil, err
	}
	if err := a.scan.end(); err != nil {
		return nil, err
	}
	return &p, nil
}

// FuzzReadPod holds the streaming pod decoder to encoding/json on the same
// input: it never panics, accepts only what encoding/json accepts, refuses
// what it accepts only for a key it reads given twice, and reads the same
// pod, field for field. Seeds are in testdata/fuzz/FuzzReadPod.
func FuzzReadPod(f *testing.F) {
	for _, class := range []string{"", "performance"} {
		raw, err := json.Marshal(fixture.Pod(class))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := streamPod(raw)
		want, refErr := fullPod(raw)
		switch {
		case err != nil && refErr == nil && !errors.Is(err, ErrDuplicateKey):
			t.Fatalf("refused %q, which encoding/json reads: %v", raw, err)
		case err == nil && refErr != nil:
			t.Fatalf("accepted %q, which encoding/json refuses: %v", raw, refErr)
		case err == nil && !reflect.DeepEqual(got.pod(), want.pod()):
			t.Fatalf("%q:\nstreaming     %+v\nencoding/json %+v", raw, got.pod(), want.pod())
		}
	})
}
