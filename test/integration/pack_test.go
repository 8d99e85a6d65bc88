package integration

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/harness"
)

// The scheduler configuration the chart ships, whole (its profile's
// MostAllocated NodeResourcesFit and the extender at the chart's weight),
// run by the real kube-scheduler with the real extender under the chart's
// ServiceAccount. Only the extender's address and, for the race detector,
// its timeout are the test's.
//
// Two performance nodes of 64 cores and 256Gi: busy holds a pod of 40
// cores and 160Gi and draws 800 of its 1000 W; idle holds 4 cores and
// 16Gi and draws 100 W. The pods ask for 4 cores and 16Gi, so each node's
// CPU and memory stay equally full and NodeResourcesBalancedAllocation
// scores both alike.
//
// In pack mode a standard pod lands on busy, the fuller node: the
// extender's fill (44/64: priority 5, against 1 on idle, after the
// performance pressure of (80 + 10) / 2 = 45) agrees with MostAllocated.
// A performance pod then lands on busy too, which it fills to 48/64.
// In pack-standard mode the standard pod lands on busy as well, and the
// performance pod on idle: the extender's power headroom (busy 20: 14 +
// 12 = 26, priority 3; idle 90: 63 + 12 = 75, priority 8, × 10 × 2 = 100
// points apart) outweighs MostAllocated's preference for busy (75 against
// 12, 63 points). At the extender weight of 1 it would not (50 against
// 63). In headroom mode the extender sends the standard pod to idle too,
// against MostAllocated: the mode, not the profile alone, decides.
func TestChartProfilePacksStandardPodsAndKeepsHeadroom(t *testing.T) {
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := cp.WriteKubeconfig(t, cp.ServiceAccountConfig(t, harness.ControllerNamespace, chartExtenderAccount))
	chart := chartSchedulerConfiguration(t)
	if len(chart.Profiles) != 1 || len(chart.Extenders) != 1 {
		t.Fatalf("the chart's configuration has %d profiles and %d extenders, want 1 and 1", len(chart.Profiles), len(chart.Extenders))
	}

	for _, tc := range []struct {
		mode     string
		standard string // where the standard pod must land
		perf     string // where the performance pod must, "": not tried
	}{
		{mode: "pack", standard: "busy", perf: "busy"},
		{mode: "pack-standard", standard: "busy", perf: "idle"},
		{mode: "headroom", standard: "idle"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			group := "jx-pack-" + tc.mode
			name := func(suffix string) string { return group + "-" + suffix }
			alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi")}
			for _, n := range []struct {
				suffix    string
				measuredW float64
				cpu, mem  string
			}{{"busy", 800, "40", "160Gi"}, {"idle", 100, "4", "16Gi"}} {
				cp.CreateReadyNode(t, name(n.suffix), map[string]string{"joulie.test/group": group, joulie.LabelPowerProfile: "performance"}, alloc)
				createTwin(t, admin, name(n.suffix), twinStatus(joulie.ClassPerformance, 1000, n.measuredW, 20))
				// Bound already, as a running workload would be.
				filler := sizedPod(group, name(n.suffix+"-filler"), "", n.cpu, n.mem)
				filler.Spec.NodeName = name(n.suffix)
				cp.CreatePod(t, filler)
			}

			ext := startExtenderWith(t, kubeconfig, "--log-level", "debug", "--scoring-mode", tc.mode)
			ext.waitForTwins(t, name("busy"), name("idle"))
			ext.waitForFill(t, name("busy"), 64, 40)
			ext.waitForFill(t, name("idle"), 64, 4)
			if got := ext.debugScoring(t).ScoringMode; got != tc.mode {
				t.Fatalf("the extender scores in mode %q, want %q", got, tc.mode)
			}

			cfg := chart.DeepCopy()
			cfg.Extenders[0].URLPrefix = ext.url
			cfg.Extenders[0].HTTPTimeout = metav1.Duration{Duration: 10 * time.Second}
			cp.StartScheduler(t, cfg)

			std := cp.CreatePod(t, sizedPod(group, name("standard"), "", "4", "16Gi"))
			if got := cp.WaitForPodBound(t, std.Namespace, std.Name, 60*time.Second); got != name(tc.standard) {
				t.Errorf("%s mode: standard pod bound to %s, want %s", tc.mode, got, name(tc.standard))
			}
			if tc.perf == "" {
				return
			}
			// The extender sees the standard pod on busy before the next
			// one, as it would between two pods minutes apart.
			ext.waitForFill(t, name("busy"), 64, 44)
			perf := cp.CreatePod(t, sizedPod(group, name("performance"), "performance", "4", "16Gi"))
			if got := cp.WaitForPodBound(t, perf.Namespace, perf.Name, 60*time.Second); got != name(tc.perf) {
				t.Errorf("%s mode: performance pod bound to %s, want %s", tc.mode, got, name(tc.perf))
			}
		})
	}
}

// sizedPod is groupPod asking for cpu and memory.
func sizedPod(group, name, class, cpu, mem string) *corev1.Pod {
	p := groupPod(group, name, class)
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
	}
	return p
}
