package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ParkFileName is the park record's file inside the state directory.
const ParkFileName = "park.json"

// Park outcomes.
const (
	// ParkPending: the record is written and the agent is about to ask
	// logind to power off.
	ParkPending = "pending"
	// ParkRequested: logind accepted the power-off.
	ParkRequested = "requested"
	// ParkFailed: logind (or the bus) refused; Error says why.
	ParkFailed = "failed"
	// ParkRefused: the agent's last check found work on the node (or
	// could not confirm it empty) and did not ask logind; Error says why.
	ParkRefused = "refused"
)

// ParkRecord is the agent's durable note of the last park it carried
// out. A park is identified by its NodePowerProfile spec.powerStateSince:
// the agent powers the host off at most once for each, and the boot ID
// tells a restart during that shutdown (same boot) from the next boot
// (the host was woken while the spec still said parked).
type ParkRecord struct {
	// Since is the park's spec.powerStateSince.
	Since time.Time `json:"since"`
	// BootID is the kernel's boot ID (/proc/sys/kernel/random/boot_id)
	// of the boot that powered off.
	BootID string `json:"bootID"`
	// At is when the agent decided to power off.
	At time.Time `json:"at"`
	// Outcome is ParkPending, ParkRequested, ParkFailed or ParkRefused.
	Outcome string `json:"outcome"`
	// Error is why the power-off failed.
	Error string `json:"error,omitempty"`
}

// LoadPark reads the park record of dir; false when there is none.
func LoadPark(dir string) (ParkRecord, bool, error) {
	path := filepath.Join(dir, ParkFileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ParkRecord{}, false, nil
	} else if err != nil {
		return ParkRecord{}, false, fmt.Errorf("read park record %s: %w", path, err)
	}
	var r ParkRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return ParkRecord{}, false, fmt.Errorf("park record %s is corrupt (%v); remove it to let the agent park this host again", path, err)
	}
	return r, true, nil
}

// SavePark replaces the park record of dir, durably: it must be on disk
// before the power-off, or the next boot could not tell the park was done.
func SavePark(dir string, r ParkRecord) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode park record: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state directory %s: %w", dir, err)
	}
	if err := writeAtomic(dir, ParkFileName, append(data, '\n')); err != nil {
		return fmt.Errorf("park record: %w", err)
	}
	return nil
}
