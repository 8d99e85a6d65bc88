package httpbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"joulie.io/joulie/agentd/internal/backend"
	"joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/baseurl"
)

// DefaultMaxTelemetryAge is how long a telemetry reading serves to clamp
// writes and to skip writes already in force. It is shorter than any
// sensible reconcile interval, so one tick's GPU listing serves that
// tick's writes and the next tick reads afresh.
const DefaultMaxTelemetryAge = time.Second

// Endpoint is where one half of the contract is served.
type Endpoint struct {
	// URL is the base URL; "{node}" is replaced by the node name. Empty
	// means this half is not routed over HTTP.
	URL string
	// Timeout bounds each request, reading the body included; zero means
	// v1alpha1.DefaultEndpointTimeout, TelemetryProfile's documented default.
	Timeout time.Duration
}

// Config is what a Client needs.
type Config struct {
	// Node is the node the client speaks for.
	Node string
	// Telemetry serves GET /telemetry, Control serves POST /control;
	// they are usually the same URL. At least one must be set.
	Telemetry Endpoint
	Control   Endpoint
	// HTTPClient sends the requests (TLS settings, proxies, redirect
	// policy); nil means http.DefaultClient.
	HTTPClient *http.Client
	// MaxTelemetryAge: see DefaultMaxTelemetryAge, which zero means. A
	// negative value makes every write read telemetry first.
	MaxTelemetryAge time.Duration
}

// Client speaks the contract for one node. It is safe for concurrent use.
type Client struct {
	node         string
	telemetryURL *url.URL // nil when telemetry is not routed here
	controlURL   *url.URL // nil when control is not routed here
	telemetryTO  time.Duration
	controlTO    time.Duration
	hc           *http.Client
	maxAge       time.Duration
	now          func() time.Time

	mu     sync.Mutex
	last   *Telemetry // latest reading, with writes since folded in
	lastAt time.Time
}

// New checks cfg and builds a client. It sends nothing.
func New(cfg Config) (*Client, error) {
	if cfg.Node == "" {
		return nil, errors.New("http backend: node name is empty")
	}
	if cfg.Telemetry.URL == "" && cfg.Control.URL == "" {
		return nil, fmt.Errorf("http backend for node %s: neither a telemetry nor a control URL is set", cfg.Node)
	}
	c := &Client{
		node:        cfg.Node,
		telemetryTO: orDefault(cfg.Telemetry.Timeout),
		controlTO:   orDefault(cfg.Control.Timeout),
		hc:          cfg.HTTPClient,
		maxAge:      cfg.MaxTelemetryAge,
		now:         time.Now,
	}
	if c.hc == nil {
		c.hc = http.DefaultClient
	}
	if c.maxAge == 0 {
		c.maxAge = DefaultMaxTelemetryAge
	}
	if cfg.Telemetry.URL != "" {
		base, err := expandURL(cfg.Telemetry.URL, cfg.Node)
		if err != nil {
			return nil, fmt.Errorf("http backend for node %s: telemetry URL: %w", cfg.Node, err)
		}
		c.telemetryURL = base.JoinPath("telemetry")
		c.telemetryURL.RawQuery = url.Values{"node": {cfg.Node}}.Encode()
	}
	if cfg.Control.URL != "" {
		base, err := expandURL(cfg.Control.URL, cfg.Node)
		if err != nil {
			return nil, fmt.Errorf("http backend for node %s: control URL: %w", cfg.Node, err)
		}
		c.controlURL = base.JoinPath("control")
	}
	return c, nil
}

func orDefault(d time.Duration) time.Duration {
	if d <= 0 {
		return v1alpha1.DefaultEndpointTimeout
	}
	return d
}

// expandURL puts the node name in place of {node} and checks the result
// is a usable base by pkg/baseurl's rule (the contract owns the query).
func expandURL(raw, node string) (*url.URL, error) { return baseurl.Expand(raw, node) }

// Node is the node the client speaks for.
func (c *Client) Node() string { return c.node }

// Telemetry reads the node's telemetry. The result is the caller's to
// keep. When telemetry is not routed over HTTP, or the simulator answers
// 501, the error wraps backend.ErrBlocked.
func (c *Client) Telemetry(ctx context.Context) (*Telemetry, error) {
	if c.telemetryURL == nil {
		return nil, fmt.Errorf("%w: telemetry of node %s is not routed to an http endpoint", backend.ErrBlocked, c.node)
	}
	what := "telemetry from " + c.telemetryURL.Redacted()
	status, data, err := c.do(ctx, http.MethodGet, c.telemetryURL, c.telemetryTO, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := statusError(status, data); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	t, err := DecodeTelemetry(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if t.Node != c.node {
		// A base URL missing its {node} can serve another node's
		// readings; acting on them would cap this node blindly.
		return nil, fmt.Errorf("%s: answer is for node %q, not %q", what, t.Node, c.node)
	}
	c.mu.Lock()
	c.last, c.lastAt = t.Clone(), c.now()
	c.mu.Unlock()
	return t, nil
}

// Control sends one control request as given; APIVersion and Node are
// filled in. It does not clamp: SetPackageCapWatts, SetThrottlePct and
// SetGPUCap do, and the agent uses those.
// Result applied returns the response and no error; blocked returns it
// with an error wrapping backend.ErrBlocked; error, a refused request or a
// failed exchange return an error naming the action and the URL.
func (c *Client) Control(ctx context.Context, req ControlRequest) (*ControlResponse, error) {
	req.APIVersion, req.Node = APIVersion, c.node
	what := describe(req)
	if c.controlURL == nil {
		return nil, fmt.Errorf("%s: %w: control of node %s is not routed to an http endpoint", what, backend.ErrBlocked, c.node)
	}
	what += " via " + c.controlURL.Redacted()
	body, err := json.Marshal(req)
	if err != nil { // only a NaN or infinity can get here
		return nil, fmt.Errorf("%s: encode request: %w", what, err)
	}
	status, data, err := c.do(ctx, http.MethodPost, c.controlURL, c.controlTO, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := statusError(status, data); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	resp, err := DecodeControlResponse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	switch resp.Result {
	case ResultBlocked:
		return resp, fmt.Errorf("%s: %w: %s", what, backend.ErrBlocked, orNoMessage(clip(resp.Message)))
	case ResultError:
		return resp, fmt.Errorf("%s: simulator reports error: %s", what, orNoMessage(clip(resp.Message)))
	}
	switch req.Action {
	case ActionSetThrottle:
		if resp.AppliedPct == nil {
			return resp, fmt.Errorf("%s: result applied without appliedPct", what)
		}
	case ActionSetPackageCap, ActionSetGPUCap:
		if resp.AppliedWatts == nil {
			return resp, fmt.Errorf("%s: result applied without appliedWatts", what)
		}
	}
	return resp, nil
}

func describe(r ControlRequest) string {
	var b strings.Builder
	b.WriteString(string(r.Action))
	if r.GPU != nil {
		fmt.Fprintf(&b, " gpu %d", *r.GPU)
	}
	if r.Watts != nil {
		fmt.Fprintf(&b, " %s W", strconv.FormatFloat(*r.Watts, 'f', -1, 64))
	}
	if r.Pct != nil {
		fmt.Fprintf(&b, " %s%%", strconv.FormatFloat(*r.Pct, 'f', -1, 64))
	}
	fmt.Fprintf(&b, " for node %s", r.Node)
	return b.String()
}

func orNoMessage(m string) string {
	if m == "" {
		return "(no message)"
	}
	return m
}

// do sends one request under its own timeout and reads at most
// MaxBodyBytes of the answer. No retry: the caller's next tick is the
// retry, so a slow simulator costs one timeout per tick and never piles
// up requests.
func (c *Client) do(ctx context.Context, method string, u *url.URL, timeout time.Duration, body []byte) (int, []byte, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(rctx, method, u.String(), rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(VersionHeader, APIVersion)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, exchangeError(ctx, err, timeout)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return 0, nil, fmt.Errorf("read answer (%d %s): %w", resp.StatusCode, http.StatusText(resp.StatusCode), exchangeError(ctx, err, timeout))
	}
	if len(data) > MaxBodyBytes {
		return 0, nil, fmt.Errorf("answer (%d %s) is larger than %d bytes", resp.StatusCode, http.StatusText(resp.StatusCode), MaxBodyBytes)
	}
	return resp.StatusCode, data, nil
}

// exchangeError says why a request got no answer, telling the operator
// apart a timeout (the simulator is slow or down), the agent stopping, and
// the rest.
func exchangeError(parent context.Context, err error, timeout time.Duration) error {
	if parent.Err() != nil {
		return fmt.Errorf("abandoned: %w", context.Cause(parent))
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("no answer within %s (timeout): %w", timeout, context.DeadlineExceeded)
	}
	// url.Error repeats the method and URL the caller already names.
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// statusError maps an HTTP status to the contract: 2xx carries a result,
// 501 means the simulator does not model this (blocked), anything else is
// an error. The body's message, or the start of the body, is kept.
func statusError(status int, data []byte) error {
	if status >= 200 && status < 300 {
		return nil
	}
	msg := bodyMessage(data)
	if status == http.StatusNotImplemented {
		return fmt.Errorf("%w: simulator answered 501 Not Implemented: %s", backend.ErrBlocked, msg)
	}
	return fmt.Errorf("simulator answered %d %s: %s", status, http.StatusText(status), msg)
}

// bodyMessage extracts "message" from an error body on a best-effort
// basis: an error body that breaks the contract (a proxy's HTML page)
// must not hide the status that came with it.
func bodyMessage(data []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &e) == nil && e.Message != "" {
		return clip(e.Message)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return "(empty body)"
	}
	return "body " + strconv.Quote(clip(string(data)))
}

// clip shortens a simulator's text for an error message and blanks
// control characters, since the message ends up in logs and in
// NodePowerProfile status.
func clip(s string) string {
	const n = 200
	cut := len(s) > n
	if cut {
		s = strings.ToValidUTF8(s[:n], "")
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if cut {
		s += "..."
	}
	return s
}
