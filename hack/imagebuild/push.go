package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pushSpec is everything one `imagebuild push` run needs.
type pushSpec struct {
	programs []string
	// layouts holds <program>/, as build writes it.
	layouts string
	// registry is host[:port]/path; each program goes to registry/<program>.
	registry string
	// insecure allows plain HTTP (a registry on localhost without TLS).
	insecure bool
	keychain authn.Keychain
}

// push uploads every program's image index under each tag its layout
// lists, with the credentials of s.keychain (the Docker config file's, as
// docker login and podman login write it).
func push(ctx context.Context, s pushSpec, log io.Writer) error {
	if s.registry == "" {
		return errors.New("no registry given: make push REGISTRY=host/path (for example registry.example.com/joulie)")
	}
	if strings.Contains(s.registry, "://") {
		return fmt.Errorf("registry %q is a URL; give host[:port]/path, without the scheme", s.registry)
	}
	if len(s.programs) == 0 {
		return errors.New("no --programs given")
	}
	var opts []name.Option
	if s.insecure {
		opts = append(opts, name.Insecure)
	}
	// Read every layout before sending anything, so that a missing one
	// does not leave a registry with half the programs.
	type upload struct {
		idx  v1.ImageIndex
		refs []name.Tag
	}
	var uploads []upload
	for _, prog := range s.programs {
		dir := filepath.Join(s.layouts, prog)
		idx, tags, err := readLayout(dir)
		if err != nil {
			return fmt.Errorf("%s: %w (run make images first)", dir, err)
		}
		u := upload{idx: idx}
		for _, tag := range tags {
			ref, err := name.NewTag(strings.TrimSuffix(s.registry, "/")+"/"+prog+":"+tag, opts...)
			if err != nil {
				return fmt.Errorf("registry %q does not make an image reference: %w", s.registry, err)
			}
			u.refs = append(u.refs, ref)
		}
		uploads = append(uploads, u)
	}
	for _, u := range uploads {
		d, err := u.idx.Digest()
		if err != nil {
			return err
		}
		for _, ref := range u.refs {
			if err := remote.WriteIndex(ref, u.idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(s.keychain), remote.WithUserAgent("joulie-imagebuild")); err != nil {
				return fmt.Errorf("push %s: %w (log in with docker login or podman login, or check REGISTRY)", ref, err)
			}
			fmt.Fprintf(log, "pushed %s@%s\n", ref, d)
		}
	}
	return nil
}

// readLayout is the one image index an OCI layout build wrote, and the
// tags its index.json lists it under.
func readLayout(dir string) (v1.ImageIndex, []string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, nil, err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, nil, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, nil, err
	}
	var (
		tags   []string
		digest v1.Hash
	)
	for i, desc := range im.Manifests {
		if i > 0 && desc.Digest != digest {
			return nil, nil, fmt.Errorf("index.json lists two images (%s, %s); imagebuild writes one index per program", digest, desc.Digest)
		}
		digest = desc.Digest
		tag := desc.Annotations[annoRefName]
		if tag == "" {
			return nil, nil, fmt.Errorf("index.json lists %s without a tag (%s)", desc.Digest, annoRefName)
		}
		tags = append(tags, tag)
	}
	if len(tags) == 0 {
		return nil, nil, errors.New("index.json lists no image")
	}
	idx, err := top.ImageIndex(digest)
	if err != nil {
		return nil, nil, err
	}
	return idx, tags, nil
}
