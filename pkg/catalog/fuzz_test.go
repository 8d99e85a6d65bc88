package catalog

import (
	"reflect"
	"testing"
)

// FuzzResolve checks that resolution is total and consistent for any input:
// it never panics, always returns a catalog entry whose kind agrees with the
// exactness, gives the same answer twice, and maps a returned model's own
// name back to that model exactly. Seeds live in testdata/fuzz/FuzzResolve.
func FuzzResolve(f *testing.F) {
	c := Default()
	f.Fuzz(func(t *testing.T, raw string) {
		cpu, cx := c.ResolveCPU(raw)
		checkResolution(t, "cpu", raw, cpu.ID, cpu.Name, cpu.Generic, cx, cpu.TDPWatts, cpu.Density)
		if byID, ok := c.CPUByID(cpu.ID); !ok || !reflect.DeepEqual(byID, cpu) {
			t.Errorf("ResolveCPU(%q) returned %s, which CPUByID does not give back", raw, cpu.ID)
		}
		if again, ax := c.ResolveCPU(raw); again.ID != cpu.ID || ax != cx {
			t.Errorf("ResolveCPU(%q) is not deterministic: %s/%s then %s/%s", raw, cpu.ID, cx, again.ID, ax)
		}
		if !cpu.Generic {
			if back, bx := c.ResolveCPU(cpu.Name); back.ID != cpu.ID || bx != ExactnessExact {
				t.Errorf("the name of %s resolves to %s, %s", cpu.ID, back.ID, bx)
			}
		}

		gpu, gx := c.ResolveGPU(raw)
		checkResolution(t, "gpu", raw, gpu.ID, gpu.Name, gpu.Generic, gx, gpu.TDPWatts, gpu.Density)
		if byID, ok := c.GPUByID(gpu.ID); !ok || !reflect.DeepEqual(byID, gpu) {
			t.Errorf("ResolveGPU(%q) returned %s, which GPUByID does not give back", raw, gpu.ID)
		}
		if again, ax := c.ResolveGPU(raw); again.ID != gpu.ID || ax != gx {
			t.Errorf("ResolveGPU(%q) is not deterministic: %s/%s then %s/%s", raw, gpu.ID, gx, again.ID, ax)
		}
		if !gpu.Generic {
			if back, bx := c.ResolveGPU(gpu.Name); back.ID != gpu.ID || bx != ExactnessExact {
				t.Errorf("the name of %s resolves to %s, %s", gpu.ID, back.ID, bx)
			}
		}
	})
}

func checkResolution(t *testing.T, kind, raw, id, name string, isGeneric bool, ex Exactness, tdp, density float64) {
	t.Helper()
	if id == "" || name == "" || !(tdp > 0) || !(density > 0) {
		t.Errorf("%s %q resolved to an incomplete entry %q", kind, raw, id)
	}
	switch ex {
	case ExactnessExact, ExactnessProxy:
		if isGeneric {
			t.Errorf("%s %q: %s result is the generic entry %s", kind, raw, ex, id)
		}
	case ExactnessGeneric:
		if !isGeneric {
			t.Errorf("%s %q: %s result is the model %s", kind, raw, ex, id)
		}
	default:
		t.Errorf("%s %q: exactness %q is not one of the documented values", kind, raw, ex)
	}
}

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, and a
// catalog it accepts must resolve any string to one of its own entries, so
// a broken catalog file is refused at load time rather than misbehaving
// later. Seeds live in testdata/fuzz/FuzzParse (valid catalogs and
// near-misses).
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if c != nil {
				t.Fatalf("Parse returned a catalog along with error %v", err)
			}
			return
		}
		for _, raw := range []string{"", "AMD EPYC 9654 96-Core Processor", "NVIDIA H100 80GB HBM3", string(data[:min(len(data), 64)])} {
			cpu, _ := c.ResolveCPU(raw)
			if _, ok := c.CPUByID(cpu.ID); !ok {
				t.Errorf("ResolveCPU(%q) returned %q, not an entry of the parsed catalog", raw, cpu.ID)
			}
			gpu, _ := c.ResolveGPU(raw)
			if _, ok := c.GPUByID(gpu.ID); !ok {
				t.Errorf("ResolveGPU(%q) returned %q, not an entry of the parsed catalog", raw, gpu.ID)
			}
		}
	})
}
