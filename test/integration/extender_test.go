package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/harness"
)

// extenderNode is a test node and the twin the controller would write
// for it (nil: no twin, the node is known by its labels only).
type extenderNode struct {
	suffix   string
	profile  string // joulie.io/power-profile label
	draining bool
	twin     *joulie.NodeTwinStatus
}

func twinStatus(class joulie.SchedulableClass, cappedW, measuredW, cooling float64) *joulie.NodeTwinStatus {
	return &joulie.NodeTwinStatus{
		SchedulableClass:            class,
		PredictedPowerHeadroomScore: 80,
		PredictedCoolingStressScore: cooling,
		PowerMeasurement: &joulie.PowerMeasurement{
			Source: joulie.SourceAgent, MeasuredNodePowerW: measuredW, NodeCappedPowerW: cappedW, NodeTdpW: cappedW * 1.5,
		},
		LastUpdated: metav1.Now(),
	}
}

// The cluster of the test, and what the extender makes of it for a
// standard pod that adds no marginal power (no NodeHardware):
//
//	perf-1, perf-2: performance, nearly at their caps (headroom 5 and
//	  10), so performance pressure is 92.5 and a standard pod loses 27.75
//	  points there: score 0 → priority 0;
//	eco-1, eco-2: eco, half and two-thirds of their budget free:
//	  50 × 0.7 + 12 + 10 = 57 → 6, and 66.7 × 0.7 + 12 + 10 = 68.7 → 7;
//	drain-1: draining, little headroom: 10 × 0.7 + 12 = 19 → 2;
//	eco-label: no twin, labelled eco: neutral 50 → 5.
//
// Performance pods may only use perf-1 and perf-2: every other node is
// eco or draining by its twin or its label, and the eco nodes would score
// higher than the performance ones if the filter let them through.
var extenderCluster = []extenderNode{
	{"perf-1", "performance", false, twinStatus(joulie.ClassPerformance, 1000, 950, 20)},
	{"perf-2", "performance", false, twinStatus(joulie.ClassPerformance, 1000, 900, 20)},
	{"eco-1", "eco", false, twinStatus(joulie.ClassEco, 600, 300, 20)},
	{"eco-2", "eco", false, twinStatus(joulie.ClassEco, 600, 200, 20)},
	{"drain-1", "performance", true, twinStatus(joulie.ClassDraining, 1000, 900, 20)},
	{"eco-label", "eco", false, nil},
}

// The extender runs as the chart's ServiceAccount, with only the chart's
// RBAC, and the scheduler follows the extender block the chart ships: its
// verbs, ignorable and managed resources as rendered. The test sets only
// where the extender listens, a weight that lets its scores dominate the
// scheduler's own on these equal nodes, a longer timeout for the race
// detector, and nodeCacheCapable both ways. The extender scores in
// headroom mode, the design's formula, whose steering of standard pods
// this test checks; pack_test.go checks pack mode.
func TestExtenderWithTheRealScheduler(t *testing.T) {
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := cp.WriteKubeconfig(t, cp.ServiceAccountConfig(t, harness.ControllerNamespace, chartExtenderAccount))
	chartExtender := chartSchedulerExtender(t)
	if !chartExtender.Ignorable {
		t.Fatal("the chart's scheduler configuration must make the extender ignorable")
	}

	for _, nodeCacheCapable := range []bool{true, false} {
		t.Run(fmt.Sprintf("nodeCacheCapable=%v", nodeCacheCapable), func(t *testing.T) {
			group := fmt.Sprintf("jx-cache-%v", nodeCacheCapable)
			name := func(suffix string) string { return group + "-" + suffix }
			var perfNodes, ecoNodes []string
			for _, n := range extenderCluster {
				labels := map[string]string{"joulie.test/group": group, joulie.LabelPowerProfile: n.profile}
				if n.draining {
					labels[joulie.LabelDraining] = "true"
				}
				cp.CreateReadyNode(t, name(n.suffix), labels, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")})
				if n.twin != nil {
					createTwin(t, admin, name(n.suffix), n.twin)
				}
				switch {
				case n.twin != nil && n.twin.SchedulableClass == joulie.ClassPerformance:
					perfNodes = append(perfNodes, name(n.suffix))
				case n.twin != nil && n.twin.SchedulableClass == joulie.ClassEco:
					ecoNodes = append(ecoNodes, name(n.suffix))
				}
			}

			ext := startExtenderWith(t, kubeconfig, "--log-level", "debug", "--scoring-mode", "headroom")
			ext.waitForTwins(t, perfNodes[0], ecoNodes[0], name("drain-1"))

			extender := *chartExtender.DeepCopy()
			extender.URLPrefix = ext.url
			extender.Weight = 5
			extender.NodeCacheCapable = nodeCacheCapable
			extender.HTTPTimeout = metav1.Duration{Duration: 10 * time.Second}
			cp.StartScheduler(t, &schedulerconfigv1.KubeSchedulerConfiguration{
				Extenders: []schedulerconfigv1.Extender{extender},
			})

			// Performance pods land only on performance nodes.
			var perfPods, stdPods []*corev1.Pod
			for i := range 4 {
				perfPods = append(perfPods, cp.CreatePod(t, groupPod(group, fmt.Sprintf("%s-perf-%d", group, i), "performance")))
			}
			for _, p := range perfPods {
				if got := cp.WaitForPodBound(t, p.Namespace, p.Name, 60*time.Second); !slices.Contains(perfNodes, got) {
					t.Errorf("performance pod %s bound to %s, want one of %v", p.Name, got, perfNodes)
				}
			}

			// Standard pods prefer eco nodes while the performance nodes are
			// congested.
			for i := range 4 {
				stdPods = append(stdPods, cp.CreatePod(t, groupPod(group, fmt.Sprintf("%s-std-%d", group, i), "")))
			}
			for _, p := range stdPods {
				if got := cp.WaitForPodBound(t, p.Namespace, p.Name, 60*time.Second); !slices.Contains(ecoNodes, got) {
					t.Errorf("standard pod %s bound to %s, want one of the eco nodes %v", p.Name, got, ecoNodes)
				}
			}

			// Once the performance nodes go idle, the pressure is gone and
			// standard pods go where the headroom is: now the performance
			// nodes, at 100 × 0.7 + 12 = 82 → 8.
			for _, n := range perfNodes {
				st := twinStatus(joulie.ClassPerformance, 1000, 0, 20)
				updateTwin(t, admin, n, st)
			}
			ext.waitForPressure(t, 0)
			idle := cp.CreatePod(t, groupPod(group, group+"-std-idle", ""))
			if got := cp.WaitForPodBound(t, idle.Namespace, idle.Name, 60*time.Second); !slices.Contains(perfNodes, got) {
				t.Errorf("with idle performance nodes, standard pod bound to %s, want one of %v", got, perfNodes)
			}

			// The scheduler really asked the extender, which turned nodes away.
			m := ext.metrics(t)
			for _, want := range []string{
				`joulie_extender_request_duration_seconds_count{verb="filter"}`,
				`joulie_extender_request_duration_seconds_count{verb="prioritize"}`,
				`joulie_extender_filtered_nodes_total{reason="twin_eco"}`,
				`joulie_extender_filtered_nodes_total{reason="twin_draining"}`,
				`joulie_extender_filtered_nodes_total{reason="label_eco"}`,
			} {
				if v := m[want]; v <= 0 {
					t.Errorf("%s = %v, want > 0", want, v)
				}
			}
			if v := m[`joulie_extender_request_errors_total{reason="decode",verb="filter"}`]; v != 0 {
				t.Errorf("the extender refused %v filter calls", v)
			}

			// With the extender down, scheduling goes on without it
			// (ignorable: true), even for a performance pod.
			ext.stop(t)
			late := cp.CreatePod(t, groupPod(group, group+"-while-down", "performance"))
			got := cp.WaitForPodBound(t, late.Namespace, late.Name, 60*time.Second)
			t.Logf("with the extender down, a performance pod was bound to %s", got)
			if log, _ := os.ReadFile(filepath.Join(t.ArtifactDir(), "scheduler.log")); !strings.Contains(string(log), "Skipping extender") {
				t.Errorf("the scheduler log does not say it skipped the unreachable extender")
			}
		})
	}
}

// groupPod is a pod kept to the group's nodes, small enough that the
// scheduler's own scores see the nodes as equal.
func groupPod(group, name, class string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "jx-workloads"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"joulie.test/group": group},
			Containers: []corev1.Container{{
				Name:      "main",
				Image:     "registry.invalid/joulie/idle:0",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
			}},
		},
	}
	if class != "" {
		p.Annotations = map[string]string{joulie.AnnotationWorkloadClass: class}
	}
	return p
}

// createTwin writes a NodeTwin's status as the controller does, through
// the status subresource, and deletes the twin when t ends.
func createTwin(t testing.TB, admin versioned.Interface, node string, status *joulie.NodeTwinStatus) {
	t.Helper()
	ctx := t.Context()
	twins := admin.JoulieV1alpha1().NodeTwins()
	created, err := twins.Create(ctx, &joulie.NodeTwin{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create NodeTwin %s: %v", node, err)
	}
	t.Cleanup(func() { _ = twins.Delete(context.Background(), node, metav1.DeleteOptions{}) })
	created.Status = *status
	if _, err := twins.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write NodeTwin %s status: %v", node, err)
	}
}

// updateTwin replaces a NodeTwin's status.
func updateTwin(t *testing.T, admin versioned.Interface, node string, status *joulie.NodeTwinStatus) {
	t.Helper()
	twins := admin.JoulieV1alpha1().NodeTwins()
	cur, err := twins.Get(t.Context(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status = *status
	if _, err := twins.UpdateStatus(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update NodeTwin %s status: %v", node, err)
	}
}

// extenderProcess is a running joulie-extender.
type extenderProcess struct {
	url     string
	cmd     *exec.Cmd
	logPath string
	once    sync.Once
}

// startExtender runs the joulie-extender binary against the control plane
// until t ends, logging at debug level for failing tests, and waits until
// it has synced its cache.
func startExtender(t testing.TB, kubeconfig string) *extenderProcess {
	t.Helper()
	return startExtenderWith(t, kubeconfig, "--log-level", "debug")
}

// startExtenderWith is startExtender with the extender's flags other than
// --kubeconfig and --addr.
func startExtenderWith(t testing.TB, kubeconfig string, flags ...string) *extenderProcess {
	t.Helper()
	return startExtenderEnv(t, kubeconfig, nil, flags...)
}

// startExtenderEnv is startExtenderWith with env added to the
// extender's environment.
func startExtenderEnv(t testing.TB, kubeconfig string, env []string, flags ...string) *extenderProcess {
	t.Helper()
	return startExtenderOn(t, "127.0.0.1", kubeconfig, env, flags...)
}

// startExtenderOn is startExtenderEnv serving on host, an address of
// this machine.
func startExtenderOn(t testing.TB, host, kubeconfig string, env []string, flags ...string) *extenderProcess {
	t.Helper()
	bin := cp.BuildProgram(t, "joulie.io/joulie/extender/cmd/joulie-extender")
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	e := &extenderProcess{url: "http://" + addr, logPath: filepath.Join(t.TempDir(), "extender.log")}
	logf, err := os.Create(e.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	e.cmd = exec.Command(bin, append([]string{"--kubeconfig", kubeconfig, "--addr", addr}, flags...)...)
	e.cmd.Stdout, e.cmd.Stderr = logf, logf
	if env != nil {
		e.cmd.Env = append(os.Environ(), env...)
	}
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.stop(t)
		if t.Failed() {
			b, _ := os.ReadFile(e.logPath)
			t.Logf("joulie-extender log:\n%s", b)
		}
	})

	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(e.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("joulie-extender not healthy within 30 s (last error %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the process with SIGTERM, as Kubernetes does, and checks it
// exits cleanly.
func (e *extenderProcess) stop(t testing.TB) {
	e.once.Do(func() {
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		if err := e.cmd.Wait(); err != nil {
			t.Errorf("joulie-extender exited with %v after SIGTERM", err)
		}
	})
}

// debugScoring is the part of /debug/scoring the test reads.
type debugScoring struct {
	ScoringMode  string  `json:"scoringMode"`
	PerfPressure float64 `json:"perfPressure"`
	Nodes        []struct {
		NodeName       string  `json:"nodeName"`
		HasTwin        bool    `json:"hasTwin"`
		AllocatableCPU float64 `json:"allocatableCpu"`
		RequestedCPU   float64 `json:"requestedCpu"`
		ProfileLabel   string  `json:"powerProfileLabel"`
		DrainingLabel  string  `json:"drainingLabel"`
	} `json:"nodes"`
}

func (e *extenderProcess) debugScoring(t testing.TB) debugScoring {
	t.Helper()
	resp, err := http.Get(e.url + "/debug/scoring")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var dbg debugScoring
	if err := json.NewDecoder(resp.Body).Decode(&dbg); err != nil {
		t.Fatal(err)
	}
	return dbg
}

// waitForPressure waits until the extender sees the performance pressure
// want.
func (e *extenderProcess) waitForPressure(t testing.TB, want float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := e.debugScoring(t).PerfPressure
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("performance pressure %v after 30 s, want %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitForTwins waits until /debug/scoring shows a twin for each node.
func (e *extenderProcess) waitForTwins(t testing.TB, nodes ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		dbg := e.debugScoring(t)
		seen := 0
		for _, n := range dbg.Nodes {
			if n.HasTwin && slices.Contains(nodes, n.NodeName) {
				seen++
			}
		}
		if seen == len(nodes) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the extender shows %d of the twins of %v after 30 s", seen, nodes)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitForFill waits until /debug/scoring shows node with allocatable
// and requested CPU as given: the extender has seen the Node and the
// pods bound to it.
func (e *extenderProcess) waitForFill(t testing.TB, node string, allocatableCPU, requestedCPU float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, n := range e.debugScoring(t).Nodes {
			if n.NodeName == node && n.AllocatableCPU == allocatableCPU && n.RequestedCPU == requestedCPU {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the extender does not show %s with %v of %v cores requested after 30 s: %+v", node, requestedCPU, allocatableCPU, e.debugScoring(t).Nodes)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metrics scrapes /metrics into a map from series (name and labels, as
// printed) to value.
func (e *extenderProcess) metrics(t testing.TB) map[string]float64 {
	t.Helper()
	resp, err := http.Get(e.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		var v float64
		if _, err := fmt.Sscan(line[i+1:], &v); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}
