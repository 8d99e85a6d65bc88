package parking

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/park"
)

// DefaultMaxConcurrentWakes bounds the Waker calls in flight: enough that
// a few hung BMCs (each held for parking.ipmi.callTimeout) leave the other
// wakes going, few enough that a mass wake does not open a session with
// every BMC of the fleet at once.
const DefaultMaxConcurrentWakes = 8

// WakeRequest is one wake asked of a Waker.
type WakeRequest struct {
	// Attempt is the node's recorded wake attempt (spec.wakeAttempts).
	Attempt int
	// Cycle is set on a retry: the previous attempt did not bring the
	// node up within the resume timeout, so a host that is on may be hung
	// and a waker that can restart it (a BMC) should. It is never set on
	// a resend of an attempt already recorded, which a booting host may
	// be answering.
	Cycle bool
}

// wakes runs the Waker calls off the pass, at most max at a time and one
// per node, and reports each when it ends. It also remembers which wake
// attempts this process has sent, so that a node recorded waking by a
// process that crashed before its call (or by a former leader) is woken
// at once rather than after the resume timeout. That memory is an
// observation, not parking state: a new process sends every recorded
// wake once, which Wake's idempotence makes harmless.
type wakes struct {
	c     *Controller
	slots chan struct{}
	wg    sync.WaitGroup

	mu sync.Mutex
	// busy holds the nodes with a call in flight or waiting for a slot;
	// next, a request that came for one of them meanwhile, sent when the
	// call ends.
	busy map[string]bool
	next map[string]queuedWake
	// sent is the highest attempt sent (or being sent) to each waking
	// node by this process.
	sent map[string]int
}

type queuedWake struct {
	node *corev1.Node
	req  WakeRequest
}

func newWakes(c *Controller) *wakes {
	return &wakes{c: c, slots: make(chan struct{}, c.opts.MaxConcurrentWakes),
		busy: map[string]bool{}, next: map[string]queuedWake{}, sent: map[string]int{}}
}

// send starts a call for node, or queues it behind the call in flight:
// a BMC that has not answered yet is not sent a second session.
func (w *wakes) send(ctx context.Context, node *corev1.Node, req WakeRequest) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent[node.Name] = max(w.sent[node.Name], req.Attempt)
	if w.busy[node.Name] {
		w.next[node.Name] = queuedWake{node: node, req: req}
		return
	}
	w.busy[node.Name] = true
	w.wg.Add(1)
	go w.run(ctx, node, req)
}

func (w *wakes) run(ctx context.Context, node *corev1.Node, req WakeRequest) {
	defer w.wg.Done()
	m := w.c.opts.Metrics
	for {
		m.WakeCallsWaiting.Inc()
		select {
		case w.slots <- struct{}{}:
			m.WakeCallsWaiting.Dec()
		case <-ctx.Done():
			m.WakeCallsWaiting.Dec()
			w.mu.Lock()
			delete(w.busy, node.Name)
			delete(w.next, node.Name)
			w.mu.Unlock()
			return
		}
		m.WakeCallsInFlight.Inc()
		err := w.c.opts.Waker.Wake(ctx, node, req)
		m.WakeCallsInFlight.Dec()
		<-w.slots
		w.report(ctx, node, req, err)

		w.mu.Lock()
		q, ok := w.next[node.Name]
		delete(w.next, node.Name)
		if !ok {
			delete(w.busy, node.Name)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		node, req = q.node, q.req
	}
}

func (w *wakes) report(ctx context.Context, node *corev1.Node, req WakeRequest, err error) {
	log := w.c.log.With("node", node.Name, "attempt", req.Attempt, "cycle", req.Cycle)
	switch {
	case err == nil:
		log.Info("wake sent")
	case ctx.Err() != nil:
		// Leadership ended: the next leader sends the wake again.
		log.Info("wake call ended with the parking loop", "err", err)
	default:
		// The attempt stays recorded: the resume timeout tries again.
		w.c.opts.Metrics.WakeErrors.Inc()
		log.Warn("wake failed to send; retrying after the resume timeout", "err", err)
		w.c.event(node, true, "WakeError", "wake attempt %d could not be sent: %v", req.Attempt, err)
	}
}

// ensure sends the wake of every node recorded waking that this process
// has not sent it for, as a plain power up (never a cycle: the host may
// be booting from the wake the former process sent), and forgets the
// nodes no longer waking. transitions are the pass's, which apply has
// carried out (and sent the wakes of); states, every node's state after
// the pass.
func (w *wakes) ensure(ctx context.Context, v *view, transitions []park.Transition, states map[string]joulie.PowerState) {
	moved := map[string]bool{}
	for _, t := range transitions {
		moved[t.Node] = true
	}
	var resend []queuedWake
	w.mu.Lock()
	for name := range w.sent {
		if states[name] != joulie.PowerWaking {
			delete(w.sent, name)
			delete(w.next, name)
		}
	}
	for _, pn := range v.in.Nodes {
		name := pn.Node.Name
		if moved[name] || pn.State != joulie.PowerWaking || states[name] != joulie.PowerWaking {
			continue
		}
		// An attempt at or below one sent is no news: the cache may
		// still show the previous attempt after a retry was sent.
		if sent, ok := w.sent[name]; ok && sent >= pn.WakeAttempts {
			continue
		}
		resend = append(resend, queuedWake{node: pn.Node, req: WakeRequest{Attempt: pn.WakeAttempts}})
	}
	w.mu.Unlock()
	for _, q := range resend {
		w.c.log.Info("sending the wake of a node recorded waking that this process has not sent", "node", q.node.Name, "attempt", q.req.Attempt)
		w.send(ctx, q.node, q.req)
	}
}

// wait returns once no call is in flight.
func (w *wakes) wait() { w.wg.Wait() }
