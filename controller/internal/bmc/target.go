package bmc

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultPort is IPMI's RMCP port.
const DefaultPort = 623

// Keys of a node's BMC Secret: where its BMC is and how to log in.
const (
	SecretKeyAddress  = "address"
	SecretKeyUsername = "username"
	SecretKeyPassword = "password"
)

// SecretPrefix starts the name of every BMC Secret: node n's is
// SecretPrefix + n.
const SecretPrefix = "joulie-bmc-"

// IPMI 2.0 limits (user names are sent in RAKP message 1, passwords key
// the RAKP HMACs); longer values could never authenticate.
const (
	maxUsernameLen = 16
	maxPasswordLen = 20
)

// SecretGetter reads the Secrets of the BMC namespace: the typed client
// clientset.CoreV1().Secrets(namespace) is one, real or fake. A Get per
// call, not an informer, so the controller holds no Secret in memory and
// its Role needs only get.
type SecretGetter interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
}

// target is one BMC and the credentials to log in with. Its fields never
// reach a log line or an error.
type target struct {
	node     string
	host     string // IPv6 literals bracketed, as go-ipmi joins host and port with a colon
	port     int
	addr     string // host:port, for messages
	secret   string // namespace/name, for messages
	username string
	password string
}

// SecretName is the Secret holding the BMC address and credentials of
// the node named node. It follows from the name alone: a node's own
// objects (its annotations, which its kubelet may write) never choose
// which BMC the controller logs in to, nor with whose password.
func SecretName(node string) string { return SecretPrefix + node }

// ParseAddress reads a BMC address: host, host:port, an IPv6 literal, or
// [IPv6]:port; the port defaults to 623.
func ParseAddress(s string) (host string, port int, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", 0, fmt.Errorf("empty address")
	}
	if ip := net.ParseIP(s); ip != nil {
		return s, DefaultPort, nil
	}
	if !strings.Contains(s, ":") {
		return s, DefaultPort, nil
	}
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, fmt.Errorf("%q is neither host nor host:port: %v", s, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("%q has no port in 1..65535", s)
	}
	if h == "" {
		return "", 0, fmt.Errorf("%q has no host", s)
	}
	return h, n, nil
}

// resolve reads node's BMC Secret: the BMC's address and the credentials.
// The read is bounded by the call timeout, so an API server that accepts
// the request and never answers cannot hold a wake.
func (c *Client) resolve(ctx context.Context, node *corev1.Node) (target, error) {
	name := SecretName(node.Name)
	t := target{node: node.Name, secret: c.cfg.SecretNamespace + "/" + name}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	sec, err := c.secrets.Get(rctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return target{}, fmt.Errorf("node %s has no BMC Secret %s: create it with keys %s (host or host:port), %s and %s to wake the node through its BMC: %w",
			node.Name, t.secret, SecretKeyAddress, SecretKeyUsername, SecretKeyPassword, ErrNoSecret)
	case apierrors.IsForbidden(err):
		return target{}, fmt.Errorf("node %s: the controller may not read Secret %s: its Role grants get on the Secrets of namespace %s (parking.ipmi.secretNamespace; the chart's controller.parking.ipmi.secretNames may limit the names): %w",
			node.Name, t.secret, c.cfg.SecretNamespace, ErrNoCredentials)
	case err != nil && rctx.Err() != nil && ctx.Err() == nil:
		return target{}, fmt.Errorf("node %s: reading Secret %s took longer than parking.ipmi.callTimeout (%s): check the API server's health: %w",
			node.Name, t.secret, c.cfg.CallTimeout, err)
	case err != nil:
		return target{}, fmt.Errorf("node %s: read Secret %s: %w", node.Name, t.secret, err)
	}

	raw := strings.TrimSpace(string(sec.Data[SecretKeyAddress]))
	if raw == "" {
		return target{}, fmt.Errorf("node %s: Secret %s has no key %q: add the BMC's address (host or host:port, port 623 by default) under it: %w",
			node.Name, t.secret, SecretKeyAddress, ErrNoAddress)
	}
	host, port, err := ParseAddress(raw)
	if err != nil {
		return target{}, fmt.Errorf("node %s: key %q of Secret %s: %v: %w", node.Name, SecretKeyAddress, t.secret, err, ErrNoAddress)
	}
	t.host, t.port, t.addr = host, port, net.JoinHostPort(host, strconv.Itoa(port))
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		t.host = "[" + host + "]"
	}
	for _, k := range []struct {
		key string
		dst *string
		max int
	}{{SecretKeyUsername, &t.username, maxUsernameLen}, {SecretKeyPassword, &t.password, maxPasswordLen}} {
		v := sec.Data[k.key]
		if len(v) == 0 {
			return target{}, fmt.Errorf("node %s: Secret %s has no key %q: add the BMC user's %s under it: %w",
				node.Name, t.secret, k.key, k.key, ErrNoCredentials)
		}
		if len(v) > k.max {
			return target{}, fmt.Errorf("node %s: key %q of Secret %s is %d bytes, longer than IPMI's %d: %w",
				node.Name, k.key, t.secret, len(v), k.max, ErrNoCredentials)
		}
		*k.dst = string(v)
	}
	return t, nil
}
