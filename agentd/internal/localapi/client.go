package localapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// Errors a Client returns, for errors.Is. Their messages are written for
// the operator at the terminal and name the socket.
var (
	// ErrNotRunning: no socket, or nothing listening on it.
	ErrNotRunning = errors.New("joulie-agentd is not running")
	// ErrPermission: the kernel refused the connection (socket mode).
	ErrPermission = errors.New("permission denied on the joulie-agentd socket")
)

// APIError is an answer other than 2xx; Message is the server's own
// sentence (for 403, what the caller needs).
type APIError struct {
	StatusCode int
	Message    string
}

func (e *APIError) Error() string { return e.Message }

// connectError is a failure to reach the socket, worded for the operator.
type connectError struct {
	kind  error // ErrNotRunning, ErrPermission or nil
	msg   string
	cause error
}

func (e *connectError) Error() string        { return e.msg }
func (e *connectError) Unwrap() error        { return e.cause }
func (e *connectError) Is(target error) bool { return e.kind != nil && target == e.kind }

// Client talks to joulie-agentd over its socket. A zero Client is not
// usable; make one with NewClient.
type Client struct {
	path string
	http *http.Client
}

// NewClient returns a client of the daemon listening at path. Nothing is
// dialled until a call.
func NewClient(path string) *Client {
	c := &Client{path: path}
	c.http = &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				conn, err := d.DialContext(ctx, "unix", path)
				if err != nil {
					return nil, c.connectError(err)
				}
				return conn, nil
			},
			DisableKeepAlives: true,
		},
	}
	return c
}

// Path is the socket the client dials.
func (c *Client) Path() string { return c.path }

func (c *Client) connectError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &connectError{ErrNotRunning, fmt.Sprintf("joulie-agentd is not running (no socket at %s); check `systemctl status joulie-agentd`", c.path), err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &connectError{ErrNotRunning, fmt.Sprintf("joulie-agentd is not running (nothing answers on %s); check `systemctl status joulie-agentd`", c.path), err}
	case errors.Is(err, fs.ErrPermission):
		return &connectError{ErrPermission, fmt.Sprintf("permission denied on %s: %s", c.path, socketAdvice(c.path)), err}
	}
	return &connectError{nil, fmt.Sprintf("connect to joulie-agentd at %s: %v", c.path, err), err}
}

// socketAdvice says how to get through a socket's permissions: join its
// group, named from the socket itself since the daemon's config may name
// another than joulie, or use sudo.
func socketAdvice(path string) string {
	group := DefaultGroup
	if info, err := os.Stat(path); err == nil {
		if info.Mode().Perm()&0o060 == 0 {
			return "the socket admits root only; use sudo"
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if g, err := user.LookupGroupId(strconv.FormatUint(uint64(st.Gid), 10)); err == nil {
				group = g.Name
			}
		}
	}
	return fmt.Sprintf("add your user to group %s or use sudo", group)
}

// Status asks for the agent's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	return s, c.do(ctx, http.MethodGet, "/v1/status", nil, &s)
}

// Hardware asks for the hardware the agent discovered.
func (c *Client) Hardware(ctx context.Context) (joulie.NodeHardwareStatus, error) {
	var h joulie.NodeHardwareStatus
	return h, c.do(ctx, http.MethodGet, "/v1/hardware", nil, &h)
}

// Pods asks for each pod's energy so far.
func (c *Client) Pods(ctx context.Context) (PodsReport, error) {
	var p PodsReport
	return p, c.do(ctx, http.MethodGet, "/v1/pods", nil, &p)
}

// Profile asks for the spec in force and its source.
func (c *Client) Profile(ctx context.Context) (ProfileState, error) {
	var p ProfileState
	return p, c.do(ctx, http.MethodGet, "/v1/profile", nil, &p)
}

// SetProfile sets a local override (standalone mode, root) and returns
// the profile now in force.
func (c *Client) SetProfile(ctx context.Context, spec joulie.NodePowerProfileSpec) (ProfileState, error) {
	var p ProfileState
	return p, c.do(ctx, http.MethodPut, "/v1/profile", spec, &p)
}

// ClearProfile drops a local override (standalone mode, root) and returns
// the profile now in force.
func (c *Client) ClearProfile(ctx context.Context) (ProfileState, error) {
	var p ProfileState
	return p, c.do(ctx, http.MethodDelete, "/v1/profile", nil, &p)
}

// Restore asks the daemon to put every recorded original back (root).
// When some could not be, the report says which, alongside the error.
func (c *Client) Restore(ctx context.Context) (RestoreReport, error) {
	var r RestoreReport
	err := c.do(ctx, http.MethodPost, "/v1/restore", nil, &r)
	return r, err
}

// do sends one request and decodes the answer into out. An answer of 500
// to restore still carries a report, so out is decoded from any body that
// parses; the error is then the server's message.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode the request: %w", err)
		}
		body = bytes.NewReader(data)
	}
	// The host part is never resolved: every request goes to the socket.
	req, err := http.NewRequestWithContext(ctx, method, "http://joulie-agentd"+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ce *connectError
		if errors.As(err, &ce) {
			return ce
		}
		var u *url.Error
		if errors.As(err, &u) && u.Timeout() {
			return fmt.Errorf("joulie-agentd did not answer on %s in time; see `journalctl -u joulie-agentd`: %w", c.path, u.Err)
		}
		return fmt.Errorf("ask joulie-agentd at %s: %w", c.path, unwrapURL(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("read joulie-agentd's answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e ErrorResponse
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("joulie-agentd answered %s: %s", resp.Status, strings.TrimSpace(string(data)))
		}
		if resp.StatusCode == http.StatusInternalServerError {
			_ = json.Unmarshal(data, out)
		}
		return &APIError{StatusCode: resp.StatusCode, Message: e.Error}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("joulie-agentd's answer to %s %s is not what this joulie-agentctl expects: %w", method, path, err)
	}
	return nil
}

// unwrapURL drops net/http's "Get \"http://joulie-agentd/...\":" prefix,
// which names a host that does not exist.
func unwrapURL(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}
