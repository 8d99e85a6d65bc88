package localapi

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSupplementaryGroupsFromProcStatus(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pid   int32
		want  []uint32
		fails bool
	}{
		{"a user in four groups", 4242, []uint32{4, 24, 27, 998}, false},
		{"no supplementary groups", 4343, nil, false},
		{"the process is gone", 9999, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := supplementaryGroups("testdata/proc", tc.pid)
			if (err != nil) != tc.fails || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v (error: %v)", got, err, tc.want, tc.fails)
			}
		})
	}
}

func TestPeerRules(t *testing.T) {
	for _, tc := range []struct {
		name        string
		p           peer
		allowedGID  int
		read, write bool
	}{
		{"root", peer{uid: 0, gid: 0}, 998, true, true},
		{"root with no group configured", peer{uid: 0}, -1, true, true},
		{"member by primary group", peer{uid: 1000, gid: 998}, 998, true, false},
		{"member by supplementary group", peer{uid: 1000, gid: 1000, groups: []uint32{27, 998}}, 998, true, false},
		{"stranger", peer{uid: 1000, gid: 1000, groups: []uint32{27}}, 998, false, false},
		{"nobody with no group configured", peer{uid: 65534, gid: 65534}, -1, false, false},
		{"root group member is not root", peer{uid: 1000, gid: 0}, 998, false, false},
		{"unidentified", peer{err: os.ErrInvalid}, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.mayRead(tc.allowedGID); got != tc.read {
				t.Errorf("mayRead = %v, want %v", got, tc.read)
			}
			if got := tc.p.mayWrite(); got != tc.write {
				t.Errorf("mayWrite = %v, want %v", got, tc.write)
			}
		})
	}
}

// TestIdentifyPeerReadsTheKernelsCredentials connects to itself: the
// peer is this process.
func TestIdentifyPeerReadsTheKernelsCredentials(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	client, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	defer server.Close()

	p := identifyPeer(server, "/proc")
	if p.err != nil {
		t.Fatal(p.err)
	}
	if int(p.uid) != os.Geteuid() || int(p.gid) != os.Getegid() || int(p.pid) != os.Getpid() {
		t.Errorf("peer %+v, want uid %d gid %d pid %d", p, os.Geteuid(), os.Getegid(), os.Getpid())
	}
	own, _ := os.Getgroups()
	for _, g := range own {
		if !slices.Contains(p.groups, uint32(g)) {
			t.Errorf("supplementary group %d missing from %v", g, p.groups)
		}
	}
}

func TestIdentifyPeerRefusesOtherConnections(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if p := identifyPeer(a, "/proc"); p.err == nil || p.mayRead(0) {
		t.Errorf("a pipe passed as a peer: %+v", p)
	}
}
