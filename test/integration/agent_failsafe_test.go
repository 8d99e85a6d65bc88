package integration

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/url"
	"os/exec"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
)

// outage is a TCP proxy in front of the API server that a test can cut,
// as a network partition between a node and the control plane would.
type outage struct {
	l     net.Listener
	to    string
	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

func newOutage(t *testing.T, to string) *outage {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &outage{l: l, to: to, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { l.Close(); o.cut() })
	go o.serve()
	return o
}

func (o *outage) serve() {
	for {
		c, err := o.l.Accept()
		if err != nil {
			return
		}
		o.mu.Lock()
		down := o.down
		if !down {
			o.conns[c] = true
		}
		o.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		go func() {
			up, err := net.Dial("tcp", o.to)
			if err != nil {
				c.Close()
				return
			}
			o.mu.Lock()
			o.conns[up] = true
			o.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			_, _ = io.Copy(c, up)
			c.Close()
		}()
	}
}

// cut drops every connection and refuses new ones.
func (o *outage) cut() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = true
	for c := range o.conns {
		c.Close()
	}
	o.conns = map[net.Conn]bool{}
}

func (o *outage) heal() {
	o.mu.Lock()
	o.down = false
	o.mu.Unlock()
}

func TestAgentFailsafeOnAPIServerOutage(t *testing.T) {
	const node = "agent-failsafe-node"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	cp.CreateReadyNode(t, node, map[string]string{joulie.LabelManaged: "true"}, nil)
	_, err = admin.JoulieV1alpha1().NodePowerProfiles().Create(ctx, &joulie.NodePowerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec:       joulie.NodePowerProfileSpec{Profile: joulie.ProfileEco},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteNodeObjects(t, admin, node)

	// The agent reaches the API server only through the proxy.
	u, err := url.Parse(cp.Host())
	if err != nil {
		t.Fatal(err)
	}
	proxy := newOutage(t, u.Host)
	cfg := rest.CopyConfig(cp.AgentConfig(t, node))
	cfg.Host = "https://" + proxy.l.Addr().String()
	kubeconfig := cp.WriteKubeconfig(t, cfg)

	sock := runAgent(t, node, kubeconfig, "--failsafe", "performance", "--failsafe-timeout", "4s").socket
	agentctl := cp.BuildProgram(t, "joulie.io/joulie/agentd/cmd/joulie-agentctl")
	type status struct {
		Source   string `json:"source"`
		Profile  string `json:"profile"`
		Failsafe struct {
			Active bool   `json:"active"`
			Mode   string `json:"mode"`
			Reason string `json:"reason"`
		} `json:"failsafe"`
	}
	read := func() (status, bool) {
		out, err := exec.Command(agentctl, "--socket", sock, "status", "-o", "json").Output()
		var s status
		return s, err == nil && json.Unmarshal(out, &s) == nil
	}
	poll := func(what string, cond func(status) bool) status {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if s, ok := read(); ok && cond(s) {
				return s
			}
			if time.Now().After(deadline) {
				s, _ := read()
				t.Fatalf("timed out waiting for %s; last status %+v", what, s)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	poll("the cluster's eco target", func(s status) bool { return s.Source == "cluster" && s.Profile == "eco" })

	proxy.cut()
	cutAt := time.Now()
	s := poll("the failsafe", func(s status) bool { return s.Failsafe.Active })
	if s.Failsafe.Mode != "performance" || s.Profile != "performance" || s.Source != "failsafe" {
		t.Fatalf("failsafe status %+v", s)
	}
	// The timeout runs from the cluster's last answer, not from the cut:
	// the agent probes every failsafeTimeout / 4 (1 s here), so that answer
	// may be up to one probe before the cut.
	if took := time.Since(cutAt); took < 3*time.Second {
		t.Fatalf("failsafe after %s, before its 4s timeout less one 1s probe", took)
	}
	t.Logf("failsafe in force %s after the cut: %s", time.Since(cutAt).Round(100*time.Millisecond), s.Failsafe.Reason)

	proxy.heal()
	poll("the target back after the outage", func(s status) bool { return !s.Failsafe.Active && s.Source == "cluster" && s.Profile == "eco" })
}
