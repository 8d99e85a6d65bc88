package state

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned by Lock when another process holds the state
// directory: a running joulie-agentd.
var ErrLocked = errors.New("state directory is in use by another process")

// Lock takes an exclusive advisory lock on the state directory (created
// 0700 when missing) and returns the function that releases it. The
// daemon holds it for as long as it may write controls, and an offline
// restore (joulie-agentctl restore --offline) takes it before touching
// them, so the two never write the same controls at once.
//
// The lock is flock(2) on the directory itself: the kernel drops it when
// the holder dies, even by SIGKILL, so a crash never leaves a stale lock
// behind, and no lock file needs cleaning up on purge.
func Lock(dir string) (release func() error, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory %s: %w", dir, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open state directory %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("lock state directory %s: %w", dir, err)
	}
	// Closing the descriptor drops the lock.
	return f.Close, nil
}
