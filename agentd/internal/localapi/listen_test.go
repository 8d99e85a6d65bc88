package localapi

import (
	"errors"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func socketOwner(t *testing.T, path string) (os.FileMode, uint32) {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode()&os.ModeSocket == 0 {
		t.Fatalf("%s is not a socket: %v", path, info.Mode())
	}
	return info.Mode().Perm(), info.Sys().(*syscall.Stat_t).Gid
}

func TestListenGivesTheSocketToTheGroup(t *testing.T) {
	requireRoot(t)
	g, err := user.LookupGroupId("65534")
	if err != nil {
		t.Fatalf("group 65534 (Debian's nogroup) is missing on this host: %v", err)
	}
	path := filepath.Join(t.TempDir(), "agentd.sock")
	sock, err := Listen(path, g.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	if mode, gid := socketOwner(t, path); mode != 0o660 || gid != 65534 {
		t.Errorf("socket mode %04o group %d, want 0660 group 65534", mode, gid)
	}
	if sock.GID != 65534 || sock.Warning != "" {
		t.Errorf("GID %d, warning %q", sock.GID, sock.Warning)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".s*")); len(leftovers) > 0 {
		t.Errorf("the private bind directory was left behind: %v", leftovers)
	}
}

func TestListenWithoutTheGroupIsRootOnlyAndWarns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.sock")
	sock, err := Listen(path, "joulie-no-such-group")
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	if mode, _ := socketOwner(t, path); mode != 0o600 {
		t.Errorf("socket mode %04o, want 0600", mode)
	}
	if sock.GID != -1 || !strings.Contains(sock.Warning, "group joulie-no-such-group does not exist") ||
		!strings.Contains(sock.Warning, "groupadd --system joulie-no-such-group") {
		t.Errorf("GID %d, warning %q", sock.GID, sock.Warning)
	}
}

func TestListenReplacesAStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.sock")
	// A daemon that died leaves its socket file behind.
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	old.SetUnlinkOnClose(false)
	old.Close()
	sock, err := Listen(path, "")
	if err != nil {
		t.Fatalf("a stale socket blocked Listen: %v", err)
	}
	defer sock.Close()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("the new socket does not answer: %v", err)
	}
	conn.Close()
}

func TestListenLeavesALiveSocketAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.sock")
	first, err := Listen(path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := Listen(path, ""); err == nil || !strings.Contains(err.Error(), "is another joulie-agentd running?") {
		t.Fatalf("second Listen: %v", err)
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("the first daemon's socket was taken away: %v", err)
	}
	conn.Close()
}

func TestListenNeverRemovesAFileThatIsNotASocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.sock")
	if err := os.WriteFile(path, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path, ""); err == nil || !strings.Contains(err.Error(), "exists and is not a socket") {
		t.Fatalf("Listen: %v", err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "precious" {
		t.Errorf("the file was touched: %q %v", data, err)
	}
}

func TestListenRefusesAPathTooLongForASocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), strings.Repeat("x", 120)+".sock")
	if _, err := Listen(path, ""); err == nil || !strings.Contains(err.Error(), "configure a shorter one") {
		t.Fatalf("Listen: %v", err)
	}
}

func TestCloseLeavesASuccessorsSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.sock")
	sock, err := Listen(path, "")
	if err != nil {
		t.Fatal(err)
	}
	// Someone replaced the file (a second daemon after a forced restart).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	next, err := Listen(path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if err := sock.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("closing the old socket removed the new one: %v", err)
	}
}

func TestClientSaysTheDaemonIsNotRunning(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "agentd.sock")
	_, err := NewClient(missing).Status(t.Context())
	want := "joulie-agentd is not running (no socket at " + missing + "); check `systemctl status joulie-agentd`"
	if !errors.Is(err, ErrNotRunning) || err.Error() != want {
		t.Errorf("no socket: %v", err)
	}

	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	_, err = NewClient(stale).Status(t.Context())
	if !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "nothing answers on "+stale) {
		t.Errorf("stale socket: %v", err)
	}
}

func TestGroupID(t *testing.T) {
	if gid, err := GroupID("root"); err != nil || gid != 0 {
		t.Errorf("root: %d, %v", gid, err)
	}
	if _, err := GroupID("joulie-no-such-group"); err == nil || err.Error() != "group joulie-no-such-group does not exist" {
		t.Errorf("missing group: %v", err)
	}
}
