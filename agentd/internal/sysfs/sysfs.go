// Package sysfs reads and writes kernel attribute files (sysfs, procfs)
// under a configurable host root, so that every hardware backend of the
// agent can run against a fixture tree in tests and against / in
// production.
//
// Reads return the trimmed text of an attribute. Writes refuse attributes
// the kernel exposes read-only (no write bit in the file mode, as sysfs
// reports them) with ErrReadOnly before trying, because root would
// otherwise be allowed to write a fixture file that the real kernel would
// refuse. A Writer can be injected so tests can produce the errors real
// drivers return (EIO, EBUSY) that a plain file cannot.
package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrReadOnly reports an attribute that cannot be written: read-only in
// its mode, or refused with EACCES/EPERM/EROFS by the kernel.
var ErrReadOnly = errors.New("read-only attribute")

// Writer writes a whole attribute value. The default implementation opens
// the file for writing without creating it: a missing attribute on /sys is
// an error, never a new file.
type Writer interface {
	WriteFile(path string, data []byte) error
}

// FS is a view of the host's kernel files below Root. Paths given to its
// methods are relative to Root ("sys/class/powercap/intel-rapl:0/name").
type FS struct {
	root   string
	writer Writer
}

// New returns an FS rooted at root ("/" in production).
func New(root string) *FS {
	if root == "" {
		root = "/"
	}
	return &FS{root: filepath.Clean(root), writer: osWriter{}}
}

// WithWriter returns a copy of fs that writes through w; tests use it to
// inject driver errors.
func (f *FS) WithWriter(w Writer) *FS {
	c := *f
	c.writer = w
	return &c
}

// Root is the host root the FS reads under.
func (f *FS) Root() string { return f.root }

// Path joins rel under the host root.
func (f *FS) Path(rel ...string) string {
	return filepath.Join(append([]string{f.root}, rel...)...)
}

// Rel turns an absolute path under the root back into a relative one.
func (f *FS) Rel(abs string) string {
	r, err := filepath.Rel(f.root, abs)
	if err != nil {
		return abs
	}
	return r
}

// Exists reports whether rel exists (following symlinks).
func (f *FS) Exists(rel string) bool {
	_, err := os.Stat(f.Path(rel))
	return err == nil
}

// ReadString returns the attribute's content without surrounding space.
func (f *FS) ReadString(rel string) (string, error) {
	b, err := os.ReadFile(f.Path(rel))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", f.Path(rel), err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadInt parses the attribute as a base-10 signed integer.
func (f *FS) ReadInt(rel string) (int64, error) {
	s, err := f.ReadString(rel)
	if err != nil {
		return 0, err
	}
	v, err := ParseInt(s)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", f.Path(rel), err)
	}
	return v, nil
}

// ReadUint parses the attribute as a base-10 unsigned integer, as energy
// counters are (they exceed int64 only in theory, but wrap at
// max_energy_range_uj, which fits).
func (f *FS) ReadUint(rel string) (uint64, error) {
	s, err := f.ReadString(rel)
	if err != nil {
		return 0, err
	}
	v, err := ParseUint(s)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", f.Path(rel), err)
	}
	return v, nil
}

// Writable reports whether the attribute exists and its mode carries a
// write bit. sysfs shows read-only attributes as 0444 even to root.
func (f *FS) Writable(rel string) bool {
	st, err := os.Stat(f.Path(rel))
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o222 != 0
}

// WriteString writes value to the attribute. It returns an error wrapping
// ErrReadOnly for read-only attributes and os.ErrNotExist for missing ones.
func (f *FS) WriteString(rel, value string) error {
	path := f.Path(rel)
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	if st.Mode().Perm()&0o222 == 0 {
		return fmt.Errorf("write %q to %s: %w (mode %v)", value, path, ErrReadOnly, st.Mode().Perm())
	}
	if err := f.writer.WriteFile(path, []byte(value)); err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			err = fmt.Errorf("%w: %w", ErrReadOnly, err)
		}
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

// WriteInt writes a base-10 integer to the attribute.
func (f *FS) WriteInt(rel string, v int64) error {
	return f.WriteString(rel, strconv.FormatInt(v, 10))
}

// Glob returns the relative paths matching pattern (relative to the root),
// sorted.
func (f *FS) Glob(pattern string) ([]string, error) {
	matches, err := filepath.Glob(f.Path(pattern))
	if err != nil {
		return nil, fmt.Errorf("glob %s: %w", pattern, err)
	}
	for i, m := range matches {
		matches[i] = f.Rel(m)
	}
	return matches, nil
}

type osWriter struct{}

// WriteFile writes without O_CREATE: sysfs attributes exist or the write
// is wrong. One write call carries the whole value, as the kernel expects.
func (osWriter) WriteFile(path string, data []byte) error {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := fh.Write(data)
	cerr := fh.Close()
	if werr != nil {
		return werr
	}
	return cerr
}
