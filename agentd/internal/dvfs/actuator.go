package dvfs

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/cpufreq"
)

// Actuator applies a throttle percentage to the host's CPUs through the
// cpufreq backend: round(pct/100 x units) units get their scaling_max_freq
// lowered to the throttle frequency, the others get their original
// ceiling back.
//
// A unit is the smallest set of CPUs that must move together: the SMT
// threads of a core (a core runs at the highest frequency any of its
// threads asks for, so throttling one thread alone saves nothing) joined
// with every CPU sharing its cpufreq policy. On a host without SMT and
// with one policy per CPU (intel_pstate, amd-pstate) a unit is one CPU.
//
// Which units are throttled first is fixed at construction: units are
// ordered by lowest CPU number within each package, and the packages are
// interleaved (package 0's first unit, package 1's first, package 0's
// second, ...). Raising the throttle therefore spreads over the packages
// evenly, so no socket is starved while another runs free, and a given
// percentage always throttles the same CPUs.
//
// The throttle frequency of a CPU is max(DVFS_MIN_FREQ_KHZ,
// cpuinfo_min_freq, scaling_min_freq), but never above the CPU's original
// ceiling: an administrator's floor is respected (and some kernels refuse
// a ceiling below the floor), and throttling never raises a ceiling.
//
// The actuator remembers what it wrote and writes only CPUs whose target
// changed; a tick with nothing to change touches no file. A CPU whose
// write failed is forgotten and tried again on the next tick. It is not
// safe for concurrent use.
type Actuator struct {
	setter  *cpufreq.Setter
	cpus    []plan // in throttle order, unit after unit
	units   []int  // units[i] is the end (exclusive) of unit i in cpus
	targets []cpufreq.Target
	pending []int // cpus index of each target
	last    Applied
}

type plan struct {
	cpu       int
	normal    int64 // the original ceiling
	throttled int64
	applied   int64 // what the CPU holds as far as the actuator knows; 0 unknown
}

// Applied summarizes the latest Apply.
type Applied struct {
	ThrottlePct        float64
	Units, CPUs        int
	ThrottledUnits     int
	ThrottledCPUs      int
	Writes, FailedCPUs int
}

// NewActuator plans the throttle order for the discovered CPUs. It fails,
// as blocked, when the host has no cpufreq or no writable ceiling.
func NewActuator(setter *cpufreq.Setter, host cpufreq.Host, minFreqKHz int64) (*Actuator, error) {
	if !host.Available() {
		return nil, fmt.Errorf("%w: no cpufreq CPUs on this host", backend.ErrBlocked)
	}
	if !host.Writable {
		return nil, fmt.Errorf("%w: scaling_max_freq is read-only on every CPU", backend.ErrBlocked)
	}
	if minFreqKHz < 0 {
		return nil, fmt.Errorf("minFreqKHz must not be negative, got %d", minFreqKHz)
	}
	a := &Actuator{setter: setter}
	for _, unit := range throttleOrder(host) {
		for _, id := range unit {
			c, _ := host.CPU(id)
			normal, ok := setter.Original(id)
			if !ok {
				normal = c.ScalingMaxKHz
			}
			floor := max(minFreqKHz, c.CPUInfoMinKHz, c.ScalingMinKHz)
			a.cpus = append(a.cpus, plan{cpu: id, normal: normal, throttled: min(floor, normal), applied: c.ScalingMaxKHz})
		}
		a.units = append(a.units, len(a.cpus))
	}
	a.targets = make([]cpufreq.Target, 0, len(a.cpus))
	a.pending = make([]int, 0, len(a.cpus))
	return a, nil
}

// throttleOrder groups the CPUs into units and orders the units as the
// Actuator documents.
func throttleOrder(host cpufreq.Host) [][]int {
	index := make(map[int]int, len(host.CPUs))
	for i, c := range host.CPUs {
		index[c.ID] = i
	}
	parent := make([]int, len(host.CPUs))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(i int, ids []int) {
		for _, id := range ids {
			if j, ok := index[id]; ok {
				ri, rj := find(i), find(j)
				// The lower index becomes the root, so a unit's root is
				// its lowest CPU.
				if ri < rj {
					parent[rj] = ri
				} else {
					parent[ri] = rj
				}
			}
		}
	}
	for i, c := range host.CPUs {
		union(i, c.Siblings)
		union(i, c.RelatedCPUs)
	}
	byRoot := make(map[int][]int)
	var roots []int
	for i, c := range host.CPUs { // ascending IDs, so units come out sorted
		r := find(i)
		if _, ok := byRoot[r]; !ok {
			roots = append(roots, r)
		}
		byRoot[r] = append(byRoot[r], c.ID)
	}
	perPackage := make(map[int][][]int)
	var packages []int
	for _, r := range roots {
		pkg := host.CPUs[r].Package
		if _, ok := perPackage[pkg]; !ok {
			packages = append(packages, pkg)
		}
		perPackage[pkg] = append(perPackage[pkg], byRoot[r])
	}
	slices.SortFunc(packages, cmp.Compare)
	out := make([][]int, 0, len(roots))
	for round := 0; len(out) < len(roots); round++ {
		for _, pkg := range packages {
			if units := perPackage[pkg]; round < len(units) {
				out = append(out, units[round])
			}
		}
	}
	return out
}

// Order returns the units in the order they are throttled, each as its
// CPU numbers.
func (a *Actuator) Order() [][]int {
	out := make([][]int, len(a.units))
	start := 0
	for i, end := range a.units {
		for _, p := range a.cpus[start:end] {
			out[i] = append(out[i], p.cpu)
		}
		start = end
	}
	return out
}

// Apply throttles round(pct/100 x units) units and lifts the others. pct
// is clamped to 0..100. Per-CPU failures do not stop the others; the
// error joins them (backend.IsBlocked when a ceiling is read-only).
func (a *Actuator) Apply(pct float64) error {
	if math.IsNaN(pct) {
		return errors.New("throttle percentage is NaN")
	}
	pct = min(100, max(0, pct))
	n := int(math.Round(pct / 100 * float64(len(a.units))))
	a.targets, a.pending = a.targets[:0], a.pending[:0]
	a.last = Applied{ThrottlePct: pct, Units: len(a.units), CPUs: len(a.cpus), ThrottledUnits: n}
	start := 0
	for u, end := range a.units {
		for i := start; i < end; i++ {
			p := &a.cpus[i]
			want := p.normal
			if u < n {
				want = p.throttled
				a.last.ThrottledCPUs++
			}
			if p.applied != want {
				a.targets = append(a.targets, cpufreq.Target{CPU: p.cpu, KHz: want})
				a.pending = append(a.pending, i)
			}
		}
		start = end
	}
	if len(a.targets) == 0 {
		return nil
	}
	results, err := a.setter.SetMaxFreq(a.targets)
	for k, r := range results {
		p := &a.cpus[a.pending[k]]
		if r.Err != nil {
			p.applied = 0
			a.last.FailedCPUs++
			continue
		}
		// The target, not r.KHz: a value the setter clamped must still
		// compare equal on the next tick.
		p.applied = a.targets[k].KHz
		if r.Written {
			a.last.Writes++
		}
	}
	if err != nil {
		return fmt.Errorf("throttle %d of %d CPUs: %w", a.last.ThrottledCPUs, a.last.CPUs, err)
	}
	return nil
}

// Reset puts every journaled ceiling back (the CPUs this actuator
// throttled, and any an earlier run left throttled), for the return to
// RAPL.
func (a *Actuator) Reset() error {
	err := a.setter.RestoreAll()
	for i := range a.cpus {
		if err != nil {
			// Some CPUs may still be throttled; the next Apply checks all.
			a.cpus[i].applied = 0
		} else {
			a.cpus[i].applied = a.cpus[i].normal
		}
	}
	a.last = Applied{Units: len(a.units), CPUs: len(a.cpus)}
	if err != nil {
		return fmt.Errorf("restore CPU frequency ceilings: %w", err)
	}
	return nil
}

// Last summarizes the latest Apply or Reset.
func (a *Actuator) Last() Applied { return a.last }
