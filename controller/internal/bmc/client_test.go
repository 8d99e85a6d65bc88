package bmc

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"joulie.io/joulie/controller/internal/bmc/ipmisim"
)

const (
	namespace = DefaultSecretNamespace
	// The BMC's accounts: a wake account with operator privilege (enough
	// for chassis control, the least a site should give), and the
	// password a misconfigured Secret holds.
	wakeUser      = "joulie-wake"
	wakePassword  = "right-horse-42"
	wrongPassword = "wrong-battery-7"
)

var wakeAccount = ipmisim.User{Name: wakeUser, Password: wakePassword, Privilege: "operator"}

func testNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
}

func credentials(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// testClient is a Client over a fake clientset holding secrets,
// registered with a registry of its own.
func testClient(t *testing.T, cfg Config, secrets ...*corev1.Secret) *Client {
	t.Helper()
	objs := make([]runtime.Object, len(secrets))
	for i, s := range secrets {
		objs[i] = s
	}
	cs := fake.NewClientset(objs...)
	reg := prometheus.NewRegistry()
	return New(cfg, cs.CoreV1().Secrets(namespace), reg, nil)
}

func calls(c *Client, op, result string) float64 {
	return testutil.ToFloat64(c.metrics.calls.WithLabelValues(op, result))
}

// localConfig is the default configuration with a shorter call limit.
// The message timeout stays at its default: ipmi_sim answers a chassis
// command only once its power hook has run, and a resent power command
// runs twice.
func localConfig() Config {
	cfg := DefaultConfig()
	cfg.CallTimeout = 10 * time.Second
	return cfg
}

// A parked host is switched on by Wake: the BMC passes "set power 1" to
// the host, which is then on, and PowerStatus says so.
func TestWakePowersOnAParkedHost(t *testing.T) {
	sim := ipmisim.Start(t, ipmisim.Options{Users: []ipmisim.User{wakeAccount}})
	node := testNode("node-a")
	c := testClient(t, localConfig(), credentials("joulie-bmc-node-a", map[string]string{"address": sim.Addr(), "username": wakeUser, "password": wakePassword}))
	ctx := t.Context()

	on, err := c.PowerStatus(ctx, node)
	if err != nil || on {
		t.Fatalf("PowerStatus of the parked host: on %v, err %v; want off", on, err)
	}
	if err := c.Wake(ctx, node); err != nil {
		t.Fatalf("Wake: %v", err)
	}
	if !sim.PowerIsOn(t) {
		t.Errorf("the host is still off after Wake")
	}
	if got, want := sim.Commands(t), []string{"set power 1"}; !slices.Equal(got, want) {
		t.Errorf("commands the host received: %q, want %q", got, want)
	}
	if on, err := c.PowerStatus(ctx, node); err != nil || !on {
		t.Errorf("PowerStatus after Wake: on %v, err %v; want on", on, err)
	}
	if n := calls(c, opPowerOn, resultOK); n != 1 {
		t.Errorf("power_on ok calls counted: %v, want 1", n)
	}
}

// Waking a node that is already on succeeds and sends the host nothing.
func TestWakeOfAHostAlreadyOnSucceedsAndSendsNothing(t *testing.T) {
	sim := ipmisim.Start(t, ipmisim.Options{Users: []ipmisim.User{wakeAccount}, PoweredOn: true})
	node := testNode("node-a")
	c := testClient(t, localConfig(), credentials("joulie-bmc-node-a", map[string]string{"address": sim.Addr(), "username": wakeUser, "password": wakePassword}))

	if err := c.Wake(t.Context(), node); err != nil {
		t.Fatalf("Wake of a host already on: %v", err)
	}
	if got := sim.Commands(t); len(got) != 0 {
		t.Errorf("the host received %q, want nothing", got)
	}
	if !sim.PowerIsOn(t) {
		t.Errorf("the host went off")
	}
	if n := calls(c, opPowerOn, resultAlready); n != 1 {
		t.Errorf("power_on already calls counted: %v, want 1", n)
	}
}

// A host that is on but never came up is power cycled: the hook sees
// it switched off and on again (ipmi_sim passes a cycle to the host as
// power 0, then power 1 a second or two later), and it ends on. One that is off is simply
// powered up.
func TestPowerCycleRestartsAHostThatIsOnAndPowersUpOneThatIsOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		on   bool
		want []string
	}{
		{"on", true, []string{"set power 0", "set power 1"}},
		{"off", false, []string{"set power 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := ipmisim.Start(t, ipmisim.Options{Users: []ipmisim.User{wakeAccount}, PoweredOn: tc.on})
			node := testNode("node-a")
			c := testClient(t, localConfig(), credentials("joulie-bmc-node-a", map[string]string{"address": sim.Addr(), "username": wakeUser, "password": wakePassword}))
			if err := c.PowerCycle(t.Context(), node); err != nil {
				t.Fatalf("PowerCycle: %v", err)
			}
			// The BMC powers the host up again after its power cycle
			// interval (ipmi_sim: about a second), not within the call.
			deadline := time.Now().Add(10 * time.Second)
			// ipmi_sim can log the power up before it reports the host
			// on: wait for both.
			for !(slices.Equal(sim.Commands(t), tc.want) && sim.PowerIsOn(t)) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if got := sim.Commands(t); !slices.Equal(got, tc.want) {
				t.Errorf("commands the host received: %q, want %q", got, tc.want)
			}
			if !sim.PowerIsOn(t) {
				t.Errorf("the host is off after PowerCycle")
			}
			if n := calls(c, opPowerCycle, resultOK); n != 1 {
				t.Errorf("power_cycle ok calls counted: %v, want 1", n)
			}
		})
	}
}

// SoftShutdown asks the host to shut down and PowerOff cuts it; each is a
// no-op on a host already off.
func TestSoftShutdownAndPowerOff(t *testing.T) {
	sim := ipmisim.Start(t, ipmisim.Options{Users: []ipmisim.User{wakeAccount}, PoweredOn: true})
	node := testNode("node-a")
	c := testClient(t, localConfig(), credentials("joulie-bmc-node-a", map[string]string{"address": sim.Addr(), "username": wakeUser, "password": wakePassword}))
	ctx := t.Context()

	for _, step := range []struct {
		name string
		do   func(context.Context, *corev1.Node) error
	}{
		{"soft shutdown", c.SoftShutdown}, {"soft shutdown of a host off", c.SoftShutdown},
		{"power on", c.PowerOn}, {"power off", c.PowerOff}, {"power off of a host off", c.PowerOff},
	} {
		if err := step.do(ctx, node); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	want := []string{"set shutdown 1", "set power 1", "set power 0"}
	if got := sim.Commands(t); !slices.Equal(got, want) {
		t.Errorf("commands the host received: %q, want %q", got, want)
	}
	if sim.PowerIsOn(t) {
		t.Errorf("the host is on after PowerOff")
	}
}

// The default cipher suites (17, then 3) reach ipmi_sim, which offers 3
// only: it refuses 17 at once, so the fallback costs one round trip.
func TestDefaultCipherSuitesFallBackTo3(t *testing.T) {
	sim := ipmisim.Start(t, ipmisim.Options{Users: []ipmisim.User{wakeAccount}})
	node := testNode("node-a")
	c := testClient(t, DefaultConfig(), credentials("joulie-bmc-node-a", map[string]string{"address": sim.Addr(), "username": wakeUser, "password": wakePassword}))
	ctx := t.Context()
	tgt, err := c.resolve(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		start := time.Now()
		s, suite, err := c.connect(ctx, tgt)
		d := time.Since(start)
		if err != nil {
			t.Fatalf("session with cipher suites %s: %v", DefaultCipherSuites, err)
		}
		c.closeSession(ctx, s, tgt)
		t.Logf("session opened with cipher suites %s in %v (suite %d)", DefaultCipherSuites, d, suite)
		if suite != 3 {
			t.Errorf("session on suite %d, want 3, the one ipmi_sim offers", suite)
		}
		if d > time.Second {
			t.Errorf("opening the session took %v: the fallback from suite 17 to 3 waited for a timeout", d)
		}
	}
	if on, err := c.PowerStatus(ctx, node); err != nil || on {
		t.Errorf("PowerStatus with the default configuration: on %v, err %v; want off", on, err)
	}
}

// A wrong password is an authentication error that names the Secret,
// holds no credential, and costs one login: no retry, and no further
// cipher suite once the BMC has refused the password.
func TestWrongPasswordFailsAtOnceWithOneLogin(t *testing.T) {
	sim := ipmisim.Start(t, ipmisim.Options{Users: []ipmisim.User{wakeAccount}})
	r := startRelay(t, sim.Addr(), false)
	node := testNode("node-a")
	cfg := localConfig()
	// ipmi_sim offers one usable suite; listing it twice stands for a BMC
	// that offers two, which must not be asked to check a refused
	// password again.
	cfg.CipherSuites = CipherSuites{3, 3}
	c := testClient(t, cfg, credentials("joulie-bmc-node-a", map[string]string{"address": r.addr(), "username": wakeUser, "password": wrongPassword}))

	start := time.Now()
	err := c.Wake(t.Context(), node)
	d := time.Since(start)
	if !errors.Is(err, ErrAuthentication) {
		t.Fatalf("Wake with a wrong password: %v, want ErrAuthentication", err)
	}
	for _, want := range []string{"node-a", "refused the username and password", namespace + "/joulie-bmc-node-a"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	for _, secret := range []string{wakeUser, wrongPassword} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q holds a credential", err)
		}
	}
	if n := r.count(payloadRAKP1); n != 1 {
		t.Errorf("logins (RAKP message 1) sent: %d, want 1", n)
	}
	if d > time.Second {
		t.Errorf("the refusal took %v, want at once", d)
	}
	if sim.PowerIsOn(t) || len(sim.Commands(t)) != 0 {
		t.Errorf("the host was switched with a wrong password: %q", sim.Commands(t))
	}
	if n := calls(c, opPowerOn, resultAuth); n != 1 {
		t.Errorf("power_on auth_failed calls counted: %v, want 1", n)
	}
}

// A user the BMC does not know is refused like a wrong password.
func TestUnknownUserIsAnAuthenticationError(t *testing.T) {
	sim := ipmisim.Start(t, ipmisim.Options{Users: []ipmisim.User{wakeAccount}})
	node := testNode("node-a")
	c := testClient(t, localConfig(), credentials("joulie-bmc-node-a", map[string]string{"address": sim.Addr(), "username": "nobody-here", "password": wakePassword}))
	err := c.Wake(t.Context(), node)
	if !errors.Is(err, ErrAuthentication) || strings.Contains(err.Error(), "nobody-here") {
		t.Fatalf("Wake as an unknown user: %v, want ErrAuthentication without the name", err)
	}
}

// A BMC that never answers fails as unreachable by the per-message
// timeouts, and within the caller's deadline when that comes first.
func TestSilentBMCTimesOut(t *testing.T) {
	r := startRelay(t, "", true)
	node := testNode("node-a")
	creds := credentials("joulie-bmc-node-a", map[string]string{"address": r.addr(), "username": wakeUser, "password": wakePassword})

	t.Run("message timeouts", func(t *testing.T) {
		cfg := localConfig()
		cfg.Timeout, cfg.Retries = 300*time.Millisecond, 1
		c := testClient(t, cfg, creds)
		start := time.Now()
		err := c.Wake(t.Context(), node)
		d := time.Since(start)
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "did not answer") {
			t.Fatalf("Wake of a silent BMC: %v, want ErrUnreachable", err)
		}
		if d < 600*time.Millisecond || d > 2*time.Second {
			t.Errorf("gave up after %v, want two timeouts of 300ms", d)
		}
		if n := calls(c, opPowerOn, resultUnreachable); n != 1 {
			t.Errorf("power_on unreachable calls counted: %v, want 1", n)
		}
	})
	t.Run("caller's deadline", func(t *testing.T) {
		cfg := DefaultConfig() // 2s, two retries: 6s on its own
		c := testClient(t, cfg, creds)
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := c.Wake(ctx, node)
		d := time.Since(start)
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("Wake of a silent BMC: %v, want ErrUnreachable", err)
		}
		if d > 1500*time.Millisecond {
			t.Errorf("returned %v after the call started, want about the caller's 500ms", d)
		}
	})
}

// A port where nothing listens is refused at once by the kernel.
func TestClosedPortIsUnreachable(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	c := testClient(t, localConfig(), credentials("joulie-bmc-node-a", map[string]string{"address": addr, "username": wakeUser, "password": wakePassword}))
	err = c.Wake(t.Context(), testNode("node-a"))
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "port unreachable") {
		t.Fatalf("Wake through a closed port: %v, want ErrUnreachable saying the port is unreachable", err)
	}
}
