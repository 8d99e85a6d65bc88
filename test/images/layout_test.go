package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The layout is read here with encoding/json and archive/tar rather than
// the library that wrote it, so that a misreading shared by writer and
// reader cannot hide.

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
}

func (p platform) String() string { return p.OS + "/" + p.Architecture }

type index struct {
	MediaType   string            `json:"mediaType"`
	Manifests   []descriptor      `json:"manifests"`
	Annotations map[string]string `json:"annotations"`
}

type manifest struct {
	MediaType   string            `json:"mediaType"`
	Config      descriptor        `json:"config"`
	Layers      []descriptor      `json:"layers"`
	Annotations map[string]string `json:"annotations"`
}

type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Env        []string          `json:"Env"`
		WorkingDir string            `json:"WorkingDir"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// file is one entry of an image's layers (the last layer's wins).
type file struct {
	header *tar.Header
	data   []byte
}

// image is one platform's image of a program.
type image struct {
	platform platform
	config   imageConfig
	files    map[string]file
}

// built is one program's layout as make images wrote it.
type built struct {
	program string
	dir     string
	tags    []string
	index   index
	images  []image
}

func (b built) annotation(key string) string { return b.index.Annotations[key] }

// readBlob reads a blob of the layout and checks it against its digest.
func readBlob(dir string, d descriptor) ([]byte, error) {
	algo, hexDigest, ok := strings.Cut(d.Digest, ":")
	if !ok || algo != "sha256" {
		return nil, fmt.Errorf("digest %q is not sha256", d.Digest)
	}
	data, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", hexDigest))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != hexDigest || int64(len(data)) != d.Size {
		return nil, fmt.Errorf("blob %s does not match its digest or size", d.Digest)
	}
	return data, nil
}

func readJSON(dir string, d descriptor, v any) error {
	data, err := readBlob(dir, d)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// readBuilt reads dir/program: its index.json must list one image index,
// once per tag.
func readBuilt(dir, program string) (built, error) {
	b := built{program: program, dir: filepath.Join(dir, program)}
	raw, err := os.ReadFile(filepath.Join(b.dir, "index.json"))
	if err != nil {
		return b, fmt.Errorf("%w: run make images", err)
	}
	var top index
	if err := json.Unmarshal(raw, &top); err != nil {
		return b, fmt.Errorf("index.json: %w", err)
	}
	if len(top.Manifests) == 0 {
		return b, errors.New("index.json lists nothing")
	}
	for _, d := range top.Manifests {
		if d.Digest != top.Manifests[0].Digest {
			return b, fmt.Errorf("index.json lists two images, %s and %s", top.Manifests[0].Digest, d.Digest)
		}
		b.tags = append(b.tags, d.Annotations["org.opencontainers.image.ref.name"])
	}
	if top.Manifests[0].MediaType != "application/vnd.oci.image.index.v1+json" {
		return b, fmt.Errorf("index.json lists a %s, not a multi-platform image index", top.Manifests[0].MediaType)
	}
	if err := readJSON(b.dir, top.Manifests[0], &b.index); err != nil {
		return b, err
	}
	for _, d := range b.index.Manifests {
		if d.Platform == nil {
			return b, fmt.Errorf("image %s has no platform", d.Digest)
		}
		img := image{platform: *d.Platform, files: map[string]file{}}
		var m manifest
		if err := readJSON(b.dir, d, &m); err != nil {
			return b, err
		}
		if err := readJSON(b.dir, m.Config, &img.config); err != nil {
			return b, err
		}
		for _, l := range m.Layers {
			if err := readLayer(b.dir, l, img.files); err != nil {
				return b, fmt.Errorf("%s layer %s: %w", img.platform, l.Digest, err)
			}
		}
		b.images = append(b.images, img)
	}
	return b, nil
}

func readLayer(dir string, l descriptor, files map[string]file) error {
	data, err := readBlob(dir, l)
	if err != nil {
		return err
	}
	// gzip(1) inflates: Go's inflate under the race detector takes half
	// a minute for the four images.
	cmd := exec.Command("gzip", "--decompress", "--stdout")
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	tarData, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("gzip --decompress: %w: %s", err, stderr.String())
	}
	tr := tar.NewReader(bytes.NewReader(tarData))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		files["/"+strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")] = file{header: h, data: body}
	}
}

// elfMachines are the ELF machines of the platforms' architectures.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// staticFor says why data is not a static executable for arch, or nil.
func staticFor(data []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not ELF: %w", err)
	}
	defer f.Close()
	if want, ok := elfMachines[arch]; !ok || f.Machine != want {
		return fmt.Errorf("ELF machine %s for architecture %s", f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (it names an ELF interpreter)")
		}
	}
	return nil
}
