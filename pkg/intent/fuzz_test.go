package intent

import (
	"math"
	"testing"
)

// FuzzParseModelCaps feeds GPU_MODEL_CAPS_JSON arbitrary bytes: the parser
// either refuses them or returns ranges a cap can be clamped into.
func FuzzParseModelCaps(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseModelCaps(data)
		if err != nil {
			return
		}
		for name, c := range m {
			if name == "" || !(c.MaxCapWatts > 0) || c.MinCapWatts < 0 || c.MinCapWatts > c.MaxCapWatts || math.IsInf(c.MaxCapWatts, 0) {
				t.Fatalf("accepted %q: %+v", name, c)
			}
		}
	})
}
