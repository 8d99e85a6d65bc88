package harness

import (
	"bytes"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// productModule is the module whose programs tests run as processes.
const productModule = "joulie.io/joulie"

// BuildProgram builds a main package of the product module, for example
// joulie.io/joulie/agentd/cmd/joulie-agentd, and returns the binary's
// path. The build runs in the product module's own directory, with its
// go.mod and go.sum rather than this test module's, and each package is
// built once per control plane; the binaries go away with its directory.
func (cp *ControlPlane) BuildProgram(t testing.TB, pkg string) string {
	t.Helper()
	cp.buildMu.Lock()
	defer cp.buildMu.Unlock()
	if bin, ok := cp.programs[pkg]; ok {
		return bin
	}
	bin := filepath.Join(cp.dir, "bin", path.Base(pkg))
	if err := Build(pkg, bin); err != nil {
		t.Fatal(err)
	}
	cp.programs[pkg] = bin
	return bin
}

// Build builds a main package of the product module into the file bin,
// in the product module's directory, without the race detector and with
// the flags the Makefile ships with, so tests measure the real thing.
func Build(pkg, bin string) error {
	root, err := moduleDir(productModule)
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "osusergo", "-ldflags", "-s -w", "-o", bin, pkg)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s in %s: %w\n%s", pkg, root, err, out.String())
	}
	return nil
}

// moduleDir asks the go command where a module of the build list lives;
// for the product module that is the target of this module's replace.
func moduleDir(module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locate module %s: %w: %s", module, err, stderr.String())
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("locate module %s: go list gave no directory", module)
	}
	return dir, nil
}
