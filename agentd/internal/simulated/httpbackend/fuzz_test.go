package httpbackend

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeTelemetry: any body either fails with an error or decodes to
// telemetry that keeps the contract's promises, and whose encoding
// decodes back to the same encoding. Seeds in
// testdata/fuzz/FuzzDecodeTelemetry.
func FuzzDecodeTelemetry(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		tel, err := DecodeTelemetry(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if tel.APIVersion != APIVersion || tel.Node == "" {
			t.Fatalf("accepted without version or node: %+v", tel)
		}
		if c := tel.CPU; c != nil && (len(c.PackagePowerWatts) == 0 || c.MinWattsPerPackage > c.MaxWattsPerPackage) {
			t.Fatalf("accepted a broken cpu block: %+v", c)
		}
		for i, g := range tel.GPUs {
			if g.MinWatts > g.MaxWatts || g.UUID == "" || (i > 0 && tel.GPUs[i-1].Index >= g.Index) {
				t.Fatalf("accepted broken or unsorted gpus: %+v", tel.GPUs)
			}
		}
		enc, err := json.Marshal(tel)
		if err != nil {
			t.Fatalf("accepted telemetry does not encode: %v", err)
		}
		again, err := DecodeTelemetry(enc)
		if err != nil {
			t.Fatalf("own encoding %s refused: %v", enc, err)
		}
		if enc2, _ := json.Marshal(again); string(enc2) != string(enc) {
			t.Fatalf("encoding is not a fixed point:\n%s\n%s", enc, enc2)
		}
	})
}

// FuzzDecodeControlRequest: the simulator's request decoding never
// panics, and an accepted request carries exactly its action's fields.
func FuzzDecodeControlRequest(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"joulie.io/http-backend/v1","node":"n","action":"gpu.set_power_cap_watts","gpu":1,"watts":3}`))
	f.Add([]byte(`{"apiVersion":"joulie.io/http-backend/v1","node":"n","action":"dvfs.set_throttle_pct","pct":30}`))
	f.Add([]byte(`{"apiVersion":"joulie.io/http-backend/v1","node":"n","action":"rapl.set_power_cap_watts","watts":1e2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeControlRequest(data)
		if err != nil {
			return
		}
		ok := false
		switch r.Action {
		case ActionSetPackageCap:
			ok = r.Watts != nil && r.Pct == nil && r.GPU == nil
		case ActionSetThrottle:
			ok = r.Pct != nil && r.Watts == nil && r.GPU == nil
		case ActionSetGPUCap:
			ok = r.Watts != nil && r.GPU != nil && r.Pct == nil
		}
		if !ok {
			t.Fatalf("accepted %s as %+v", data, r)
		}
	})
}
