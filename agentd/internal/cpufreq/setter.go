package cpufreq

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/agentd/internal/state"
	"joulie.io/joulie/agentd/internal/sysfs"
)

// Backend is the backend's name in the state journal and in status.
const Backend = "cpufreq"

// Journal is the part of *state.Journal the setter uses.
type Journal interface {
	Record(entries ...state.Entry) error
	Original(backend, id string) (string, bool)
	Entries() []state.Entry
	Forget(backend, id string) error
}

// Setter lowers and restores scaling_max_freq on the discovered CPUs. It
// records each CPU's original ceiling in the journal before its first
// write, so the host can be put back after a stop or a crash. It is safe
// for concurrent use; writes are serialized.
type Setter struct {
	fs      *sysfs.FS
	journal Journal

	mu   sync.Mutex
	cpus map[int]*CPU // a private copy of discovery; ScalingMaxKHz kept current
}

// NewSetter returns a setter for the CPUs of host.
func NewSetter(fs *sysfs.FS, journal Journal, host Host) *Setter {
	s := &Setter{fs: fs, journal: journal, cpus: make(map[int]*CPU, len(host.CPUs))}
	for i := range host.CPUs {
		c := host.CPUs[i]
		s.cpus[c.ID] = &c
	}
	return s
}

// Name is the backend's name (state.Restorer's key).
func (s *Setter) Name() string { return Backend }

// Original is the ceiling cpu had before Joulie first changed it: the
// journaled original, or, when nothing is journaled, the value found at
// discovery or last restored.
func (s *Setter) Original(cpu int) (khz int64, ok bool) {
	if v, found := s.journal.Original(Backend, ID(cpu)); found {
		if khz, err := sysfs.ParseInt(v); err == nil && khz > 0 {
			return khz, true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, found := s.cpus[cpu]
	if !found {
		return 0, false
	}
	return c.ScalingMaxKHz, true
}

// Target is a ceiling to set on one CPU.
type Target struct {
	CPU int
	KHz int64
}

// Result is what SetMaxFreq did for one target.
type Result struct {
	CPU int
	// KHz is the value aimed at, after clamping to the CPU's hardware
	// range.
	KHz int64
	// Was is scaling_max_freq before the call (0 when unreadable).
	Was int64
	// Written is true when the attribute was written; false when it
	// already held KHz (directly or through a CPU of the same policy
	// written earlier in the call) or on error.
	Written bool
	// Err is this CPU's failure; backend.IsBlocked tells a read-only or
	// missing control from a failed write.
	Err error
}

// SetMaxFreq sets the frequency ceiling of each target CPU, clamped to
// [cpuinfo_min_freq, cpuinfo_max_freq]. CPUs already at their value are
// not written. Before the first write, the originals of all CPUs about to
// change for the first time are journaled together (one durable record);
// when that fails nothing is written. A CPU that fails does not stop the
// others: the returned error joins every per-CPU failure, and the results
// (one per target, in order) say which.
func (s *Setter) SetMaxFreq(targets []Target) ([]Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	results := make([]Result, len(targets))
	var pending []int // indices into results that need a write
	var entries []state.Entry
	for i, t := range targets {
		r := &results[i]
		r.CPU = t.CPU
		c, ok := s.cpus[t.CPU]
		if !ok {
			r.Err = fmt.Errorf("cpu%d: %w: no cpufreq control was discovered for this CPU", t.CPU, backend.ErrBlocked)
			continue
		}
		r.KHz = min(max(t.KHz, c.CPUInfoMinKHz), c.CPUInfoMaxKHz)
		cur, err := s.fs.ReadInt(c.MaxFreqPath())
		if err != nil {
			r.Err = fmt.Errorf("cpu%d: %w", t.CPU, err)
			continue
		}
		r.Was = cur
		c.ScalingMaxKHz = cur
		if cur == r.KHz {
			continue
		}
		// Refuse read-only ceilings before journaling: an original is
		// recorded only for a control the agent is about to write.
		if !s.fs.Writable(c.MaxFreqPath()) {
			r.Err = fmt.Errorf("cpu%d: set scaling_max_freq to %d kHz: %w: %s is not writable", t.CPU, r.KHz, sysfs.ErrReadOnly, s.fs.Path(c.MaxFreqPath()))
			continue
		}
		if _, journaled := s.journal.Original(Backend, ID(t.CPU)); !journaled {
			entries = append(entries, state.Entry{Backend: Backend, Kind: state.KindCPU, ID: ID(t.CPU), Original: strconv.FormatInt(cur, 10)})
		}
		pending = append(pending, i)
	}
	if len(entries) > 0 {
		if err := s.journal.Record(entries...); err != nil {
			for _, i := range pending {
				results[i].Err = fmt.Errorf("cpu%d: scaling_max_freq left at %d kHz because its original could not be recorded: %w", results[i].CPU, results[i].Was, err)
			}
			return results, joinResults(results)
		}
	}
	var done map[string]int64 // shared policies already written in this call
	for _, i := range pending {
		r := &results[i]
		c := s.cpus[r.CPU]
		shared := len(c.RelatedCPUs) > 1
		if shared {
			if v, ok := done[c.Policy]; ok && v == r.KHz {
				c.ScalingMaxKHz = r.KHz
				continue
			}
		}
		if err := s.fs.WriteInt(c.MaxFreqPath(), r.KHz); err != nil {
			r.Err = fmt.Errorf("cpu%d: set scaling_max_freq to %d kHz: %w", r.CPU, r.KHz, err)
			continue
		}
		r.Written = true
		c.ScalingMaxKHz = r.KHz
		if shared {
			if done == nil {
				done = make(map[string]int64)
			}
			done[c.Policy] = r.KHz
		}
	}
	return results, joinResults(results)
}

func joinResults(results []Result) error {
	var errs []error
	for i := range results {
		if results[i].Err != nil {
			errs = append(errs, results[i].Err)
		}
	}
	return errors.Join(errs...)
}

// Restore puts a journaled ceiling back (state.Restorer). id is
// "cpuN/scaling_max_freq" and original the kHz value recorded. The value
// is clamped to the CPU's hardware range as read now, and not written
// when already in force.
func (s *Setter) Restore(id, original string) error {
	cpu, err := ParseID(id)
	if err != nil {
		return err
	}
	want, err := sysfs.ParseInt(original)
	if err != nil || want <= 0 {
		return fmt.Errorf("restore cpu%d scaling_max_freq: journaled original %q is not a frequency in kHz", cpu, clip(original))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dir, err := s.dirOf(cpu)
	if err != nil {
		return err
	}
	lo, err := s.fs.ReadInt(dir + "/cpuinfo_min_freq")
	if err != nil {
		return fmt.Errorf("restore cpu%d scaling_max_freq: %w", cpu, err)
	}
	hi, err := s.fs.ReadInt(dir + "/cpuinfo_max_freq")
	if err != nil {
		return fmt.Errorf("restore cpu%d scaling_max_freq: %w", cpu, err)
	}
	want = min(max(want, lo), hi)
	attr := dir + "/scaling_max_freq"
	if cur, err := s.fs.ReadInt(attr); err == nil && cur == want {
		s.remember(cpu, want)
		return nil
	}
	if err := s.fs.WriteInt(attr, want); err != nil {
		return fmt.Errorf("restore cpu%d scaling_max_freq to %d kHz: %w", cpu, want, err)
	}
	s.remember(cpu, want)
	return nil
}

// RestoreAll puts every journaled cpufreq ceiling back and forgets the
// entries restored: the CPUs this setter throttled and any left throttled
// by an earlier run. The DVFS fallback calls it when RAPL works again.
// Failures do not stop the others; their entries stay journaled.
func (s *Setter) RestoreAll() error {
	var errs []error
	for _, e := range s.journal.Entries() {
		if e.Backend != Backend {
			continue
		}
		if err := s.Restore(e.ID, e.Original); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := s.journal.Forget(e.Backend, e.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dirOf finds cpu's cpufreq directory: the discovered one, else the
// cpuN/cpufreq link, else the policy that lists the CPU (a CPU may be
// restored by a run that did not discover it, after hotplug). s.mu is
// held.
func (s *Setter) dirOf(cpu int) (string, error) {
	if c, ok := s.cpus[cpu]; ok {
		return c.Dir, nil
	}
	dir := fmt.Sprintf("%s/cpu%d/cpufreq", cpuRoot, cpu)
	if s.fs.Exists(dir) {
		return dir, nil
	}
	if p, ok := policyDirs(s.fs)[cpu]; ok {
		return p, nil
	}
	return "", fmt.Errorf("cpu%d has no cpufreq under %s (offline?): %w", cpu, s.fs.Path(cpuRoot), os.ErrNotExist)
}

// Present reports, without writing, whether the CPU that id names still
// has a frequency ceiling (an offline or removed CPU has none). An ID that
// names no cpufreq control is nothing this backend could reach.
func (s *Setter) Present(id string) (bool, error) {
	cpu, err := ParseID(id)
	if err != nil {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dir, err := s.dirOf(cpu)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return s.fs.Exists(dir + "/scaling_max_freq"), nil
}

// remember keeps the setter's view of a ceiling current. s.mu is held.
func (s *Setter) remember(cpu int, khz int64) {
	if c, ok := s.cpus[cpu]; ok {
		c.ScalingMaxKHz = khz
	}
}
