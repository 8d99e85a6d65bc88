// Package server is joulie-extender's HTTP face: kube-scheduler's filter
// and prioritize calls, the /debug/scoring view, /readyz (and /healthz) and /metrics.
//
// Handlers are thin: they read the body within a size limit, decode it
// with package wire, load the current state snapshot once (an atomic read,
// no lock), ask package scoring for each node, and write the reply.
// Requests the server cannot read are answered 400 with a JSON error body;
// the scheduler, with the extender marked ignorable, then goes on without
// it.
//
// Memory follows what clients send, not what they announce: a body buffer
// grows as bytes arrive, and every growth (body, decoded nodes, pod,
// reply) is first taken from one budget shared by all calls in flight. A
// call the budget cannot hold gets a 503. A few small sets of buffers are
// kept for reuse, so a steady stream of requests allocates little beyond
// the pod; large ones go back to the garbage collector.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"joulie.io/joulie/extender/internal/metrics"
	"joulie.io/joulie/extender/internal/state"
	"joulie.io/joulie/extender/internal/wire"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/pkg/workload"
)

// Options are the server's settings.
type Options struct {
	// Params shape the score.
	Params scoring.Params
	// MaxRequestBytes bounds a request body; larger ones get a 400. A
	// 5,000-node cluster without nodeCacheCapable sends up to about 60 MB.
	MaxRequestBytes int64
	// MaxInFlightBytes bounds the memory all calls in flight hold
	// together; a call beyond it gets a 503. It must be positive, and at
	// least twice MaxRequestBytes for the largest filter call to fit.
	MaxInFlightBytes int64
	// Timeouts of the HTTP server (see net/http.Server).
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
}

// Server answers the scheduler from the snapshots of a state source.
type Server struct {
	opts     Options
	snapshot func() *state.Snapshot
	metrics  *metrics.Metrics
	gatherer prometheus.Gatherer
	log      *slog.Logger
	now      func() time.Time
	budget   budget
	// free holds exchanges for reuse. A fixed number of them, each at
	// most maxPooledBytes, rather than a sync.Pool: what idle buffers
	// hold is then bounded by a constant, not by the most calls ever in
	// flight at once.
	free chan *exchange
	// large holds at most one exchange above maxPooledBytes (one that
	// served full Nodes), its buffers charged to the budget while idle:
	// the scheduler that sends full Nodes reuses them call after call
	// instead of allocating tens of MB each time, and what it keeps is
	// memory the budget already counts, not memory beside it.
	large chan *exchange
}

// New returns a server reading cluster state from snapshot and registering
// its metrics with reg, which /metrics serves.
func New(opts Options, snapshot func() *state.Snapshot, reg *prometheus.Registry, log *slog.Logger) *Server {
	s := &Server{
		opts:     opts,
		snapshot: snapshot,
		gatherer: reg,
		log:      log,
		now:      time.Now,
		budget:   budget{limit: opts.MaxInFlightBytes},
		free:     make(chan *exchange, freeExchanges),
		large:    make(chan *exchange, 1),
	}
	s.metrics = metrics.New(reg, snapshot, opts.Params.StalenessThreshold, func() time.Time { return s.now() }, s.budget.used.Load)
	return s
}

// Handler routes the extender's endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /filter", s.filter)
	mux.HandleFunc("POST /prioritize", s.prioritize)
	mux.HandleFunc("GET /debug/scoring", s.debugScoring)
	// /readyz is the readiness probe's, as on the controller and
	// Kubernetes' own components; /healthz answers alike for the probes
	// of installs from before it.
	mux.HandleFunc("GET /readyz", s.healthz)
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelError),
	}))
	return mux
}

// HTTPServer returns an http.Server for the handler with the configured
// timeouts: a scheduler that stalls mid-request, or a client that never
// reads its reply, cannot hold a connection forever.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// Serve serves on ln until ctx ends, then shuts down gracefully, giving
// calls in flight up to grace to finish. With a certificate it serves
// HTTPS.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, cert *tls.Certificate, grace time.Duration) error {
	errc := make(chan error, 1)
	go func() {
		if cert != nil {
			srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down HTTP server: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// requestError is a request the server refuses: with a 400, or a 503
// when the server is too busy for it.
type requestError struct {
	reason string // metrics label
	msg    string
	status int
}

func (e *requestError) Error() string { return e.msg }

func badRequest(reason, msg string) *requestError {
	return &requestError{reason, msg, http.StatusBadRequest}
}

func (s *Server) busy() *requestError {
	return &requestError{metrics.ReasonBusy, fmt.Sprintf(
		"extender busy: the calls in flight already hold %d of the %d bytes they may and this one needs more; retry, or raise maxInflightBytes (--max-inflight-bytes, EXTENDER_MAX_INFLIGHT_BYTES) if this happens without an attack",
		s.budget.used.Load(), s.budget.limit), http.StatusServiceUnavailable}
}

// read reads and decodes the body into ex.args.
func (s *Server) read(w http.ResponseWriter, r *http.Request, ex *exchange) *requestError {
	limit := s.opts.MaxRequestBytes
	if r.ContentLength > limit {
		return badRequest(metrics.ReasonTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, limit))
	}
	if err := s.readBody(http.MaxBytesReader(w, r.Body, limit), ex, r.ContentLength); err != nil {
		if errors.Is(err, errBusy) {
			return s.busy()
		}
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return badRequest(metrics.ReasonTooLarge, fmt.Sprintf("request body is over the limit of %d bytes", mbe.Limit))
		}
		return badRequest(metrics.ReasonRead, "read request body: "+err.Error())
	}
	if err := wire.DecodeArgs(ex.body, &ex.args); err != nil {
		if errors.Is(err, errBusy) {
			return s.busy()
		}
		return badRequest(metrics.ReasonDecode, "decode ExtenderArgs: "+err.Error())
	}
	if ex.args.Pod == nil {
		return badRequest(metrics.ReasonInvalid, "ExtenderArgs has no Pod")
	}
	if !ex.args.HasNodeNames && !ex.args.HasNodes {
		return badRequest(metrics.ReasonInvalid, "ExtenderArgs has neither NodeNames nor Nodes")
	}
	return nil
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, verb string, e *requestError) {
	s.metrics.RequestError(verb, e.reason)
	s.log.Warn("refused scheduler call", "verb", verb, "remote", r.RemoteAddr, "status", e.status, "reason", e.reason, "err", e.msg)
	body := wire.AppendError(nil, e.msg)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	// Tell the client this connection is done: the rest of an oversized
	// body is not read.
	w.Header().Set("Connection", "close")
	if e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// guard turns a panic into a 500 with a JSON body instead of a dropped
// connection. Nothing should panic; if something does, the scheduler gets
// an error it understands and the log says where.
func (s *Server) guard(w http.ResponseWriter, verb string) {
	if v := recover(); v != nil {
		if v == http.ErrAbortHandler {
			panic(v)
		}
		s.log.Error("panic answering scheduler call", "verb", verb, "panic", v)
		body := wire.AppendError(nil, "internal error")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write(body)
	}
}

// call runs one scheduler call: it reads and decodes the request into an
// exchange, lets answer write the reply, and refuses the call with the
// error read or answer gives.
func (s *Server) call(w http.ResponseWriter, r *http.Request, verb string, answer func(http.ResponseWriter, *http.Request, *exchange) *requestError) {
	start := time.Now()
	defer s.guard(w, verb)
	ex := s.get()
	answered := false
	defer func() { s.put(ex, answered) }()
	e := s.read(w, r, ex)
	if e == nil {
		e = answer(w, r, ex)
	}
	if e != nil {
		s.refuse(w, r, verb, e)
	}
	answered = e == nil
	s.metrics.ObserveRequest(verb, time.Since(start))
}

func (s *Server) filter(w http.ResponseWriter, r *http.Request) {
	s.call(w, r, metrics.VerbFilter, s.answerFilter)
}

func (s *Server) prioritize(w http.ResponseWriter, r *http.Request) {
	s.call(w, r, metrics.VerbPrioritize, s.answerPrioritize)
}

func (s *Server) answerFilter(w http.ResponseWriter, r *http.Request, ex *exchange) *requestError {
	a := &ex.args
	n := a.Len()
	var err error
	if ex.reasons, err = resize(s, ex, ex.reasons, n); err != nil {
		return s.busy()
	}
	// Performance pods are turned away from eco and draining nodes, other
	// pods from the warm reserve. A DaemonSet's pod passes untouched: it
	// belongs on every node. Nor is a pod by name looked up for the
	// reserve when no node carries its label, which is most requests.
	pod := scoring.Pod{Performance: workload.Classify(a.Pod) == workload.Performance, DaemonSet: workload.IsDaemonSet(a.Pod)}
	perf := pod.Performance
	snap := s.snapshot()
	if perf || (!pod.DaemonSet && (!a.HasNodeNames || snap.AnyWarmReserve())) {
		// Indexed by verdict: Admit, then each rejection in turn.
		var rejected [1 + len(scoring.Verdicts)]int
		for i := range n {
			var twin *scoring.Twin
			var labels scoring.Labels
			if a.HasNodeNames {
				if node := snap.Lookup(a.Name(i)); node != nil {
					twin, labels = node.Twin, node.Labels
				}
			} else {
				if perf {
					if node := snap.Lookup(a.Name(i)); node != nil {
						twin = node.Twin
					}
				}
				// The scheduler's own copy of the node is the freshest
				// word on its labels.
				labels = scoring.Labels{Profile: a.Nodes[i].Profile, Draining: a.Nodes[i].Draining, WarmReserve: a.Nodes[i].WarmReserve}
			}
			v := scoring.FilterPod(pod, twin, labels)
			ex.reasons[i] = v.Reason()
			rejected[v]++
		}
		for _, v := range scoring.Verdicts {
			s.metrics.Filtered(v, rejected[v])
		}
		if s.log.Enabled(r.Context(), slog.LevelDebug) {
			s.log.Debug("filtered", "pod", a.Pod.Namespace+"/"+a.Pod.Name, "candidates", n,
				"rejectedEco", rejected[scoring.RejectTwinEco]+rejected[scoring.RejectLabelEco],
				"rejectedDraining", rejected[scoring.RejectTwinDraining]+rejected[scoring.RejectLabelDraining],
				"rejectedWarmReserve", rejected[scoring.RejectWarmReserve])
		}
	}
	if a.HasNodeNames {
		if err := s.output(ex, wire.FilterResultSize(a, ex.reasons)); err != nil {
			return s.busy()
		}
		ex.out = wire.AppendFilterResult(ex.out, a, ex.reasons)
		writeJSON(w, ex.out)
		return nil
	}
	// The kept Nodes, up to the whole body, go out from the body itself;
	// only the rejections are built, so the reply holds no second copy.
	if err := s.output(ex, wire.FilterFailuresSize(a, ex.reasons)); err != nil {
		return s.busy()
	}
	ex.out = wire.AppendFilterFailures(ex.out, a, ex.reasons)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(wire.KeptNodesSize(a, ex.reasons)+len(ex.out)))
	if err := wire.WriteKeptNodes(w, a, ex.reasons); err == nil {
		_, _ = w.Write(ex.out)
	}
	return nil
}

func (s *Server) answerPrioritize(w http.ResponseWriter, r *http.Request, ex *exchange) *requestError {
	a := &ex.args
	pod := scoring.PodOf(a.Pod)
	snap := s.snapshot()
	now := s.now()
	params := &s.opts.Params
	batch := params.Batch(pod, snap.Cluster(now, params.StalenessThreshold), now)
	n := a.Len()
	var err error
	if ex.scores, err = resize(s, ex, ex.scores, n); err != nil {
		return s.busy()
	}
	for i := range n {
		var twin *scoring.Twin
		var hw powerest.Node
		var fill scoring.Fill
		if node := snap.Lookup(a.Name(i)); node != nil {
			twin, hw, fill = node.Twin, node.Hardware, node.Fill
		}
		ex.scores[i] = scoring.ExtenderPriority(batch.Score(twin, hw, fill), extenderv1.MaxExtenderPriority)
	}
	if err := s.output(ex, wire.HostPrioritiesSize(a, ex.scores)); err != nil {
		return s.busy()
	}
	ex.out = wire.AppendHostPriorities(ex.out, a, ex.scores)
	writeJSON(w, ex.out)
	return nil
}
