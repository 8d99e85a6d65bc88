package localapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeSpec feeds PUT /v1/profile bodies to the decoder: it must
// never panic, and a body it accepts must survive a round trip unchanged.
func FuzzDecodeSpec(f *testing.F) {
	for _, seed := range []string{
		`{"profile":"eco","cpu":{"packagePowerCapPctOfMax":60},"gpu":{"powerCap":{"capPctOfMax":60}}}`,
		`{"profile":"performance","cpu":{"packagePowerCapWatts":250.5}}`,
		`{"profile":"eco","gpu":{}}`,
		`null`, ``, `{}`, `[]`, `{"profile":"eco"}{}`, `{"cpu":{"packagePowerCapWatts":1e400}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		spec, code, err := decodeSpec(strings.NewReader(body))
		if err != nil {
			if code < 400 {
				t.Fatalf("error %v with status %d", err, code)
			}
			return
		}
		if ValidateSpec(spec) != nil {
			return
		}
		data, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("a valid spec does not encode: %v", err)
		}
		again, _, err := decodeSpec(strings.NewReader(string(data)))
		if err != nil {
			t.Fatalf("re-decoding %s: %v", data, err)
		}
		if data2, _ := json.Marshal(again); string(data2) != string(data) {
			t.Fatalf("round trip changed %s into %s", data, data2)
		}
	})
}
