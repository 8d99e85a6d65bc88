// Package energyreport is the text of the EnergyReport event the agent
// writes on a pod when it ends (SPEC.md, "per-pod energy"): Note writes
// it for joulie-agentd, Parse reads it back for kubectl joulie pods;
// Human is how both command-line tools show an energy.
//
// The figures travel in the event's note, the one free-text field an
// operator sees in kubectl describe pod: the chart's admission policy
// refuses an agent's event that carries labels or annotations. Writing
// and reading the note in one package keeps the two in step; a test
// holds Parse to every note Note can write.
//
// Nothing here reads the API or the clock.
package energyreport

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Reason is the event's reason; the chart's admission policy admits an
// agent's event only with it.
const Reason = "EnergyReport"

// NoteLimit is the API server's limit on an event's note, in bytes.
const NoteLimit = 1024

// Report is what an EnergyReport event says of a pod.
type Report struct {
	// GPUJoules is the measured energy of the GPUs the pod held.
	GPUJoules float64
	// GPUCount is how many GPUs the pod held; GPUs lists them, sorted,
	// possibly cut short when the note was too long to hold them all.
	GPUCount int
	GPUs     []string
	// GPUEstimated is true when part of the GPU energy came from power
	// readings rather than energy counters.
	GPUEstimated bool
	// CPUJoules is the CPU estimate, present when HasCPU.
	CPUJoules float64
	HasCPU    bool
	// Since and Until bound the time the energy was counted over.
	Since, Until time.Time
}

// Joules is the pod's energy, GPU and CPU together.
func (r Report) Joules() float64 { return r.GPUJoules + r.CPUJoules }

const (
	gpuLead       = "GPU energy "
	gpuMid        = " measured on "
	gpuEstimated  = " (partly from power readings: a counter reset or no energy counter)"
	noGPU         = "no GPU; "
	cpuLead       = "CPU energy "
	cpuTail       = " estimated from RAPL by CPU time; "
	gpuListLead   = "; GPUs "
	truncatedMark = "…"
)

// Note is the event's text for r: measured GPU energy with the GPUs, the
// CPU estimate, and the time span, within NoteLimit (a long list of GPUs
// is cut, ending in "…").
func Note(r Report) string {
	var b strings.Builder
	gpus := max(r.GPUCount, len(r.GPUs))
	switch {
	case gpus > 0:
		fmt.Fprintf(&b, "%s%s%s%d GPU", gpuLead, energy(r.GPUJoules), gpuMid, gpus)
		if gpus > 1 {
			b.WriteString("s")
		}
		if r.GPUEstimated {
			b.WriteString(gpuEstimated)
		}
		b.WriteString("; ")
	default:
		b.WriteString(noGPU)
	}
	if r.HasCPU {
		fmt.Fprintf(&b, "%s%s%s", cpuLead, energy(r.CPUJoules), cpuTail)
	}
	fmt.Fprintf(&b, "from %s to %s (%s)", r.Since.UTC().Format(time.RFC3339), r.Until.UTC().Format(time.RFC3339),
		r.Until.Sub(r.Since).Round(time.Second))
	s := b.String()
	if len(r.GPUs) > 0 {
		s += gpuListLead + strings.Join(r.GPUs, ", ")
	}
	if len(s) > NoteLimit {
		s = s[:NoteLimit-len(truncatedMark)] + truncatedMark
	}
	return s
}

// energy shows joules in kWh from 0.01 kWh on, with the joules beside
// them; in kJ or J below.
func energy(j float64) string {
	switch {
	case j >= 36e3:
		return fmt.Sprintf("%.2f kWh (%.0f J)", j/3.6e6, j)
	case j >= 1e3:
		return fmt.Sprintf("%.1f kJ", j/1e3)
	}
	return fmt.Sprintf("%.0f J", j)
}

// Human shows joules as joulie-agentctl and kubectl joulie show them to
// people: in kWh from 0.1 kWh on, in kJ or J below, so that a short
// job's figure keeps its digits. (The note's figures, above, carry the
// joules too: they are read back.)
func Human(j float64) string {
	switch {
	case j >= 3.6e5:
		return strconv.FormatFloat(j/3.6e6, 'f', 2, 64) + " kWh"
	case j >= 1e3:
		return strconv.FormatFloat(j/1e3, 'f', 1, 64) + " kJ"
	}
	return strconv.FormatFloat(j, 'f', 0, 64) + " J"
}

// Parse reads a note Note wrote. Energies come back as precise as the
// note gives them: to the joule from 0.01 kWh on (the note carries the
// joules), to 100 J in kJ, to the joule below. A note cut at NoteLimit
// keeps its figures (they come first) and loses GPUs from its list.
func Parse(note string) (Report, error) {
	var r Report
	rest := note
	var ok bool
	if rest, ok = strings.CutPrefix(note, noGPU); !ok {
		var found bool
		var e, count string
		if e, rest, found = strings.Cut(strings.TrimPrefix(note, gpuLead), gpuMid); !found || !strings.HasPrefix(note, gpuLead) {
			return r, fmt.Errorf("energy report %q: starts neither with %q nor with %q", clip(note), gpuLead, noGPU)
		}
		j, err := parseEnergy(e)
		if err != nil {
			return r, fmt.Errorf("energy report %q: GPU energy: %w", clip(note), err)
		}
		r.GPUJoules = j
		if count, rest, found = strings.Cut(rest, " GPU"); !found {
			return r, fmt.Errorf("energy report %q: no GPU count", clip(note))
		}
		if r.GPUCount, err = strconv.Atoi(count); err != nil || r.GPUCount < 1 {
			return r, fmt.Errorf("energy report %q: GPU count %q", clip(note), count)
		}
		rest = strings.TrimPrefix(rest, "s")
		rest, r.GPUEstimated = strings.CutPrefix(rest, gpuEstimated)
		if rest, ok = strings.CutPrefix(rest, "; "); !ok {
			return r, fmt.Errorf("energy report %q: no \"; \" after the GPU energy", clip(note))
		}
	}
	if after, ok := strings.CutPrefix(rest, cpuLead); ok {
		e, tail, found := strings.Cut(after, cpuTail)
		if !found {
			return r, fmt.Errorf("energy report %q: CPU energy without %q", clip(note), strings.TrimSpace(cpuTail))
		}
		j, err := parseEnergy(e)
		if err != nil {
			return r, fmt.Errorf("energy report %q: CPU energy: %w", clip(note), err)
		}
		r.CPUJoules, r.HasCPU, rest = j, true, tail
	}
	span, gpuList, _ := strings.Cut(rest, gpuListLead)
	from, to, found := strings.Cut(strings.TrimPrefix(span, "from "), " to ")
	if !found || !strings.HasPrefix(span, "from ") {
		return r, fmt.Errorf("energy report %q: no time span \"from ... to ...\"", clip(note))
	}
	to, _, _ = strings.Cut(to, " (")
	var err error
	if r.Since, err = time.Parse(time.RFC3339, from); err != nil {
		return r, fmt.Errorf("energy report %q: start: %w", clip(note), err)
	}
	if r.Until, err = time.Parse(time.RFC3339, to); err != nil {
		return r, fmt.Errorf("energy report %q: end: %w", clip(note), err)
	}
	if gpuList != "" {
		for id := range strings.SplitSeq(gpuList, ", ") {
			if id = strings.TrimSuffix(id, truncatedMark); id != "" {
				r.GPUs = append(r.GPUs, id)
			}
		}
	}
	return r, nil
}

// parseEnergy reads what energy wrote.
func parseEnergy(s string) (float64, error) {
	if _, joules, ok := strings.Cut(s, " kWh ("); ok {
		s = strings.TrimSuffix(joules, ")")
		if !strings.HasSuffix(s, " J") {
			return 0, fmt.Errorf("%q: no joules beside the kWh", s)
		}
	}
	num, unit, ok := strings.Cut(s, " ")
	if !ok {
		return 0, fmt.Errorf("%q: no unit", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !(v >= 0) || math.IsInf(v, 1) {
		return 0, fmt.Errorf("%q: not a non-negative number", s)
	}
	switch unit {
	case "J":
		return v, nil
	case "kJ":
		return v * 1e3, nil
	}
	return 0, errors.New("unit " + strconv.Quote(unit) + ": want J, kJ or kWh")
}

// clip shortens a note for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
