package state

import (
	"errors"
	"fmt"
)

// Restorer puts one control of a backend back to a recorded original.
type Restorer interface {
	Restore(id, original string) error
}

// Restore hands every recorded original to the restorer of its backend
// and forgets the ones restored. A failure (a backend that is gone, a
// write refused) keeps that entry for the next attempt and does not stop
// the others; the returned error lists every failure.
func (j *Journal) Restore(restorers map[string]Restorer) error {
	return j.RestoreWhere(func(Entry) bool { return true }, restorers)
}

// RestoreBackend restores only the originals recorded by one backend, for
// when that backend's target is lifted while the others stay in force.
func (j *Journal) RestoreBackend(backend string, r Restorer) error {
	return j.RestoreWhere(func(e Entry) bool { return e.Backend == backend }, map[string]Restorer{backend: r})
}

// RestoreWhere restores the originals that match, as Restore does. A
// backend that owns controls of several kinds (amd-smi: GPUs and CPU
// sockets) uses it to lift one kind only.
func (j *Journal) RestoreWhere(match func(Entry) bool, restorers map[string]Restorer) error {
	var errs []error
	for _, e := range j.Entries() {
		if !match(e) {
			continue
		}
		r, ok := restorers[e.Backend]
		if !ok || r == nil {
			errs = append(errs, fmt.Errorf("restore %s %s to %s: no %s backend on this host; the original stays recorded in %s", e.Backend, e.ID, e.Original, e.Backend, j.Path()))
			continue
		}
		if err := r.Restore(e.ID, e.Original); err != nil {
			errs = append(errs, fmt.Errorf("restore %s %s to %s: %w", e.Backend, e.ID, e.Original, err))
			continue
		}
		if err := j.Forget(e.Backend, e.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
