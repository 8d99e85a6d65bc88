package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"k8s.io/utils/ptr"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/energyreport"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/test/harness"
)

// updateGolden rewrites the kubectl joulie golden files from this run:
// go test -run TestKubectlJoulie ./integration -update.
var updateGolden = flag.Bool("update", false, "rewrite the golden files of kubectl joulie's output")

const (
	kjGroup     = "kj"
	kjNamespace = "kj-work"
	// chartViewerRole is the chart's read-only ClusterRole (viewer.enabled).
	chartViewerRole = "joulie-viewer"
)

// kjNode is a node of several shapes an operator meets: its labels, the
// profile the controller wrote and what the agent reported, its twin and
// hardware (nil: none).
type kjNode struct {
	name     string
	labels   map[string]string
	taints   []corev1.Taint
	cpus     string
	gpus     string
	profile  *joulie.NodePowerProfile
	twin     *joulie.NodeTwinStatus
	hardware *joulie.NodeHardwareStatus
	// respec bumps the profile's generation after the agent's report: an
	// agent that did not follow (API lost, failsafe).
	respec bool
}

func kjProfile(profile joulie.Profile, cpuPct float64, state joulie.PowerState) *joulie.NodePowerProfile {
	p := &joulie.NodePowerProfile{Spec: joulie.NodePowerProfileSpec{Profile: profile, PowerState: state}}
	if cpuPct < 100 {
		p.Spec.CPU = &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(cpuPct), Reason: fmt.Sprintf("capped at %v%%: energy optimum for standard work", cpuPct)}
	}
	return p
}

func applied(backend joulie.ControlBackend, watts float64) *joulie.ControlStatus {
	return &joulie.ControlStatus{Backend: backend, Result: joulie.ResultApplied, AppliedCapWatts: ptr.To(watts)}
}

func kjTwin(class joulie.SchedulableClass, source joulie.MeasurementSource, measuredW, cappedW, cooling, trend float64) *joulie.NodeTwinStatus {
	return &joulie.NodeTwinStatus{
		SchedulableClass: class, PredictedPowerHeadroomScore: 70, PredictedCoolingStressScore: cooling,
		PowerMeasurement: &joulie.PowerMeasurement{Source: source, MeasuredNodePowerW: measuredW, NodeCappedPowerW: cappedW, NodeTdpW: cappedW * 1.2, PowerTrendWPerMin: trend},
		LastUpdated:      metav1.Now(),
	}
}

func kjHardware(gpus int32) *joulie.NodeHardwareStatus {
	h := &joulie.NodeHardwareStatus{CPU: joulie.CPUHardware{Model: "AMD EPYC 9654", Sockets: 2, CoresPerSocket: 96, TotalCores: 192,
		CapRange: &joulie.PowerRange{MinWatts: 200, MaxWatts: 400}}}
	if gpus > 0 {
		h.GPU = &joulie.GPUHardware{Model: "NVIDIA H100 80GB HBM3", Count: gpus, CapRange: &joulie.PowerRange{MinWatts: 200, MaxWatts: 700}}
	}
	return h
}

// kjCluster is the cluster of the kubectl joulie tests.
func kjCluster() []kjNode {
	managed := func(extra ...string) map[string]string {
		l := map[string]string{"joulie.test/group": kjGroup, joulie.LabelManaged: "true"}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	perf := kjProfile(joulie.ProfilePerformance, 100, "")
	perf.Status = joulie.NodePowerProfileStatus{ObservedGeneration: 1, CPU: &joulie.ControlStatus{Backend: joulie.ControlBackend("rapl"), Result: joulie.ResultNone},
		GPU: &joulie.ControlStatus{Backend: joulie.ControlBackend("nvml"), Result: joulie.ResultNone}}

	eco := kjProfile(joulie.ProfileEco, 60, "")
	eco.Status = joulie.NodePowerProfileStatus{ObservedGeneration: 1, CPU: applied("rapl", 240)}

	drain := kjProfile(joulie.ProfilePerformance, 100, "")
	drain.Status = joulie.NodePowerProfileStatus{ObservedGeneration: 1, CPU: &joulie.ControlStatus{Backend: "rapl", Result: joulie.ResultNone}}

	failsafe := kjProfile(joulie.ProfilePerformance, 100, "")
	failsafe.Status = joulie.NodePowerProfileStatus{ObservedGeneration: 1, CPU: &joulie.ControlStatus{Backend: "rapl", Result: joulie.ResultNone}}

	blocked := kjProfile(joulie.ProfileEco, 60, "")
	blocked.Spec.GPU = &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapPctOfMax: ptr.To(60.0)}, Reason: "capped at 60%: the eco cap"}
	blocked.Status = joulie.NodePowerProfileStatus{ObservedGeneration: 1, CPU: applied("rapl", 240),
		GPU: &joulie.ControlStatus{Backend: "nvml", Result: joulie.ResultBlocked, Message: "NVML: libnvidia-ml.so.1 not found; install the NVIDIA driver"}}

	noTwin := kjProfile(joulie.ProfilePerformance, 100, "")
	noTwin.Status = joulie.NodePowerProfileStatus{ObservedGeneration: 1, CPU: &joulie.ControlStatus{Backend: "rapl", Result: joulie.ResultNone}}

	parked := kjProfile(joulie.ProfilePerformance, 100, joulie.PowerParked)
	parked.Status = joulie.NodePowerProfileStatus{ObservedGeneration: 1, PowerState: joulie.PowerParked, CPU: &joulie.ControlStatus{Backend: "rapl", Result: joulie.ResultNone}}

	noAgent := kjProfile(joulie.ProfileEco, 60, "")

	return []kjNode{
		{name: "kj-perf", labels: managed(joulie.LabelPowerProfile, "performance", joulie.LabelDraining, "false"), cpus: "190", gpus: "8",
			profile: perf, twin: kjTwin(joulie.ClassPerformance, joulie.SourceAgent, 3100, 6400, 40, 12), hardware: kjHardware(8)},
		{name: "kj-eco", labels: managed(joulie.LabelPowerProfile, "eco", joulie.LabelDraining, "false"), cpus: "190",
			profile: eco, twin: kjTwin(joulie.ClassEco, joulie.SourceUtilization, 410, 480, 12, 0), hardware: kjHardware(0)},
		{name: "kj-draining", labels: managed(joulie.LabelPowerProfile, "eco", joulie.LabelDraining, "true"), cpus: "190",
			profile: drain, twin: kjTwin(joulie.ClassDraining, joulie.SourceAgent, 520, 800, 15, -3), hardware: kjHardware(0)},
		{name: "kj-failsafe", labels: managed(joulie.LabelPowerProfile, "performance", joulie.LabelDraining, "false"), cpus: "190",
			profile: failsafe, twin: kjTwin(joulie.ClassPerformance, joulie.SourceStatic, 800, 800, 15, 0), hardware: kjHardware(0), respec: true},
		{name: "kj-gpu-blocked", labels: managed(joulie.LabelPowerProfile, "eco", joulie.LabelDraining, "false"), cpus: "190", gpus: "4",
			profile: blocked, twin: kjTwin(joulie.ClassEco, joulie.SourceAgent, 1500, 2160, 20, 0), hardware: kjHardware(4)},
		{name: "kj-no-twin", labels: managed(), cpus: "190", profile: noTwin, hardware: kjHardware(0)},
		{name: "kj-parked", labels: managed(joulie.LabelParkable, "true", joulie.LabelPowerProfile, "performance"), cpus: "190",
			taints:  []corev1.Taint{{Key: joulie.TaintParked, Effect: corev1.TaintEffectNoSchedule}},
			profile: parked, twin: kjTwin(joulie.ClassPerformance, joulie.SourceStatic, 800, 800, 0, 0), hardware: kjHardware(0)},
		{name: "kj-no-agent", labels: managed(), cpus: "64", profile: noAgent},
	}
}

// setUpKJCluster creates the nodes, the Joulie objects and the pods of
// kjCluster as the controller, the agents and the scheduler would have,
// all removed when t ends.
func setUpKJCluster(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	admin := versioned.NewForConfigOrDie(cp.AdminConfig()).JoulieV1alpha1()
	kc := cp.AdminClient(t)
	for _, n := range kjCluster() {
		alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(n.cpus)}
		if n.gpus != "" {
			alloc[joulie.ResourceNVIDIAGPU] = resource.MustParse(n.gpus)
		}
		cp.CreateReadyNode(t, n.name, n.labels, alloc)
		if len(n.taints) > 0 {
			node, err := kc.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			node.Spec.Taints = n.taints
			if _, err := kc.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("taint node %s: %v", n.name, err)
			}
		}
		if p := n.profile; p != nil {
			status := p.Status
			p = p.DeepCopy()
			p.Name = n.name
			created, err := admin.NodePowerProfiles().Create(ctx, p, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create NodePowerProfile %s: %v", n.name, err)
			}
			t.Cleanup(func() { _ = admin.NodePowerProfiles().Delete(context.Background(), n.name, metav1.DeleteOptions{}) })
			if status.ObservedGeneration > 0 {
				at := time.Now()
				if n.respec {
					at = at.Add(-10 * time.Minute)
				}
				status.MeasuredPower = &joulie.MeasuredPower{NodePowerWatts: 700, Time: metav1.NewTime(at)}
				created.Status = status
				if created, err = admin.NodePowerProfiles().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
					t.Fatalf("write NodePowerProfile %s status: %v", n.name, err)
				}
			}
			if n.respec {
				created.Spec.Profile = joulie.ProfileEco
				created.Spec.CPU = &joulie.CPUPowerTarget{PackagePowerCapPctOfMax: ptr.To(60.0)}
				if _, err := admin.NodePowerProfiles().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
					t.Fatalf("update NodePowerProfile %s: %v", n.name, err)
				}
			}
		}
		if n.twin != nil {
			createTwin(t, versioned.NewForConfigOrDie(cp.AdminConfig()), n.name, n.twin)
		}
		if n.hardware != nil {
			created, err := admin.NodeHardwares().Create(ctx, &joulie.NodeHardware{ObjectMeta: metav1.ObjectMeta{Name: n.name}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create NodeHardware %s: %v", n.name, err)
			}
			t.Cleanup(func() { _ = admin.NodeHardwares().Delete(context.Background(), n.name, metav1.DeleteOptions{}) })
			created.Status = *n.hardware
			if _, err := admin.NodeHardwares().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("write NodeHardware %s status: %v", n.name, err)
			}
		}
	}
	// Running pods: performance work on the performance and the draining
	// node, standard work on the eco nodes and beside the performance pod.
	for _, p := range []struct {
		name, node, class string
		cpu, gpus         string
	}{
		{"train-a", "kj-perf", "performance", "32", "4"},
		{"batch-a", "kj-perf", "", "16", ""},
		{"batch-b", "kj-eco", "", "64", ""},
		{"batch-c", "kj-eco", "", "48", ""},
		{"serve-a", "kj-draining", "performance", "8", ""},
		{"render-a", "kj-gpu-blocked", "", "24", "2"},
	} {
		pod := kjPod(p.name, p.class, p.cpu, p.gpus)
		cp.CreatePod(t, pod)
		cp.BindPod(t, kjNamespace, p.name, p.node)
		cp.SetPodPhase(t, kjNamespace, p.name, corev1.PodRunning)
	}
}

func kjPod(name, class, cpu, gpus string) *corev1.Pod {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	if gpus != "" {
		req[joulie.ResourceNVIDIAGPU] = resource.MustParse(gpus)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: kjNamespace},
		Spec: corev1.PodSpec{
			// No scheduler runs these; pending pods stay pending.
			SchedulerName: "kj-none",
			Containers:    []corev1.Container{{Name: "main", Image: "registry.invalid/joulie/idle:0", Resources: corev1.ResourceRequirements{Requests: req, Limits: req}}},
		},
	}
	if class != "" {
		p.Annotations = map[string]string{joulie.AnnotationWorkloadClass: class}
	}
	return p
}

// kubectlJoulie is the plugin binary run with a kubeconfig.
type kubectlJoulie struct {
	bin, kubeconfig string
}

func newKubectlJoulie(t *testing.T, user string, groups ...string) kubectlJoulie {
	t.Helper()
	return kubectlJoulie{
		bin:        cp.BuildProgram(t, "joulie.io/joulie/controller/cmd/kubectl-joulie"),
		kubeconfig: cp.WriteKubeconfig(t, cp.UserConfig(t, user, groups...)),
	}
}

// run runs the plugin and returns its stdout, stderr and exit status.
func (k kubectlJoulie) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(k.bin, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run kubectl-joulie %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// bindViewer binds the chart's viewer role to group, as an operator would.
func bindViewer(t *testing.T, group string) {
	t.Helper()
	rbac := cp.AdminClient(t).RbacV1().ClusterRoleBindings()
	name := "kj-" + group
	_, err := rbac.Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: chartViewerRole},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: group}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("bind %s: %v", chartViewerRole, err)
	}
	t.Cleanup(func() { _ = rbac.Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// compareGolden compares got with testdata/kubectl-joulie/name, or
// rewrites it with -update.
func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "kubectl-joulie", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("kubectl joulie output differs from %s (run with -update to accept it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// The chart's viewer role grants what kubectl joulie reads and nothing
// that writes, asked of the API server's authorizer.
func TestViewerRoleGrantsOnlyReads(t *testing.T) {
	const group = "kj-viewers-access"
	bindViewer(t, group)
	cfg := cp.UserConfig(t, "kj-access", group)
	var calls []access
	for _, r := range []struct{ group, resource string }{
		{"joulie.io", "nodepowerprofiles"}, {"joulie.io", "nodetwins"}, {"joulie.io", "nodehardwares"}, {"joulie.io", "telemetryprofiles"},
		{"", "nodes"}, {"", "pods"}, {"events.k8s.io", "events"},
	} {
		for _, verb := range []string{"get", "list", "watch"} {
			calls = append(calls, access{verb, r.group, r.resource, "", true})
		}
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			calls = append(calls, access{verb, r.group, r.resource, "", false})
		}
	}
	calls = append(calls,
		access{"update", "joulie.io", "nodepowerprofiles", "status", false},
		access{"get", "", "secrets", "", false},
		access{"list", "", "secrets", "", false},
		access{"list", "", "configmaps", "", false},
		access{"create", "", "pods", "eviction", false},
	)
	checkAccess(t, cfg, "", calls)
	// The extender's Service and its read-only endpoints, for explain's
	// settings; not the scheduler's calls, and no other Service.
	checkAccess(t, cfg, chartExtenderService, []access{
		{"get", "", "services", "", true},
		{"update", "", "services", "", false},
	})
	checkAccess(t, cfg, "http:"+chartExtenderService+":http", []access{ // the proxy's scheme:name:port
		{"get", "", "services", "proxy", true},
		{"create", "", "services", "proxy", false},
	})
	checkAccess(t, cfg, "kubernetes", []access{{"get", "", "services", "", false}})
	checkAccess(t, cfg, "https:kubernetes:https", []access{{"get", "", "services", "proxy", false}})
}

// kubectl joulie status against the cluster of several shapes, as a user
// with only the chart's viewer role: the table, wide and JSON forms are
// the golden files', and a user without the role gets an error naming
// the verb and the resource and the role to ask for.
func TestKubectlJoulieStatus(t *testing.T) {
	setUpKJCluster(t)
	bindViewer(t, "kj-viewers")
	viewer := newKubectlJoulie(t, "kj-viewer", "kj-viewers")

	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"status.txt", nil},
		{"status-wide.txt", []string{"-o", "wide"}},
		{"status.json", []string{"-o", "json"}},
	} {
		out, errOut, code := viewer.run(t, append([]string{"status", "-l", "joulie.test/group=" + kjGroup}, c.args...)...)
		if code != 0 {
			t.Fatalf("status %v: exit %d: %s", c.args, code, errOut)
		}
		if c.args == nil {
			t.Logf("kubectl joulie status -l joulie.test/group=%s\n%s%s", kjGroup, out, errOut)
			compareGolden(t, "status-warnings.txt", errOut)
		}
		compareGolden(t, c.golden, out)
	}
	// YAML carries what JSON does.
	out, _, code := viewer.run(t, "status", "-l", "joulie.test/group="+kjGroup, "-o", "yaml")
	if code != 0 || !strings.Contains(out, "performancePodsOnEcoNodes: 0") || !strings.Contains(out, "name: kj-parked") {
		t.Errorf("status -o yaml: exit %d:\n%s", code, out)
	}
	// A performance pod on an eco node is counted and named.
	cp.CreatePod(t, kjPod("stray", "performance", "1", ""))
	cp.BindPod(t, kjNamespace, "stray", "kj-eco")
	out, _, _ = viewer.run(t, "status", "-l", "joulie.test/group="+kjGroup)
	if !strings.Contains(out, "Performance pods on eco nodes: 1 (must be 0; they run under eco caps): kj-work/stray") {
		t.Errorf("status with a performance pod on an eco node:\n%s", out)
	}

	// Without the viewer role.
	nobody := newKubectlJoulie(t, "kj-nobody")
	_, errOut, code := nobody.run(t, "status")
	if code != 1 || !strings.Contains(errOut, "no permission to list nodepowerprofiles.joulie.io at the cluster scope") ||
		!strings.Contains(errOut, "ClusterRole joulie-viewer") {
		t.Errorf("status without the viewer role: exit %d, %q; want 1 and the verb, resource and role", code, errOut)
	}
	// A bad command line.
	if _, errOut, code := viewer.run(t, "status", "-o", "xml"); code != 2 || !strings.Contains(errOut, `unknown output format "xml"`) {
		t.Errorf("status -o xml: exit %d, %q; want 2", code, errOut)
	}
}

// kubectl joulie explain gives, for every node, the verdict of the real
// extender's /filter and the priority of its /prioritize for the same
// pod and the same cluster, and the very terms of its /debug/scoring.
// The extender runs with settings other than its defaults, as a chart's
// values or extraEnv would set them, behind the chart's Service: explain
// reads them through the API server's service proxy, with no flag.
func TestKubectlJoulieExplainAgreesWithTheExtender(t *testing.T) {
	setUpKJCluster(t)
	bindViewer(t, "kj-viewers-explain")
	viewer := newKubectlJoulie(t, "kj-explainer", "kj-viewers-explain")
	host := machineAddress(t)
	ext := startExtenderOn(t, host, cp.WriteKubeconfig(t, cp.ServiceAccountConfig(t, harness.ControllerNamespace, chartExtenderAccount)),
		[]string{"SCORING_MODE=pack-standard", "TWIN_STALENESS_THRESHOLD=20m", "MARGINAL_CPU_UTIL_COEFF=0.5"}, "--log-level", "debug")
	serveBehindService(t, harness.ControllerNamespace, chartExtenderService, strings.TrimPrefix(ext.url, "http://"))
	service := harness.ControllerNamespace + "/" + chartExtenderService
	ext.waitForTwins(t, "kj-perf", "kj-eco", "kj-draining", "kj-failsafe", "kj-gpu-blocked", "kj-parked")
	ext.waitForFill(t, "kj-eco", 190, 112)
	nodes := []string{"kj-perf", "kj-eco", "kj-draining", "kj-failsafe", "kj-gpu-blocked", "kj-no-twin", "kj-parked", "kj-no-agent"}

	for _, p := range []*corev1.Pod{
		kjPod("pending-perf", "performance", "16", "2"),
		kjPod("pending-std", "", "8", ""),
		kjPod("pending-std-gpu", "", "4", "1"),
	} {
		pod := cp.CreatePod(t, p)
		out, errOut, code := viewer.run(t, "explain", pod.Name, "-n", kjNamespace, "-o", "json", "-l", "joulie.test/group="+kjGroup,
			"--extender-service", service)
		if code != 0 || errOut != "" {
			t.Fatalf("explain %s: exit %d: %s", pod.Name, code, errOut)
		}
		var e struct {
			Performance        bool         `json:"performance"`
			CPUCores           float64      `json:"cpuCores"`
			GPUs               float64      `json:"gpus"`
			ScoringMode        scoring.Mode `json:"scoringMode"`
			StalenessThreshold string       `json:"stalenessThreshold"`
			SettingsFrom       string       `json:"settingsFrom"`
			Nodes              []struct {
				Name     string             `json:"name"`
				Verdict  string             `json:"verdict"`
				Reason   string             `json:"reason"`
				Score    *scoring.Breakdown `json:"score"`
				Priority *int64             `json:"priority"`
			} `json:"nodes"`
		}
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("explain %s -o json: %v\n%s", pod.Name, err, out)
		}
		if len(e.Nodes) != len(nodes) {
			t.Fatalf("explain %s shows %d nodes, want %d", pod.Name, len(e.Nodes), len(nodes))
		}
		if e.ScoringMode != scoring.ModePackStandard || e.StalenessThreshold != "20m0s" || e.SettingsFrom != "the extender's, from "+service {
			t.Errorf("explain %s: settings %s, %s from %q; want the extender's pack-standard and 20m0s from %s", pod.Name, e.ScoringMode, e.StalenessThreshold, e.SettingsFrom, service)
		}
		args := extenderv1.ExtenderArgs{Pod: pod, NodeNames: &nodes}
		var filtered extenderv1.ExtenderFilterResult
		ext.post(t, "/filter", &args, &filtered)
		var priorities extenderv1.HostPriorityList
		ext.post(t, "/prioritize", &args, &priorities)
		prio := map[string]int64{}
		for _, hp := range priorities {
			prio[hp.Host] = hp.Score
		}
		dbg := ext.debugBreakdowns(t, e.CPUCores, e.GPUs, e.Performance)
		passed := map[string]bool{}
		for _, n := range *filtered.NodeNames {
			passed[n] = true
		}
		for _, n := range e.Nodes {
			if got, want := n.Verdict == "admit", passed[n.Name]; got != want {
				t.Errorf("%s on %s: explain says %s, the extender's filter passed it: %v", pod.Name, n.Name, n.Verdict, want)
				continue
			}
			if n.Verdict != "admit" {
				if want := filtered.FailedAndUnresolvableNodes[n.Name]; n.Reason != want {
					t.Errorf("%s on %s: explain's reason %q, the extender's %q", pod.Name, n.Name, n.Reason, want)
				}
				continue
			}
			if n.Priority == nil || *n.Priority != prio[n.Name] {
				t.Errorf("%s on %s: explain's priority %s, the extender's %d", pod.Name, n.Name, ptrText(n.Priority), prio[n.Name])
			}
			want, ok := dbg[n.Name]
			if !ok {
				want = scoring.Breakdown{Formula: n.Score.Formula, Neutral: true, Total: scoring.NeutralScore} // unknown to the extender
			}
			if !sameBreakdown(*n.Score, want) {
				t.Errorf("%s on %s: explain's terms %+v, the extender's %+v", pod.Name, n.Name, *n.Score, want)
			}
		}
		table, _, _ := viewer.run(t, "explain", pod.Name, "-n", kjNamespace, "-l", "joulie.test/group="+kjGroup, "--extender-service", service)
		t.Logf("kubectl joulie explain %s -n %s -l joulie.test/group=%s\n%s", pod.Name, kjNamespace, kjGroup, table)
	}
	if _, errOut, code := viewer.run(t, "explain", "no-such-pod", "-n", kjNamespace, "--extender-service", service); code != 1 || !strings.Contains(errOut, "pod no-such-pod not found in namespace kj-work") {
		t.Errorf("explain of a missing pod: exit %d, %q", code, errOut)
	}
	// Without the extender's settings explain still answers, on its own,
	// and says why on stderr; a flag goes over the extender's.
	out, errOut, code := viewer.run(t, "explain", "pending-std", "-n", kjNamespace, "-o", "json", "--extender-service", harness.ControllerNamespace+"/no-such-service")
	if code != 0 || !strings.Contains(errOut, "Warning: the scores use explain's settings, not the extender's") ||
		!strings.Contains(errOut, "check that --extender-service names joulie-extender's Service") || !strings.Contains(out, `"settingsFrom": "explain's defaults"`) {
		t.Errorf("explain with a missing Service: exit %d, stderr %q, stdout %.300s", code, errOut, out)
	}
	// An extender that takes connections and never answers: explain gives
	// up on its settings after 10 s and answers on the defaults.
	hang, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	const hung = "kj-hung-extender"
	admin := cp.AdminClient(t)
	if _, err := admin.CoreV1().Services(harness.ControllerNamespace).Create(t.Context(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: hung},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 9876}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Services(harness.ControllerNamespace).Delete(context.Background(), hung, metav1.DeleteOptions{})
	})
	serveBehindService(t, harness.ControllerNamespace, hung, hang.Addr().String())
	began := time.Now()
	out, errOut, code = newKubectlJoulie(t, "kj-admin", "system:masters").run(t, "explain", "pending-std", "-n", kjNamespace, "-o", "json",
		"--extender-service", harness.ControllerNamespace+"/"+hung)
	if took := time.Since(began); code != 0 || !strings.Contains(errOut, "Warning: the scores use explain's settings") || !strings.Contains(out, `"settingsFrom": "explain's defaults"`) || took > 25*time.Second {
		t.Errorf("explain with an extender that never answers: exit %d after %s, stderr %q, stdout %.200s; want the defaults within about 10 s", code, took.Round(time.Second), errOut, out)
	}

	out, errOut, code = viewer.run(t, "explain", "pending-std", "-n", kjNamespace, "-o", "json", "--extender-service", service, "--scoring-mode", "headroom")
	if code != 0 || errOut != "" || !strings.Contains(out, `"scoringMode": "headroom"`) || !strings.Contains(out, `"stalenessThreshold": "20m0s"`) ||
		!strings.Contains(out, `"settingsFrom": "the extender's, from `+service+`, with explain's flags"`) {
		t.Errorf("explain --scoring-mode headroom over the extender's: exit %d, stderr %q, stdout %.400s", code, errOut, out)
	}
}

// ptrText is *p, or "none".
func ptrText(p *int64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatInt(*p, 10)
}

// machineAddress is an IPv4 address of this machine other than loopback:
// the API server proxies to no loopback address.
func machineAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatalf("no IPv4 address other than loopback on this machine (%v): the API server's service proxy, which explain uses, needs one", addrs)
	return ""
}

// serveBehindService makes hostPort the endpoint of the Service
// namespace/name as the EndpointSlice controller and a kubelet would: a
// Pod whose status holds the address, and an EndpointSlice that points to
// it (the API server proxies only to addresses that are a pod's).
func serveBehindService(t *testing.T, namespace, name, hostPort string) {
	t.Helper()
	host, portText, _ := net.SplitHostPort(hostPort)
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	admin := cp.AdminClient(t)
	ctx := t.Context()
	svc, err := admin.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || len(svc.Spec.Ports) != 1 {
		t.Fatalf("the Service %s/%s: %v (ports %v)", namespace, name, err, svc.Spec.Ports)
	}
	podName := name + "-test"
	pod, err := admin.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: namespace},
		// No scheduler of the tests' takes it: bound, it would count on
		// some test's node.
		Spec: corev1.PodSpec{SchedulerName: "no-scheduler", Containers: []corev1.Container{{Name: "extender", Image: "joulie-extender"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Pods(namespace).Delete(context.Background(), podName, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	pod.Status.PodIP, pod.Status.PodIPs = host, []corev1.PodIP{{IP: host}}
	if _, err := admin.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	slices := admin.DiscoveryV1().EndpointSlices(namespace)
	_, err = slices.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: podName, Namespace: namespace, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{host},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: podName, UID: pod.UID},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(svc.Spec.Ports[0].Name), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slices.Delete(context.Background(), podName, metav1.DeleteOptions{}) })
}

// kubectl joulie pods lists the EnergyReport events' pods top first, then
// the running GPU pods that have none yet.
func TestKubectlJouliePods(t *testing.T) {
	setUpKJCluster(t)
	bindViewer(t, "kj-viewers-pods")
	viewer := newKubectlJoulie(t, "kj-pods", "kj-viewers-pods")
	events := cp.AdminClient(t).EventsV1().Events(kjNamespace)
	since := time.Date(2026, 11, 28, 14, 2, 5, 0, time.UTC)
	for _, r := range []struct {
		pod, node string
		report    energyreport.Report
	}{
		{"finetune-1", "kj-perf", energyreport.Report{GPUJoules: 9_000_000, GPUCount: 2, GPUs: []string{"GPU-a", "GPU-b"}, CPUJoules: 180_000, HasCPU: true, Since: since, Until: since.Add(2 * time.Hour)}},
		{"eval-1", "kj-perf", energyreport.Report{GPUJoules: 52_000, GPUCount: 1, GPUs: []string{"GPU-c"}, Since: since, Until: since.Add(10 * time.Minute)}},
	} {
		now := metav1.NowMicro()
		_, err := events.Create(t.Context(), &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: r.pod + ".report", Namespace: kjNamespace},
			EventTime:  now, ReportingController: "joulie.io/agent", ReportingInstance: r.node, Action: "Measure",
			Reason: energyreport.Reason, Type: corev1.EventTypeNormal, Note: energyreport.Note(r.report),
			Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: kjNamespace, Name: r.pod, UID: types.UID("uid-" + r.pod)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create the EnergyReport of %s: %v", r.pod, err)
		}
		t.Cleanup(func() { _ = events.Delete(context.Background(), r.pod+".report", metav1.DeleteOptions{}) })
	}
	out, errOut, code := viewer.run(t, "pods", "-n", kjNamespace)
	if code != 0 {
		t.Fatalf("pods: exit %d: %s", code, errOut)
	}
	t.Logf("kubectl joulie pods -n %s\n%s", kjNamespace, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{"finetune-1 kj-perf ended 2 2.55 kWh 2.50 kWh 180.0 kJ (estimated) 2h0m0s", "eval-1 kj-perf ended 1 52.0 kJ 52.0 kJ - 10m0s",
		"train-a kj-perf running 4 at its end", "render-a kj-gpu-blocked running 2 at its end"}
	if len(lines) != len(want)+1 {
		t.Fatalf("pods lists %d lines, want a header and %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if got := strings.Join(strings.Fields(lines[i+1]), " "); !strings.Contains(got, w) {
			t.Errorf("pods line %d: %q, want %q", i+1, got, w)
		}
	}
}

// post sends a scheduler call to the extender and decodes its reply.
func (e *extenderProcess) post(t *testing.T, path string, in, out any) {
	t.Helper()
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(e.url+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
}

// debugBreakdowns is each node's score term by term in the extender's
// /debug/scoring for a pod of the class asking for cpu cores and gpus.
func (e *extenderProcess) debugBreakdowns(t *testing.T, cpu, gpus float64, performance bool) map[string]scoring.Breakdown {
	t.Helper()
	q := url.Values{"cpu": {fmt.Sprint(cpu)}, "gpus": {fmt.Sprint(gpus)}}
	resp, err := http.Get(e.url + "/debug/scoring?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var dbg struct {
		Nodes []struct {
			NodeName    string            `json:"nodeName"`
			Standard    scoring.Breakdown `json:"standard"`
			Performance scoring.Breakdown `json:"performance"`
		} `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&dbg); err != nil {
		t.Fatal(err)
	}
	out := map[string]scoring.Breakdown{}
	for _, n := range dbg.Nodes {
		out[n.NodeName] = n.Standard
		if performance {
			out[n.NodeName] = n.Performance
		}
	}
	return out
}

// sameBreakdown compares two breakdowns to the last bits of a float.
func sameBreakdown(a, b scoring.Breakdown) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y)) }
	return a.Formula == b.Formula && a.Neutral == b.Neutral && a.Stale == b.Stale && a.GPUCounted == b.GPUCounted && a.FillKnown == b.FillKnown &&
		near(a.MarginalW, b.MarginalW) && near(a.Headroom, b.Headroom) && near(a.HeadroomTerm, b.HeadroomTerm) &&
		near(a.CPUFill, b.CPUFill) && near(a.GPUFill, b.GPUFill) && near(a.Fill, b.Fill) && near(a.FillTerm, b.FillTerm) &&
		near(a.CoolingTerm, b.CoolingTerm) && near(a.TrendBonus, b.TrendBonus) && near(a.ProfileBonus, b.ProfileBonus) &&
		near(a.PressureRelief, b.PressureRelief) && near(a.Total, b.Total)
}
