package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotation keys of the OCI image spec, and this tool's own.
const (
	annoRefName  = "org.opencontainers.image.ref.name"
	annoSource   = "org.opencontainers.image.source"
	annoRevision = "org.opencontainers.image.revision"
	annoVersion  = "org.opencontainers.image.version"
	annoCreated  = "org.opencontainers.image.created"
	annoTitle    = "org.opencontainers.image.title"
	annoLicenses = "org.opencontainers.image.licenses"
	// annoRepository names the repository the image is published under
	// by default (the chart's image.repository); push replaces its
	// prefix with the registry's.
	annoRepository = "io.joulie.image.repository"
	// annoCAVersion is the version of Debian's ca-certificates the CA
	// bundle came from.
	annoCAVersion = "io.joulie.ca-certificates.version"
)

// buildSpec is everything one `imagebuild build` run needs.
type buildSpec struct {
	programs  []string
	platforms []v1.Platform
	// binDir holds <os>_<arch>/<program> for every program and platform.
	binDir string
	out    string
	// repoPrefix/<program> is the repository each image is named after.
	repoPrefix string
	tags       []string
	caDir      string
	caVersion  string
	source     string
	revision   string
	version    string
	licenses   string
	epoch      time.Time
}

func (s buildSpec) check() error {
	var problems []string
	if len(s.programs) == 0 {
		problems = append(problems, "no --programs given")
	}
	if len(s.platforms) == 0 {
		problems = append(problems, "no --platforms given")
	}
	if len(s.tags) == 0 {
		problems = append(problems, "no --tags given (the chart pulls its appVersion)")
	}
	for _, tag := range s.tags {
		if !validTag(tag) {
			problems = append(problems, fmt.Sprintf("tag %q is not a valid image tag (letters, digits, '_', '.', '-', at most 128, not starting with '.' or '-')", tag))
		}
	}
	for name, v := range map[string]string{"--bin-dir": s.binDir, "--out": s.out, "--repository-prefix": s.repoPrefix, "--revision": s.revision, "--version": s.version, "--source": s.source} {
		if v == "" {
			problems = append(problems, name+" is empty")
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// validTag follows the distribution spec's tag grammar.
func validTag(tag string) bool {
	if tag == "" || len(tag) > 128 || tag[0] == '.' || tag[0] == '-' {
		return false
	}
	for _, r := range tag {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// build writes one OCI layout per program into s.out/<program>: an image
// index over s.platforms, listed in the layout's index.json once per tag.
// Each program's layout is written beside its final place and renamed
// into it, so a failed build leaves the previous one whole.
func build(s buildSpec, log io.Writer) error {
	if err := s.check(); err != nil {
		return err
	}
	caPEM, nCerts, err := readCABundle(s.caDir)
	if err != nil {
		return err
	}
	base, err := tarLayer(baseEntries(caPEM), s.epoch)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.out, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	// Every image is assembled, and every binary checked, before any
	// layout is replaced.
	indexes := make([]v1.ImageIndex, len(s.programs))
	for i, prog := range s.programs {
		if indexes[i], err = programIndex(s, prog, base); err != nil {
			return err
		}
	}
	for i, prog := range s.programs {
		idx := indexes[i]
		dir := filepath.Join(s.out, prog)
		if err := writeLayout(dir, idx, s.tags); err != nil {
			return fmt.Errorf("write the OCI layout of %s: %w", prog, err)
		}
		d, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "%s %s:%s@%s (%s; %d CA certificates)\n", dir, s.repoPrefix+"/"+prog, strings.Join(s.tags, ","), d, platformList(s.platforms), nCerts)
	}
	return nil
}

func platformList(ps []v1.Platform) string {
	var names []string
	for _, p := range ps {
		names = append(names, p.OS+"/"+p.Architecture)
	}
	return strings.Join(names, ",")
}

// programIndex is prog's multi-platform image index.
func programIndex(s buildSpec, prog string, base []byte) (v1.ImageIndex, error) {
	anno := map[string]string{
		annoSource:     s.source,
		annoRevision:   s.revision,
		annoVersion:    s.version,
		annoCreated:    s.epoch.UTC().Format(time.RFC3339),
		annoTitle:      prog,
		annoRepository: s.repoPrefix + "/" + prog,
	}
	if s.licenses != "" {
		anno[annoLicenses] = s.licenses
	}
	if s.caVersion != "" {
		anno[annoCAVersion] = s.caVersion
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range s.platforms {
		img, err := programImage(s, prog, p, base, anno)
		if err != nil {
			return nil, err
		}
		plat := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plat}})
	}
	return mutate.Annotations(idx, anno).(v1.ImageIndex), nil
}

// programImage is prog's image for one platform: the shared base layer,
// then a layer with the static binary alone.
func programImage(s buildSpec, prog string, p v1.Platform, base []byte, anno map[string]string) (v1.Image, error) {
	binPath := filepath.Join(s.binDir, p.OS+"_"+p.Architecture, prog)
	bin, err := os.ReadFile(binPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no %s binary for %s/%s at %s: build it first (make images does, with CGO_ENABLED=0 GOOS=%s GOARCH=%s)", prog, p.OS, p.Architecture, binPath, p.OS, p.Architecture)
		}
		return nil, fmt.Errorf("read the %s binary: %w", prog, err)
	}
	if err := checkStatic(bin, p); err != nil {
		return nil, fmt.Errorf("%s: %w", binPath, err)
	}
	progTar, err := tarLayer([]entry{{name: binDir + "/" + prog, mode: 0o755, data: bin}}, s.epoch)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: s.epoch.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: layerOf(base), MediaType: types.OCILayer,
			History: v1.History{Created: created, CreatedBy: "imagebuild: user " + imageUser + ", CA certificates of Debian's ca-certificates " + s.caVersion, Comment: "base"}},
		mutate.Addendum{Layer: layerOf(progTar), MediaType: types.OCILayer,
			History: v1.History{Created: created, CreatedBy: "imagebuild: " + binDir + "/" + prog + " (CGO_ENABLED=0)"}},
	)
	if err != nil {
		return nil, fmt.Errorf("assemble the %s image: %w", prog, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = created
	cf.Author = ""
	cf.Config = v1.Config{
		// The chart gives only args: the program is the entrypoint.
		Entrypoint: []string{binDir + "/" + prog},
		User:       fmt.Sprintf("%d:%d", imageUID, imageGID),
		WorkingDir: "/",
		Env:        []string{"PATH=" + binDir, "SSL_CERT_FILE=" + caBundle},
		Labels:     anno,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, anno).(v1.Image), nil
}

// layerOf is the gzip-compressed layer of tar; go-containerregistry's
// gzip has no timestamps or names in its header, so the same tar gives
// the same blob.
func layerOf(tar []byte) v1.Layer {
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		// LayerFromOpener only fails when the opener does.
		panic(err)
	}
	return l
}

// elfMachine is the ELF machine of each GOARCH the images are built for.
var elfMachine = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// checkStatic refuses a binary that would not run in the image: built
// for another architecture, or dynamically linked (there is no libc in
// the image; CGO_ENABLED=0 makes Go's binaries static).
func checkStatic(bin []byte, p v1.Platform) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	if want, ok := elfMachine[p.Architecture]; !ok {
		return fmt.Errorf("architecture %s is not one imagebuild knows", p.Architecture)
	} else if f.Machine != want {
		return fmt.Errorf("built for %s, not %s/%s: build with GOOS=%s GOARCH=%s", f.Machine, p.OS, p.Architecture, p.OS, p.Architecture)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (it names an ELF interpreter); the image has no libc: build with CGO_ENABLED=0")
		}
	}
	return nil
}

// writeLayout writes idx as the OCI layout dir, its index.json listing
// idx once per tag (org.opencontainers.image.ref.name), the layout's
// convention for naming what it holds.
func writeLayout(dir string, idx v1.ImageIndex, tags []string) error {
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	for _, tag := range tags {
		if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{annoRefName: tag})); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}
