package main

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestSupport lists the packages the shipped binary is
// built from, as the go command resolves them for this build, and fails
// on any test support: a simulator, a fake, or a *test package such as
// httpbackendtest, rapltest or nvmltest. Those exist for tests; linking
// one would ship test behaviour to every host.
func TestBinaryLinksNoTestSupport(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "osusergo", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	var linked int
	for _, pkg := range strings.Fields(string(out)) {
		if !strings.HasPrefix(pkg, "joulie.io/") {
			continue
		}
		linked++
		base := path.Base(pkg)
		if strings.HasPrefix(pkg, "joulie.io/joulie/test/") || base == "simulator" ||
			strings.HasPrefix(base, "fake") || strings.HasSuffix(base, "test") {
			t.Errorf("joulie-agentd links test support %s: import it from _test.go files only", pkg)
		}
	}
	// The list is the real one, not an empty answer that passes.
	if linked < 10 {
		t.Fatalf("go list named only %d joulie.io packages:\n%s", linked, out)
	}
}
