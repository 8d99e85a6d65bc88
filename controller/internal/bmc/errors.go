package bmc

import (
	"context"
	"errors"
	"strings"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"
)

// The kinds of failure an operator acts on differently; errors.Is finds
// them in what the Client returns.
var (
	// ErrNoSecret: the node has no BMC Secret, so no BMC to wake it
	// through (Waker falls back to Wake-on-LAN).
	ErrNoSecret = errors.New("no BMC Secret")
	// ErrNoAddress: the node's BMC Secret has no usable address.
	ErrNoAddress = errors.New("no BMC address")
	// ErrNoCredentials: the Secret is unreadable or its credentials incomplete.
	ErrNoCredentials = errors.New("no BMC credentials")
	// ErrAuthentication: the BMC refused the user name or password, or
	// the privilege asked for. Never retried: a BMC may lock the account.
	ErrAuthentication = errors.New("BMC refused the credentials")
	// ErrUnreachable: no answer in time, or the port refused the packets.
	ErrUnreachable = errors.New("BMC unreachable")
	// ErrNoCipherSuite: the BMC answered but accepted none of the
	// configured cipher suites.
	ErrNoCipherSuite = errors.New("no common cipher suite")
	// ErrCommand: a session was opened but the BMC refused the command.
	ErrCommand = errors.New("BMC refused the command")
)

// failure is how a go-ipmi error is handled.
type failure int

const (
	failOther     failure = iota // try the next cipher suite
	failAuth                     // stop: the credentials are wrong
	failPrivilege                // stop: the user lacks the privilege
	failNoAnswer                 // stop when before the session, else try the next suite
	failRefused                  // stop: nothing listens there
)

// Markers of go-ipmi's errors. Its Connect joins the errors of the
// cipher suites it tried with %v, so errors.Is cannot see through them
// and the text is all there is; the tests against ipmi_sim hold these
// to the library's real messages.
var (
	markAuth = []string{
		client.ErrRAKPAuthentication.Error(),
		types.NewRmcpStatusError(types.RmcpStatusCodeUnauthorizedName).Error(),
	}
	markPrivilege = []string{
		types.NewRmcpStatusError(types.RmcpStatusCodeInvalidRole).Error(),
		types.NewRmcpStatusError(types.RmcpStatusCodeUnauthorizedRoleOfPriLevel).Error(),
		"SetSessionPrivilegeLevel to",
	}
	markNoAnswer = []string{"no datagram matched before deadline", "i/o timeout"}
	// Written before the session when the BMC does not answer at all.
	markBeforeSession = "Get Channel Authentication Capabilities failed"
	markRefused       = "connection refused"
)

// classify reads a go-ipmi error.
func classify(err error) failure {
	if errors.Is(err, client.ErrRAKPAuthentication) {
		return failAuth
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return failNoAnswer
	}
	msg := err.Error()
	has := func(marks []string) bool {
		for _, m := range marks {
			if strings.Contains(msg, m) {
				return true
			}
		}
		return false
	}
	switch {
	case has(markAuth):
		return failAuth
	case strings.Contains(msg, markRefused):
		return failRefused
	case has(markNoAnswer):
		// Before the privilege markers: a session whose messages go
		// unanswered fails in SetSessionPrivilegeLevel too.
		return failNoAnswer
	case has(markPrivilege):
		return failPrivilege
	}
	return failOther
}

// beforeSession reports whether a go-ipmi Connect error came before any
// cipher suite was tried: the BMC did not answer its first message.
func beforeSession(err error) bool { return strings.Contains(err.Error(), markBeforeSession) }

// redact removes the credentials from a library message that is about to
// become part of an error: go-ipmi names the user in some of its errors.
func redact(msg string, t target) string {
	for _, s := range []string{t.password, t.username} {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "<redacted>")
		}
	}
	return msg
}
