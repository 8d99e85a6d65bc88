package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"joulie.io/joulie/test/harness"
)

// crdDir holds the CRDs the Helm chart installs; the tests check those,
// not copies.
const crdDir = "../../packaging/helm/joulie/crds"

// cp is the control plane every test of the package shares. Tests that
// create cluster-scoped objects name them after the test so they do not
// collide.
var cp *harness.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(harness.RunSuite(m, harness.Options{Dir: os.Getenv("JOULIE_HARNESS_DIR")}, func(c *harness.ControlPlane) error {
		cp = c
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.ApplyCRDs(ctx, crdDir); err != nil {
			return fmt.Errorf("install Joulie CRDs: %w", err)
		}
		if err := c.ApplyFile(ctx, "testdata/agent-access.yaml"); err != nil {
			return fmt.Errorf("install agent RBAC and admission policy: %w", err)
		}
		if err := c.ApplyFile(ctx, "testdata/controller-access.yaml"); err != nil {
			return fmt.Errorf("install controller RBAC: %w", err)
		}
		return nil
	}))
}
