package energyreport

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

var since = time.Date(2026, 11, 28, 14, 2, 5, 0, time.UTC)

// The README's example, as kubectl describe pod shows it.
func TestNoteSaysWhatThePodUsed(t *testing.T) {
	got := Note(Report{GPUJoules: 9_000_000, GPUCount: 2, GPUs: []string{"GPU-a", "GPU-b"}, CPUJoules: 180_000, HasCPU: true,
		Since: since, Until: since.Add(2*time.Hour + 38*time.Minute + 7*time.Second)})
	want := "GPU energy 2.50 kWh (9000000 J) measured on 2 GPUs; CPU energy 0.05 kWh (180000 J) estimated from RAPL by CPU time; " +
		"from 2026-11-28T14:02:05Z to 2026-11-28T16:40:12Z (2h38m7s); GPUs GPU-a, GPU-b"
	if got != want {
		t.Errorf("note\n%q\nwant\n%q", got, want)
	}
}

// Parse reads back every shape of note Note writes, to the precision
// the note keeps.
func TestParseReadsWhatNoteWrites(t *testing.T) {
	until := since.Add(90 * time.Second)
	var many []string
	for i := range 80 {
		many = append(many, fmt.Sprintf("GPU-0b1c2d3e-aaaa-bbbb-cccc-%012d", i))
	}
	for _, c := range []struct {
		name string
		r    Report
		tol  float64 // joules
	}{
		{"GPU and CPU in kWh", Report{GPUJoules: 9_000_000, GPUCount: 2, GPUs: []string{"GPU-a", "GPU-b"}, CPUJoules: 180_000, HasCPU: true}, 0},
		{"one GPU in kJ, estimated", Report{GPUJoules: 1234, GPUCount: 1, GPUs: []string{"GPU-a"}, GPUEstimated: true}, 50},
		{"CPU only, in J", Report{CPUJoules: 512, HasCPU: true}, 0},
		{"nothing measured on the CPU", Report{GPUJoules: 40, GPUCount: 1, GPUs: []string{"GPU-z"}}, 0},
		{"a list cut at the limit", Report{GPUJoules: 5e7, GPUCount: 80, GPUs: many, CPUJoules: 3, HasCPU: true}, 0},
	} {
		c.r.Since, c.r.Until = since, until
		note := Note(c.r)
		if len(note) > NoteLimit {
			t.Errorf("%s: note of %d bytes", c.name, len(note))
		}
		got, err := Parse(note)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if math.Abs(got.GPUJoules-c.r.GPUJoules) > c.tol || math.Abs(got.CPUJoules-c.r.CPUJoules) > c.tol || got.HasCPU != c.r.HasCPU ||
			got.GPUCount != c.r.GPUCount || got.GPUEstimated != c.r.GPUEstimated || !got.Since.Equal(since) || !got.Until.Equal(until) {
			t.Errorf("%s: parsed %+v from %q, want %+v", c.name, got, note, c.r)
		}
		if len(got.GPUs) > len(c.r.GPUs) || !slices.Equal(got.GPUs[:max(len(got.GPUs)-1, 0)], c.r.GPUs[:max(len(got.GPUs)-1, 0)]) {
			t.Errorf("%s: GPUs %v, want a prefix of %v", c.name, got.GPUs, c.r.GPUs)
		}
	}
}

func TestParseRefusesOtherText(t *testing.T) {
	for _, note := range []string{
		"",
		"Successfully assigned ml/train to gpu-07",
		"GPU energy lots measured on 2 GPUs; from 2026-11-28T14:02:05Z to 2026-11-28T16:40:12Z (2h38m7s)",
		"GPU energy 3 J measured on many GPUs; from 2026-11-28T14:02:05Z to 2026-11-28T16:40:12Z (1s)",
		"no GPU; CPU energy 3 MJ estimated from RAPL by CPU time; from 2026-11-28T14:02:05Z to 2026-11-28T16:40:12Z (1s)",
		"no GPU; from yesterday to today (1d)",
	} {
		if r, err := Parse(note); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", note, r)
		}
	}
}

// FuzzParse holds Parse to never panicking, and to reading back what
// Note writes from any figures.
func FuzzParse(f *testing.F) {
	f.Add("GPU energy 2.50 kWh (9000000 J) measured on 2 GPUs; CPU energy 0.05 kWh (180000 J) estimated from RAPL by CPU time; from 2026-11-28T14:02:05Z to 2026-11-28T16:40:12Z (2h38m7s); GPUs GPU-a, GPU-b", 1.0, 2)
	f.Add("no GPU; CPU energy 12 J estimated from RAPL by CPU time; from 2026-11-28T14:02:05Z to 2026-11-28T14:02:06Z (1s)", 0.0, 0)
	f.Fuzz(func(t *testing.T, note string, joules float64, gpus int) {
		_, _ = Parse(note)
		if !(joules >= 0) || joules > 1e15 || gpus < 0 || gpus > 200 {
			return
		}
		r := Report{GPUJoules: joules, GPUCount: gpus, CPUJoules: joules / 3, HasCPU: gpus%2 == 0, Since: since, Until: since.Add(time.Minute)}
		for i := range gpus {
			r.GPUs = append(r.GPUs, strings.Repeat("G", i%7+1))
		}
		got, err := Parse(Note(r))
		if err != nil {
			t.Fatalf("Parse(Note(%+v)): %v", r, err)
		}
		if got.GPUCount != r.GPUCount || got.HasCPU != r.HasCPU || (gpus > 0 && math.Abs(got.GPUJoules-joules) > 50+joules*1e-12) {
			t.Fatalf("Parse(Note(%+v)) = %+v", r, got)
		}
	})
}

// Both command-line tools show an energy the same way: J below 1 kJ,
// kJ below 0.1 kWh, kWh from there.
func TestHuman(t *testing.T) {
	for _, tc := range []struct {
		j    float64
		want string
	}{
		{0, "0 J"},
		{999.4, "999 J"},
		{1000, "1.0 kJ"},
		{359_949, "359.9 kJ"},
		{360_000, "0.10 kWh"},
		{2.4e6, "0.67 kWh"},
		{9e6, "2.50 kWh"},
		{3.6e9, "1000.00 kWh"},
	} {
		if got := Human(tc.j); got != tc.want {
			t.Errorf("Human(%v) = %q, want %q", tc.j, got, tc.want)
		}
	}
}
