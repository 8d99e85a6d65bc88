package integration

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/component-base/metrics/legacyregistry"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/generated/clientset/versioned"
	"joulie.io/joulie/test/harness"
)

// The size of the benchmark: the cluster the issue asks for, and enough
// pods per round for a steady rate while a round stays under a minute or
// two on the shared development machine.
const (
	benchNodes     = 1000
	benchPods      = 300
	benchNamespace = "jx-bench"
	benchRoundKey  = "joulie.test/bench-round"
	gpuResource    = corev1.ResourceName("nvidia.com/gpu")
)

// benchSchedulerVerbosity is the kube-scheduler's log verbosity in the
// rounds: 2, as clusters commonly run it. The tests' 4 makes it name a
// logger for every plugin on every node, which made every arm's CPU per
// pod about a quarter larger before 2026-11-29, and the arms that ran
// fewer plugins on fewer nodes look cheaper than they are.
const benchSchedulerVerbosity = 2

// extenderProcs sets GOMAXPROCS for the extender process, as an
// operator can through the chart's extender.extraEnv; 0 leaves the Go
// runtime's default (the machine's cores), which is what the chart runs.
var extenderProcs = flag.Int("extender-gomaxprocs", 0, "GOMAXPROCS of the extender in BenchmarkSchedulerThroughput; 0 is the Go default, as the chart runs it")

// BenchmarkSchedulerThroughput measures how many pods per second the real
// kube-scheduler binds in a cluster of 1,000 nodes, without Joulie's
// extender (off) and with it (on), configured as the chart ships it
// (nodeCacheCapable, ignorable, weight and timeout as rendered). Every
// node has a NodeTwin and a NodeHardware, so the extender filters and
// scores with real data. An iteration runs one round of each arm.
//
// A round creates its pods first and only then starts a scheduler, so
// that creating pods does not compete with scheduling for the CPU; its
// rate is counted from the first bind to the last one, as a watch on the
// pods sees them, so the scheduler's start is not part of it.
//
// The extender's share of a scheduling cycle is its handlers' time (its
// own joulie_extender_request_duration_seconds, filter and prioritize)
// over the scheduler's scheduling_algorithm_duration_seconds, which spans
// filtering, the extender calls and scoring of each pod, both summed over
// the rounds (ext-%cycle). It leaves out what the scheduler spends
// encoding the calls and the loopback; added-%cycle, the growth of the
// mean cycle from off to on, includes them. ext-cpu-ms/cycle is the CPU
// the extender process used per cycle, which the handlers' wall time
// exceeds when the machine is busy.
//
// Run it alone, without the race detector (see test/README.md):
//
//	cd test && go test -run '^$' -bench SchedulerThroughput -benchtime 3x -timeout 30m ./integration
func BenchmarkSchedulerThroughput(b *testing.B) {
	admin := cp.AdminClient(b)
	joulieAdmin, err := versioned.NewForConfig(cp.AdminConfig())
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	classes := createBenchCluster(b, joulieAdmin)
	b.Logf("%d nodes with twins and hardware created in %s", benchNodes, time.Since(start).Round(time.Second))

	// The chart's extender flags, except a staleness threshold long
	// enough for the whole run: the controller would refresh the twins
	// every minute, the benchmark holds them still.
	kubeconfig := cp.WriteKubeconfig(b, cp.ServiceAccountConfig(b, harness.ControllerNamespace, chartExtenderAccount))
	var env []string
	if *extenderProcs > 0 {
		env = []string{fmt.Sprintf("GOMAXPROCS=%d", *extenderProcs)}
		b.Logf("the extender runs with GOMAXPROCS=%d", *extenderProcs)
	}
	ext := startExtenderEnv(b, kubeconfig, env, "--log-level", "info", "--log-format", "json", "--twin-staleness-threshold", "1h")
	ext.waitForTwinCount(b, benchNodes)

	chartExtender := chartSchedulerExtender(b)
	if !chartExtender.NodeCacheCapable {
		b.Fatal("the chart's scheduler configuration no longer sets nodeCacheCapable; the benchmark measures the chart's configuration")
	}
	withExtender := *chartExtender.DeepCopy()
	withExtender.URLPrefix = ext.url

	// The third arm, plugin, is Joulie's filter and score as a framework
	// plugin in the scheduler's process (test/schedplugin, not shipped):
	// what the in-process path would cost. The scheduler's user may
	// watch the twins and hardware for it.
	grantSchedulerJoulieReads(b, admin)
	pluginCfg := withSchedPlugin(schedulerConfig(nil))

	// Each iteration runs a round of each arm, in an order that rotates,
	// so that a change in the machine's load weighs on all alike.
	arms := []benchArm{
		{name: "off", cfg: schedulerConfig(nil)},
		{name: "on", cfg: schedulerConfig([]schedulerconfigv1.Extender{withExtender}), ext: ext},
		{name: "plugin", cfg: pluginCfg, plugins: schedPluginRegistry()},
	}
	var off, on, plugin roundTotals
	totals := []*roundTotals{&off, &on, &plugin}
	// With b.Loop the benchmark function runs once, however many
	// iterations -benchtime asks for, so the cluster is built once.
	for i := 0; b.Loop(); i++ {
		for j := range arms {
			k := (i + j) % len(arms)
			runRound(b, admin, fmt.Sprintf("%s-%d", arms[k].name, i), arms[k], classes, totals[k])
		}
	}

	if on.perfOnEcoOrDraining > 0 {
		b.Errorf("with the extender, %d performance pods were bound to eco or draining nodes", on.perfOnEcoOrDraining)
	}
	if plugin.perfOnEcoOrDraining > 0 {
		b.Errorf("with the plugin, %d performance pods were bound to eco or draining nodes", plugin.perfOnEcoOrDraining)
	}
	if on.extenderCalls == 0 {
		b.Error("the scheduler never called the extender")
	}
	b.ReportMetric(0, "ns/op") // an iteration's wall time includes creating its pods
	b.ReportMetric(off.podsPerSecond(), "off-pods/s")
	b.ReportMetric(on.podsPerSecond(), "on-pods/s")
	b.ReportMetric(100*on.podsPerSecond()/off.podsPerSecond(), "%of-off")
	b.ReportMetric(off.meanCycle()*1e3, "off-cycle-ms")
	b.ReportMetric(on.meanCycle()*1e3, "on-cycle-ms")
	b.ReportMetric(100*(on.meanCycle()-off.meanCycle())/on.meanCycle(), "added-%cycle")
	b.ReportMetric(on.extenderSeconds/on.cycles*1e3, "ext-ms/cycle")
	b.ReportMetric(100*on.extenderSeconds/on.cycleSeconds, "ext-%cycle")
	b.ReportMetric(on.extenderCPU/on.cycles*1e3, "ext-cpu-ms/cycle")
	b.ReportMetric(off.cpuPerPod()*1e3, "off-cpu-ms/pod")
	b.ReportMetric(on.cpuPerPod()*1e3, "on-cpu-ms/pod")
	b.ReportMetric(100*off.cpuPerPod()/on.cpuPerPod(), "%of-off-cpu")
	// What the scheduler's side of the calls alone leaves: the CPU ratio
	// an extender that cost nothing would reach.
	onScheduler := on.schedulerCPU / float64(on.pods)
	b.ReportMetric(onScheduler*1e3, "on-sched-cpu-ms/pod")
	b.ReportMetric(100*off.cpuPerPod()/onScheduler, "%of-off-sched-cpu")
	b.ReportMetric(float64(off.perfOnEcoOrDraining), "off-perf-on-eco")
	b.ReportMetric(float64(on.perfOnEcoOrDraining), "on-perf-on-eco")
	b.ReportMetric(plugin.podsPerSecond(), "plugin-pods/s")
	b.ReportMetric(100*plugin.podsPerSecond()/off.podsPerSecond(), "%of-off-plugin")
	b.ReportMetric(plugin.cpuPerPod()*1e3, "plugin-cpu-ms/pod")
	b.ReportMetric(100*off.cpuPerPod()/plugin.cpuPerPod(), "%of-off-cpu-plugin")
}

// benchArm is one way of scheduling the benchmark compares.
type benchArm struct {
	name    string
	cfg     *schedulerconfigv1.KubeSchedulerConfiguration
	ext     *extenderProcess // the extender the scheduler calls, if any
	plugins []app.Option     // out-of-tree plugins the scheduler registers
}

// schedulerConfig is the scheduler configuration of an arm.
func schedulerConfig(extenders []schedulerconfigv1.Extender) *schedulerconfigv1.KubeSchedulerConfiguration {
	cfg := &schedulerconfigv1.KubeSchedulerConfiguration{Extenders: extenders}
	// The scheduler's default client limit, 50 requests per second, would
	// cap both arms at about 50 binds per second and hide what the
	// extender costs; Kubernetes' own scheduler_perf lifts it too.
	cfg.ClientConnection.QPS = 5000
	cfg.ClientConnection.Burst = 5000
	return cfg
}

// benchNode is the i-th node of the benchmark cluster: one in four has
// eight GPUs; six in ten are performance nodes, three eco and one
// draining, spread over both kinds.
func benchNode(i int) (name string, class joulie.SchedulableClass, gpus int) {
	name = fmt.Sprintf("bench-node-%04d", i)
	switch i % 10 {
	case 6, 7, 8:
		class = joulie.ClassEco
	case 9:
		class = joulie.ClassDraining
	default:
		class = joulie.ClassPerformance
	}
	if i%4 == 3 {
		gpus = 8
	}
	return name, class, gpus
}

// createBenchCluster creates the nodes, Ready with allocatable resources
// and labelled as the controller labels them, and for each a NodeHardware
// as its agent would publish and a NodeTwin as the controller would write.
// It returns each node's class.
func createBenchCluster(b *testing.B, admin versioned.Interface) map[string]joulie.SchedulableClass {
	b.Helper()
	classes := make(map[string]joulie.SchedulableClass, benchNodes)
	for i := range benchNodes {
		name, class, gpus := benchNode(i)
		classes[name] = class
		profile := "performance"
		if class == joulie.ClassEco {
			profile = "eco"
		}
		labels := map[string]string{
			joulie.LabelManaged:       "true",
			joulie.LabelPowerProfile:  profile,
			joulie.LabelDraining:      fmt.Sprint(class == joulie.ClassDraining),
			"joulie.test/bench-nodes": "true",
		}
		alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("192"), corev1.ResourceMemory: resource.MustParse("1536Gi")}
		hw := joulie.NodeHardwareStatus{
			CPU: joulie.CPUHardware{
				Vendor: "AuthenticAMD", Model: "AMD EPYC 9654 96-Core Processor", Sockets: 2, CoresPerSocket: 96, TotalCores: 192,
				CapRange: &joulie.PowerRange{MinWatts: 200, MaxWatts: 400, DefaultWatts: 360},
			},
			Quality: joulie.DiscoveryComplete,
		}
		capped := 800.0
		if gpus > 0 {
			alloc[corev1.ResourceCPU] = resource.MustParse("112")
			alloc[gpuResource] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
			hw.CPU = joulie.CPUHardware{
				Vendor: "GenuineIntel", Model: "Intel(R) Xeon(R) Platinum 8480+", Sockets: 2, CoresPerSocket: 56, TotalCores: 112,
				CapRange: &joulie.PowerRange{MinWatts: 150, MaxWatts: 350, DefaultWatts: 350},
			}
			hw.GPU = &joulie.GPUHardware{Vendor: "nvidia", Model: "NVIDIA H100 80GB HBM3", Count: int32(gpus),
				CapRange: &joulie.PowerRange{MinWatts: 200, MaxWatts: 700, DefaultWatts: 700}}
			capped = 700 + 8*700
		}
		if class == joulie.ClassEco {
			capped *= 0.6
		}
		cp.CreateReadyNode(b, name, labels, alloc)
		createHardware(b, admin, name, hw)
		// Measured power between 30% and 90% of the budget, and a spread
		// of cooling stress, so that scores differ from node to node.
		createTwin(b, admin, name, &joulie.NodeTwinStatus{
			SchedulableClass:            class,
			PredictedPowerHeadroomScore: 50,
			PredictedCoolingStressScore: float64(10 + i%50),
			PowerMeasurement: &joulie.PowerMeasurement{
				Source:             joulie.SourceAgent,
				MeasuredNodePowerW: capped * (0.3 + 0.6*float64(i%7)/6),
				NodeCappedPowerW:   capped,
				NodeTdpW:           capped / 0.6,
				PowerTrendWPerMin:  float64(i%11 - 5),
			},
			LastUpdated: metav1.Now(),
		})
	}
	return classes
}

// createHardware writes a NodeHardware with status, as an agent publishes
// it, and deletes it when t ends.
func createHardware(t testing.TB, admin versioned.Interface, node string, status joulie.NodeHardwareStatus) {
	t.Helper()
	hws := admin.JoulieV1alpha1().NodeHardwares()
	created, err := hws.Create(t.Context(), &joulie.NodeHardware{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create NodeHardware %s: %v", node, err)
	}
	t.Cleanup(func() { _ = hws.Delete(context.Background(), node, metav1.DeleteOptions{}) })
	created.Status = status
	if _, err := hws.UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write NodeHardware %s status: %v", node, err)
	}
}

// benchPod is the j-th pod of a round: one in three is a performance pod,
// one in four asks for a GPU.
func benchPod(round string, j int) *corev1.Pod {
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}}
	if j%4 == 0 {
		// Extended resources need a limit equal to the request.
		res.Requests[gpuResource] = resource.MustParse("1")
		res.Limits = corev1.ResourceList{gpuResource: resource.MustParse("1")}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%03d", round, j),
			Namespace: benchNamespace,
			Labels:    map[string]string{benchRoundKey: round},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:      "main",
				Image:     "registry.invalid/joulie/idle:0",
				Resources: res,
			}},
		},
	}
	if j%3 == 0 {
		p.Annotations = map[string]string{joulie.AnnotationWorkloadClass: "performance"}
	}
	return p
}

// roundTotals adds up the rounds of one arm.
type roundTotals struct {
	pods            int
	bindSpan        time.Duration // first to last bind, summed over rounds
	cycles          float64       // scheduling algorithm runs
	cycleSeconds    float64
	extenderCalls   float64
	extenderSeconds float64
	extenderCPU     float64 // seconds of CPU the extender process used
	// schedulerCPU and spanExtenderCPU are the CPU seconds the
	// scheduler's goroutines and the extender's process used from each
	// round's first bind to its last, the span podsPerSecond counts.
	schedulerCPU, spanExtenderCPU float64
	perfOnEcoOrDraining           int
}

// podsPerSecond counts the binds after each round's first, over the time
// from the first to the last.
func (r roundTotals) podsPerSecond() float64 {
	return float64(r.pods) / r.bindSpan.Seconds()
}

func (r roundTotals) meanCycle() float64 { return r.cycleSeconds / r.cycles }

// cpuPerPod is the CPU, in seconds, the scheduler and the extender
// together used per pod bound, over the same binds as podsPerSecond.
func (r roundTotals) cpuPerPod() float64 {
	return (r.schedulerCPU + r.spanExtenderCPU) / float64(r.pods)
}

// counters are the cumulative figures a round reads before and after.
type counters struct {
	cycles, cycleSeconds           float64
	extenderCalls, extenderSeconds float64
	extenderCPU                    float64
	points                         map[string]float64 // seconds per extension point of the scheduler's framework
}

func readCounters(b *testing.B, ext *extenderProcess) counters {
	b.Helper()
	var c counters
	// The scheduler runs in this process and registers its metrics in
	// the process's registry, once, so they add up over every scheduler
	// started here; a round takes the difference.
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		b.Fatal(err)
	}
	c.points = map[string]float64{}
	for _, f := range families {
		switch f.GetName() {
		case "scheduler_scheduling_algorithm_duration_seconds":
			for _, m := range f.GetMetric() {
				c.cycles += float64(m.GetHistogram().GetSampleCount())
				c.cycleSeconds += m.GetHistogram().GetSampleSum()
			}
		case "scheduler_framework_extension_point_duration_seconds":
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "extension_point" {
						c.points[l.GetValue()] += m.GetHistogram().GetSampleSum()
					}
				}
			}
		}
	}
	if ext != nil {
		m := ext.metrics(b)
		for _, verb := range []string{"filter", "prioritize"} {
			c.extenderCalls += m[fmt.Sprintf(`joulie_extender_request_duration_seconds_count{verb=%q}`, verb)]
			c.extenderSeconds += m[fmt.Sprintf(`joulie_extender_request_duration_seconds_sum{verb=%q}`, verb)]
		}
		// The handlers' wall time counts the moments the extender waits
		// for a CPU the scheduler, the API server and etcd share with it;
		// its CPU time does not.
		c.extenderCPU = ext.cpuSeconds(b)
	}
	return c
}

// runRound runs one round of benchPods pods under a scheduler configured
// with cfg, and adds what it measured to tot.
func runRound(b *testing.B, admin kubernetes.Interface, round string, arm benchArm, classes map[string]joulie.SchedulableClass, tot *roundTotals) {
	b.Helper()
	ext := arm.ext
	for j := range benchPods {
		cp.CreatePod(b, benchPod(round, j))
	}
	before := readCounters(b, ext)
	span := &cpuSpan{round: round, ext: ext}
	binds := watchBinds(b, admin, round, func() func() { return cp.StartSchedulerVerbosity(b, benchSchedulerVerbosity, arm.cfg, arm.plugins...) }, span)
	after := readCounters(b, ext)
	deleteRound(b, admin, round)

	wall := binds.last.Sub(binds.first)
	cycles, cycleSeconds := after.cycles-before.cycles, after.cycleSeconds-before.cycleSeconds
	var plugins []string
	for _, p := range []string{"Filter", "Score"} {
		plugins = append(plugins, fmt.Sprintf("%s %.2f", p, 1e3*(after.points[p]-before.points[p])/cycles))
	}
	// Per cycle: the whole cycle, the scheduler's Filter and Score
	// plugins, and the extender's handlers and CPU.
	pods := len(binds.nodes) - 1
	b.Logf("round %s: %.1f pods/s; ms per cycle: cycle %.2f, %s, extender %.2f, extender CPU %.2f; CPU ms per pod: scheduler %.2f, extender %.2f",
		round, float64(pods)/wall.Seconds(), 1e3*cycleSeconds/cycles, strings.Join(plugins, ", "),
		1e3*(after.extenderSeconds-before.extenderSeconds)/cycles, 1e3*(after.extenderCPU-before.extenderCPU)/cycles,
		1e3*span.scheduler/float64(pods), 1e3*span.extender/float64(pods))
	tot.pods += pods
	tot.bindSpan += wall
	tot.schedulerCPU += span.scheduler
	tot.spanExtenderCPU += span.extender
	tot.cycles += cycles
	tot.cycleSeconds += cycleSeconds
	tot.extenderCalls += after.extenderCalls - before.extenderCalls
	tot.extenderSeconds += after.extenderSeconds - before.extenderSeconds
	tot.extenderCPU += after.extenderCPU - before.extenderCPU
	for pod, node := range binds.nodes {
		if binds.performance[pod] && classes[node] != joulie.ClassPerformance {
			tot.perfOnEcoOrDraining++
		}
	}
}

// boundPods is what a round's watch saw.
type boundPods struct {
	nodes       map[string]string // pod to node
	performance map[string]bool
	first, last time.Time
}

// watchBinds starts a watch on the round's pods, then the scheduler, and
// waits until every pod of the round is bound; it stops the scheduler
// before it returns. span measures from the first bind to the last.
func watchBinds(b *testing.B, admin kubernetes.Interface, round string, startScheduler func() func(), span *cpuSpan) boundPods {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), 15*time.Minute)
	defer cancel()
	pods := admin.CoreV1().Pods(benchNamespace)
	sel := metav1.ListOptions{LabelSelector: benchRoundKey + "=" + round}
	list, err := pods.List(ctx, sel)
	if err != nil {
		b.Fatal(err)
	}
	if len(list.Items) != benchPods {
		b.Fatalf("round %s has %d pods, want %d", round, len(list.Items), benchPods)
	}
	out := boundPods{nodes: map[string]string{}, performance: map[string]bool{}}
	for _, p := range list.Items {
		if p.Spec.NodeName != "" {
			b.Fatalf("pod %s was bound before the scheduler started", p.Name)
		}
		out.performance[p.Name] = p.Annotations[joulie.AnnotationWorkloadClass] == "performance"
	}
	// A watch can end before the round does (the API server closes
	// watches for its own reasons); the retry watcher resumes it from the
	// last event it delivered, so no bind is missed or counted twice.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = sel.LabelSelector
			return pods.Watch(ctx, opts)
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	stop := startScheduler()
	defer stop()
	defer span.abort()
	for len(out.nodes) < benchPods {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("the watch on round %s ended after %d of %d binds", round, len(out.nodes), benchPods)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted || p.Spec.NodeName == "" {
				continue
			}
			if _, seen := out.nodes[p.Name]; seen {
				continue
			}
			now := time.Now()
			if out.first.IsZero() {
				out.first = now
				span.start(b)
			}
			out.last = now
			out.nodes[p.Name] = p.Spec.NodeName
			if len(out.nodes) == benchPods {
				span.stop(b)
			}
		case <-ctx.Done():
			b.Fatalf("round %s: %d of %d pods bound when the wait ended: %v", round, len(out.nodes), benchPods, ctx.Err())
		}
	}
	w.Stop()
	return out
}

// waitForTwinCount waits until the extender has a twin for n nodes.
func (e *extenderProcess) waitForTwinCount(t testing.TB, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		seen := 0
		for _, node := range e.debugScoring(t).Nodes {
			if node.HasTwin {
				seen++
			}
		}
		if seen >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the extender knows %d twins after 2 min, want %d", seen, n)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
