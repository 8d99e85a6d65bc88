package state

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestLockIsExclusiveUntilReleased(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	release, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state directory not created 0700: %v %v", fi, err)
	}
	if _, err := Lock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock while held: %v, want ErrLocked", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	again, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	_ = again()
}

// TestLockDiesWithItsHolder is the SIGKILL case: a holder that dies
// without releasing leaves the directory free for the next process.
func TestLockDiesWithItsHolder(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Fatalf("flock(1) from util-linux is needed: %v", err)
	}
	dir := t.TempDir()
	// --no-fork: flock(1) execs sleep itself, so the process killed below
	// is the only one holding the lock.
	holder := exec.Command(flock, "--exclusive", "--no-fork", dir, "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until flock(1) holds the directory; until then our own Lock
	// succeeds and is let go at once.
	held := false
	for range 400 {
		release, err := Lock(dir)
		if errors.Is(err, ErrLocked) {
			held = true
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		_ = release()
		time.Sleep(25 * time.Millisecond)
	}
	_ = holder.Process.Kill()
	_ = holder.Wait()
	if !held {
		t.Fatal("never saw the holder's lock")
	}
	release, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after the holder was killed: %v", err)
	}
	_ = release()
}
