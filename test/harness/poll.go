package harness

import (
	"testing"
	"time"
)

// PollUntil checks cond every 100 ms until it holds, failing the test
// with what it waited for once timeout has passed.
func PollUntil(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
