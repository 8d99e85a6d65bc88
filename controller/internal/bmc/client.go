// Package bmc wakes parked nodes through their baseboard management
// controllers: IPMI 2.0 over LAN (RMCP+, "lanplus") with go-ipmi. Where
// the BMC is and how to log in come from one Secret per node,
// joulie-bmc-<node> in a namespace of its own that only an administrator
// writes and only the controller reads: never from the Node object, whose
// annotations the node's kubelet may write. The Secret is read per call
// where the session is built, and its contents never logged or put in an
// error.
//
// Only IPMI 2.0 sessions are opened: IPMI 1.5 authenticates with MD5 at
// best and encrypts nothing. Its tests run against Debian's ipmi_sim
// (package ipmisim).
package bmc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
)

// Client switches nodes on and off through their BMCs. It keeps no
// session between calls (wakes are rare, and a BMC has few session
// slots) and no other state, so it is safe for concurrent use.
type Client struct {
	cfg     Config
	secrets SecretGetter
	metrics *metrics
	log     *slog.Logger
}

// New returns a Client that reads the BMC Secrets through secrets, the
// Secrets of cfg.SecretNamespace, and registers its metrics with reg
// (none when nil). cfg must have no Problems.
func New(cfg Config, secrets SecretGetter, reg prometheus.Registerer, log *slog.Logger) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, secrets: secrets, metrics: newMetrics(reg), log: log}
}

// Operations, the operation label of the metrics.
const (
	opPowerOn      = "power_on"
	opPowerOff     = "power_off"
	opSoftShutdown = "soft_shutdown"
	opPowerStatus  = "power_status"
	opPowerCycle   = "power_cycle"
)

// Results of a call, the result label of the metrics.
const (
	resultOK            = "ok"
	resultAlready       = "already"   // already on (power on) or off (power off, shutdown)
	resultNoSecret      = "no_secret" // the node has no BMC Secret: Waker uses Wake-on-LAN
	resultNoAddress     = "no_address"
	resultNoCredentials = "no_credentials"
	resultAuth          = "auth_failed"
	resultUnreachable   = "unreachable"
	resultNoCipherSuite = "no_cipher_suite"
	resultCommand       = "command_refused"
	resultError         = "error"
)

// Wake switches node on; one already on is success. It is the controller's
// way to wake a parked node through its BMC.
func (c *Client) Wake(ctx context.Context, node *corev1.Node) error { return c.PowerOn(ctx, node) }

// PowerOn asks node's BMC to power the host up, unless it is on already.
func (c *Client) PowerOn(ctx context.Context, node *corev1.Node) error {
	return c.do(ctx, node, opPowerOn, func(ctx context.Context, s *client.Client) (string, error) {
		on, err := powerIsOn(ctx, s)
		if err != nil {
			return "", err
		}
		if on {
			return resultAlready, nil
		}
		return resultOK, control(ctx, s, chassis.ChassisControlPowerUp, "power up")
	})
}

// PowerCycle restarts a host its BMC reports on, and powers up one it
// reports off. It is the retry of a wake that did not bring the node up:
// a host that is "on" but never became Ready (hung in firmware, or a BMC
// whose power state is wrong) ignores another power up. A BMC that
// refuses the cycle command (some do, for a chassis they think is off)
// gets a power down, then a power up once it reports the host off.
func (c *Client) PowerCycle(ctx context.Context, node *corev1.Node) error {
	return c.do(ctx, node, opPowerCycle, func(ctx context.Context, s *client.Client) (string, error) {
		on, err := powerIsOn(ctx, s)
		if err != nil {
			return "", err
		}
		if !on {
			return resultOK, control(ctx, s, chassis.ChassisControlPowerUp, "power up")
		}
		err = control(ctx, s, chassis.ChassisControlPowerCycle, "power cycle")
		var re *types.ResponseError
		if err == nil || !errors.As(err, &re) {
			return resultOK, err
		}
		c.log.Info("BMC refused a power cycle; powering down, then up", "node", node.Name, "err", err)
		if err := control(ctx, s, chassis.ChassisControlPowerDown, "power down (for a cycle)"); err != nil {
			return "", err
		}
		if err := waitOff(ctx, s); err != nil {
			return "", err
		}
		return resultOK, control(ctx, s, chassis.ChassisControlPowerUp, "power up (after a power down)")
	})
}

// waitOff polls the chassis until it reports the power off: a BMC may
// answer a power down before the host has lost power, and a power up
// sent then is lost. The call's deadline bounds it.
func waitOff(ctx context.Context, s *client.Client) error {
	for {
		on, err := powerIsOn(ctx, s)
		if err != nil {
			return err
		}
		if !on {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the host still reports power on after a power down: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// PowerOff cuts node's power at once (the host is not asked first); one
// already off is success. For tests and operators: parking shuts hosts
// down through their agents.
func (c *Client) PowerOff(ctx context.Context, node *corev1.Node) error {
	return c.do(ctx, node, opPowerOff, func(ctx context.Context, s *client.Client) (string, error) {
		on, err := powerIsOn(ctx, s)
		if err != nil {
			return "", err
		}
		if !on {
			return resultAlready, nil
		}
		return resultOK, control(ctx, s, chassis.ChassisControlPowerDown, "power down")
	})
}

// SoftShutdown asks node's host to shut down (an ACPI power button
// press; the host decides); one already off is success.
func (c *Client) SoftShutdown(ctx context.Context, node *corev1.Node) error {
	return c.do(ctx, node, opSoftShutdown, func(ctx context.Context, s *client.Client) (string, error) {
		on, err := powerIsOn(ctx, s)
		if err != nil {
			return "", err
		}
		if !on {
			return resultAlready, nil
		}
		return resultOK, control(ctx, s, chassis.ChassisControlSoftShutdown, "soft shutdown")
	})
}

// PowerStatus reports whether node's BMC sees the host powered on.
func (c *Client) PowerStatus(ctx context.Context, node *corev1.Node) (on bool, err error) {
	err = c.do(ctx, node, opPowerStatus, func(ctx context.Context, s *client.Client) (string, error) {
		on, err = powerIsOn(ctx, s)
		return resultOK, err
	})
	return on, err
}

func powerIsOn(ctx context.Context, s *client.Client) (bool, error) {
	st, err := s.GetChassisStatus(ctx)
	if err != nil {
		return false, fmt.Errorf("get chassis status: %w", err)
	}
	return st.PowerIsOn, nil
}

func control(ctx context.Context, s *client.Client, cmd chassis.ChassisControl, what string) error {
	if _, err := s.ChassisControl(ctx, cmd); err != nil {
		return fmt.Errorf("chassis %s: %w", what, err)
	}
	return nil
}

// do runs fn in a session with node's BMC and counts the call.
func (c *Client) do(ctx context.Context, node *corev1.Node, op string, fn func(context.Context, *client.Client) (string, error)) error {
	start := time.Now()
	result, err := c.call(ctx, node, op, fn)
	c.metrics.observe(op, result, time.Since(start))
	if err == nil {
		c.log.Debug("BMC call done", "node", node.Name, "operation", op, "result", result, "duration", time.Since(start))
	}
	return err
}

func (c *Client) call(ctx context.Context, node *corev1.Node, op string, fn func(context.Context, *client.Client) (string, error)) (string, error) {
	t, err := c.resolve(ctx, node)
	if err != nil {
		if errors.Is(err, ErrNoSecret) {
			return resultNoSecret, err
		}
		if errors.Is(err, ErrNoAddress) {
			return resultNoAddress, err
		}
		if errors.Is(err, ErrNoCredentials) {
			return resultNoCredentials, err
		}
		return resultError, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()

	s, suite, err := c.connect(ctx, t)
	if err != nil {
		switch {
		case errors.Is(err, ErrAuthentication):
			return resultAuth, err
		case errors.Is(err, ErrUnreachable):
			return resultUnreachable, err
		case errors.Is(err, ErrNoCipherSuite):
			return resultNoCipherSuite, err
		}
		return resultError, err
	}
	defer c.closeSession(ctx, s, t)

	result, err := fn(ctx, s)
	if err != nil {
		if ctx.Err() != nil || classify(err) == failNoAnswer {
			return resultUnreachable, fmt.Errorf("node %s: %s through the BMC at %s: the BMC stopped answering within the session (cipher suite %d): %w",
				t.node, op, t.addr, suite, ErrUnreachable)
		}
		var re *types.ResponseError
		if errors.As(err, &re) {
			return resultCommand, fmt.Errorf("node %s: %s through the BMC at %s: %s: %w", t.node, op, t.addr, redact(err.Error(), t), ErrCommand)
		}
		return resultError, fmt.Errorf("node %s: %s through the BMC at %s: %s", t.node, op, t.addr, redact(err.Error(), t))
	}
	if result == resultOK && op != opPowerStatus {
		c.log.Info("BMC command sent", "node", t.node, "operation", op, "bmc", t.addr, "cipherSuite", suite)
	}
	return result, nil
}

// connect opens a session, trying the cipher suites in order. A suite
// the BMC refuses (or, once it has answered, does not answer) gives way
// to the next; refused credentials or a BMC that never answers end the
// attempt at once, so a wrong password costs one login and not one per
// suite, which a BMC might count towards locking the account.
func (c *Client) connect(ctx context.Context, t target) (*client.Client, uint8, error) {
	priv := types.PrivilegeLevelOperator
	if c.cfg.Privilege == PrivilegeAdministrator {
		priv = types.PrivilegeLevelAdministrator
	}
	var tried []string
	for _, suite := range c.cfg.CipherSuites {
		s, err := client.NewClient(t.host, t.port, t.username, t.password)
		if err != nil { // only for an over-long user name, which resolve refuses
			return nil, 0, fmt.Errorf("node %s: BMC client: %s", t.node, redact(err.Error(), t))
		}
		s.WithCipherSuiteID(types.CipherSuiteID(suite)).WithTimeout(c.cfg.Timeout).WithRetry(c.cfg.Retries).WithMaxPrivilegeLevel(priv)
		err = s.Connect(ctx)
		if err == nil {
			return s, suite, nil
		}
		release(s)
		switch f := classify(err); {
		case f == failAuth:
			return nil, 0, fmt.Errorf("node %s: the BMC at %s refused the username and password of Secret %s (cipher suite %d): check them against the BMC's user list and that the user may log in over IPMI LAN: %w",
				t.node, t.addr, t.secret, suite, ErrAuthentication)
		case f == failPrivilege:
			return nil, 0, fmt.Errorf("node %s: the BMC at %s refused %s privilege to the user of Secret %s: give the user that privilege on the BMC's LAN channel, or set parking.ipmi.privilege: %w",
				t.node, t.addr, c.cfg.Privilege, t.secret, ErrAuthentication)
		case f == failRefused:
			return nil, 0, fmt.Errorf("node %s: nothing answers IPMI at %s (port unreachable): check the address in Secret %s and that IPMI over LAN is enabled on the BMC: %w",
				t.node, t.addr, t.secret, ErrUnreachable)
		case ctx.Err() != nil || (f == failNoAnswer && beforeSession(err)):
			return nil, 0, fmt.Errorf("node %s: the BMC at %s did not answer (%s per message, %d retries, call limit %s): check that the controller reaches it on UDP port %d and that IPMI over LAN is enabled: %w",
				t.node, t.addr, c.cfg.Timeout, c.cfg.Retries, c.cfg.CallTimeout, t.port, ErrUnreachable)
		}
		tried = append(tried, fmt.Sprintf("suite %d: %s", suite, redact(lastLine(err.Error()), t)))
	}
	return nil, 0, fmt.Errorf("node %s: the BMC at %s opened no session with cipher suites %s (%v): set parking.ipmi.cipherSuites to suites it offers (ipmitool channel getciphers ipmi): %w",
		t.node, t.addr, c.cfg.CipherSuites, tried, ErrNoCipherSuite)
}

// closeSession ends the session even when the call's deadline has
// passed: a BMC has only a few session slots, and an abandoned session
// holds one until the BMC times it out.
func (c *Client) closeSession(ctx context.Context, s *client.Client, t target) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Timeout)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		c.log.Debug("closing the BMC session failed", "node", t.node, "bmc", t.addr, "err", redact(err.Error(), t))
	}
}

// release frees the socket of a client whose Connect failed. Close with
// a cancelled context sends nothing and closes the socket.
func release(s *client.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Close(ctx)
}

// lastLine is the most specific part of go-ipmi's multi-line errors.
func lastLine(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' && i < len(s)-1 {
			return s[i+1:]
		}
	}
	return s
}
