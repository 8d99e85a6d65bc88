package daemon

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test process signals itself: a signal CatchSignals failed to catch
// would kill it, which fails the test too.
func TestCatchSignalsHoldsReloadsAndStopsOnce(t *testing.T) {
	ctx, reload, release := CatchSignals(context.Background())
	defer release()
	kill := func(sig syscall.Signal) {
		t.Helper()
		if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
	}

	kill(syscall.SIGHUP)
	select {
	case <-reload:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP never reached the reload channel")
	}
	if ctx.Err() != nil {
		t.Fatal("SIGHUP ended the daemon's context")
	}

	kill(syscall.SIGTERM)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not end the daemon's context")
	}
	if cause := context.Cause(ctx); cause == nil || !strings.Contains(cause.Error(), "terminated") {
		t.Fatalf("cause %v, want the signal named", cause)
	}
	// A second stop while the first is restoring must not kill the
	// process; give the runtime a moment to act on it.
	kill(syscall.SIGINT)
	time.Sleep(200 * time.Millisecond)
}
