package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
	"joulie.io/joulie/pkg/workload"
)

// explanation is kubectl joulie explain POD: the pod's class and why,
// then per node the extender's filter verdict and its score, term by
// term. It is the -o json and -o yaml document.
type explanation struct {
	Pod string `json:"pod"`
	// BoundTo is the pod's node, when it has one.
	BoundTo string `json:"boundTo,omitempty"`
	// Class is pkg/workload's (performance, eco-only, general);
	// Performance is the extender's reading of it; Why says what decided.
	Class       string `json:"class"`
	Performance bool   `json:"performance"`
	Why         string `json:"why"`
	DaemonSet   bool   `json:"daemonSet,omitempty"`
	// CPUCores and GPUs are the pod's effective requests.
	CPUCores float64 `json:"cpuCores"`
	GPUs     float64 `json:"gpus"`

	ScoringMode        scoring.Mode `json:"scoringMode"`
	StalenessThreshold string       `json:"stalenessThreshold"`
	FacilityMetrics    bool         `json:"facilityMetrics"`
	// SettingsFrom says where the settings above come from: the running
	// extender's Service, explain's flags, or both.
	SettingsFrom string `json:"settingsFrom"`
	// The cluster aggregates every node's score shares.
	PerfPressure        float64 `json:"perfPressure"`
	ClusterTrendWPerMin float64 `json:"clusterTrendWPerMin"`
	TrendScale          float64 `json:"trendScale"`

	Nodes []nodeExplanation `json:"nodes"`
}

// nodeExplanation is one candidate node.
type nodeExplanation struct {
	Name string `json:"name"`
	// Scheduler is why kube-scheduler itself would not offer the node to
	// the extender (the pod's node affinity, a taint, a cordon, too little
	// CPU or too few GPUs free); empty when none of these keeps it off.
	Scheduler string `json:"scheduler,omitempty"`
	// Known is false for a node Joulie knows nothing about (no twin,
	// hardware or Joulie label): admitted, scored neutral.
	Known bool `json:"known"`
	// Verdict is the filter's rule (admit, twin_eco, ...), Reason its
	// message as the pod's FailedScheduling event would carry it.
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	// Score is the node's score for the pod, term by term; Priority the
	// 0..10 the extender answers /prioritize with. Absent for a node the
	// filter rejects: the scheduler never asks to score it.
	Score    *scoring.Breakdown `json:"score,omitempty"`
	Priority *int64             `json:"priority,omitempty"`
}

// explainSettings are the extender's settings the score depends on, as
// explain's flags give them, and where to read the running extender's.
type explainSettings struct {
	service         string
	mode            string
	staleness       time.Duration
	facilityMetrics bool
	// The marginal-power coefficients.
	cpuUtil, gpuStd, gpuPerf float64
}

// buildExplanation explains pod's placement over the nodes of s at now,
// with the filter and the score of pkg/scoring fed as joulie-extender
// feeds them.
func buildExplanation(pod *corev1.Pod, s *snapshot, params scoring.Params, now time.Time) explanation {
	sp := scoring.PodOf(pod)
	class := workload.Classify(pod)
	e := explanation{
		Pod: pod.Namespace + "/" + pod.Name, BoundTo: pod.Spec.NodeName,
		Class: string(class), Performance: sp.Performance, Why: why(pod, class), DaemonSet: sp.DaemonSet,
		CPUCores: sp.Demand.CPUCores, GPUs: sp.Demand.GPUs,
		ScoringMode: params.Mode, StalenessThreshold: params.StalenessThreshold.String(), FacilityMetrics: params.FacilityMetrics,
		Nodes: []nodeExplanation{},
	}
	if e.ScoringMode == "" {
		e.ScoringMode = scoring.ModePack
	}

	// What the pods bound to each node request, as the extender's pod
	// watch sums it; the pod itself left out, so that a running pod is
	// explained as it was placed: onto a node without it.
	requests := map[string]scoring.Requests{}
	for i := range s.pods {
		p := &s.pods[i]
		if p.UID == pod.UID {
			continue
		}
		if node, r := scoring.Holds(p); node != "" {
			sum := requests[node]
			sum.CPUMilli += r.CPUMilli
			sum.GPUMilli += r.GPUMilli
			requests[node] = sum
		}
	}
	// The extender's view covers every node: its aggregates count every
	// twin, whatever -l narrows the list to.
	known := scoring.Nodes(ptrs(s.twins), ptrs(s.hardware), ptrs(s.nodes), requests)
	byName := make(map[string]*scoring.Node, len(known))
	for i := range known {
		byName[known[i].Name] = &known[i]
	}
	c, _ := scoring.ClusterOf(known, now, params.StalenessThreshold)
	e.PerfPressure, e.ClusterTrendWPerMin, e.TrendScale = c.PerfPressure, c.TrendWPerMin, scoring.TrendScale(c.TrendWPerMin)
	batch := params.Batch(sp, c, now)

	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	for i := range s.nodes {
		node := &s.nodes[i]
		ne := nodeExplanation{Name: node.Name, Scheduler: schedulerVerdict(pod, &affinity, node, sp, scoring.FillOf(node, requests[node.Name]))}
		var twin *scoring.Twin
		var nodeLabels scoring.Labels
		var hw powerest.Node
		var fill scoring.Fill
		if n := byName[node.Name]; n != nil {
			ne.Known = true
			twin, nodeLabels, hw, fill = n.Twin, n.Labels, n.Hardware, n.Fill
		}
		v := scoring.FilterPod(sp, twin, nodeLabels)
		ne.Verdict, ne.Reason = v.String(), v.Reason()
		if v == scoring.Admit {
			b := batch.Explain(twin, hw, fill)
			prio := scoring.ExtenderPriority(b.Total, extenderv1.MaxExtenderPriority)
			ne.Score, ne.Priority = &b, &prio
		}
		e.Nodes = append(e.Nodes, ne)
	}
	return e
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// why says what decided the pod's class, in pkg/workload's terms.
func why(pod *corev1.Pod, class workload.Class) string {
	if workload.WorkloadClass(pod) == joulie.WorkloadClassPerformance {
		return "annotation " + joulie.AnnotationWorkloadClass + "=" + joulie.WorkloadClassPerformance
	}
	note := ""
	if v, ok := pod.Annotations[joulie.AnnotationWorkloadClass]; ok && v != joulie.WorkloadClassStandard {
		note = fmt.Sprintf(" (annotation %s=%q is not a class: standard)", joulie.AnnotationWorkloadClass, v)
	}
	perf, eco := workload.AllowedProfiles(pod)
	switch {
	case class == workload.Performance:
		return "required scheduling constraints allow only " + joulie.LabelPowerProfile + "=performance" + note
	case class == workload.EcoOnly:
		return "required scheduling constraints allow only " + joulie.LabelPowerProfile + "=eco; a standard pod to the extender" + note
	case !perf && !eco:
		return "required scheduling constraints allow neither profile on " + joulie.LabelPowerProfile + ": only nodes Joulie does not label" + note
	}
	return "no " + joulie.AnnotationWorkloadClass + "=performance annotation and no constraint on " + joulie.LabelPowerProfile + ": standard" + note
}

// schedulerVerdict says why kube-scheduler would keep the pod off node
// before asking the extender: the pod's own constraints, or CPU and GPUs
// it requests beyond what the node has free (memory and other resources
// are not checked); empty when nothing of these keeps it off.
func schedulerVerdict(pod *corev1.Pod, affinity *nodeaffinity.RequiredNodeAffinity, node *corev1.Node, sp scoring.Pod, fill scoring.Fill) string {
	if ok, err := affinity.Match(node); err != nil || !ok {
		return "node selector or affinity does not match"
	}
	if node.Spec.Unschedulable && !schedcorev1.TolerationsTolerateTaint(logr.Discard(), pod.Spec.Tolerations,
		&corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, false) {
		return "cordoned"
	}
	t, untolerated := schedcorev1.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	if untolerated {
		return "taint " + t.Key + ":" + string(t.Effect)
	}
	d := sp.Demand
	switch {
	case d.GPUs > 0 && fill.AllocatableGPUs == 0:
		return "no GPUs"
	case d.GPUs > fill.AllocatableGPUs-fill.RequestedGPUs:
		return fmt.Sprintf("not enough GPUs free (%s of %s)", num(fill.AllocatableGPUs-fill.RequestedGPUs, -1), num(fill.AllocatableGPUs, -1))
	case d.CPUCores > fill.AllocatableCPU-fill.RequestedCPU:
		return fmt.Sprintf("not enough CPU free (%s of %s cores)", num(fill.AllocatableCPU-fill.RequestedCPU, -1), num(fill.AllocatableCPU, -1))
	}
	return ""
}

type explainOptions struct {
	output   string
	selector string
	explainSettings
	from string // where the settings came from
	now  func() time.Time
}

func newExplainCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	defaults := scoring.DefaultParams()
	o := &explainOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "explain POD",
		Short: "The pod's class and why, then per node the extender's filter verdict and score, term by term",
		Long: "explain works out, from the objects in the API server and with the functions joulie-extender runs " +
			"(pkg/workload, pkg/scoring), how the extender filters and scores every node for the pod. The extender's " +
			"settings are the running extender's, read from its /debug/scoring through the API server (--extender-service), " +
			"with any given here on top (--scoring-mode and the others, as in the chart's values); its defaults when they cannot be read.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("explain takes one pod name, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(o.output, "", "json", "yaml"); err != nil {
				return err
			}
			namespace, _, err := flags.ToRawKubeConfigLoader().Namespace()
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			c, err := newCluster(flags)
			if err != nil {
				return err
			}
			p, from, err := o.settings(cmd.Context(), c, cmd.Flags().Changed, defaults)
			if err != nil {
				if _, usage := errors.AsType[usageError](err); usage {
					return err
				}
				// Explain still answers, on its own settings, and says so.
				fmt.Fprintf(streams.ErrOut, "Warning: the scores use explain's settings, not the extender's: %v\n", err)
			}
			o.from = from
			return o.run(cmd.Context(), c, namespace, args[0], p, streams.Out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.service, "extender-service", defaultExtenderService,
		"NAMESPACE/NAME of joulie-extender's Service, whose /debug/scoring gives the settings the extender runs with (read through the API server's service proxy); empty to use explain's flags and defaults alone")
	f.StringVarP(&o.output, "output", "o", "", "output format: json or yaml")
	f.StringVarP(&o.selector, "selector", "l", "", "show only the nodes this label selector selects (the cluster's aggregates still count every node, as the extender's do)")
	f.StringVar(&o.mode, "scoring-mode", string(defaults.Mode), "the extender's scoringMode: pack, pack-standard or headroom")
	f.DurationVar(&o.staleness, "twin-staleness-threshold", defaults.StalenessThreshold, "the extender's twinStalenessThreshold")
	f.BoolVar(&o.facilityMetrics, "enable-facility-metrics", defaults.FacilityMetrics, "the extender weighs marginal power by the twins' PUE")
	f.Float64Var(&o.cpuUtil, "marginal-cpu-util-coeff", defaults.Coefficients.CPUUtil, "the extender's marginal.cpuUtilCoeff")
	f.Float64Var(&o.gpuStd, "marginal-gpu-util-coeff-standard", defaults.Coefficients.GPUUtilStandard, "the extender's marginal.gpuUtilCoeffStandard")
	f.Float64Var(&o.gpuPerf, "marginal-gpu-util-coeff-performance", defaults.Coefficients.GPUUtilPerformance, "the extender's marginal.gpuUtilCoeffPerformance")
	return cmd
}

// settings are the extender's settings explain scores with: the running
// extender's (unless --extender-service is empty) with the flags given
// on top, or explain's defaults and flags when the extender's cannot be
// read (the error says why); from says which.
func (o *explainOptions) settings(ctx context.Context, c *cluster, given func(flag string) bool, defaults scoring.Params) (p scoring.Params, from string, err error) {
	p = defaults
	from = "explain's defaults"
	if o.service != "" {
		var read error
		if p, read = c.extenderSettings(ctx, o.service, defaults); read == nil {
			from = "the extender's, from " + o.service
		} else if _, usage := errors.AsType[usageError](read); usage {
			return defaults, from, read
		} else {
			err = read
		}
	}
	changed := false
	if given("scoring-mode") {
		if e := p.Mode.UnmarshalText([]byte(o.mode)); e != nil {
			return defaults, from, usageError{fmt.Errorf("--scoring-mode: %w", e)}
		}
		changed = true
	}
	if given("twin-staleness-threshold") {
		p.StalenessThreshold, changed = o.staleness, true
	}
	if given("enable-facility-metrics") {
		p.FacilityMetrics, changed = o.facilityMetrics, true
	}
	for _, k := range []struct {
		flag string
		dst  *float64
		v    float64
	}{
		{"marginal-cpu-util-coeff", &p.Coefficients.CPUUtil, o.cpuUtil},
		{"marginal-gpu-util-coeff-standard", &p.Coefficients.GPUUtilStandard, o.gpuStd},
		{"marginal-gpu-util-coeff-performance", &p.Coefficients.GPUUtilPerformance, o.gpuPerf},
	} {
		if given(k.flag) {
			*k.dst, changed = k.v, true
		}
	}
	if !changed {
		return p, from, err
	}
	// What the extender would refuse to run with, explain refuses to
	// score with.
	if p.StalenessThreshold <= 0 {
		return defaults, from, usageError{fmt.Errorf("--twin-staleness-threshold %s: want a positive duration", p.StalenessThreshold)}
	}
	if e := p.Coefficients.Validate(); e != nil {
		return defaults, from, usageError{fmt.Errorf("the --marginal-* flags: %w", e)}
	}
	return p, from + ", with explain's flags", err
}

func (o *explainOptions) run(ctx context.Context, c *cluster, namespace, name string, params scoring.Params, out io.Writer) error {
	pod, err := c.pod(ctx, namespace, name)
	if err != nil {
		return err
	}
	sel, err := labels.Parse(o.selector)
	if err != nil {
		return usageError{fmt.Errorf("label selector %q: %v", o.selector, err)}
	}
	s, err := c.read(ctx, "")
	if err != nil {
		return err
	}
	e := buildExplanation(pod, s, params, o.now())
	e.SettingsFrom = o.from
	shown := e.Nodes[:0]
	for i, n := range e.Nodes {
		if sel.Matches(labels.Set(s.nodes[i].Labels)) {
			shown = append(shown, n)
		}
	}
	e.Nodes = shown
	switch o.output {
	case "json":
		return writeJSON(out, e)
	case "yaml":
		return writeYAML(out, e)
	}
	return writeExplanation(out, &e)
}

// writeExplanation writes the table form: the pod's class, the settings
// and aggregates, one row per node with the formula's terms, and the
// filter's reasons below.
func writeExplanation(w io.Writer, e *explanation) error {
	fmt.Fprintf(w, "Pod %s", e.Pod)
	if e.BoundTo != "" {
		fmt.Fprintf(w, " (bound to %s; scored without itself on its node, as when it was placed)", e.BoundTo)
	}
	fmt.Fprintf(w, "\nClass: %s: %s\n", e.Class, e.Why)
	if e.DaemonSet {
		fmt.Fprintln(w, "A DaemonSet's pod: the filter lets it onto every node unless it is performance-sensitive.")
	}
	fmt.Fprintf(w, "Requests: %s cores, %s GPUs\n", num(e.CPUCores, -1), num(e.GPUs, -1))
	fmt.Fprintf(w, "Extender settings: scoringMode %s, twins older than %s neutral (%s)\n",
		e.ScoringMode, e.StalenessThreshold, e.SettingsFrom)
	fmt.Fprintf(w, "Cluster: performance pressure %s, power trend %s W/min (trend scale %s)\n\n",
		num(e.PerfPressure, 1), num(e.ClusterTrendWPerMin, 1), num(e.TrendScale, 0))

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tFILTER\tSCORE\tPRIORITY\tTERMS\tSCHEDULER")
	var reasons []string
	for i := range e.Nodes {
		n := &e.Nodes[i]
		mark := n.Name
		if n.Name == e.BoundTo {
			mark += " *"
		}
		sched := "-"
		if n.Scheduler != "" {
			sched = n.Scheduler
		}
		if n.Score == nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t%s\n", mark, n.Verdict, sched)
			reasons = append(reasons, n.Name+": "+n.Reason)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", mark, n.Verdict, num(n.Score.Total, 1), *n.Priority, terms(n.Score, n.Known), sched)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(reasons) > 0 {
		fmt.Fprintln(w, "\nRejected by the extender's filter:")
		for _, r := range reasons {
			fmt.Fprintln(w, "  "+r)
		}
	}
	return nil
}

// terms writes a score's terms in the formula's order.
func terms(b *scoring.Breakdown, known bool) string {
	if b.Neutral {
		switch {
		case !known:
			return "neutral: Joulie does not know the node"
		case b.Stale:
			return "neutral: the twin is stale"
		}
		return "neutral: no twin"
	}
	var parts []string
	if b.Formula == scoring.ModePack {
		fill := "fill " + num(b.Fill, 1) + "%"
		if b.FillKnown {
			fill += " (cpu " + num(b.CPUFill, 1) + "%"
			if b.GPUCounted {
				fill += ", gpu " + num(b.GPUFill, 1) + "%"
			}
			fill += ")"
		} else {
			fill += " (allocatable unknown)"
		}
		parts = append(parts, fill+" ×0.7 = "+num(b.FillTerm, 1))
	} else {
		parts = append(parts, "headroom "+num(b.Headroom, 1)+"% (+"+num(b.MarginalW, 0)+" W) ×0.7 = "+num(b.HeadroomTerm, 1))
	}
	parts = append(parts, "cooling "+num(b.CoolingTerm, 1))
	if b.TrendBonus != 0 {
		parts = append(parts, "trend "+signed(b.TrendBonus))
	}
	if b.ProfileBonus != 0 {
		parts = append(parts, "eco "+signed(b.ProfileBonus))
	}
	if b.PressureRelief != 0 {
		parts = append(parts, "pressure "+signed(b.PressureRelief))
	}
	return strings.Join(parts, ", ")
}

func num(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

func signed(v float64) string {
	if v > 0 {
		return "+" + num(v, 1)
	}
	return num(v, 1)
}
