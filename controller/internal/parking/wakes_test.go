package parking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// blockingWaker holds the calls for the nodes in hang until release is
// closed (a BMC that never answers, within its call limit), and records
// every call.
type blockingWaker struct {
	hang    map[string]bool
	release chan struct{}
	err     error

	mu       sync.Mutex
	calls    []string // "node#attempt" or "node#attempt cycle"
	running  map[string]int
	overlaps []string // nodes called while a call for them ran
	called   chan string
}

func newBlockingWaker(hang ...string) *blockingWaker {
	w := &blockingWaker{hang: map[string]bool{}, release: make(chan struct{}), running: map[string]int{}, called: make(chan string, 100)}
	for _, n := range hang {
		w.hang[n] = true
	}
	return w
}

func (w *blockingWaker) Wake(ctx context.Context, n *corev1.Node, r WakeRequest) error {
	call := fmt.Sprintf("%s#%d", n.Name, r.Attempt)
	if r.Cycle {
		call += " cycle"
	}
	w.mu.Lock()
	w.calls = append(w.calls, call)
	if w.running[n.Name] > 0 {
		w.overlaps = append(w.overlaps, n.Name)
	}
	w.running[n.Name]++
	w.mu.Unlock()
	w.called <- n.Name
	if w.hang[n.Name] {
		select {
		case <-w.release:
		case <-ctx.Done():
		}
	}
	w.mu.Lock()
	w.running[n.Name]--
	w.mu.Unlock()
	return w.err
}

func (w *blockingWaker) recorded() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Clone(w.calls)
	slices.Sort(out)
	return out
}

// waitFor waits for cond, failing the test after a generous limit: the
// calls run on goroutines of their own.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
	}
}

// wakingNodes caches NotReady nodes recorded waking (attempt 1) since
// since, and creates them in the API.
func wakingNodes(t *testing.T, f *fixture, since time.Time, names ...string) {
	t.Helper()
	for _, name := range names {
		n := parkableNode(name, true)
		n.Status.Conditions[0].Status = corev1.ConditionUnknown
		if _, err := f.kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := profile(name, joulie.PowerWaking, since)
		p.Spec.WakeAttempts = 1
		p.Status.PowerState = joulie.PowerParked
		f.cache(t, n, p)
	}
}

// syncReturns runs a pass, failing the test if it does not return while
// wakes hang.
func syncReturns(t *testing.T, f *fixture) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f.ctrl.Sync(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the pass did not return while wake calls hang: it waits for the waker")
	}
}

// Three hung BMCs hold up neither the pass nor a fourth node's wake; a
// node with a call in flight is not called again; the calls in flight
// are counted.
func TestHungWakesHoldUpNeitherThePassNorOtherWakes(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	f.ctrl.opts.Metrics = NewMetrics(reg)
	w := newBlockingWaker("hung-1", "hung-2", "hung-3")
	f.ctrl.opts.Waker = w
	defer func() { close(w.release); f.ctrl.wakes.wait() }()
	// Past the resume timeout: the pass retries all four.
	wakingNodes(t, f, t0.Add(-11*time.Minute), "hung-1", "hung-2", "hung-3", "good")

	syncReturns(t, f)
	waitFor(t, "the fourth node's wake is sent", func() bool { return slices.Contains(w.recorded(), "good#2 cycle") })
	waitFor(t, "three calls in flight", func() bool { return testutil.ToFloat64(f.ctrl.opts.Metrics.WakeCallsInFlight) == 3 })

	// The next pass, with the cache showing the retries recorded, sends
	// nothing more: each node has its attempt sent.
	for _, name := range []string{"hung-1", "hung-2", "hung-3", "good"} {
		p := profile(name, joulie.PowerWaking, t0)
		p.Spec.WakeAttempts = 2
		p.Status.PowerState = joulie.PowerParked
		f.cache(t, p)
	}
	syncReturns(t, f)
	want := []string{"good#2 cycle", "hung-1#2 cycle", "hung-2#2 cycle", "hung-3#2 cycle"}
	if got := w.recorded(); !slices.Equal(got, want) {
		t.Errorf("wake calls %q, want %q", got, want)
	}
}

// At most MaxConcurrentWakes calls run; the others wait for a slot, and
// are counted as waiting; one node's calls never overlap.
func TestWakeCallsAreBounded(t *testing.T) {
	f := newFixture(t)
	f.ctrl.opts.Metrics = NewMetrics(prometheus.NewRegistry())
	f.ctrl.opts.MaxConcurrentWakes = 2
	f.ctrl.wakes = newWakes(f.ctrl)
	w := newBlockingWaker("a", "b", "c")
	f.ctrl.opts.Waker = w
	wakingNodes(t, f, t0.Add(-time.Minute), "a", "b", "c")

	syncReturns(t, f)
	m := f.ctrl.opts.Metrics
	// A call counts in flight just before it reaches the waker, so wait
	// for the waker to have seen both too (it had seen one, once, under
	// make check's load).
	waitFor(t, "two in flight and one waiting", func() bool {
		return testutil.ToFloat64(m.WakeCallsInFlight) == 2 && testutil.ToFloat64(m.WakeCallsWaiting) == 1 && len(w.recorded()) >= 2
	})
	if got := len(w.recorded()); got != 2 {
		t.Errorf("%d calls started with a bound of 2", got)
	}
	close(w.release)
	f.ctrl.wakes.wait()
	if got, want := w.recorded(), []string{"a#1", "b#1", "c#1"}; !slices.Equal(got, want) {
		t.Errorf("wake calls %q, want %q", got, want)
	}
	if testutil.ToFloat64(m.WakeCallsInFlight) != 0 || testutil.ToFloat64(m.WakeCallsWaiting) != 0 {
		t.Errorf("calls still counted in flight or waiting once all ended")
	}
	if len(w.overlaps) > 0 {
		t.Errorf("nodes called while a call for them ran: %v", w.overlaps)
	}
}

// A wake that fails is reported when its call ends: a WakeError Event
// naming the attempt, and the error counted.
func TestAWakeErrorIsReportedWhenTheCallEnds(t *testing.T) {
	f := newFixture(t)
	f.ctrl.opts.Metrics = NewMetrics(prometheus.NewRegistry())
	w := newBlockingWaker("p1")
	w.err = errors.New("node p1: the BMC at 10.0.0.5:623 did not answer")
	f.ctrl.opts.Waker = w
	wakingNodes(t, f, t0.Add(-time.Minute), "p1")

	syncReturns(t, f)
	<-w.called
	if n := testutil.ToFloat64(f.ctrl.opts.Metrics.WakeErrors); n != 0 {
		t.Errorf("%v wake errors counted before the call ended", n)
	}
	close(w.release)
	f.ctrl.wakes.wait()
	if n := testutil.ToFloat64(f.ctrl.opts.Metrics.WakeErrors); n != 1 {
		t.Errorf("%v wake errors counted, want 1", n)
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "WakeError wake attempt 1 could not be sent: node p1: the BMC at 10.0.0.5:623 did not answer") {
		t.Errorf("events %q, want a WakeError naming the attempt and the BMC's error", ev)
	}
}

// A node recorded waking whose wake this process has not sent (a crash
// came between the state write and the call, or another replica led) is
// woken on the first pass, as a plain power up, and once; the retry after
// the resume timeout asks for a power cycle.
func TestANodeRecordedWakingIsWokenByAProcessThatHasNotSentIt(t *testing.T) {
	f := newFixture(t)
	w := newBlockingWaker()
	f.ctrl.opts.Waker = w
	wakingNodes(t, f, t0.Add(-time.Minute), "p1")

	for range 2 {
		syncReturns(t, f)
		f.ctrl.wakes.wait()
	}
	if got, want := w.recorded(), []string{"p1#1"}; !slices.Equal(got, want) {
		t.Fatalf("wake calls %q, want %q: one power up, no cycle", got, want)
	}
	p := profile("p1", joulie.PowerWaking, t0.Add(-11*time.Minute))
	p.Spec.WakeAttempts = 1
	p.Status.PowerState = joulie.PowerParked
	f.cache(t, p)
	syncReturns(t, f)
	f.ctrl.wakes.wait()
	if got, want := w.recorded(), []string{"p1#1", "p1#2 cycle"}; !slices.Equal(got, want) {
		t.Errorf("wake calls %q, want %q", got, want)
	}
}
