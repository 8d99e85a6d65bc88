package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"joulie.io/joulie/agentd/internal/localapi"
)

// asClientEnv makes the test binary behave as joulie-agentctl itself: the
// permission tests run it as an unprivileged user against a real socket.
const asClientEnv = "JOULIE_AGENTCTL_TEST_AS_CLIENT"

func TestMain(m *testing.M) {
	if os.Getenv(asClientEnv) == "1" {
		os.Exit(run(append([]string{"joulie-agentctl"}, os.Args[1:]...), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// nobody is uid and gid 65534, with no supplementary groups.
const nobody = 65534

// unprivileged runs joulie-agentctl args as nobody from a copy of the test
// binary that nobody can execute.
type unprivileged struct {
	exe string
}

func newUnprivileged(t *testing.T) unprivileged {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("running a client as another user needs root: run the tests as root, as make check does on CI")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	openUp(t, dir)
	exe := filepath.Join(dir, "joulie-agentctl")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return unprivileged{exe: exe}
}

// openUp makes dir and its parent (t.TempDir's per-test directory, 0700)
// traversable, so nobody can reach what is inside.
func openUp(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func (u unprivileged) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(u.exe, args...)
	cmd.Dir = "/"
	cmd.Env = []string{asClientEnv + "=1", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	default:
		t.Fatalf("run as nobody: %v", err)
	}
	return out.String(), errOut.String(), code
}

// daemonFor starts a daemon whose socket belongs to group, in a directory
// nobody can traverse.
func daemonFor(t *testing.T, agent localapi.Agent, group string, allowedGID int) string {
	t.Helper()
	path := startDaemon(t, agent, group, localapi.Options{AllowedGID: allowedGID})
	openUp(t, filepath.Dir(path))
	return path
}

func TestPermissionsForAnUnprivilegedUser(t *testing.T) {
	client := newUnprivileged(t)
	nogroup, err := user.LookupGroupId("65534")
	if err != nil {
		t.Fatalf("group 65534 (Debian's nogroup) is missing on this host: %v", err)
	}

	t.Run("socket of a group the user is not in: the kernel refuses", func(t *testing.T) {
		agent := clusterAgent()
		path := daemonFor(t, agent, "root", 0)
		_, errOut, code := client.run(t, "--socket", path, "status")
		want := "joulie-agentctl: permission denied on " + path + ": add your user to group root or use sudo\n"
		if code != exitFailure || errOut != want {
			t.Errorf("exit %d, stderr %q; want %d, %q", code, errOut, exitFailure, want)
		}
		if calls := agent.Calls(); len(calls) != 0 {
			t.Errorf("the agent was reached: %v", calls)
		}
	})

	t.Run("member of the socket's group: reads work, writes need root", func(t *testing.T) {
		agent := clusterAgent()
		path := daemonFor(t, agent, nogroup.Name, nobody)
		out, errOut, code := client.run(t, "--socket", path, "status")
		if code != 0 || !strings.Contains(out, "Node:            gpu-07") {
			t.Errorf("status as a member: exit %d\n%s%s", code, out, errOut)
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"restore"}, "joulie-agentctl: restore needs root; run with sudo\n"},
			{[]string{"profile", "set", "--profile", "eco"}, "joulie-agentctl: profile set needs root; run with sudo\n"},
		} {
			_, errOut, code := client.run(t, append([]string{"--socket", path}, tc.args...)...)
			if code != exitFailure || errOut != tc.want {
				t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, errOut, tc.want)
			}
		}
		if calls := agent.Calls(); len(calls) != 1 || calls[0] != "Status" {
			t.Errorf("the agent saw %v, want only Status", calls)
		}
	})

	t.Run("socket opened to everyone: the peer check still refuses", func(t *testing.T) {
		agent := clusterAgent()
		path := daemonFor(t, agent, "root", 0)
		if err := os.Chmod(path, 0o666); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			verb, want string
		}{
			{"status", "joulie-agentctl: status needs root or membership in group joulie; add your user to it (usermod -aG joulie USER, then log in again) or run with sudo\n"},
			{"restore", "joulie-agentctl: restore needs root; run with sudo\n"},
		} {
			_, errOut, code := client.run(t, "--socket", path, tc.verb)
			if code != exitFailure || errOut != tc.want {
				t.Errorf("%s: exit %d, stderr %q; want %q", tc.verb, code, errOut, tc.want)
			}
		}
		if calls := agent.Calls(); len(calls) != 0 {
			t.Errorf("the agent was reached: %v", calls)
		}
	})

	t.Run("no daemon", func(t *testing.T) {
		dir := t.TempDir()
		openUp(t, dir)
		path := filepath.Join(dir, "agentd.sock")
		_, errOut, code := client.run(t, "--socket", path, "status")
		want := "joulie-agentctl: joulie-agentd is not running (no socket at " + path + "); check `systemctl status joulie-agentd`\n"
		if code != exitFailure || errOut != want {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}
