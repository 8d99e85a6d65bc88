package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"joulie.io/joulie/extender/internal/fixture"
	"joulie.io/joulie/extender/internal/wire"
)

// heapInUse is the Go heap in use once the garbage is collected.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// liveServer serves ts over loopback with its own timeouts, and counts the
// calls that reached a handler.
func liveServer(t *testing.T, ts *testServer) (addr string, entered *atomic.Int64) {
	t.Helper()
	entered = new(atomic.Int64)
	h := ts.Handler()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = ts.HTTPServer()
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		h.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), entered
}

// announce opens a connection and starts a call whose header promises
// length bytes of body, then sends only body.
func announce(t *testing.T, addr, path string, length int, body []byte) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: extender\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, length); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	return conn
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The attack of issue 13: forty connections each announce a 64 MiB body
// and send 1 KiB; half hang up, half hang on. The extender used to
// allocate each announced body whole and keep those buffers in its pool:
// 2.5 GiB of heap. Memory must follow the bytes received instead, and
// calls by name and with full Nodes afterwards must all succeed.
func TestAnnouncedBodiesCostOnlyWhatArrives(t *testing.T) {
	const (
		attackers = 40
		announced = 64 << 20
		// bound is what the attack and the load after it may leave on
		// the heap: 40 small first buffers, the exchanges kept for reuse
		// (16 of at most 1 MiB) and the garbage of the moment.
		bound = 64 << 20
	)
	opts := defaultOptions()
	opts.MaxRequestBytes = 64 << 20
	opts.MaxInFlightBytes = 160 << 20
	opts.ReadTimeout = time.Minute
	opts.WriteTimeout = time.Minute
	ts := newTestServer(t, opts, benchSnapshot())
	addr, entered := liveServer(t, ts)

	p := fixture.Pod("performance")
	byName := marshal(t, fixture.ByName(p, benchNodes))
	full := marshal(t, fixture.WithNodes(fixture.Pod(""), 1000))
	prefix := byName[:1024]
	client := &http.Client{Timeout: time.Minute}
	runtime.GC() // the garbage of building the bodies
	base := heapInUse()

	conns := make([]net.Conn, attackers)
	for i := range conns {
		conns[i] = announce(t, addr, []string{"/filter", "/prioritize"}[i%2], announced, prefix)
	}
	waitFor(t, "the attackers' calls to reach the handlers", func() bool { return entered.Load() == attackers })
	time.Sleep(200 * time.Millisecond) // let the handlers read what was sent
	during := heapInUse()
	for _, conn := range conns[attackers/2:] {
		conn.Close()
	}
	t.Logf("heap in use: %d MiB before, %d MiB during the attack", base>>20, during>>20)
	if during > base+bound {
		t.Errorf("heap in use grew by %d MiB while %d clients announced 64 MiB and sent 1 KiB each, want under %d MiB",
			(during-base)>>20, attackers, bound>>20)
	}

	post := func(path string, body []byte) error {
		resp, err := client.Post("http://"+addr+path, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !json.Valid(b) {
			return fmt.Errorf("%s: status %d: %.200s", path, resp.StatusCode, b)
		}
		return nil
	}
	// Calls by name from eight clients, as two schedulers' worth of load,
	// and full-Node calls one at a time, as a scheduler makes them.
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for c := range 8 {
		wg.Go(func() {
			for i := range 25 {
				if err := post([]string{"/filter", "/prioritize"}[(c+i)%2], byName); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 4 {
			if err := post([]string{"/filter", "/prioritize"}[i%2], full); err != nil {
				errs <- err
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	after := heapInUse()
	t.Logf("heap in use after %d calls: %d MiB", 8*25+4, after>>20)
	if after > base+bound {
		t.Errorf("heap in use %d MiB above the start after the attack and normal load, want under %d MiB", (after-base)>>20, bound>>20)
	}
}

// readResponse reads the reply to a call made on a raw connection.
func readResponse(t *testing.T, conn net.Conn) (int, http.Header, string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// Calls that would take the memory of calls in flight past
// MaxInFlightBytes are refused with a 503 at once, whatever they sent so
// far; the budget is whole again when the calls end.
func TestCallsBeyondTheInFlightBudgetGet503(t *testing.T) {
	opts := defaultOptions()
	opts.MaxRequestBytes = 1 << 20
	opts.MaxInFlightBytes = 3 << 19
	opts.ReadTimeout = time.Minute
	ts := newTestServer(t, opts, clusterSnapshot())
	addr, _ := liveServer(t, ts)

	// A slow client sends all but the end of a body of nearly 1 MiB: it
	// holds a buffer of the whole body.
	body := marshal(t, byName(pod(""), []string{strings.Repeat("n", 1<<20)}))[:1<<20-200]
	slow := announce(t, addr, "/filter", len(body)+100, body)
	waitFor(t, "the slow call to hold its body", func() bool { return ts.budget.used.Load() > int64(len(body)) })

	// A second one would need as much again: over 1.5 MiB.
	second := announce(t, addr, "/prioritize", len(body)+100, body)
	status, header, reply := readResponse(t, second)
	if status != http.StatusServiceUnavailable || header.Get("Retry-After") == "" {
		t.Errorf("call beyond the budget: status %d, Retry-After %q, body %s; want 503 with Retry-After", status, header.Get("Retry-After"), reply)
	}
	// The operator finds the setting by whichever name they set it.
	for _, name := range []string{"maxInflightBytes", "--max-inflight-bytes", "EXTENDER_MAX_INFLIGHT_BYTES"} {
		if !strings.Contains(reply, name) {
			t.Errorf("503 body %s does not name %s", reply, name)
		}
	}
	// A small call still fits beside the slow one.
	if rec := post(t, ts.Handler(), "/prioritize", marshal(t, byName(pod(""), allNodes))); rec.Code != http.StatusOK {
		t.Errorf("small call beside the slow one: status %d: %s", rec.Code, rec.Body)
	}
	rec := httptest.NewRecorder()
	ts.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if want := `joulie_extender_request_errors_total{reason="busy",verb="prioritize"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("/metrics lacks %q", want)
	}
	inFlight := fmt.Sprintf("joulie_extender_inflight_bytes %g\n", float64(ts.budget.used.Load()))
	if !strings.Contains(rec.Body.String(), inFlight) || ts.budget.used.Load() < int64(len(body)) {
		t.Errorf("/metrics lacks %q, the slow call's buffer", inFlight)
	}

	slow.Close()
	waitFor(t, "the budget to be whole again", func() bool { return ts.budget.used.Load() == 0 })
}

// Decoded values weigh more than the bytes that spell them ("{}," is a
// 120-byte node entry, an empty container a 408-byte corev1.Container):
// they count against the budget too, so a small body cannot make the
// extender allocate many times its size.
func TestDecodedValuesCountAgainstTheBudget(t *testing.T) {
	opts := defaultOptions()
	opts.MaxRequestBytes = 1 << 20
	opts.MaxInFlightBytes = 4 << 20
	ts := newTestServer(t, opts, clusterSnapshot())
	fill := func(prefix, item, suffix string) []byte {
		n := (opts.MaxRequestBytes - int64(len(prefix)+len(suffix))) / int64(len(item)+1)
		return []byte(prefix + item + strings.Repeat(","+item, int(n)-1) + suffix)
	}
	for name, body := range map[string][]byte{
		"empty nodes":      fill(`{"Pod":{},"Nodes":{"items":[`, `{}`, `]}}`),
		"empty names":      fill(`{"Pod":{},"NodeNames":[`, `""`, `]}`),
		"empty containers": fill(`{"NodeNames":[],"Pod":{"spec":{"containers":[`, `{}`, `]}}}`),
	} {
		t.Run(name, func(t *testing.T) {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			before := m.TotalAlloc
			rec := post(t, ts.Handler(), "/prioritize", body)
			runtime.ReadMemStats(&m)
			allocated := m.TotalAlloc - before
			if rec.Code != http.StatusServiceUnavailable {
				t.Errorf("%d-byte body: status %d, want 503: %.200s", len(body), rec.Code, rec.Body)
			}
			// The body, its copy in the recorder's request and what the
			// refusal costs; without the budget these allocate 15 to 140
			// times the body.
			if limit := uint64(4*len(body)) + uint64(opts.MaxInFlightBytes); allocated > limit {
				t.Errorf("%d-byte body allocated %d MiB, want under %d MiB", len(body), allocated>>20, limit>>20)
			}
			if used := ts.budget.used.Load(); used != 0 {
				t.Errorf("%d bytes still charged after the call", used)
			}
		})
	}
}

// Exchanges kept for reuse: small ones uncharged, and one large one (it
// served full Nodes) with its buffers charged to the budget, which the
// next call of that size reuses instead of allocating them again. A
// refused call's large buffers are not kept.
func TestSmallExchangesAndOneChargedLargeOneAreKept(t *testing.T) {
	opts := defaultOptions()
	opts.MaxRequestBytes = 64 << 20
	opts.MaxInFlightBytes = 160 << 20
	ts := newTestServer(t, opts, benchSnapshot())
	full := marshal(t, fixture.WithNodes(fixture.Pod(""), 1000))
	byName := marshal(t, fixture.ByName(fixture.Pod(""), benchNodes))

	if rec := post(t, ts.Handler(), "/filter", byName); rec.Code != http.StatusOK {
		t.Fatalf("status %d: %.200s", rec.Code, rec.Body)
	}
	if len(ts.free) != 1 || len(ts.large) != 0 || ts.budget.used.Load() != 0 {
		t.Fatalf("after a call by name: %d small and %d large exchanges kept, %d bytes charged; want 1, 0, 0", len(ts.free), len(ts.large), ts.budget.used.Load())
	}
	small := <-ts.free
	if r := small.retained(); r > maxPooledBytes || r < 100<<10 {
		t.Errorf("kept exchange holds %d bytes, want the by-name call's, under %d", r, maxPooledBytes)
	}
	t.Logf("a filter call by name for %d nodes keeps %d KiB", benchNodes, small.retained()>>10)

	var large *exchange
	for i := range 2 {
		if rec := post(t, ts.Handler(), "/filter", full); rec.Code != http.StatusOK {
			t.Fatalf("status %d: %.200s", rec.Code, rec.Body)
		}
		if len(ts.large) != 1 {
			t.Fatalf("call %d with full Nodes: %d large exchanges kept, want 1", i, len(ts.large))
		}
		ex := <-ts.large
		if used := ts.budget.used.Load(); used != int64(ex.retained()) || ex.charged != ex.retained() {
			t.Fatalf("call %d: %d bytes charged, %d on the exchange, which holds %d", i, used, ex.charged, ex.retained())
		}
		if large != nil && ex != large {
			t.Fatalf("call %d used a new large exchange instead of the kept one", i)
		}
		large = ex
		ts.large <- ex
	}
	t.Logf("a filter call with %d full Nodes (%d KiB) keeps %d KiB, charged", 1000, len(full)>>10, large.retained()>>10)

	// A refused call lets its large buffers go, and the budget with them.
	bad := append(append([]byte(nil), full[:len(full)-2]...), "]]"...)
	if rec := post(t, ts.Handler(), "/filter", bad); rec.Code != http.StatusBadRequest {
		t.Fatalf("a malformed body: status %d, want 400", rec.Code)
	}
	if len(ts.large) != 0 || ts.budget.used.Load() != 0 {
		t.Fatalf("after a refused call: %d large exchanges kept, %d bytes charged; want none", len(ts.large), ts.budget.used.Load())
	}
}

// budgetAtWrite records what the calls in flight held when the reply's
// first byte was written.
type budgetAtWrite struct {
	*httptest.ResponseRecorder
	budget *budget
	used   int64
}

func (w *budgetAtWrite) Write(p []byte) (int, error) {
	if w.used == 0 {
		w.used = w.budget.used.Load()
	}
	return w.ResponseRecorder.Write(p)
}

// A filter reply to whole Nodes sends the kept ones from the request body
// rather than from a copy: while it writes, the call holds the body and
// not much more, where a copied reply would hold as much again. The reply
// is still the one AppendFilterResult builds, byte for byte.
func TestFilterRepliesToNodesWithoutCopyingThem(t *testing.T) {
	ts := newTestServer(t, defaultOptions(), clusterSnapshot())
	args := fixture.WithNodes(fixture.Pod(""), 150) // a standard pod: every node kept
	body := marshal(t, args)
	w := &budgetAtWrite{ResponseRecorder: httptest.NewRecorder(), budget: &ts.budget}
	req := httptest.NewRequest(http.MethodPost, "/filter", bytes.NewReader(body))
	ts.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var a wire.Args
	if err := wire.DecodeArgs(body, &a); err != nil {
		t.Fatal(err)
	}
	want := wire.AppendFilterResult(nil, &a, make([]string, a.Len()))
	if !bytes.Equal(w.Body.Bytes(), want) || w.Header().Get("Content-Length") != strconv.Itoa(len(want)) {
		t.Fatalf("reply of %d bytes (Content-Length %s) differs from AppendFilterResult's %d", w.Body.Len(), w.Header().Get("Content-Length"), len(want))
	}
	if limit := int64(len(body)) + int64(len(want))/2; w.used > limit {
		t.Errorf("the call held %d bytes while replying; a body of %d and a reply of %d: the kept Nodes were copied", w.used, len(body), len(want))
	}
}

// The least budget the configuration accepts answers a filter call of the
// largest body, full Nodes and all: its reply streams the kept Nodes from
// the body (MinInFlightBytes).
func TestTheLeastBudgetAnswersTheLargestFullNodesCall(t *testing.T) {
	body := marshal(t, fixture.WithNodes(fixture.Pod(""), 1000))
	opts := defaultOptions()
	opts.MaxRequestBytes = int64(len(body)) + 1
	opts.MaxInFlightBytes = MinInFlightBytes(opts.MaxRequestBytes)
	ts := newTestServer(t, opts, benchSnapshot())
	for _, verb := range []string{"/filter", "/prioritize"} {
		if rec := post(t, ts.Handler(), verb, body); rec.Code != http.StatusOK {
			t.Fatalf("%s of a %d-byte body in a %d-byte budget: status %d: %.200s", verb, len(body), opts.MaxInFlightBytes, rec.Code, rec.Body)
		}
	}
}
