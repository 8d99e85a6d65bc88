package localapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// peer is who is on the other end of a connection, as the kernel saw it
// at connect(2).
type peer struct {
	uid, gid uint32
	pid      int32
	// groups are the supplementary groups, read from /proc/<pid>/status
	// when the connection is accepted; nil when they could not be read.
	groups []uint32
	// err is set when the peer could not be identified at all; such a
	// peer is refused everything.
	err error
}

type peerKey struct{}

// identifyPeer reads the peer's credentials off a connection's socket.
func identifyPeer(c net.Conn, procDir string) peer {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return peer{err: fmt.Errorf("the connection is %T, not a Unix socket", c)}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return peer{err: fmt.Errorf("reach the socket: %w", err)}
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return peer{err: fmt.Errorf("reach the socket: %w", err)}
	}
	if credErr != nil {
		return peer{err: fmt.Errorf("read the peer's credentials (SO_PEERCRED): %w", credErr)}
	}
	p := peer{uid: cred.Uid, gid: cred.Gid, pid: cred.Pid}
	// pid 0: the peer lives in a pid namespace we cannot see into; only
	// its primary group counts then.
	if p.pid > 0 {
		p.groups, _ = supplementaryGroups(procDir, p.pid)
	}
	return p
}

// supplementaryGroups reads the "Groups:" line of /proc/<pid>/status.
// SO_PEERCRED carries only the primary group, and a member of the joulie
// group usually has it as a supplementary one.
func supplementaryGroups(procDir string, pid int32) ([]uint32, error) {
	data, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(int(pid)), "status"))
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("Groups:"))
		if !ok {
			continue
		}
		var groups []uint32
		for _, f := range bytes.Fields(rest) {
			g, err := strconv.ParseUint(string(f), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("parse Groups of process %d: %w", pid, err)
			}
			groups = append(groups, uint32(g))
		}
		return groups, nil
	}
	return nil, errors.New("no Groups line in the status of process " + strconv.Itoa(int(pid)))
}

// mayRead is true for root and for members of the allowed group (primary
// or supplementary); allowedGID < 0 admits root only.
func (p peer) mayRead(allowedGID int) bool {
	if p.err != nil {
		return false
	}
	if p.uid == 0 {
		return true
	}
	if allowedGID < 0 {
		return false
	}
	g := uint32(allowedGID)
	return p.gid == g || slices.Contains(p.groups, g)
}

// mayWrite is true for root only.
func (p peer) mayWrite() bool {
	return p.err == nil && p.uid == 0
}

func peerFrom(ctx context.Context) peer {
	p, ok := ctx.Value(peerKey{}).(peer)
	if !ok {
		return peer{err: errors.New("the connection carries no credentials")}
	}
	return p
}
