package bmc

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"joulie.io/joulie/controller/internal/bmc/ipmisim"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct {
		in, host string
		port     int
		bad      bool
	}{
		{in: "10.0.0.5", host: "10.0.0.5", port: 623},
		{in: " bmc-a.mgmt.example ", host: "bmc-a.mgmt.example", port: 623},
		{in: "10.0.0.5:6230", host: "10.0.0.5", port: 6230},
		{in: "fd00::5", host: "fd00::5", port: 623},
		{in: "[fd00::5]:6230", host: "fd00::5", port: 6230},
		{in: "", bad: true},
		{in: "bmc:0", bad: true},
		{in: "bmc:70000", bad: true},
		{in: "bmc:ipmi", bad: true},
		{in: ":623", bad: true},
	} {
		host, port, err := ParseAddress(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseAddress(%q) = %s, %d; want an error", tc.in, host, port)
			}
			continue
		}
		if err != nil || host != tc.host || port != tc.port {
			t.Errorf("ParseAddress(%q) = %q, %d, %v; want %q, %d", tc.in, host, port, err, tc.host, tc.port)
		}
	}
}

// Each missing piece of configuration stops the call before any packet
// with an error that says what to set, and counts it.
func TestMissingConfigurationIsNamed(t *testing.T) {
	good := func(extra ...string) map[string]string {
		m := map[string]string{"address": "10.0.0.5", "username": wakeUser, "password": wakePassword}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		secrets []*corev1.Secret
		is      error
		result  string
		says    []string
	}{
		{"no Secret", nil,
			ErrNoSecret, resultNoSecret, []string{"node node-a has no BMC Secret joulie-bmc/joulie-bmc-node-a", "keys address (host or host:port), username and password"}},
		{"another node's Secret only", []*corev1.Secret{credentials("joulie-bmc-node-b", good())},
			ErrNoSecret, resultNoSecret, []string{"no BMC Secret joulie-bmc/joulie-bmc-node-a"}},
		{"no address", []*corev1.Secret{credentials("joulie-bmc-node-a", good("address", ""))},
			ErrNoAddress, resultNoAddress, []string{`Secret joulie-bmc/joulie-bmc-node-a has no key "address"`, "host or host:port"}},
		{"bad address", []*corev1.Secret{credentials("joulie-bmc-node-a", good("address", "bmc:99999"))},
			ErrNoAddress, resultNoAddress, []string{"node-a", `key "address" of Secret joulie-bmc/joulie-bmc-node-a`, "port in 1..65535"}},
		{"no password", []*corev1.Secret{credentials("joulie-bmc-node-a", map[string]string{"address": "10.0.0.5", "username": wakeUser})},
			ErrNoCredentials, resultNoCredentials, []string{`Secret joulie-bmc/joulie-bmc-node-a has no key "password"`}},
		{"empty username", []*corev1.Secret{credentials("joulie-bmc-node-a", good("username", ""))},
			ErrNoCredentials, resultNoCredentials, []string{`has no key "username"`}},
		{"password too long for IPMI", []*corev1.Secret{credentials("joulie-bmc-node-a", good("password", strings.Repeat("p", 21)))},
			ErrNoCredentials, resultNoCredentials, []string{`key "password"`, "21 bytes, longer than IPMI's 20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient(t, localConfig(), tc.secrets...)
			err := c.Wake(t.Context(), testNode("node-a"))
			if !errors.Is(err, tc.is) {
				t.Fatalf("Wake: %v, want %v", err, tc.is)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if strings.Contains(err.Error(), wakePassword) {
				t.Errorf("error %q holds the password", err)
			}
			if n := calls(c, opPowerOn, tc.result); n != 1 {
				t.Errorf("power_on %s calls counted: %v, want 1", tc.result, n)
			}
		})
	}
}

// A Secret the controller may not read says which permission is missing.
func TestForbiddenSecret(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("get", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "joulie-bmc-node-a", errors.New("RBAC"))
	})
	c := New(localConfig(), cs.CoreV1().Secrets(namespace), nil, nil)
	err := c.Wake(context.Background(), testNode("node-a"))
	if !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "may not read Secret joulie-bmc/joulie-bmc-node-a") {
		t.Fatalf("Wake with a forbidden Secret: %v", err)
	}
}

// udpListener counts the datagrams sent to it: a BMC address a node
// could have written, which must never see a login.
type udpListener struct {
	conn net.PacketConn
	got  atomic.Int64
}

func listenUDP(t *testing.T) *udpListener {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &udpListener{conn: conn}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			if _, _, err := conn.ReadFrom(buf); err != nil {
				return
			}
			l.got.Add(1)
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return l
}

// The Node's own annotations choose nothing: not the address the login
// goes to, nor the Secret whose credentials are sent. A node annotated
// with an address the test owns and another node's Secret is woken
// through the BMC its own Secret names, and the owned address hears
// nothing; without a Secret of its own, nothing is sent anywhere.
func TestNodeAnnotationsChooseNoBMC(t *testing.T) {
	sim := ipmisim.Start(t, ipmisim.Options{Users: []ipmisim.User{wakeAccount}})
	trap := listenUDP(t)
	annotated := func(name string) *corev1.Node {
		n := testNode(name)
		n.Annotations[joulie.AnnotationBMCAddress] = trap.conn.LocalAddr().String()
		n.Annotations[joulie.AnnotationBMCSecret] = "joulie-bmc-node-b"
		return n
	}
	c := testClient(t, localConfig(),
		credentials("joulie-bmc-node-a", map[string]string{"address": sim.Addr(), "username": wakeUser, "password": wakePassword}),
		credentials("joulie-bmc-node-b", map[string]string{"address": "127.0.0.1:9", "username": "node-b-user", "password": "node-b-password"}))

	if err := c.Wake(t.Context(), annotated("node-a")); err != nil {
		t.Fatalf("Wake of node-a: %v", err)
	}
	if !sim.PowerIsOn(t) {
		t.Errorf("node-a's BMC (its Secret's address) did not power the host on")
	}
	err := c.Wake(t.Context(), annotated("node-c"))
	if !errors.Is(err, ErrNoSecret) {
		t.Errorf("Wake of node-c, which has no Secret of its own: %v, want ErrNoSecret", err)
	}
	if n := trap.got.Load(); n != 0 {
		t.Errorf("the address in the nodes' annotations received %d datagrams, want none", n)
	}
}

// blockingSecrets answers no Get until its context ends, as an API
// server that took the request and hangs; it records the deadline.
type blockingSecrets struct {
	deadline chan time.Duration
}

func (b blockingSecrets) Get(ctx context.Context, _ string, _ metav1.GetOptions) (*corev1.Secret, error) {
	if d, ok := ctx.Deadline(); ok {
		b.deadline <- time.Until(d)
	} else {
		b.deadline <- -1
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// A Secret read that never answers is given up after the call timeout,
// with an error that names it, even when the caller set no deadline.
func TestSecretReadIsBoundedByTheCallTimeout(t *testing.T) {
	cfg := localConfig()
	cfg.Timeout, cfg.CallTimeout = 100*time.Millisecond, 200*time.Millisecond
	secrets := blockingSecrets{deadline: make(chan time.Duration, 1)}
	c := New(cfg, secrets, nil, nil)
	done := make(chan error, 1)
	go func() { done <- c.Wake(context.Background(), testNode("node-a")) }()

	if d := <-secrets.deadline; d < 0 || d > cfg.CallTimeout {
		t.Fatalf("the Secret was read with %v left before its deadline (-1: none), want at most the call timeout %v", d, cfg.CallTimeout)
	}
	select {
	case err := <-done:
		if err == nil || errors.Is(err, ErrNoSecret) || !strings.Contains(err.Error(), "reading Secret joulie-bmc/joulie-bmc-node-a took longer than parking.ipmi.callTimeout") {
			t.Errorf("Wake with a hung Secret read: %v, want an error naming the timeout, and no fallback to Wake-on-LAN", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Wake still waits on the hung Secret read after a minute")
	}
}
