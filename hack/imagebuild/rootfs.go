package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The image's user: the UID and GID the chart's pod security context runs
// as (runAsUser, runAsGroup, fsGroup: 65532), named in /etc/passwd so that
// tools reading the image see a user rather than a bare number.
const (
	imageUID  = 65532
	imageGID  = 65532
	imageUser = "nonroot"
	// binDir holds the program; the entrypoint is binDir/<program>.
	binDir = "/usr/local/bin"
	// caBundle is where Go's crypto/x509 looks first on Linux.
	caBundle = "/etc/ssl/certs/ca-certificates.crt"
)

// entry is one file or directory of a layer.
type entry struct {
	name string // absolute path in the image
	dir  bool
	mode int64
	uid  int
	gid  int
	data []byte
}

// baseEntries are the files every image shares: the user, the name
// service switch Go's resolver reads, the CA bundle, and a home and /tmp
// for a run without a read-only root. No shell, no package manager.
func baseEntries(caPEM []byte) []entry {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n", imageUser, imageUID, imageGID, imageUser, imageUser)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", imageUser, imageGID)
	return []entry{
		{name: "/etc", dir: true, mode: 0o755},
		{name: "/etc/group", mode: 0o644, data: []byte(group)},
		{name: "/etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "/etc/ssl", dir: true, mode: 0o755},
		{name: "/etc/ssl/certs", dir: true, mode: 0o755},
		{name: caBundle, mode: 0o644, data: caPEM},
		{name: "/home", dir: true, mode: 0o755},
		{name: "/home/" + imageUser, dir: true, mode: 0o700, uid: imageUID, gid: imageGID},
		{name: "/tmp", dir: true, mode: 0o1777},
		{name: "/usr", dir: true, mode: 0o755},
		{name: "/usr/local", dir: true, mode: 0o755},
		{name: binDir, dir: true, mode: 0o755},
	}
}

// tarLayer writes entries as an uncompressed tar, every timestamp at
// mtime and owners by number only, so that the same inputs give the same
// bytes on any machine.
func tarLayer(entries []entry, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    strings.TrimPrefix(e.name, "/"),
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar header of %s: %w", e.name, err)
		}
		if !e.dir {
			if _, err := tw.Write(e.data); err != nil {
				return nil, fmt.Errorf("tar data of %s: %w", e.name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readCABundle concatenates the certificates of dir (Debian's
// ca-certificates installs Mozilla's roots as one .crt file each in
// /usr/share/ca-certificates/mozilla) in name order. It reads the
// package's files rather than the host's /etc/ssl/certs bundle, which
// also holds whatever local CAs the build host trusts. Every file must
// be PEM certificates, so that a wrong directory fails the build instead
// of shipping an image that trusts nothing.
func readCABundle(dir string) ([]byte, int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, fmt.Errorf("CA directory %s does not exist: install Debian's ca-certificates (hack/install-deps.sh does) or pass --ca-dir", dir)
		}
		return nil, 0, fmt.Errorf("read CA directory: %w", err)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".crt") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return nil, 0, fmt.Errorf("no .crt files in CA directory %s: is it Debian's /usr/share/ca-certificates/mozilla?", dir)
	}
	var bundle bytes.Buffer
	count := 0
	for _, name := range names {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, 0, fmt.Errorf("read CA certificate: %w", err)
		}
		n, err := countCertificates(data)
		if err != nil {
			return nil, 0, fmt.Errorf("CA certificate %s: %w", path, err)
		}
		count += n
		bundle.Write(bytes.TrimSpace(data))
		bundle.WriteByte('\n')
	}
	return bundle.Bytes(), count, nil
}

// countCertificates checks that data is one or more PEM certificates and
// nothing else.
func countCertificates(data []byte) (int, error) {
	n := 0
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return 0, fmt.Errorf("holds a PEM %q block, not a certificate", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return 0, fmt.Errorf("parse certificate: %w", err)
		}
		n++
	}
	if n == 0 || len(bytes.TrimSpace(rest)) > 0 {
		return 0, errors.New("is not PEM certificates only")
	}
	return n, nil
}
