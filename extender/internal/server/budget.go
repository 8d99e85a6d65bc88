package server

import (
	"errors"
	"sync/atomic"
)

// budget bounds the memory that the calls in flight hold together: their
// bodies, what is decoded from them and their replies. Each call takes its
// share as it grows, before it allocates, and gives it all back when it
// ends; a call that does not fit is refused with a 503 instead of growing
// the heap. The scheduler, with the extender ignorable, then goes on
// without it for that pod.
type budget struct {
	limit int64
	used  atomic.Int64
}

// errBusy is a call refused because the budget is spent.
var errBusy = errors.New("memory budget for calls in flight spent")

// take reserves n bytes if they fit.
func (b *budget) take(n int64) bool {
	for {
		used := b.used.Load()
		if used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// give returns n bytes taken before.
func (b *budget) give(n int64) { b.used.Add(-n) }

// MinInFlightBytes is the least in-flight budget that answers a call of
// maxRequest bytes: the body, and a quarter more for what is decoded from
// it (names, nodes, reasons, scores; a few percent for real Nodes) and
// the reply's own bytes. The filter reply to full Nodes is written from
// the request body, not from a copy (TestFilterRepliesToNodesWithoutCopyingThem),
// so it needs no second body.
func MinInFlightBytes(maxRequest int64) int64 { return maxRequest + maxRequest/4 }
