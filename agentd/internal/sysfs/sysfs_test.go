package sysfs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func fixture(t *testing.T, files map[string]string, modes map[string]os.FileMode) *FS {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if m, ok := modes[rel]; ok {
			mode = m
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	return New(root)
}

func TestReadsTrimAndParse(t *testing.T) {
	fs := fixture(t, map[string]string{
		"sys/a":     "150000000\n",
		"sys/neg":   "-1\n",
		"sys/big":   "262143328850\n",
		"sys/words": "intel-rapl\n",
		"sys/junk":  "12ab\n",
	}, nil)
	if v, err := fs.ReadInt("sys/a"); err != nil || v != 150000000 {
		t.Errorf("ReadInt = %d, %v", v, err)
	}
	if v, err := fs.ReadInt("sys/neg"); err != nil || v != -1 {
		t.Errorf("ReadInt negative = %d, %v", v, err)
	}
	if v, err := fs.ReadUint("sys/big"); err != nil || v != 262143328850 {
		t.Errorf("ReadUint = %d, %v", v, err)
	}
	if s, err := fs.ReadString("sys/words"); err != nil || s != "intel-rapl" {
		t.Errorf("ReadString = %q, %v", s, err)
	}
	if _, err := fs.ReadInt("sys/junk"); err == nil || !strings.Contains(err.Error(), fs.Path("sys/junk")) {
		t.Errorf("ReadInt of junk: error %v should name the file", err)
	}
	if _, err := fs.ReadInt("sys/missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
}

func TestWriteRefusesReadOnlyAttributesEvenForRoot(t *testing.T) {
	fs := fixture(t, map[string]string{"sys/ro": "5\n", "sys/rw": "5\n"},
		map[string]os.FileMode{"sys/ro": 0o444, "sys/rw": 0o644})
	if fs.Writable("sys/ro") || !fs.Writable("sys/rw") || fs.Writable("sys/missing") {
		t.Errorf("Writable: ro=%v rw=%v missing=%v", fs.Writable("sys/ro"), fs.Writable("sys/rw"), fs.Writable("sys/missing"))
	}
	err := fs.WriteInt("sys/ro", 7)
	if !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write to 0444: %v, want ErrReadOnly", err)
	}
	if got, _ := fs.ReadInt("sys/ro"); got != 5 {
		t.Errorf("read-only attribute changed to %d", got)
	}
	if err := fs.WriteInt("sys/rw", 7); err != nil {
		t.Fatal(err)
	}
	if got, _ := fs.ReadInt("sys/rw"); got != 7 {
		t.Errorf("after write: %d", got)
	}
}

func TestWriteNeverCreatesAttributes(t *testing.T) {
	fs := fixture(t, map[string]string{"sys/rw": "1"}, nil)
	if err := fs.WriteInt("sys/new", 1); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("write to a missing attribute: %v, want ErrNotExist", err)
	}
	if fs.Exists("sys/new") {
		t.Fatal("write created a file")
	}
}

type failingWriter struct{ err error }

func (w failingWriter) WriteFile(string, []byte) error { return w.err }

func TestInjectedDriverErrors(t *testing.T) {
	fs := fixture(t, map[string]string{"sys/rw": "1"}, nil)
	eio := fs.WithWriter(failingWriter{syscall.EIO})
	if err := eio.WriteInt("sys/rw", 2); !errors.Is(err, syscall.EIO) || errors.Is(err, ErrReadOnly) {
		t.Errorf("EIO: %v", err)
	}
	perm := fs.WithWriter(failingWriter{syscall.EACCES})
	if err := perm.WriteInt("sys/rw", 2); !errors.Is(err, ErrReadOnly) {
		t.Errorf("EACCES should count as read-only: %v", err)
	}
	if err := fs.WriteInt("sys/rw", 3); err != nil {
		t.Errorf("WithWriter changed the original FS: %v", err)
	}
}

func TestGlobReturnsRelativePaths(t *testing.T) {
	fs := fixture(t, map[string]string{
		"sys/class/powercap/intel-rapl:1/name": "package-1",
		"sys/class/powercap/intel-rapl:0/name": "package-0",
	}, nil)
	got, err := fs.Glob("sys/class/powercap/intel-rapl:*")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sys/class/powercap/intel-rapl:0", "sys/class/powercap/intel-rapl:1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Glob = %v, want %v", got, want)
	}
}

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"", nil, false},
		{"0", []int{0}, false},
		{"0-3", []int{0, 1, 2, 3}, false},
		{"0-1,8,10-11\n", []int{0, 1, 8, 10, 11}, false},
		{"4 5 6", []int{4, 5, 6}, false},
		{"3,1,1-2", []int{1, 2, 3}, false},
		{"3-1", nil, true},
		{"a-b", nil, true},
		{"-1", nil, true},
		{"0-99999999", nil, true},
	} {
		got, err := ParseCPUList(tc.in)
		if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v, err=%v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestFormatCPUList(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{3}, "3"},
		{[]int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
		{[]int{1, 3, 5}, "1,3,5"},
	} {
		if got := FormatCPUList(c.in); got != c.want {
			t.Errorf("FormatCPUList(%v) = %q, want %q", c.in, got, c.want)
		}
		if back, err := ParseCPUList(FormatCPUList(c.in)); err != nil || !slices.Equal(back, c.in) {
			t.Errorf("%v does not round-trip: %v %v", c.in, back, err)
		}
	}
}
