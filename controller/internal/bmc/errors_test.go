package bmc

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// go-ipmi's messages (as ipmi_sim provoked them, where it can), for the
// failures the tests against it cannot reach: ipmi_sim grants any
// privilege, and a session whose messages go unanswered (go-ipmi's MD5
// integrity with suites 8 and 12) must read as no answer, not as a
// refused privilege.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  string
		want failure
	}{
		{"wrong password", "connect20 failed after try all cipher suite ids ([3]), errs: \ncmd: rakp1 failed with cipher suite id (3), err: validate rakp2 message failed, err: RAKP2 authentication code mismatch: RAKP authentication failed", failAuth},
		{"unknown user", "connect20 failed after try all cipher suite ids ([3]), errs: \ncmd: rakp1 failed with cipher suite id (3), err: validate rakp2 message failed, err: RMCP+ status 0x0d: Unauthorized name", failAuth},
		{"privilege refused", "SetSessionPrivilegeLevel to (ADMINISTRATOR) failed, err: cc: 0x81, description: requested level not available for this user", failPrivilege},
		{"session goes unanswered", "SetSessionPrivilegeLevel to (ADMINISTRATOR) failed, err: IPMI LAN: no matching IPMI response (expected rqSeq 0x02, command 0x3b) before UDP read deadline after 2 attempt(s): udp exchange: no datagram matched before deadline", failNoAnswer},
		{"suite refused", "connect20 failed after try all cipher suite ids ([17]), errs: \ncmd: RMCP+ Open Session failed with cipher suite id (17), err: client exchange failed, err: unpack session setup response failed, err: unpacked data is too short (2/8)", failOther},
		{"port closed", "cmd: Get Channel Authentication Capabilities failed, err: read udp 127.0.0.1:40000->127.0.0.1:623: read: connection refused", failRefused},
	} {
		if got := classify(errors.New(tc.msg)); got != tc.want {
			t.Errorf("%s: classify = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	tgt := target{username: "joulie-wake", password: "hunter22"}
	got := redact(fmt.Sprintf("user name (%s) too long; password %s", tgt.username, tgt.password), tgt)
	if strings.Contains(got, tgt.username) || strings.Contains(got, tgt.password) {
		t.Errorf("redact left a credential: %q", got)
	}
}
