package bmc

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

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
	good := map[string]string{"username": wakeUser, "password": wakePassword}
	for _, tc := range []struct {
		name    string
		node    *corev1.Node
		secrets []*corev1.Secret
		is      error
		result  string
		says    []string
	}{
		{"no address", nodeAt("node-a", ""), []*corev1.Secret{credentials("joulie-bmc-node-a", good)},
			ErrNoAddress, resultNoAddress, []string{"node node-a has no joulie.io/bmc-address", "Wake-on-LAN"}},
		{"bad address", nodeAt("node-a", "bmc:99999"), []*corev1.Secret{credentials("joulie-bmc-node-a", good)},
			ErrNoAddress, resultNoAddress, []string{"node-a", "joulie.io/bmc-address", "port in 1..65535"}},
		{"no Secret", nodeAt("node-a", "10.0.0.5"), nil,
			ErrNoCredentials, resultNoCredentials, []string{"no Secret joulie-system/joulie-bmc-node-a", "keys username and password", "joulie.io/bmc-secret"}},
		{"Secret named by the annotation missing", withSecret(nodeAt("node-a", "10.0.0.5"), "rack-7-bmc"), []*corev1.Secret{credentials("joulie-bmc-node-a", good)},
			ErrNoCredentials, resultNoCredentials, []string{"no Secret joulie-system/rack-7-bmc"}},
		{"no password", nodeAt("node-a", "10.0.0.5"), []*corev1.Secret{credentials("joulie-bmc-node-a", map[string]string{"username": wakeUser})},
			ErrNoCredentials, resultNoCredentials, []string{`Secret joulie-system/joulie-bmc-node-a has no key "password"`}},
		{"empty username", nodeAt("node-a", "10.0.0.5"), []*corev1.Secret{credentials("joulie-bmc-node-a", map[string]string{"username": "", "password": wakePassword})},
			ErrNoCredentials, resultNoCredentials, []string{`has no key "username"`}},
		{"password too long for IPMI", nodeAt("node-a", "10.0.0.5"), []*corev1.Secret{credentials("joulie-bmc-node-a", map[string]string{"username": wakeUser, "password": strings.Repeat("p", 21)})},
			ErrNoCredentials, resultNoCredentials, []string{`key "password"`, "21 bytes, longer than IPMI's 20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient(t, localConfig(), tc.secrets...)
			err := c.Wake(t.Context(), tc.node)
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
	c := New(localConfig(), cs.CoreV1().Secrets(namespace), namespace, nil, nil)
	err := c.Wake(context.Background(), nodeAt("node-a", "10.0.0.5"))
	if !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "may not read Secret joulie-system/joulie-bmc-node-a") {
		t.Fatalf("Wake with a forbidden Secret: %v", err)
	}
}

func withSecret(n *corev1.Node, name string) *corev1.Node {
	n.Annotations[joulie.AnnotationBMCSecret] = name
	return n
}
