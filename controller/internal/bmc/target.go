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

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// DefaultPort is IPMI's RMCP port.
const DefaultPort = 623

// Keys of the credentials Secret.
const (
	SecretKeyUsername = "username"
	SecretKeyPassword = "password"
)

// IPMI 2.0 limits (user names are sent in RAKP message 1, passwords key
// the RAKP HMACs); longer values could never authenticate.
const (
	maxUsernameLen = 16
	maxPasswordLen = 20
)

// SecretGetter reads Secrets of the controller's namespace: the typed
// client clientset.CoreV1().Secrets(namespace) is one, real or fake. A
// Get per call, not an informer, so the controller holds no Secret in
// memory and its Role needs only get.
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

// SecretName is the Secret holding node's BMC credentials: its
// joulie.io/bmc-secret annotation, or joulie-bmc-<node>.
func SecretName(node *corev1.Node) string {
	if s := strings.TrimSpace(node.Annotations[joulie.AnnotationBMCSecret]); s != "" {
		return s
	}
	return "joulie-bmc-" + node.Name
}

// ParseAddress reads a joulie.io/bmc-address value: host, host:port,
// an IPv6 literal, or [IPv6]:port; the port defaults to 623.
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

// resolve finds node's BMC and reads its credentials.
func (c *Client) resolve(ctx context.Context, node *corev1.Node) (target, error) {
	raw, ok := node.Annotations[joulie.AnnotationBMCAddress]
	if !ok || strings.TrimSpace(raw) == "" {
		return target{}, fmt.Errorf("node %s has no %s annotation: set it to its BMC's address (host or host:port, port 623 by default), or wake it with Wake-on-LAN: %w",
			node.Name, joulie.AnnotationBMCAddress, ErrNoAddress)
	}
	host, port, err := ParseAddress(raw)
	if err != nil {
		return target{}, fmt.Errorf("node %s: annotation %s: %v: %w", node.Name, joulie.AnnotationBMCAddress, err, ErrNoAddress)
	}
	t := target{node: node.Name, host: host, port: port, addr: net.JoinHostPort(host, strconv.Itoa(port))}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		t.host = "[" + host + "]"
	}

	name := SecretName(node)
	t.secret = c.namespace + "/" + name
	sec, err := c.secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return target{}, fmt.Errorf("node %s: no Secret %s with its BMC's credentials: create it with keys %s and %s, or name another Secret of namespace %s in the node's %s annotation: %w",
			node.Name, t.secret, SecretKeyUsername, SecretKeyPassword, c.namespace, joulie.AnnotationBMCSecret, ErrNoCredentials)
	case apierrors.IsForbidden(err):
		return target{}, fmt.Errorf("node %s: the controller may not read Secret %s: its Role grants get on the Secrets of namespace %s (the chart's controller.parking.ipmi.secretNames may limit the names): %w",
			node.Name, t.secret, c.namespace, ErrNoCredentials)
	case err != nil:
		return target{}, fmt.Errorf("node %s: read Secret %s: %w", node.Name, t.secret, err)
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
