package localapi

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// maxSocketPath is what fits in sockaddr_un.sun_path with its NUL.
const maxSocketPath = 107

// Socket is the daemon's listening socket, ready for Serve.
type Socket struct {
	net.Listener
	// Path is where the socket lives.
	Path string
	// GID is the group admitted to the read verbs, or -1 when the socket
	// is root-only. Pass it to Serve as Options.AllowedGID.
	GID int
	// Warning, when not empty, is something the daemon should log: the
	// socket works, but not as configured.
	Warning string

	info os.FileInfo // the socket file as created, so Close removes only ours
}

// Listen creates the daemon's socket at path, owned by the caller (root)
// and group, mode 0660. An empty group, or one that does not exist on the
// host, gives a root-only socket, mode 0600; the latter with a Warning.
//
// A socket file left behind by a daemon that died is replaced; one that
// still answers is not, and neither is anything that is not a socket.
//
// The socket is bound in a private directory and renamed into place only
// once its owner and mode are set, so it is never reachable with the
// looser mode the umask would give it.
func Listen(path, group string) (*Socket, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes, more than the %d a Unix socket address holds; configure a shorter one", path, len(path), maxSocketPath)
	}
	gid, mode, warning := -1, os.FileMode(0o600), ""
	if group != "" {
		g, err := GroupID(group)
		if err != nil {
			warning = fmt.Sprintf("the socket %s admits root only (mode 0600): %v; create the group (groupadd --system %s) and restart joulie-agentd to let its members read the agent's state", path, err, group)
		} else {
			gid, mode = g, 0o660
		}
	}

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the socket's directory: %w", err)
	}
	if err := checkStale(path); err != nil {
		return nil, err
	}

	tmpDir, err := os.MkdirTemp(dir, ".s")
	if err != nil {
		return nil, fmt.Errorf("create a private directory for the socket: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	tmpPath := filepath.Join(tmpDir, "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmpPath, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The listener would unlink the temporary name; Socket.Close removes
	// the real one.
	l.SetUnlinkOnClose(false)
	fail := func(err error) (*Socket, error) {
		l.Close()
		return nil, err
	}
	if gid >= 0 {
		if err := os.Chown(tmpPath, -1, gid); err != nil {
			return fail(fmt.Errorf("give the socket to group %s: %w", group, err))
		}
	}
	if err := os.Chmod(tmpPath, mode); err != nil {
		return fail(fmt.Errorf("set the socket's mode to %04o: %w", mode, err))
	}
	if err := os.Rename(tmpPath, path); err != nil {
		return fail(fmt.Errorf("move the socket into place at %s: %w", path, err))
	}
	info, err := os.Lstat(path)
	if err != nil {
		return fail(fmt.Errorf("stat the new socket: %w", err))
	}
	return &Socket{Listener: l, Path: path, GID: gid, Warning: warning, info: info}, nil
}

// Close stops listening and removes the socket file, unless another
// process has put its own socket there since.
func (s *Socket) Close() error {
	err := s.Listener.Close()
	if cur, statErr := os.Lstat(s.Path); statErr == nil && os.SameFile(cur, s.info) {
		if rmErr := os.Remove(s.Path); rmErr != nil && err == nil {
			err = rmErr
		}
	}
	return err
}

// GroupID resolves a group name to its gid, for Options.AllowedGID when
// the listener comes from systemd socket activation rather than Listen.
func GroupID(group string) (int, error) {
	g, err := user.LookupGroup(group)
	if err != nil {
		var unknown user.UnknownGroupError
		if errors.As(err, &unknown) {
			return -1, fmt.Errorf("group %s does not exist", group)
		}
		return -1, fmt.Errorf("look up group %s: %w", group, err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return -1, fmt.Errorf("group %s has a non-numeric gid %q", group, g.Gid)
	}
	return gid, nil
}

// checkStale clears the way for a new socket at path: nothing there, or a
// socket nobody answers on (its daemon died), which is removed.
func checkStale(path string) error {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check for an old socket at %s: %w", path, err)
	}
	if info.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; remove it or configure another socket path", path)
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		conn.Close()
		return fmt.Errorf("a process already serves on %s; is another joulie-agentd running?", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("check whether the socket at %s is in use: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the stale socket %s: %w", path, err)
	}
	return nil
}
