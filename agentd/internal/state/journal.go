// Package state keeps, durably, the original value of every power control
// the agent changes, so the host can be put back as it was: on stop, on
// package removal, and on the next start after a crash (SPEC.md, safety
// rules).
//
// The rule that makes this safe is "first record wins": a control's
// original is written to disk before the agent's first write to it, and it
// is never overwritten while the entry exists. After a crash the journal
// still holds the values from before Joulie touched the host, not the
// capped values in force at the crash, and Restore puts those back.
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// FileName is the journal's file inside the state directory.
const FileName = "originals.json"

// formatVersion is bumped when the file's layout changes incompatibly.
const formatVersion = 1

// ErrUnreadable marks a journal that Open refuses: corrupt, of another
// format version, or with an entry naming no control. Retrying cannot
// help and the file must not be overwritten (it may be the only record of
// the host's original settings), so it needs an operator; the error says
// what to do.
var ErrUnreadable = errors.New("the journal of original power settings needs an operator")

// Entry is the original value of one control.
type Entry struct {
	// Backend names the backend that owns the control (rapl, cpufreq,
	// nvml, hwmon, amdsmi, http); Restore hands the entry to it.
	Backend string `json:"backend"`
	// ID names the control within its backend, e.g.
	// "intel-rapl:0/constraint_0_power_limit_uw" or a GPU UUID.
	ID string `json:"id"`
	// Kind is the class of control (cpu, gpu) the entry belongs to, so a
	// target that stops asking for one class restores only that class,
	// whatever the backend. Journals of earlier versions have none; Open
	// fills it in (legacyKind).
	Kind Kind `json:"kind,omitempty"`
	// Original is the value before the agent's first write, in the form
	// the backend reads and writes it.
	Original string `json:"original"`
	// RecordedAt is when the original was recorded.
	RecordedAt time.Time `json:"recordedAt"`
}

// Kind is a class of power control, as a NodePowerProfile targets them.
type Kind string

// The kinds of control the backends journal.
const (
	KindCPU Kind = "cpu"
	KindGPU Kind = "gpu"
)

type file struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

type key struct{ backend, id string }

// Journal is the set of recorded originals, mirrored on disk. It is safe
// for concurrent use.
type Journal struct {
	mu      sync.Mutex
	dir     string
	entries map[key]Entry
	now     func() time.Time
}

// Open loads the journal from dir, creating dir (0700) when needed. A
// journal left by an earlier run, crashed or not, is loaded as is. A
// journal that cannot be parsed is an error and is left untouched: the
// originals in it may be the only record of the host's settings, so the
// operator must look at it rather than have it overwritten.
func Open(dir string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory %s: %w", dir, err)
	}
	j := &Journal{dir: dir, entries: make(map[key]Entry), now: time.Now}
	path := j.Path()
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return j, nil
	case err != nil:
		return nil, fmt.Errorf("read journal of original power settings %s: %w", path, err)
	}
	var f file
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %s is corrupt (%v). %s", ErrUnreadable, path, err, untouched(path))
	}
	if f.Version != formatVersion {
		return nil, fmt.Errorf("%w: %s has format version %d and this agent reads %d (written by another joulie-agentd version?). "+
			"The joulie-agentd that wrote it can restore it (joulie-agentctl restore --offline). %s", ErrUnreadable, path, f.Version, formatVersion, untouched(path))
	}
	for _, e := range f.Entries {
		if e.Backend == "" || e.ID == "" {
			return nil, fmt.Errorf("%w: %s has an entry without backend or id (%+v). %s", ErrUnreadable, path, e, untouched(path))
		}
		if e.Kind == "" {
			e.Kind = legacyKind(e.Backend, e.ID)
		}
		j.entries[key{e.Backend, e.ID}] = e
	}
	return j, nil
}

// untouched tells the operator what to do with a journal Open refuses.
func untouched(path string) string {
	return fmt.Sprintf("It was left untouched, since it may be the only record of this host's original power limits: "+
		"read it, put back by hand any limit it lists that is still in force, then move it away "+
		"(mv %s %s.bad) and start joulie-agentd again", path, path)
}

// Path is the journal's file.
func (j *Journal) Path() string { return filepath.Join(j.dir, FileName) }

// Has reports whether the control's original is recorded.
func (j *Journal) Has(backend, id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.entries[key{backend, id}]
	return ok
}

// Original returns the recorded original of a control.
func (j *Journal) Original(backend, id string) (string, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.entries[key{backend, id}]
	return e.Original, ok
}

// Record stores the originals of controls about to be written, and returns
// only once they are on disk. Entries already recorded keep their first
// value. Several entries are written in one go, so a backend about to
// change many controls (every CPU's frequency ceiling) pays one sync.
func (j *Journal) Record(entries ...Entry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var added []key
	for _, e := range entries {
		if e.Backend == "" || e.ID == "" {
			j.drop(added)
			return fmt.Errorf("record original: backend and id are required (%+v)", e)
		}
		k := key{e.Backend, e.ID}
		if _, ok := j.entries[k]; ok {
			continue
		}
		if e.RecordedAt.IsZero() {
			e.RecordedAt = j.now().UTC()
		}
		j.entries[k] = e
		added = append(added, k)
	}
	if len(added) == 0 {
		return nil
	}
	if err := j.persist(); err != nil {
		// What is not on disk was not recorded, and the caller must not
		// write those controls.
		j.drop(added)
		return err
	}
	return nil
}

func (j *Journal) drop(keys []key) {
	for _, k := range keys {
		delete(j.entries, k)
	}
}

// Entries returns the recorded originals sorted by backend and id.
func (j *Journal) Entries() []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Entry, 0, len(j.entries))
	for _, e := range j.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := strings.Compare(a.Backend, b.Backend); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Len is the number of recorded originals.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.entries)
}

// Forget drops a control's original, once it has been restored.
func (j *Journal) Forget(backend, id string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	k := key{backend, id}
	e, ok := j.entries[k]
	if !ok {
		return nil
	}
	delete(j.entries, k)
	if err := j.persist(); err != nil {
		j.entries[k] = e
		return err
	}
	return nil
}

// persist writes the journal atomically: a temporary file, fsync, rename
// over the journal, fsync of the directory. A crash at any point leaves
// either the old or the new journal, never a torn one. j.mu is held.
func (j *Journal) persist() error {
	f := file{Version: formatVersion, Entries: make([]Entry, 0, len(j.entries))}
	for _, e := range j.entries {
		f.Entries = append(f.Entries, e)
	}
	slices.SortFunc(f.Entries, func(a, b Entry) int {
		if c := strings.Compare(a.Backend, b.Backend); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode journal: %w", err)
	}
	if err := writeAtomic(j.dir, FileName, append(data, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// writeAtomic replaces dir/name with data: a temporary file, fsync,
// rename over the file, fsync of the directory. A crash at any point
// leaves either the old or the new file, never a torn one.
func writeAtomic(dir, name string, data []byte) error {
	path := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync state directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync state directory %s: %w", dir, err)
	}
	return nil
}
