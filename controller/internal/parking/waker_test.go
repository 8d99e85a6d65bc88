package parking

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"joulie.io/joulie/controller/internal/bmc"
	"joulie.io/joulie/controller/internal/bmc/ipmisim"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

// callWaker records the calls of both a Waker and a BMC.
type callWaker struct {
	woken []string // node, or node+" cycle" for a power cycle
	err   error
}

func (r *callWaker) Wake(_ context.Context, n *corev1.Node, _ WakeRequest) error {
	r.woken = append(r.woken, n.Name)
	return r.err
}

func (r *callWaker) PowerOn(_ context.Context, n *corev1.Node) error {
	r.woken = append(r.woken, n.Name)
	return r.err
}

func (r *callWaker) PowerCycle(_ context.Context, n *corev1.Node) error {
	r.woken = append(r.woken, n.Name+" cycle")
	return r.err
}

// A node with a BMC Secret is woken through its BMC, one without through
// Wake-on-LAN, whatever the nodes' annotations say (a node's kubelet may
// write them); a BMC that fails is the error, not a reason for
// Wake-on-LAN.
func TestBMCOrLANChoosesByTheSecret(t *testing.T) {
	user := ipmisim.User{Name: "joulie-wake", Password: "right-horse-42", Privilege: "operator"}
	sim := ipmisim.Start(t, ipmisim.Options{Users: []ipmisim.User{user}})
	withBMC, client := bmcNode(t, "with-bmc", sim, user)
	lan := &callWaker{}
	w := BMCOrLAN{BMC: client, LAN: lan, CycleOnRetry: true}
	// An annotation naming a BMC does not make a node without a Secret a
	// BMC node.
	without := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "without", Annotations: map[string]string{joulie.AnnotationBMCAddress: sim.Addr()}}}
	for _, n := range []*corev1.Node{withBMC, without} {
		if err := w.Wake(t.Context(), n, WakeRequest{Attempt: 1}); err != nil {
			t.Fatalf("Wake %s: %v", n.Name, err)
		}
	}
	if !sim.PowerIsOn(t) {
		t.Errorf("with-bmc's BMC was not asked to power up")
	}
	if strings.Join(lan.woken, ",") != "without" {
		t.Errorf("Wake-on-LAN woke %v, want only the node without a Secret", lan.woken)
	}
	failing := &callWaker{err: errors.New("RAKP2 authentication code mismatch")}
	w.BMC = failing
	if err := w.Wake(t.Context(), withBMC, WakeRequest{Attempt: 1}); err == nil || !strings.Contains(err.Error(), "through its BMC") {
		t.Errorf("a refused BMC gave %v, want an error naming the BMC", err)
	}
	if len(lan.woken) != 1 {
		t.Errorf("a refused BMC fell back to Wake-on-LAN (%v): a site that set up IPMI for the node should see the BMC's error", lan.woken)
	}
	noLAN := BMCOrLAN{BMC: client}
	if err := noLAN.Wake(t.Context(), without, WakeRequest{Attempt: 1}); err == nil || !strings.Contains(err.Error(), "Wake-on-LAN is not available") {
		t.Errorf("Wake without a Secret or Wake-on-LAN: %v", err)
	}
}

// bmcNode is a node whose BMC is sim, and the BMC client that reaches it
// with the Secret of its credentials. The one place a test of this
// package sets up a node's BMC.
func bmcNode(t *testing.T, name string, sim *ipmisim.BMC, user ipmisim.User) (*corev1.Node, *bmc.Client) {
	t.Helper()
	const namespace = "joulie-bmc"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: bmc.SecretName(name), Namespace: namespace},
		Data: map[string][]byte{bmc.SecretKeyAddress: []byte(sim.Addr()), bmc.SecretKeyUsername: []byte(user.Name), bmc.SecretKeyPassword: []byte(user.Password)}}
	cfg := bmc.DefaultConfig()
	cfg.CipherSuites = bmc.CipherSuites{3} // ipmi_sim has no SHA-256
	cfg.CallTimeout = 10 * time.Second
	return node, bmc.New(cfg, fake.NewClientset(secret).CoreV1().Secrets(namespace), prometheus.NewRegistry(), nil)
}

// A host its BMC reports on but that did not become Ready: the first
// attempt sends it nothing (it is on), the retry power cycles it, which
// ipmi_sim's power hook sees as off then on. With the setting off, the
// retry sends nothing either.
func TestRetryPowerCyclesAHostTheBMCReportsOn(t *testing.T) {
	user := ipmisim.User{Name: "joulie-wake", Password: "right-horse-42", Privilege: "operator"}
	for _, tc := range []struct {
		name  string
		cycle bool
		want  []string
	}{
		{"cycle on retry", true, []string{"set power 0", "set power 1"}},
		{"power up on retry", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := ipmisim.Start(t, ipmisim.Options{Users: []ipmisim.User{user}, PoweredOn: true})
			node, client := bmcNode(t, "hung", sim, user)
			w := BMCOrLAN{BMC: client, CycleOnRetry: tc.cycle}
			if err := w.Wake(t.Context(), node, WakeRequest{Attempt: 1}); err != nil {
				t.Fatalf("attempt 1: %v", err)
			}
			if got := sim.Commands(t); len(got) != 0 {
				t.Fatalf("attempt 1 on a host that is on sent it %q, want nothing", got)
			}
			if err := w.Wake(t.Context(), node, WakeRequest{Attempt: 2, Cycle: true}); err != nil {
				t.Fatalf("attempt 2: %v", err)
			}
			// ipmi_sim powers the host up again a second or two after
			// the cycle's power down; the commands it logs can show the
			// power up before it reports the host on, so wait for both
			// (the report lagged the log under go test -p 4).
			deadline := time.Now().Add(10 * time.Second)
			for !(slices.Equal(sim.Commands(t), tc.want) && sim.PowerIsOn(t)) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if got := sim.Commands(t); !slices.Equal(got, tc.want) {
				t.Errorf("attempt 2 sent the host %q, want %q", got, tc.want)
			}
			if !sim.PowerIsOn(t) {
				t.Errorf("the host is off after attempt 2")
			}
		})
	}
}
