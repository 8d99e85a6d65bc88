package facility

import (
	"maps"
	"testing"
)

// FuzzDecodeResponse: whatever a server sends, the decoder returns either
// an error that says something or at least one sample, and what it accepts
// survives being written back as a vector answer and read again. Seeds in
// testdata/fuzz/FuzzDecodeResponse.
func FuzzDecodeResponse(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeResponse(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			if got != nil {
				t.Fatalf("samples %v returned with error %v", got, err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatal("accepted an answer without samples and without error")
		}
		again, err := decodeResponse(vectorAnswer(got...))
		if err != nil {
			t.Fatalf("own encoding of %v refused: %v", got, err)
		}
		if len(again) != len(got) {
			t.Fatalf("round trip: %d samples became %d", len(got), len(again))
		}
		for i := range got {
			if !sameFloat(got[i].value, again[i].value) || !maps.Equal(got[i].labels, again[i].labels) {
				t.Fatalf("round trip: %+v became %+v", got[i], again[i])
			}
		}
	})
}
