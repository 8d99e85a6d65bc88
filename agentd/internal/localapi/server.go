package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Options tune Serve. Zero fields take the defaults named below.
type Options struct {
	// AllowedGID is the group whose members may use the read verbs
	// (Socket.GID); -1 admits root only. Note that the zero value admits
	// group 0, root's own group.
	AllowedGID int
	// Group is the allowed group's name, for refusal messages; default
	// DefaultGroup.
	Group string
	// Logger receives refusals and failures; default slog.Default().
	Logger *slog.Logger
	// ReadHeaderTimeout (default 5s) and ReadTimeout (default 10s) bound
	// how long a client may take to send its request, WriteTimeout
	// (default 30s) how long an answer may take, IdleTimeout (default
	// 60s) how long a kept-alive connection may wait.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxBodyBytes caps a request body; default 64 KiB, far more than a
	// NodePowerProfileSpec needs.
	MaxBodyBytes int64
	// ShutdownTimeout is how long Serve waits for requests in flight once
	// its context is done; default 5s.
	ShutdownTimeout time.Duration

	// procDir is where supplementary groups are read; tests point it at
	// a fixture.
	procDir string
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ReadHeaderTimeout, 5*time.Second)
	def(&o.ReadTimeout, 10*time.Second)
	def(&o.WriteTimeout, 30*time.Second)
	def(&o.IdleTimeout, 60*time.Second)
	def(&o.ShutdownTimeout, 5*time.Second)
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 64 << 10
	}
	if o.Group == "" {
		o.Group = DefaultGroup
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.procDir == "" {
		o.procDir = "/proc"
	}
	return o
}

// Serve answers the local API on l until ctx is done, then lets requests
// in flight finish (up to Options.ShutdownTimeout) and closes l. l must be
// a Unix socket listener: Listen's Socket, or one handed over by systemd
// socket activation. It returns nil after a shutdown through ctx.
func Serve(ctx context.Context, l net.Listener, agent Agent, opts Options) error {
	if l.Addr().Network() != "unix" {
		return fmt.Errorf("the local API serves only on a Unix socket, not on %s %s", l.Addr().Network(), l.Addr())
	}
	opts = opts.withDefaults()
	s := &server{agent: agent, opts: opts, log: opts.Logger}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
		// The credentials are read once, when the connection is
		// accepted: they are the ones the kernel recorded at connect(2).
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, identifyPeer(c, opts.procDir))
		},
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve the local API: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), opts.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		srv.Close()
	}
	if serveErr := <-done; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	if err != nil {
		return fmt.Errorf("stop the local API: %w", err)
	}
	return nil
}

// route is one method on one path.
type route struct {
	// action names the verb in refusals, as an operator typed it.
	action string
	write  bool
	serve  func(*server, http.ResponseWriter, *http.Request)
}

var routes = map[string]map[string]route{
	"/v1/status": {
		http.MethodGet: {"status", false, (*server).status},
	},
	"/v1/hardware": {
		http.MethodGet: {"hardware", false, (*server).hardware},
	},
	"/v1/pods": {
		http.MethodGet: {"pods", false, (*server).pods},
	},
	"/v1/profile": {
		http.MethodGet:    {"profile", false, (*server).profile},
		http.MethodPut:    {"profile set", true, (*server).setProfile},
		http.MethodDelete: {"profile set --clear", true, (*server).clearProfile},
	},
	"/v1/restore": {
		http.MethodPost: {"restore", true, (*server).restore},
	},
}

type server struct {
	agent Agent
	opts  Options
	log   *slog.Logger
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		// A panicking agent must not take the daemon down, nor leave the
		// client with a dropped connection and no word.
		if v := recover(); v != nil {
			s.log.Error("local API handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v)
			writeError(w, http.StatusInternalServerError, "joulie-agentd failed to answer; see its log (journalctl -u joulie-agentd)")
		}
	}()
	p := peerFrom(r.Context())
	if p.err != nil {
		s.log.Warn("local API request refused: unidentified peer", "path", r.URL.Path, "err", p.err)
		writeError(w, http.StatusForbidden, "joulie-agentd cannot tell who is asking ("+p.err.Error()+"); refused")
		return
	}
	methods, ok := routes[r.URL.Path]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no %s in joulie-agentd's local API; is joulie-agentctl newer than the daemon?", r.URL.Path))
		return
	}
	rt, ok := methods[r.Method]
	if !ok {
		allowed := make([]string, 0, len(methods))
		for m := range methods {
			allowed = append(allowed, m)
		}
		sort.Strings(allowed)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s takes %s, not %s", r.URL.Path, strings.Join(allowed, " or "), r.Method))
		return
	}
	if msg := s.refusal(p, rt); msg != "" {
		s.log.Warn("local API request refused", "action", rt.action, "uid", p.uid, "gid", p.gid, "pid", p.pid)
		writeError(w, http.StatusForbidden, msg)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	rt.serve(s, w, r)
}

// refusal is why p may not run rt, or "" when it may.
func (s *server) refusal(p peer, rt route) string {
	switch {
	case rt.write && !p.mayWrite():
		return rt.action + " needs root; run with sudo"
	case !rt.write && !p.mayRead(s.opts.AllowedGID):
		if s.opts.AllowedGID < 0 {
			return fmt.Sprintf("%s needs root: the socket admits no group on this host (is group %s missing?); run with sudo", rt.action, s.opts.Group)
		}
		return fmt.Sprintf("%s needs root or membership in group %s; add your user to it (usermod -aG %s USER, then log in again) or run with sudo", rt.action, s.opts.Group, s.opts.Group)
	}
	return ""
}

func (s *server) status(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.agent.Status())
}

func (s *server) hardware(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.agent.Hardware())
}

func (s *server) pods(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.agent.Pods())
}

func (s *server) profile(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.agent.Profile())
}

func (s *server) setProfile(w http.ResponseWriter, r *http.Request) {
	// Cluster mode first: whatever the body, the answer is kubectl.
	if cur := s.agent.Profile(); !cur.Standalone {
		writeError(w, http.StatusConflict, notStandalone(cur.Node))
		return
	}
	spec, status, err := decodeSpec(r.Body)
	if err != nil {
		writeError(w, status, err.Error())
		return
	}
	if err := ValidateSpec(spec); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.agent.SetProfile(spec); err != nil {
		s.writeAgentError(w, "set the profile", err)
		return
	}
	writeJSON(w, http.StatusOK, s.agent.Profile())
}

func (s *server) clearProfile(w http.ResponseWriter, _ *http.Request) {
	if cur := s.agent.Profile(); !cur.Standalone {
		writeError(w, http.StatusConflict, notStandalone(cur.Node))
		return
	}
	if err := s.agent.ClearProfile(); err != nil {
		s.writeAgentError(w, "clear the profile override", err)
		return
	}
	writeJSON(w, http.StatusOK, s.agent.Profile())
}

func (s *server) restore(w http.ResponseWriter, _ *http.Request) {
	report, err := s.agent.Restore()
	if err != nil {
		s.log.Error("restore through the local API failed", "err", err)
		report.Error = err.Error()
		writeJSON(w, http.StatusInternalServerError, report)
		return
	}
	writeJSON(w, http.StatusOK, report)
}

func (s *server) writeAgentError(w http.ResponseWriter, what string, err error) {
	switch {
	case errors.Is(err, ErrNotStandalone):
		writeError(w, http.StatusConflict, notStandalone(s.agent.Profile().Node))
	case errors.Is(err, ErrInvalidSpec):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		s.log.Error("local API: "+what+" failed", "err", err)
		writeError(w, http.StatusInternalServerError, what+": "+err.Error())
	}
}

func notStandalone(node string) string {
	return fmt.Sprintf("the profile is set by the cluster (NodePowerProfile %s); use kubectl", node)
}

// decodeSpec reads exactly one NodePowerProfileSpec. Unknown fields are
// refused: a misspelt cap would otherwise leave the CPUs silently
// uncapped.
func decodeSpec(body io.Reader) (joulie.NodePowerProfileSpec, int, error) {
	var spec joulie.NodePowerProfileSpec
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(&spec)
	var tooBig *http.MaxBytesError
	if err == nil {
		if _, next := dec.Token(); next != io.EOF {
			err = errors.New("it holds more than one JSON value")
			if errors.As(next, &tooBig) {
				err = next
			}
		}
	}
	switch {
	case err == nil:
		return spec, http.StatusOK, nil
	case errors.As(err, &tooBig):
		return spec, http.StatusRequestEntityTooLarge, fmt.Errorf("the body is over %d bytes; a NodePowerProfileSpec is far smaller", tooBig.Limit)
	case errors.Is(err, io.EOF):
		return spec, http.StatusBadRequest, errors.New("the body is empty; send a NodePowerProfileSpec as JSON")
	default:
		return spec, http.StatusBadRequest, fmt.Errorf("the body is not a NodePowerProfileSpec in JSON: %v", err)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		// NaN or Inf in a reading: say so rather than send half a body.
		code = http.StatusInternalServerError
		data, _ = json.Marshal(ErrorResponse{Error: "joulie-agentd could not encode its answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(append(data, '\n'))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorResponse{Error: msg})
}
