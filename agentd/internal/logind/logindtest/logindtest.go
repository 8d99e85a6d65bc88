// Package logindtest runs a private D-Bus bus, Debian's dbus-daemon with
// a minimal configuration in a temporary directory, and a fake
// systemd-logind on it that records PowerOff calls, so that tests drive
// the agent's real D-Bus path without switching anything off. It is
// test support: nothing in the daemon imports it.
package logindtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"joulie.io/joulie/agentd/internal/logind"
)

// busConfig lets anyone own any name and call anything: the bus is the
// test's alone.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`

// StartBus starts dbus-daemon on a socket in a temporary directory and
// returns the bus's address; the daemon is stopped when the test ends.
func StartBus(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Fatalf("this test runs a private D-Bus bus and dbus-daemon is not installed (%v): run `make deps`, which installs Debian's dbus-daemon package", err)
	}
	// A short directory: a Unix socket's path is limited to 108 bytes.
	dir, err := os.MkdirTemp("", "joulie-dbus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(busConfig, filepath.Join(dir, "bus"))), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file="+conf, "--nofork", "--nopidfile", "--nosyslog", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		addr <- strings.TrimSpace(line)
	}()
	select {
	case a := <-addr:
		if a == "" {
			t.Fatalf("dbus-daemon printed no address: %s", stderr.String())
		}
		return a
	case <-time.After(20 * time.Second):
		t.Fatalf("dbus-daemon did not start within 20s: %s", stderr.String())
	}
	return ""
}

// Logind is a fake org.freedesktop.login1 Manager offering PowerOff.
type Logind struct {
	mu     sync.Mutex
	calls  []bool
	refuse *dbus.Error
	// onCall runs inside each PowerOff call, before the answer, so a test
	// sees the host as it is at the moment of the call.
	onCall func()
}

// Serve puts a fake logind on the bus at address, under logind's name.
// onCall, when not nil, runs inside every PowerOff call.
func Serve(t testing.TB, address string, onCall func()) *Logind {
	t.Helper()
	conn, err := dbus.Connect(address)
	if err != nil {
		t.Fatalf("connect to the test bus %s: %v", address, err)
	}
	t.Cleanup(func() { conn.Close() })
	l := &Logind{onCall: onCall}
	err = conn.ExportMethodTable(map[string]any{
		"PowerOff": func(interactive bool) *dbus.Error { return l.powerOff(interactive) },
	}, logind.Path, logind.Interface)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName(logind.Name, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s on the test bus: reply %v, %v", logind.Name, reply, err)
	}
	return l
}

func (l *Logind) powerOff(interactive bool) *dbus.Error {
	l.mu.Lock()
	l.calls = append(l.calls, interactive)
	refuse, onCall := l.refuse, l.onCall
	l.mu.Unlock()
	if onCall != nil {
		onCall()
	}
	return refuse
}

// Refuse makes every later PowerOff fail as logind does when polkit says
// no to a caller without CAP_SYS_BOOT; nil accepts again.
func (l *Logind) Refuse(refuse bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refuse = nil
	if refuse {
		l.refuse = dbus.NewError("org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
			[]any{"Interactive authentication required."})
	}
}

// Calls returns the interactive flag of every PowerOff call so far.
func (l *Logind) Calls() []bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bool(nil), l.calls...)
}
