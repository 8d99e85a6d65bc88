package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"
)

// krewManifest is the part of a krew Plugin manifest the test reads.
type krewManifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
			Bin string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// The krew manifest, the release script and the program agree: the
// plugin's name is the binary's without kubectl-, every platform the
// script builds is offered under the tarball name it writes, and each
// unpacks and runs the binary this directory builds.
func TestKrewManifest(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Base(wd) // make build names the binary after its directory
	root := filepath.Join(wd, "..", "..", "..")
	if use := newRootCommand(genericiooptions.NewTestIOStreamsDiscard()).Use; use != bin {
		t.Errorf("the command calls itself %q, the binary is %q", use, bin)
	}

	raw, err := os.ReadFile(filepath.Join(root, "packaging", "krew", "joulie.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m krewManifest
	if err := yaml.UnmarshalStrict(raw, &m); err != nil {
		t.Fatalf("packaging/krew/joulie.yaml: %v", err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" {
		t.Errorf("manifest is %s %s, want a krew v1alpha2 Plugin", m.APIVersion, m.Kind)
	}
	if want := strings.TrimPrefix(bin, "kubectl-"); m.Metadata.Name != want {
		t.Errorf("plugin name %q, want %q: kubectl finds %s as the plugin %s", m.Metadata.Name, want, bin, want)
	}
	if m.Spec.Version != "${VERSION}" || m.Spec.Homepage == "" || m.Spec.ShortDescription == "" || m.Spec.Description == "" {
		t.Errorf("spec lacks a field or its placeholder: %+v", m.Spec)
	}

	script, err := os.ReadFile(filepath.Join(root, "hack", "package-plugin.sh"))
	if err != nil {
		t.Fatal(err)
	}
	platforms := regexp.MustCompile(`(?m)^PLATFORMS="([^"]*)"`).FindSubmatch(script)
	if platforms == nil {
		t.Fatal("hack/package-plugin.sh sets no PLATFORMS")
	}
	for _, want := range []string{
		"./controller/cmd/" + bin,
		`-o "$stage/` + bin + `"`,
		"tarball=" + bin + "_${VERSION}_${os}_${arch}.tar.gz",
		"-cf - " + bin + " LICENSE",
	} {
		if !strings.Contains(string(script), want) {
			t.Errorf("hack/package-plugin.sh lacks %q", want)
		}
	}

	var offered []string
	for _, p := range m.Spec.Platforms {
		os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		offered = append(offered, os+"/"+arch)
		if want := "${BASE_URL}/" + bin + "_${VERSION}_" + os + "_" + arch + ".tar.gz"; p.URI != want {
			t.Errorf("%s/%s: uri %q, want %q", os, arch, p.URI, want)
		}
		if want := "${SHA256_" + os + "_" + arch + "}"; p.SHA256 != want {
			t.Errorf("%s/%s: sha256 %q, want the placeholder %q", os, arch, p.SHA256, want)
		}
		if p.Bin != bin {
			t.Errorf("%s/%s: bin %q, want %q", os, arch, p.Bin, bin)
		}
		var from []string
		for _, f := range p.Files {
			from = append(from, f.From)
		}
		if !slices.Contains(from, bin) || !slices.Contains(from, "LICENSE") {
			t.Errorf("%s/%s: files from %v, want %s and LICENSE", os, arch, from, bin)
		}
	}
	built := strings.Fields(string(platforms[1]))
	slices.Sort(built)
	slices.Sort(offered)
	if !slices.Equal(built, offered) {
		t.Errorf("the manifest offers %v, the script builds %v", offered, built)
	}
}
