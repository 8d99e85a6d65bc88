// Package server is joulie-extender's HTTP face: kube-scheduler's filter
// and prioritize calls, the /debug/scoring view, /healthz and /metrics.
//
// Handlers are thin: they read the body within a size limit, decode it
// with package wire, load the current state snapshot once (an atomic read,
// no lock), ask package scoring for each node, and write the reply.
// Buffers live in a pool, so a steady stream of requests allocates little
// beyond the pod. Requests the server cannot read are answered 400 with a
// JSON error body; the scheduler, with the extender marked ignorable,
// then goes on without it.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"joulie.io/joulie/extender/internal/metrics"
	"joulie.io/joulie/extender/internal/scoring"
	"joulie.io/joulie/extender/internal/state"
	"joulie.io/joulie/extender/internal/wire"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/workload"
)

// Options are the server's settings.
type Options struct {
	// Params shape the score.
	Params scoring.Params
	// MaxRequestBytes bounds a request body; larger ones get a 400. A
	// 5,000-node cluster without nodeCacheCapable sends about 25 MB.
	MaxRequestBytes int64
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
	pool     sync.Pool // of *exchange
}

// exchange holds one request's buffers, reused through the pool.
type exchange struct {
	body    []byte
	args    wire.Args
	reasons []string
	scores  []int64
	out     []byte
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
	}
	s.metrics = metrics.New(reg, snapshot, opts.Params.StalenessThreshold, func() time.Time { return s.now() })
	s.pool.New = func() any { return new(exchange) }
	return s
}

// Handler routes the extender's endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /filter", s.filter)
	mux.HandleFunc("POST /prioritize", s.prioritize)
	mux.HandleFunc("GET /debug/scoring", s.debugScoring)
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

func (s *Server) get() *exchange { return s.pool.Get().(*exchange) }

func (s *Server) put(ex *exchange) {
	ex.args.Reset() // drop references into the body
	clear(ex.reasons)
	s.pool.Put(ex)
}

// requestError is a request the server refuses with a 400.
type requestError struct {
	reason string // metrics label
	msg    string
}

func (e *requestError) Error() string { return e.msg }

// read reads and decodes the body into ex.args.
func (s *Server) read(w http.ResponseWriter, r *http.Request, ex *exchange) *requestError {
	limit := s.opts.MaxRequestBytes
	if r.ContentLength > limit {
		return &requestError{metrics.ReasonTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, limit)}
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), ex.body[:0], r.ContentLength)
	ex.body = body
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return &requestError{metrics.ReasonTooLarge, fmt.Sprintf("request body is over the limit of %d bytes", mbe.Limit)}
		}
		return &requestError{metrics.ReasonRead, "read request body: " + err.Error()}
	}
	if err := wire.DecodeArgs(body, &ex.args); err != nil {
		return &requestError{metrics.ReasonDecode, "decode ExtenderArgs: " + err.Error()}
	}
	if ex.args.Pod == nil {
		return &requestError{metrics.ReasonInvalid, "ExtenderArgs has no Pod"}
	}
	if !ex.args.HasNodeNames && !ex.args.HasNodes {
		return &requestError{metrics.ReasonInvalid, "ExtenderArgs has neither NodeNames nor Nodes"}
	}
	return nil
}

// readAll reads r to the end into buf, sized up front when the length is
// known so that a 25 MB body is read without regrowing.
func readAll(r io.Reader, buf []byte, length int64) ([]byte, error) {
	if length > 0 && int64(cap(buf)) < length+1 {
		// One byte spare, so that the read which sees EOF needs no growth.
		buf = make([]byte, 0, length+1)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, verb string, e *requestError) {
	s.metrics.RequestError(verb, e.reason)
	s.log.Warn("refused scheduler call", "verb", verb, "remote", r.RemoteAddr, "reason", e.reason, "err", e.msg)
	body := wire.AppendError(nil, e.msg)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	// Tell the client this connection is done: the rest of an oversized
	// body is not read.
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusBadRequest)
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

func (s *Server) filter(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer s.guard(w, metrics.VerbFilter)
	ex := s.get()
	defer s.put(ex)
	if err := s.read(w, r, ex); err != nil {
		s.refuse(w, r, metrics.VerbFilter, err)
		s.metrics.ObserveRequest(metrics.VerbFilter, time.Since(start))
		return
	}
	a := &ex.args
	n := a.Len()
	ex.reasons = resize(ex.reasons, n)
	// Only performance pods can be turned away; the rest pass untouched.
	if workload.Classify(a.Pod) == workload.Performance {
		snap := s.snapshot()
		var rejected [8]int
		for i := range n {
			var twin *scoring.Twin
			var labels scoring.Labels
			if node := snap.Lookup(a.Name(i)); node != nil {
				twin, labels = node.Twin, node.Labels
			}
			if !a.HasNodeNames {
				// The scheduler's own copy of the node is the freshest
				// word on its labels.
				labels = scoring.Labels{Profile: a.Nodes[i].Profile, Draining: a.Nodes[i].Draining}
			}
			v := scoring.Filter(true, twin, labels)
			ex.reasons[i] = v.Reason()
			if int(v) < len(rejected) {
				rejected[v]++
			}
		}
		for _, v := range scoring.Verdicts {
			s.metrics.Filtered(v, rejected[v])
		}
		if s.log.Enabled(r.Context(), slog.LevelDebug) {
			s.log.Debug("filtered", "pod", a.Pod.Namespace+"/"+a.Pod.Name, "candidates", n,
				"rejectedEco", rejected[scoring.RejectTwinEco]+rejected[scoring.RejectLabelEco],
				"rejectedDraining", rejected[scoring.RejectTwinDraining]+rejected[scoring.RejectLabelDraining])
		}
	}
	ex.out = wire.AppendFilterResult(ex.out[:0], a, ex.reasons)
	writeJSON(w, ex.out)
	s.metrics.ObserveRequest(metrics.VerbFilter, time.Since(start))
}

func (s *Server) prioritize(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer s.guard(w, metrics.VerbPrioritize)
	ex := s.get()
	defer s.put(ex)
	if err := s.read(w, r, ex); err != nil {
		s.refuse(w, r, metrics.VerbPrioritize, err)
		s.metrics.ObserveRequest(metrics.VerbPrioritize, time.Since(start))
		return
	}
	a := &ex.args
	pod := scoring.Pod{
		Performance: workload.Classify(a.Pod) == workload.Performance,
		Demand:      powerest.PodDemand(a.Pod),
	}
	snap := s.snapshot()
	now := s.now()
	params := &s.opts.Params
	batch := params.Batch(pod, snap.Cluster(now, params.StalenessThreshold), now)
	n := a.Len()
	ex.scores = resize(ex.scores, n)
	for i := range n {
		var twin *scoring.Twin
		var hw powerest.Node
		if node := snap.Lookup(a.Name(i)); node != nil {
			twin, hw = node.Twin, node.Hardware
		}
		ex.scores[i] = scoring.ExtenderPriority(batch.Score(twin, hw), extenderv1.MaxExtenderPriority)
	}
	ex.out = wire.AppendHostPriorities(ex.out[:0], a, ex.scores)
	writeJSON(w, ex.out)
	s.metrics.ObserveRequest(metrics.VerbPrioritize, time.Since(start))
}

// resize returns s with length n, reusing its storage when it can.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
