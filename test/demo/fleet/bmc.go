package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A BMC node is a pool node with a baseboard management controller:
// Debian's ipmi_sim (package openipmi), an independent IPMI 2.0
// implementation, on a loopback UDP port. Its chassis power control runs
// a hook that asks the fleet's HTTP server for the node's power and
// switches it: "power on" boots the node as a magic packet does. The
// controller reaches it as it reaches a real BMC, from the Secret
// joulie-bmc-<node> of the BMC namespace: address, username, password.

// bmcUser is the BMC account the controller logs in with: operator
// privilege is what chassis power control needs.
const bmcUser = "joulie"

// bmcHook is ipmi_sim's chassis_control program, run as "hook URL get
// power" (it must print power:0 or power:1), "hook URL set power 0|1" and
// "hook URL set shutdown 1". A shell script rather than a Go program: it
// runs within the BMC's answer, which the client times out after a
// couple of seconds.
const bmcHook = `#!/bin/sh
url=$1
shift
case "$1 $2" in
"get power") exec curl -fsS --max-time 2 "$url" ;;
"set power") exec curl -fsS --max-time 2 -X POST --data "$3" "$url" ;;
"set shutdown") exec curl -fsS --max-time 2 -X POST --data 0 "$url" ;;
esac
`

// bmc is one running ipmi_sim.
type bmc struct {
	node, addr, password string
	cmd                  *exec.Cmd
	done                 chan struct{}
}

// startBMC runs an ipmi_sim for node under Dir/bmc/<node>, its power hook
// pointed at the fleet's server.
func (f *Fleet) startBMC(node string) (*bmc, error) {
	bin, err := exec.LookPath("ipmi_sim")
	if err != nil {
		return nil, fmt.Errorf("fleet: Config.BMCNodes needs Debian's ipmi_sim as the nodes' BMC: apt-get install openipmi (or make deps): %w", err)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		return nil, fmt.Errorf("fleet: the BMC's power hook needs curl: %w", err)
	}
	dir := filepath.Join(f.cfg.Dir, "bmc", node)
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	// ipmi_sim splits chassis_control at spaces and knows no quoting.
	if strings.ContainsAny(dir, " \t\"") {
		return nil, fmt.Errorf("fleet: Config.Dir %q has a space or a quote, which ipmi_sim's chassis_control cannot take", f.cfg.Dir)
	}
	hook := filepath.Join(dir, "power-hook")
	if err := os.WriteFile(hook, []byte(bmcHook), 0o755); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	cmds := "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\nmc_enable 0x20\n"
	if err := os.WriteFile(filepath.Join(dir, "cmds"), []byte(cmds), 0o644); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	secret := make([]byte, 8)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	b := &bmc{node: node, password: hex.EncodeToString(secret)}
	// A port found free may be taken before ipmi_sim binds it; it then
	// exits, and another is tried.
	var lastErr error
	for range 3 {
		port, err := freeUDPPort()
		if err != nil {
			return nil, fmt.Errorf("fleet: a UDP port for the BMC of %s: %w", node, err)
		}
		b.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		conf := fmt.Sprintf("name \"%s\"\nset_working_mc 0x20\nstartlan 1\n  addr 127.0.0.1 %d\n  priv_limit admin\n"+
			"  guid a0a1a2a3a4a5a6a7a8a9aaabacadaeaf\nendlan\nchassis_control \"%s %s/bmc/%s/power\"\n"+
			"user 1 false \"\" \"\" user 1 none md2 md5 straight\nuser 2 true \"%s\" \"%s\" operator 10 none md2 md5 straight\n",
			node, port, hook, f.simURL, node, bmcUser, b.password)
		if err := os.WriteFile(filepath.Join(dir, "lan.conf"), []byte(conf), 0o600); err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		if lastErr = b.run(bin, dir); lastErr == nil {
			f.log.Info("BMC started", "node", node, "address", b.addr)
			return b, nil
		}
	}
	return nil, fmt.Errorf("fleet: the BMC of %s (ipmi_sim) did not start: %w", node, lastErr)
}

func freeUDPPort() (int, error) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}

// run starts ipmi_sim and waits until its user can log in.
func (b *bmc) run(bin, dir string) error {
	logf, err := os.Create(filepath.Join(dir, "ipmi_sim.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	b.cmd = exec.Command(bin, "-c", filepath.Join(dir, "lan.conf"), "-f", filepath.Join(dir, "cmds"), "-s", filepath.Join(dir, "state"), "-n")
	b.cmd.Dir, b.cmd.Stdout, b.cmd.Stderr = dir, logf, logf
	// It dies with the fleet's process, however that ends.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := b.cmd.Start(); err != nil {
		return err
	}
	b.done = make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(b.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for !b.answers() {
		select {
		case <-b.done:
			out, _ := os.ReadFile(filepath.Join(dir, "ipmi_sim.log"))
			return fmt.Errorf("ipmi_sim exited (%v): %s", b.cmd.ProcessState, out)
		default:
		}
		if time.Now().After(deadline) {
			b.stop()
			return errors.New("ipmi_sim did not answer within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// answers reports whether ipmi_sim has bound its UDP port, read from
// /proc/net/udp: a probe of our own could take the port from it, and a
// real IPMI login would bring an IPMI client into the fleet for this
// alone.
func (b *bmc) answers() bool {
	_, port, _ := net.SplitHostPort(b.addr)
	p, _ := strconv.Atoi(port)
	data, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return false
	}
	// local_address is hex: 0100007F:1F90 is 127.0.0.1:8080.
	want := fmt.Sprintf("0100007F:%04X", p)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == want {
			return true
		}
	}
	return false
}

func (b *bmc) stop() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	_ = b.cmd.Process.Kill()
	<-b.done
}

// DefaultBMCNamespace holds the BMC Secrets: the chart's
// controller.parking.ipmi.secretNamespace for release joulie.
const DefaultBMCNamespace = "joulie-bmc"

// bmcSecret is the Secret the controller reads the BMC's address and
// credentials from: joulie-bmc-<node> in the BMC namespace.
func bmcSecret(node string) string { return "joulie-bmc-" + node }

func (f *Fleet) createBMCSecret(ctx context.Context, b *bmc) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.cfg.BMCNamespace}}
	if _, err := f.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("fleet: create the BMC namespace %s: %w", f.cfg.BMCNamespace, err)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bmcSecret(b.node), Namespace: f.cfg.BMCNamespace, Labels: map[string]string{LabelFleet: f.cfg.NodePrefix}},
		StringData: map[string]string{"address": b.addr, "username": bmcUser, "password": b.password},
	}
	if _, err := f.kube.CoreV1().Secrets(f.cfg.BMCNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("fleet: create the BMC Secret %s/%s of node %s: %w", f.cfg.BMCNamespace, s.Name, b.node, err)
	}
	return nil
}

func (f *Fleet) deleteBMCSecrets(ctx context.Context) error {
	var errs []error
	for _, b := range f.bmcs {
		err := f.kube.CoreV1().Secrets(f.cfg.BMCNamespace).Delete(ctx, bmcSecret(b.node), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("fleet: delete the BMC Secret of %s: %w", b.node, err))
		}
	}
	return errors.Join(errs...)
}

// serveBMC answers the BMCs' power hooks: GET .../bmc/<node>/power says
// power:1 for a node that is on or booting, power:0 for one that is off;
// POST with 1 boots a node that is off, as a magic packet does, and POST
// with 0 switches it off, as a hard power-off or an ACPI shutdown.
func (f *Fleet) serveBMC(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) != 3 || parts[0] != "bmc" || parts[2] != "power" {
		http.Error(w, "no such route: the BMC hook uses /bmc/<node>/power", http.StatusNotFound)
		return
	}
	node := parts[1]
	host, ok := f.sim.hostState(node)
	if !ok {
		http.Error(w, "no node "+node+" in this fleet", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		on := "1"
		if host == HostOff {
			on = "0"
		}
		fmt.Fprintf(w, "power:%s\n", on)
	case http.MethodPost:
		body, _ := io.ReadAll(io.LimitReader(r.Body, 16))
		switch strings.TrimSpace(string(body)) {
		case "1":
			if _, booted := f.sim.bmcPower(node, true, time.Now()); booted {
				f.log.Info("BMC power on: booting", "node", node)
			}
		case "0":
			f.sim.bmcPower(node, false, time.Now())
			f.log.Info("BMC power off", "node", node)
		default:
			http.Error(w, "the body is 1 (on) or 0 (off)", http.StatusBadRequest)
		}
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
	}
}
