package server

// The memory accounting of the calls in flight: the budget they share,
// the exchanges that hold a call's buffers and are kept for reuse, and the
// reads and growths that charge the budget before they allocate.

import (
	"errors"
	"io"
	"sync/atomic"
	"unsafe"

	"joulie.io/joulie/extender/internal/wire"
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

const (
	// firstRead is the body buffer's first size: a call by name for a
	// few hundred nodes fits.
	firstRead = 16 << 10
	// maxPooledBytes bounds an exchange kept uncharged for reuse. One
	// that served a call by name for 5,000 nodes holds 0.6 to 0.8 MiB
	// (body, names, scores, reply); one that served full Nodes holds tens
	// of MB and goes to the large slot, charged, or is let go.
	maxPooledBytes = 1 << 20
	// freeExchanges is how many are kept: a scheduler makes one call at
	// a time, so 16 serve several schedulers and their bursts, and idle
	// buffers never hold more than 16 MiB.
	freeExchanges = 16
)

// exchange holds one request's buffers, reused through s.free.
type exchange struct {
	body    []byte
	args    wire.Args
	reasons []string
	scores  []int64
	out     []byte
	// charged is what the exchange has taken from the budget for this
	// call.
	charged int
}

// retained is the memory the exchange's buffers keep between calls.
func (ex *exchange) retained() int {
	return cap(ex.body) + cap(ex.out) + cap(ex.reasons)*int(unsafe.Sizeof("")) + cap(ex.scores)*8 + ex.args.Retained()
}

// get returns an exchange for a call: a small kept one, else the large
// one (whose buffers arrive charged), else a new one.
func (s *Server) get() *exchange {
	select {
	case ex := <-s.free:
		return ex
	default:
	}
	select {
	case ex := <-s.large:
		return ex
	default:
		ex := new(exchange)
		ex.args.Reserve = func(n int) error { return s.charge(ex, n) }
		return ex
	}
}

// put ends a call. A small exchange is kept uncharged (what 16 of them
// hold is a constant). A large one is kept with its buffers charged when
// its call was answered (a refused call's buffers are sized by whoever
// sent it), when they take at most half the budget (the other half stays
// for other calls) and when the slot is free; anything else goes.
func (s *Server) put(ex *exchange, answered bool) {
	ex.args.Reset() // drop references into the body
	clear(ex.reasons)
	r := ex.retained()
	if r > maxPooledBytes {
		if !answered || int64(r) > s.budget.limit/2 {
			s.budget.give(int64(ex.charged))
			ex.charged = 0
			return
		}
		// Keep exactly the buffers' size charged: more was charged for
		// this call than it retains, or its buffers predate the call.
		keep := false
		if d := r - ex.charged; d <= 0 || s.budget.take(int64(d)) {
			if d < 0 {
				s.budget.give(int64(-d))
			}
			ex.charged = r
			select {
			case s.large <- ex:
				keep = true
			default:
			}
		}
		if !keep {
			s.budget.give(int64(ex.charged))
			ex.charged = 0
		}
		return
	}
	s.budget.give(int64(ex.charged))
	ex.charged = 0
	select {
	case s.free <- ex:
	default:
	}
}

// charge takes n bytes of the budget for ex, before ex allocates them.
func (s *Server) charge(ex *exchange, n int) error {
	if !s.budget.take(int64(n)) {
		return errBusy
	}
	ex.charged += n
	return nil
}

// readBody reads r to the end into ex.body. The buffer grows only when it
// is full, doubling from firstRead, and each growth is charged before it
// is allocated: a client that announces 64 MiB and sends 1 KiB costs one
// small buffer. A known length only caps the growth, so that the last
// step is no larger than the body (plus the byte of room the read that
// sees EOF needs).
func (s *Server) readBody(r io.Reader, ex *exchange, length int64) error {
	buf := ex.body[:0]
	defer func() { ex.body = buf }()
	for {
		if len(buf) == cap(buf) {
			size := int64(max(2*cap(buf), firstRead))
			if length >= 0 {
				size = min(size, length+1)
			}
			size = max(min(size, s.opts.MaxRequestBytes+1), int64(cap(buf))+1)
			if err := s.charge(ex, int(size)-cap(buf)); err != nil {
				return err
			}
			// Not append or slices.Grow: they may round the capacity up
			// past what was charged.
			grown := make([]byte, len(buf), size)
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// output makes ex.out an empty buffer of at least size bytes, charging
// any growth first.
func (s *Server) output(ex *exchange, size int) error {
	if cap(ex.out) < size {
		if err := s.charge(ex, size); err != nil {
			return err
		}
		ex.out = make([]byte, 0, size)
	}
	ex.out = ex.out[:0]
	return nil
}

// resize returns v with length n, reusing its storage when it can and
// charging new storage first.
func resize[T any](s *Server, ex *exchange, v []T, n int) ([]T, error) {
	if cap(v) >= n {
		return v[:n], nil
	}
	if err := s.charge(ex, n*int(unsafe.Sizeof(*new(T)))); err != nil {
		return v, err
	}
	return make([]T, n), nil
}
