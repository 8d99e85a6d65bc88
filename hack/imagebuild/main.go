// Command imagebuild builds the OCI images of Joulie's in-cluster
// programs (make images) and pushes them (make push), without a container
// engine: each image is the static binary, Debian's CA certificates and a
// non-root user, assembled with go-containerregistry. Same inputs, same
// digests: every timestamp is SOURCE_DATE_EPOCH.
//
// Usage:
//
//	imagebuild build --programs a,b --platforms linux/amd64,linux/arm64 --bin-dir DIR --out DIR --tags 0.1.0,abc1234 ...
//	imagebuild push --programs a,b --layouts DIR --registry host/path
//
// It is its own Go module so that the product's go.mod does not carry
// go-containerregistry and its dependencies.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv))
}

func run(args []string, stdout, stderr io.Writer, env func(string) (string, bool)) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: imagebuild build|push [flags] (imagebuild build -h lists them)")
		return 2
	}
	var err error
	switch args[0] {
	case "build":
		err = runBuild(args[1:], stdout, stderr, env)
	case "push":
		err = runPush(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "imagebuild: unknown command %q: build or push\n", args[0])
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "imagebuild %s: %v\n", args[0], err)
		var u usageError
		if errors.As(err, &u) {
			return 2
		}
		return 1
	}
	return 0
}

type usageError struct{ error }

func list(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func runBuild(args []string, stdout, stderr io.Writer, env func(string) (string, bool)) error {
	fs := flag.NewFlagSet("imagebuild build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		s                         buildSpec
		programs, platforms, tags string
		epochText                 string
	)
	fs.StringVar(&programs, "programs", "", "comma-separated programs, each an image")
	fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch of the image index")
	fs.StringVar(&s.binDir, "bin-dir", "", "directory of <os>_<arch>/<program> static binaries")
	fs.StringVar(&s.out, "out", "dist/images", "directory the OCI layouts go to, one per program")
	fs.StringVar(&s.repoPrefix, "repository-prefix", "joulie", "images are named <prefix>/<program> (the chart's default repositories)")
	fs.StringVar(&tags, "tags", "", "comma-separated tags (the chart's appVersion first)")
	fs.StringVar(&s.caDir, "ca-dir", "/usr/share/ca-certificates/mozilla", "directory of Debian's ca-certificates' .crt files")
	fs.StringVar(&s.caVersion, "ca-version", "", "version of the ca-certificates package, for the label")
	fs.StringVar(&s.source, "source", "", "org.opencontainers.image.source: where the source is")
	fs.StringVar(&s.revision, "revision", "", "org.opencontainers.image.revision: the commit")
	fs.StringVar(&s.version, "version", "", "org.opencontainers.image.version: what the binaries report")
	fs.StringVar(&s.licenses, "licenses", "", "org.opencontainers.image.licenses (SPDX)")
	fs.StringVar(&epochText, "source-date-epoch", "", "every timestamp, in seconds since 1970 (default $SOURCE_DATE_EPOCH)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if epochText == "" {
		epochText, _ = env("SOURCE_DATE_EPOCH")
	}
	if epochText == "" {
		return usageError{errors.New("no --source-date-epoch and no SOURCE_DATE_EPOCH: give the commit's time (git log -1 --format=%ct) so that builds are reproducible")}
	}
	secs, err := strconv.ParseInt(epochText, 10, 64)
	if err != nil || secs < 0 {
		return usageError{fmt.Errorf("source date epoch %q is not whole seconds since 1970", epochText)}
	}
	s.epoch = time.Unix(secs, 0).UTC()
	s.programs, s.tags = list(programs), list(tags)
	for _, p := range list(platforms) {
		plat, err := v1.ParsePlatform(p)
		if err != nil || plat.OS == "" || plat.Architecture == "" {
			return usageError{fmt.Errorf("platform %q is not os/arch (such as linux/arm64)", p)}
		}
		s.platforms = append(s.platforms, *plat)
	}
	if err := s.check(); err != nil {
		return usageError{err}
	}
	return build(s, stdout)
}

func runPush(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("imagebuild push", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		s        pushSpec
		programs string
	)
	fs.StringVar(&programs, "programs", "", "comma-separated programs to push")
	fs.StringVar(&s.layouts, "layouts", "dist/images", "directory of the OCI layouts imagebuild build wrote")
	fs.StringVar(&s.registry, "registry", "", "host[:port]/path; each program goes to <registry>/<program>")
	fs.BoolVar(&s.insecure, "insecure", false, "talk plain HTTP to the registry (a local one without TLS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	s.programs = list(programs)
	s.keychain = authn.DefaultKeychain
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return push(ctx, s, stdout)
}
