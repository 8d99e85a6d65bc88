package cpufreq

import "testing"

// FuzzParseID: never panics, and whatever it accepts is exactly what ID
// writes for that CPU, so a journal entry can only ever name a CPU's
// scaling_max_freq.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"cpu0/scaling_max_freq", "cpu191/scaling_max_freq", "cpu01/scaling_max_freq",
		"cpu-1/scaling_max_freq", "cpu1/../scaling_max_freq", "", "cpu65535/scaling_max_freq"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpu, err := ParseID(s)
		if err != nil {
			return
		}
		if cpu < 0 || cpu > maxCPUID || ID(cpu) != s {
			t.Fatalf("ParseID(%q) = %d, which ID writes as %q", s, cpu, ID(cpu))
		}
	})
}
