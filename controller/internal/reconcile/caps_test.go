package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/plan"
	"joulie.io/joulie/pkg/plan/plantest"
)

// In capMode pays the profile the controller applies carries the cap
// that pays and its reason, the metrics show both, and a change of the
// measured draw that leaves the choice alone writes nothing: the reason
// holds no live reading.
func TestCapThatPaysReachesTheProfileAndMetrics(t *testing.T) {
	s := settings(plan.PolicyStaticPartition)
	s.StaticHPFrac, s.CapMode = 0, plan.CapModePays
	reg := prometheus.NewRegistry()
	f := newFixture(t, s, t0)
	f.ctrl.opts.Metrics = NewMetrics(reg)
	node := plantest.CPUNode("cpu-a", map[string]string{joulie.LabelPowerProfile: "eco", joulie.LabelDraining: "false"})
	if _, err := f.kube.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reading := func(w float64) *joulie.NodePowerProfile {
		return &joulie.NodePowerProfile{ObjectMeta: metav1.ObjectMeta{Name: "cpu-a"},
			Status: joulie.NodePowerProfileStatus{MeasuredPower: &joulie.MeasuredPower{NodePowerWatts: w, Time: metav1.NewTime(t0.Add(-time.Minute))}}}
	}
	f.add(t, node, reading(310))
	if err := f.ctrl.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	var b joulie.NodePowerProfile
	applied(t, f.jc.Actions(), "nodepowerprofiles", "", "cpu-a", &b)
	if b.Spec.CPU == nil || b.Spec.CPU.Reason != "uncapped: draw under the 480 W eco cap" || *b.Spec.CPU.PackagePowerCapPctOfMax != 100 {
		t.Fatalf("cpu-a applied as %+v", b.Spec.CPU)
	}
	want := `
# HELP joulie_controller_node_cap_pct_of_max The cap that pays (capMode pays) chosen for an eco node's CPU packages or GPUs, in percent of their maximum (100: uncapped), with the kind of reason: not-binding, not-paying, optimum, floor, performance-pods, no-work or unknown.
# TYPE joulie_controller_node_cap_pct_of_max gauge
joulie_controller_node_cap_pct_of_max{device="cpu",node="cpu-a",reason="not-binding"} 100
# HELP joulie_controller_node_cap_draw_watts The projected uncapped draw of an eco node's CPU packages or GPUs that the cap that pays weighed.
# TYPE joulie_controller_node_cap_draw_watts gauge
joulie_controller_node_cap_draw_watts{device="cpu",node="cpu-a"} 310
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "joulie_controller_node_cap_pct_of_max", "joulie_controller_node_cap_draw_watts"); err != nil {
		t.Error(err)
	}

	// Steady, then the draw moves within the choice: no write.
	f.settle(t, t0)
	p, _ := f.ctrl.profiles.Get("cpu-a")
	p = p.DeepCopy()
	p.Status = reading(330).Status
	f.add(t, p)
	f.kube.ClearActions()
	f.jc.ClearActions()
	if err := f.ctrl.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := writes(f.kube.Actions(), f.jc.Actions()); len(got) != 1 || got[0] != "patch nodetwins/status" {
		t.Fatalf("a draw moving within the choice wrote %v, want only the twin's measured power", got)
	}

	// The node fills up: the cap that pays is the optimum, 67%.
	p.Status = reading(790).Status
	f.add(t, p)
	f.jc.ClearActions()
	if err := f.ctrl.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	applied(t, f.jc.Actions(), "nodepowerprofiles", "", "cpu-a", &b)
	if b.Spec.CPU.Reason != "capped at 67%: energy optimum for standard work" || *b.Spec.CPU.PackagePowerCapPctOfMax != 67 {
		t.Fatalf("cpu-a full applied as %+v", b.Spec.CPU)
	}
	want = `
# HELP joulie_controller_node_cap_pct_of_max The cap that pays (capMode pays) chosen for an eco node's CPU packages or GPUs, in percent of their maximum (100: uncapped), with the kind of reason: not-binding, not-paying, optimum, floor, performance-pods, no-work or unknown.
# TYPE joulie_controller_node_cap_pct_of_max gauge
joulie_controller_node_cap_pct_of_max{device="cpu",node="cpu-a",reason="optimum"} 67
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "joulie_controller_node_cap_pct_of_max"); err != nil {
		t.Error(err)
	}
}
