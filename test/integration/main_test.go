package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"joulie.io/joulie/test/harness"
)

// cp is the control plane every test of the package shares. Tests that
// create cluster-scoped objects name them after the test so they do not
// collide.
var cp *harness.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(harness.RunSuite(m, harness.Options{Dir: os.Getenv("JOULIE_HARNESS_DIR")}, func(c *harness.ControlPlane) error {
		cp = c
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := installChart(ctx, c); err != nil {
			return fmt.Errorf("install the Helm chart: %w", err)
		}
		return nil
	}))
}
