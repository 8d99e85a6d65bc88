package facility

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"joulie.io/joulie/pkg/twin"
)

// Reading is what the poller knows. Each value is the last good one of
// its signal, kept on its own: a query that fails leaves its value as it
// was while the others move on. nil means never read.
type Reading struct {
	AmbientTempC  *float64
	ITPowerW      *float64
	CoolingPowerW *float64
	// PUE is (IT + cooling) / IT. It moves only in a poll that read both
	// powers, so it never mixes a fresh IT reading with a stale cooling
	// one.
	PUE *float64
	// Time is when a poll last read every signal.
	Time time.Time
	// Healthy is true when the last poll read every signal; Err says what
	// failed otherwise.
	Healthy bool
	Err     string
}

// Poller reads the facility signals from Prometheus. Latest is safe to
// call from any goroutine while Run or Poll work.
type Poller struct {
	cfg      Config
	endpoint string // the instant-query URL
	client   *http.Client
	log      *slog.Logger
	signals  [numSignals]signal

	mu      sync.RWMutex
	reading Reading
	// failures counts failed queries per signal since the start.
	failures [numSignals]uint64
	// failing is the state the last log line announced.
	failing bool
	polled  bool
}

// New returns a poller for cfg and registers its metrics with reg (none
// when reg is nil). cfg must carry a usable Prometheus URL even if it is
// not Enabled, since the caller has decided to poll. log may be nil.
func New(cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Poller, error) {
	if err := cfg.validate(true); err != nil {
		return nil, err
	}
	base, _ := parseBaseURL(cfg.PrometheusURL) // validated above
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Poller{
		cfg:      cfg,
		endpoint: base.JoinPath("api", "v1", "query").String(),
		// Every request carries its own deadline (Config.Timeout), so the
		// client needs none of its own.
		client:  &http.Client{},
		log:     log.With("prometheus", cfg.PrometheusURL),
		signals: signals(cfg),
	}
	if reg != nil {
		if err := reg.Register(collector{p}); err != nil {
			return nil, fmt.Errorf("register facility metrics: %w", err)
		}
	}
	return p, nil
}

// Run polls at once and then every Interval until ctx ends. The outcome
// of each poll is in Latest, the metrics and the log.
func (p *Poller) Run(ctx context.Context) {
	pollEvery(ctx, p.cfg.Interval, p.Poll)
}

// Latest returns the current reading. Its pointers are never written
// again, so the caller may keep them.
func (p *Poller) Latest() Reading {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.reading
}

// Poll runs one round: the three queries in parallel, so that a
// Prometheus that hangs costs one Timeout rather than three. It returns
// nil when every signal was read, and otherwise an error naming each
// failed query and why. A round cut short by ctx changes nothing: a
// shutting-down controller is not a Prometheus outage.
func (p *Poller) Poll(ctx context.Context) error {
	var (
		vals [numSignals]float64
		errs [numSignals]error
		wg   sync.WaitGroup
	)
	for i := range p.signals {
		wg.Go(func() {
			s := &p.signals[i]
			samples, err := instantQuery(ctx, p.client, p.endpoint, s.expr, p.cfg.Timeout)
			if err == nil {
				vals[i], err = s.value(samples)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("facility poll cancelled: %w", err)
	}
	now := time.Now()

	var failed []queryError
	for i, err := range errs {
		if err != nil {
			failed = append(failed, queryError{signal: p.signals[i].name, expr: p.signals[i].expr, err: err})
		}
	}
	var pollErr error
	if len(failed) > 0 {
		pollErr = &pollError{url: p.cfg.PrometheusURL, failed: failed}
	}

	p.mu.Lock()
	r := p.reading
	for i := range p.signals {
		if errs[i] != nil {
			p.failures[i]++
			continue
		}
		v := vals[i]
		*p.signals[i].field(&r) = &v
	}
	if errs[sigITPower] == nil && errs[sigCooling] == nil {
		if pue, ok := twin.PUE(vals[sigITPower], vals[sigCooling]); ok {
			r.PUE = &pue
		}
	}
	r.Healthy = pollErr == nil
	r.Err = ""
	if pollErr != nil {
		r.Err = pollErr.Error()
	} else {
		r.Time = now
	}
	p.reading = r
	wasFailing, first := p.failing, !p.polled
	p.failing, p.polled = pollErr != nil, true
	p.mu.Unlock()

	p.report(r, failed, pollErr, wasFailing, first)
	return pollErr
}

// report logs changes of state only: a Prometheus that is down for a day
// gives two lines, not one per poll.
func (p *Poller) report(r Reading, failed []queryError, err error, wasFailing, first bool) {
	switch {
	case err != nil && !wasFailing:
		names := make([]string, len(failed))
		for i, f := range failed {
			names[i] = f.signal
		}
		last := "never"
		if !r.Time.IsZero() {
			last = r.Time.Format(time.RFC3339)
		}
		p.log.Warn("facility metrics unavailable; keeping the last good values until Prometheus answers again",
			"failed", strings.Join(names, ","), "lastSuccess", last, "err", err)
	case err != nil:
		p.log.Debug("facility metrics still unavailable", "err", err)
	case wasFailing:
		p.log.Info("facility metrics available again", readingAttrs(r)...)
	case first:
		p.log.Info("facility metrics: first reading", readingAttrs(r)...)
	}
}

func readingAttrs(r Reading) []any {
	var attrs []any
	add := func(k string, v *float64) {
		if v != nil {
			attrs = append(attrs, k, *v)
		}
	}
	add("ambientTempC", r.AmbientTempC)
	add("itPowerW", r.ITPowerW)
	add("coolingPowerW", r.CoolingPowerW)
	add("pue", r.PUE)
	return attrs
}

// queryError is one signal that could not be read.
type queryError struct {
	signal string
	expr   string
	err    error
}

func (e queryError) Error() string {
	return fmt.Sprintf("%s (query %q): %v", e.signal, e.expr, e.err)
}

func (e queryError) Unwrap() error { return e.err }

// pollError lists the failed queries of one poll on one line, which keeps
// a log line a line; errors.Is and errors.As reach each query's cause.
type pollError struct {
	url    string
	failed []queryError
}

func (e *pollError) Error() string {
	parts := make([]string, len(e.failed))
	for i, f := range e.failed {
		parts[i] = f.Error()
	}
	return fmt.Sprintf("facility poll of Prometheus at %s: %s", e.url, strings.Join(parts, "; "))
}

func (e *pollError) Unwrap() []error {
	out := make([]error, len(e.failed))
	for i, f := range e.failed {
		out[i] = f
	}
	return out
}

// pollEvery calls poll at once and then every interval until ctx ends;
// poll reports its own failures (state, metrics, log).
func pollEvery(ctx context.Context, interval time.Duration, poll func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_ = poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
