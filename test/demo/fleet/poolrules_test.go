package fleet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"joulie.io/joulie/test/harness"
)

// The demo's pool identity is granted exactly what the chart's pool role
// grants, so the demo's pool agent meets the rights a pool install gives
// it: a rule the agent needs and the chart lacks fails here, not in a
// cluster.
func TestPoolRulesAreTheCharts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	helm, err := harness.PinnedHelm("../../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := harness.RenderChart(ctx, helm, "../../../packaging/helm/joulie", harness.ChartRelease,
		"--set", "agents.pool.enabled=true", "--show-only", "templates/agent-pool-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	var roles []rbacv1.ClusterRole
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal(doc, &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind == "ClusterRole" {
			roles = append(roles, role)
		}
	}
	if len(roles) != 1 {
		t.Fatalf("the chart's pool RBAC renders %d ClusterRoles, want 1", len(roles))
	}
	if !reflect.DeepEqual(roles[0].Rules, poolRules) {
		t.Fatalf("the demo's pool rules differ from the chart's:\n demo  %+v\n chart %+v", poolRules, roles[0].Rules)
	}
}
