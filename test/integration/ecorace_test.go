package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/harness"
)

// ecoRaceGrace is how long a performance pod the test saw bound may be
// seen under its node's eco cap: the agent's pod watch and one
// enforcement take milliseconds (the pod's arrival kicks a tick); the rest
// is the test's own polling, 100 ms a round, on a loaded machine. Before
// the drain guard and the agent's eco guard, a performance pod on a node
// going eco ran capped for as long as it ran.
const ecoRaceGrace = time.Second

// ecoRacePodLife is how long each performance pod runs once bound: longer
// than the grace, so a pod capped for good is caught, and short enough
// that a node drains within the 3 s its rule_swap_v1 phase plans it eco.
const ecoRacePodLife = 2 * time.Second

// The scheduling path keeps its promise while the controller flips nodes:
// the real kube-scheduler with the real extender places a stream of
// performance pods, each running 2 s, while joulie-controller's
// rule_swap_v1 moves one of two nodes to eco and back every 3 s, and the
// nodes' real agents enforce what the controller publishes. No
// performance pod may be bound for longer than ecoRaceGrace to a node
// whose agent enforces eco.
//
// drain is the product: every move to eco goes through draining, and eco
// is published only once a fresh read finds no performance pod. seed is
// the seeds' guard, which publishes eco on a node while its performance
// pods drain: there the agents' eco guard must hold the caps off, and the
// test checks it did.
//
// JOULIE_ECO_RACE_DURATION sets how long each mode runs (20s, 10s in
// make check's short mode; make test-eco-race runs minutes, repeatedly).
func TestNoPerformancePodRunsUnderAnEcoCap(t *testing.T) {
	d := 20 * time.Second
	if testing.Short() {
		d = 10 * time.Second
	}
	if v := os.Getenv("JOULIE_ECO_RACE_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("JOULIE_ECO_RACE_DURATION=%q: %v", v, err)
		}
	}
	for _, mode := range []string{"drain", "seed"} {
		t.Run(mode, func(t *testing.T) {
			r := runEcoRace(t, mode, d)
			t.Logf("guard %s, %s: %d performance pods bound, %d guard transitions seen, %d agent refusals, longest a bound performance pod ran under eco: %s; the extender's cache followed each label change within %s (at this test's resolution)",
				mode, d, r.bound, r.transitions, r.refusals, r.longest.Round(time.Millisecond), r.extenderLag.Round(time.Millisecond))
			for _, v := range r.violations {
				t.Error(v)
			}
			if r.bound < int(d/time.Second) {
				t.Errorf("only %d performance pods bound in %s: the scheduling path did not run", r.bound, d)
			}
			if r.transitions < int(d/(3*time.Second)) {
				t.Errorf("only %d guard transitions in %s: the controller did not flip the nodes", r.transitions, d)
			}
			// Under the seeds' guard every flip of a node with
			// performance pods publishes eco on it; the agents must have
			// held it off.
			if mode == "seed" && r.refusals == 0 {
				t.Error("the seeds' guard published eco on nodes with performance pods, yet no agent refused it")
			}
			// And the refusal reaches the API, where an operator sees it.
			if mode == "seed" && r.statusRefusals == 0 {
				t.Error("no NodePowerProfile status ever carried the EcoRefused condition")
			}
		})
	}
}

type ecoRaceResult struct {
	bound, transitions, refusals int
	// statusRefusals counts the samples in which a NodePowerProfile's
	// status carried the agent's EcoRefused condition.
	statusRefusals       int
	longest, extenderLag time.Duration
	violations           []string
}

func runEcoRace(t *testing.T, mode string, d time.Duration) ecoRaceResult {
	ctx := t.Context()
	group := "jx-ecorace-" + mode
	selector := "joulie.test/ecorace-" + mode
	admin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	kube := cp.AdminClient(t)
	nodes := []string{group + "-a", group + "-b"}
	agents := map[string]agentProcess{}
	for _, n := range nodes {
		cp.CreateReadyNode(t, n, map[string]string{"joulie.test/group": group, selector: "true"},
			corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")})
		deleteNodeObjects(t, admin, n)
		agents[n] = runAgent(t, n, cp.WriteKubeconfig(t, cp.AgentConfig(t, n)))
	}
	runController(t, "ecorace-"+mode, selector, "POLICY_TYPE=rule_swap_v1", "RECONCILE_INTERVAL=3s",
		"GUARD_MODE="+mode, "DRAIN_DWELL=1s")

	ext := startExtenderWith(t, cp.WriteKubeconfig(t, cp.ServiceAccountConfig(t, harness.ControllerNamespace, chartExtenderAccount)))
	ext.waitForTwins(t, nodes...)
	extender := chartSchedulerExtender(t)
	extender.URLPrefix = ext.url
	extender.HTTPTimeout = metav1.Duration{Duration: 10 * time.Second}
	cp.StartScheduler(t, &schedulerconfigv1.KubeSchedulerConfiguration{Extenders: []schedulerconfigv1.Extender{extender}})

	var r ecoRaceResult
	boundAt := map[string]time.Time{}     // pod → when the test first saw it bound
	cappedSince := map[string]time.Time{} // pod → when it was first seen under eco
	lastState := map[string]string{}
	refusing := map[string]bool{}
	changedAt := map[string]time.Time{} // node → when the test saw its labels change
	sel := labels.Set{"joulie.test/ecorace": group}.String()
	created := 0
	next := time.Now()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		now := time.Now()
		if !now.Before(next) {
			p := groupPod(group, fmt.Sprintf("%s-%04d", group, created), joulie.WorkloadClassPerformance)
			p.Labels = map[string]string{"joulie.test/ecorace": group}
			cp.CreatePod(t, p)
			created++
			next = now.Add(250 * time.Millisecond)
		}
		pods, err := kube.CoreV1().Pods("jx-workloads").List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		// The agents are read after the pods: a pod the test saw bound
		// was bound before the agent's answer.
		applied := map[string]string{}
		for _, n := range nodes {
			var st struct {
				Profile  string `json:"profile"`
				EcoGuard string `json:"ecoGuard"`
			}
			if getJSON(agents[n].socket, "/v1/status", &st) {
				applied[n] = st.Profile
				now := strings.HasPrefix(st.EcoGuard, "eco not applied")
				if now && !refusing[n] {
					r.refusals++
				}
				refusing[n] = now
			}
		}
		seen := time.Now()
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded {
				continue
			}
			at, ok := boundAt[p.Name]
			if !ok {
				boundAt[p.Name], at = seen, seen
				r.bound++
			}
			if applied[p.Spec.NodeName] == string(joulie.ProfileEco) {
				since, ok := cappedSince[p.Name]
				if !ok {
					cappedSince[p.Name], since = seen, seen
				}
				r.longest = max(r.longest, seen.Sub(since))
				if seen.Sub(since) > ecoRaceGrace && len(r.violations) < 10 {
					r.violations = append(r.violations, fmt.Sprintf("performance pod %s, bound to %s %s ago, has run under its eco cap for %s",
						p.Name, p.Spec.NodeName, seen.Sub(at).Round(time.Millisecond), seen.Sub(since).Round(time.Millisecond)))
					cappedSince[p.Name] = seen.Add(time.Hour) // report a pod once
				}
			} else {
				delete(cappedSince, p.Name)
			}
			// The workload: each pod runs ecoRacePodLife once bound.
			if seen.Sub(at) > ecoRacePodLife {
				cp.SetPodPhase(t, p.Namespace, p.Name, corev1.PodSucceeded)
			}
		}
		for _, n := range nodes {
			if p, err := admin.JoulieV1alpha1().NodePowerProfiles().Get(ctx, n, metav1.GetOptions{}); err == nil {
				for _, c := range p.Status.Conditions {
					if c.Type == joulie.ConditionEcoRefused && c.Status == metav1.ConditionTrue {
						r.statusRefusals++
					}
				}
			}
			node, err := kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			state := node.Labels[joulie.LabelPowerProfile] + "/" + node.Labels[joulie.LabelDraining]
			if prev, ok := lastState[n]; ok && prev != state {
				r.transitions++
				changedAt[n] = time.Now()
			}
			lastState[n] = state
		}
		// How long the extender's cache takes to follow a label change
		// (the drain dwell must be longer), at the loop's resolution.
		for _, en := range ext.debugScoring(t).Nodes {
			if at, ok := changedAt[en.NodeName]; ok && en.ProfileLabel+"/"+en.DrainingLabel == lastState[en.NodeName] {
				r.extenderLag = max(r.extenderLag, time.Since(at))
				delete(changedAt, en.NodeName)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return r
}
