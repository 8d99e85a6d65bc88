package bmc

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Privilege levels a session may ask for. Chassis control needs operator;
// some sites give the wake account administrator only.
const (
	PrivilegeOperator      = "operator"
	PrivilegeAdministrator = "administrator"
)

// Defaults of Config.
const (
	// DefaultTimeout is how long one IPMI message waits for its answer
	// before it is sent again: a BMC on a healthy management network
	// answers in milliseconds, and ipmitool's lanplus default is 1 s.
	DefaultTimeout = 2 * time.Second
	// DefaultRetries re-sends an unanswered message twice (UDP may drop
	// one), so a dead BMC is given up after three timeouts per message.
	DefaultRetries = 2
	// DefaultCallTimeout bounds one whole call: session, command, close.
	DefaultCallTimeout = 30 * time.Second
	// DefaultSecretNamespace holds the BMC Secrets: a namespace of their
	// own, so that granting the controller get on them grants nothing
	// else, and no other component's Role reaches them.
	DefaultSecretNamespace = "joulie-bmc"
)

// DefaultCipherSuites are tried in order: 17 (HMAC-SHA256 authentication
// and integrity, AES-CBC-128), which current BMCs offer and some accept
// alone (OpenBMC), then 3 (HMAC-SHA1, AES-CBC-128), which older BMCs and
// Debian's ipmi_sim offer. A BMC that refuses 17 answers at once, so the
// fallback costs one round trip; one that drops it silently costs the
// timeouts of one message, and is better configured with "3".
var DefaultCipherSuites = CipherSuites{17, 3}

// Config is how the client talks to BMCs. The controller's configuration
// fills it from its parking.ipmi.* keys.
type Config struct {
	// CipherSuites are the RMCP+ cipher suites offered, in order of
	// preference. Only suites that authenticate, check integrity and
	// encrypt with AES are allowed: a wake command sent under suite 0
	// would let anyone on the management network forge it.
	CipherSuites CipherSuites
	// Privilege is the session's privilege level: operator (enough for
	// chassis control) or administrator.
	Privilege string
	// Timeout is how long one message waits for its answer.
	Timeout time.Duration
	// Retries is how many times an unanswered message is sent again.
	// Refused credentials are never retried.
	Retries int
	// CallTimeout bounds one whole call, within the caller's deadline,
	// and on its own the read of the node's BMC Secret before it.
	CallTimeout time.Duration
	// SecretNamespace is where the BMC Secrets are, joulie-bmc-<node>.
	SecretNamespace string
}

// DefaultConfig is the configuration with nothing set.
func DefaultConfig() Config {
	return Config{
		CipherSuites: append(CipherSuites(nil), DefaultCipherSuites...),
		Privilege:    PrivilegeOperator,
		Timeout:      DefaultTimeout,
		Retries:      DefaultRetries,
		CallTimeout:  DefaultCallTimeout,

		SecretNamespace: DefaultSecretNamespace,
	}
}

// Problems lists what is wrong with c, by the name of its field; the
// controller's configuration reports them under its keys.
func (c Config) Problems() map[string]string {
	ps := map[string]string{}
	if len(c.CipherSuites) == 0 {
		ps["CipherSuites"] = "is empty: want cipher suite IDs such as 17,3"
	}
	if c.Privilege != PrivilegeOperator && c.Privilege != PrivilegeAdministrator {
		ps["Privilege"] = fmt.Sprintf("%q is not one of operator, administrator", c.Privilege)
	}
	if c.Timeout <= 0 {
		ps["Timeout"] = fmt.Sprintf("%q must be positive", c.Timeout)
	}
	if c.Retries < 0 {
		ps["Retries"] = fmt.Sprintf("%d must not be negative", c.Retries)
	}
	if c.CallTimeout <= 0 {
		ps["CallTimeout"] = fmt.Sprintf("%q must be positive", c.CallTimeout)
	} else if c.Timeout > 0 && c.CallTimeout < c.Timeout {
		ps["CallTimeout"] = fmt.Sprintf("%q is shorter than one message's timeout %q", c.CallTimeout, c.Timeout)
	}
	if errs := validation.IsDNS1123Label(c.SecretNamespace); len(errs) > 0 {
		ps["SecretNamespace"] = fmt.Sprintf("%q is not a namespace name: %s", c.SecretNamespace, strings.Join(errs, "; "))
	}
	return ps
}

// CipherSuites is a list of RMCP+ cipher suite IDs, written as
// comma-separated numbers ("17,3").
type CipherSuites []uint8

// secureSuites are the standard suites BMCs offer that authenticate,
// check integrity and encrypt with AES (IPMI 2.0 table 22-20 and its
// errata). 8 and 12 (MD5, AES) would qualify on paper, but go-ipmi's MD5
// integrity is not accepted by ipmi_sim, so they stay out until tested.
var secureSuites = map[uint8]string{
	3:  "HMAC-SHA1, HMAC-SHA1-96, AES-CBC-128",
	17: "HMAC-SHA256, HMAC-SHA256-128, AES-CBC-128",
}

// UnmarshalText parses "17,3", refusing unknown or insecure suites.
func (s *CipherSuites) UnmarshalText(b []byte) error {
	var out CipherSuites
	for _, f := range strings.Split(string(b), ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 8)
		if err != nil {
			return fmt.Errorf("%q is not a cipher suite ID (a number such as 17 or 3)", f)
		}
		if _, ok := secureSuites[uint8(n)]; !ok {
			return fmt.Errorf("cipher suite %d does not authenticate, check integrity and encrypt with AES: use 17 or 3", n)
		}
		out = append(out, uint8(n))
	}
	if len(out) == 0 {
		return fmt.Errorf("no cipher suite: want IDs such as 17,3")
	}
	*s = out
	return nil
}

// MarshalText writes the list as UnmarshalText reads it.
func (s CipherSuites) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s CipherSuites) String() string {
	f := make([]string, len(s))
	for i, id := range s {
		f[i] = strconv.Itoa(int(id))
	}
	return strings.Join(f, ",")
}
