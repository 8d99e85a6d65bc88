// Package ipmisim runs Debian's ipmi_sim (package openipmi), an
// independent IPMI 2.0 BMC, on a free localhost UDP port for tests. Its
// chassis power control is hooked to a file the test reads and writes:
// the simulated host's power state.
//
// ipmi_sim has no SHA-256: of the client's default cipher suites it
// refuses 17 at once and accepts 3.
//
// It is test support; no program imports it.
package ipmisim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"
)

// Package is the Debian package with ipmi_sim.
const Package = "openipmi"

// hookScript is ipmi_sim's chassis_control program. ipmi_sim runs it as
// "hook DIR get power" (answer "power:0" or "power:1"), "hook DIR set
// power 0|1" and "hook DIR set shutdown 1" (a soft shutdown, which the
// simulated host obeys at once), and waits for it before it answers the
// client. Every request but the reads is logged to DIR/commands.
//
// A shell script and not a Go program: re-running the test binary as the
// hook took over two seconds under -race on a loaded machine, past the
// client's message timeout, and the resent power command ran twice.
const hookScript = `#!/bin/sh
dir=$1
shift
case "$1 $2" in
"get power") printf 'power:%s\n' "$(cat "$dir/power")" ;;
"set power")
	case "$3" in 0|1) ;; *) echo "bad power value $3" >&2; exit 1 ;; esac
	echo "$*" >>"$dir/commands"
	echo "$3" >"$dir/power" ;;
"set shutdown")
	echo "$*" >>"$dir/commands"
	echo 0 >"$dir/power" ;;
"set "*) echo "$*" >>"$dir/commands" ;;
*) echo "unknown request: $*" >&2; exit 1 ;;
esac
`

// User is a BMC account. Privilege is ipmi_sim's: user, operator or
// admin.
type User struct {
	Name, Password, Privilege string
}

// Options configure a BMC.
type Options struct {
	Users []User
	// PoweredOn starts the simulated host on; by default it is off
	// (parked).
	PoweredOn bool
}

// BMC is a running ipmi_sim.
type BMC struct {
	Host string
	Port int
	dir  string
}

// Addr is the BMC's address as joulie.io/bmc-address takes it.
func (b *BMC) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(b.Port)) }

// Need finds ipmi_sim, and fails the test without it, as the repository's
// other tests do for a missing tool: a skipped BMC test would hide that the
// wake path went untested.
func Need(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("ipmi_sim")
	if err != nil {
		t.Fatalf("this test runs Debian's ipmi_sim as a BMC, and it is not installed: apt-get install %s (or run `make deps`)", Package)
	}
	return bin
}

// Start runs ipmi_sim with opts in a temporary directory and stops it
// when the test ends.
func Start(t testing.TB, opts Options) *BMC {
	t.Helper()
	bin := Need(t)
	if len(opts.Users) == 0 {
		t.Fatal("ipmisim: a BMC needs a user, to log in with and to see it is up")
	}
	dir := t.TempDir()
	// ipmi_sim splits chassis_control at spaces and has no quoting.
	if strings.ContainsAny(dir, " \t\"") {
		t.Fatalf("ipmisim: %q has a space or quote, which ipmi_sim's chassis_control cannot take", dir)
	}
	hook := filepath.Join(dir, "power-hook")
	if err := os.WriteFile(hook, []byte(hookScript), 0o755); err != nil {
		t.Fatal(err)
	}
	state := "0"
	if opts.PoweredOn {
		state = "1"
	}
	if err := os.WriteFile(filepath.Join(dir, "power"), []byte(state+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmds := "mc_setbmc 0x20\n" +
		"mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\n" +
		"mc_enable 0x20\n"
	if err := os.WriteFile(filepath.Join(dir, "cmds"), []byte(cmds), 0o644); err != nil {
		t.Fatal(err)
	}

	// A port found free may be taken before ipmi_sim binds it; then it
	// exits at once and the next port is tried.
	var lastErr error
	for range 3 {
		port, err := freeUDPPort()
		if err != nil {
			t.Fatalf("ipmisim: a free UDP port: %v", err)
		}
		b := &BMC{Host: "127.0.0.1", Port: port, dir: dir}
		if err := os.WriteFile(filepath.Join(dir, "lan.conf"), []byte(lanConf(b, hook, opts.Users)), 0o644); err != nil {
			t.Fatal(err)
		}
		if lastErr = b.run(t, bin, opts.Users); lastErr == nil {
			return b
		}
	}
	t.Fatalf("ipmisim: ipmi_sim did not start: %v", lastErr)
	return nil
}

func lanConf(b *BMC, hook string, users []User) string {
	var s strings.Builder
	fmt.Fprintf(&s, "name \"joulie-test\"\nset_working_mc 0x20\n")
	fmt.Fprintf(&s, "startlan 1\n  addr %s %d\n  priv_limit admin\n  guid a0a1a2a3a4a5a6a7a8a9aaabacadaeaf\nendlan\n", b.Host, b.Port)
	fmt.Fprintf(&s, "chassis_control \"%s %s\"\n", hook, b.dir)
	// User 1 is IPMI's anonymous user; it is disabled.
	fmt.Fprintf(&s, "user 1 false \"\" \"\" user 1 none md2 md5 straight\n")
	for i, u := range users {
		fmt.Fprintf(&s, "user %d true \"%s\" \"%s\" %s 10 none md2 md5 straight\n", i+2, u.Name, u.Password, u.Privilege)
	}
	return s.String()
}

func freeUDPPort() (int, error) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}

// run starts ipmi_sim and waits until the first user can log in.
func (b *BMC) run(t testing.TB, bin string, users []User) error {
	logPath := filepath.Join(b.dir, "ipmi_sim.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "-c", filepath.Join(b.dir, "lan.conf"), "-f", filepath.Join(b.dir, "cmds"),
		"-s", filepath.Join(b.dir, "state"), "-n")
	cmd.Dir = b.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("ipmi_sim exited (%v): %s", err, out)
		default:
		}
		if answers(b.Host, b.Port, users[0]) {
			break
		}
		if time.Now().After(deadline) {
			stop()
			return errors.New("ipmi_sim did not answer within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			if out, _ := os.ReadFile(logPath); len(out) > 0 {
				t.Logf("ipmi_sim's output:\n%s", out)
			}
		}
	})
	return nil
}

// answers reports whether the BMC at host:port lets u log in.
func answers(host string, port int, u User) bool {
	c, err := client.NewClient(host, port, u.Name, u.Password)
	if err != nil {
		return false
	}
	c.WithCipherSuiteID(types.CipherSuiteID3).WithTimeout(200 * time.Millisecond).WithRetry(0).
		WithMaxPrivilegeLevel(types.PrivilegeLevelUser)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = c.Connect(ctx)
	if err != nil {
		// Close with a cancelled context only frees the socket.
		cctx, ccancel := context.WithCancel(context.Background())
		ccancel()
		ctx = cctx
	}
	_ = c.Close(ctx)
	return err == nil
}

// PowerIsOn reads the simulated host's power state.
func (b *BMC) PowerIsOn(t testing.TB) bool {
	t.Helper()
	s, err := os.ReadFile(filepath.Join(b.dir, "power"))
	if err != nil {
		t.Fatalf("ipmisim: the host's power state: %v", err)
	}
	return strings.TrimSpace(string(s)) == "1"
}

// Commands are the chassis control requests the BMC passed to the host,
// in order ("set power 1", "set shutdown 1").
func (b *BMC) Commands(t testing.TB) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(b.dir, "commands"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
