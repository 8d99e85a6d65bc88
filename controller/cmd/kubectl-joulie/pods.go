package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"joulie.io/joulie/pkg/energyreport"
	"joulie.io/joulie/pkg/powerest"
)

// podEnergy is one pod of kubectl joulie pods: its GPUs and the energy
// its EnergyReport states, or, for a GPU pod still running, none yet
// (the agent reports a pod when it ends; until then its energy is on the
// host: joulie-agentctl pods).
type podEnergy struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node,omitempty"`
	// State is ended (an EnergyReport says what it used) or running (a
	// pod with GPUs that has no report yet).
	State string `json:"state"`
	GPUs  int    `json:"gpus"`
	// GPUIDs are the devices the report names.
	GPUIDs       []string   `json:"gpuIds,omitempty"`
	Joules       *float64   `json:"joules,omitempty"`
	GPUJoules    *float64   `json:"gpuJoules,omitempty"`
	CPUJoules    *float64   `json:"cpuJoules,omitempty"`
	GPUEstimated bool       `json:"gpuEstimated,omitempty"`
	Since        *time.Time `json:"since,omitempty"`
	Until        *time.Time `json:"until,omitempty"`
	// Unreadable holds the note of a report this version cannot read.
	Unreadable string `json:"unreadable,omitempty"`
}

// buildPods lists the reported pods, top energy first, then the running
// GPU pods without a report, by GPUs.
func buildPods(events []eventsv1.Event, pods []corev1.Pod) []podEnergy {
	out := []podEnergy{}
	reported := map[string]bool{}
	for i := range events {
		ev := &events[i]
		if ev.Reason != energyreport.Reason || ev.Regarding.Kind != "Pod" {
			continue
		}
		p := podEnergy{Namespace: ev.Regarding.Namespace, Name: ev.Regarding.Name, Node: ev.ReportingInstance, State: "ended"}
		if r, err := energyreport.Parse(ev.Note); err != nil {
			p.Unreadable = ev.Note
		} else {
			j, g, c := r.Joules(), r.GPUJoules, r.CPUJoules
			p.Joules, p.GPUJoules, p.GPUs, p.GPUIDs, p.GPUEstimated = &j, &g, r.GPUCount, r.GPUs, r.GPUEstimated
			if r.HasCPU {
				p.CPUJoules = &c
			}
			since, until := r.Since, r.Until
			p.Since, p.Until = &since, &until
		}
		reported[string(ev.Regarding.UID)] = true
		out = append(out, p)
	}
	for i := range pods {
		pod := &pods[i]
		gpus := powerest.PodDemand(pod).GPUs
		if gpus == 0 || reported[string(pod.UID)] {
			continue
		}
		out = append(out, podEnergy{Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName, State: "running", GPUs: int(gpus)})
	}
	slices.SortStableFunc(out, func(a, b podEnergy) int {
		if (a.Joules == nil) != (b.Joules == nil) {
			if a.Joules != nil {
				return -1
			}
			return 1
		}
		if a.Joules != nil && *a.Joules != *b.Joules {
			return cmp.Compare(*b.Joules, *a.Joules)
		}
		if a.GPUs != b.GPUs {
			return cmp.Compare(b.GPUs, a.GPUs)
		}
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

type podsOptions struct {
	output        string
	allNamespaces bool
}

func newPodsCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &podsOptions{}
	cmd := &cobra.Command{
		Use:   "pods",
		Short: "Pods with their GPUs and the energy their agent reported when they ended, top first",
		Long: "pods lists the pods Joulie's agents reported energy for (the EnergyReport event written when a pod ends), " +
			"highest energy first, then the pods with GPUs still running, whose energy the agent reports when they end " +
			"(until then: joulie-agentctl pods on the node).",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(o.output, "", "wide", "json", "yaml"); err != nil {
				return err
			}
			namespace := ""
			if !o.allNamespaces {
				ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
				if err != nil {
					return fmt.Errorf("kubeconfig: %w", err)
				}
				namespace = ns
			}
			c, err := newCluster(flags)
			if err != nil {
				return err
			}
			return o.run(cmd.Context(), c, namespace, streams.Out)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: wide, json or yaml")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "pods of every namespace")
	return cmd
}

func (o *podsOptions) run(ctx context.Context, c *cluster, namespace string, out io.Writer) error {
	events, err := c.energyReports(ctx, namespace)
	if err != nil {
		return err
	}
	pods, err := c.activePods(ctx, namespace)
	if err != nil {
		return err
	}
	rows := buildPods(events, pods)
	switch o.output {
	case "json":
		return writeJSON(out, rows)
	case "yaml":
		return writeYAML(out, rows)
	}
	return writePods(out, rows, o.output == "wide")
}

func writePods(w io.Writer, rows []podEnergy, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "NAMESPACE\tPOD\tNODE\tSTATE\tGPUS\tENERGY\tGPU\tCPU\tDURATION"
	if wide {
		head += "\tGPU-IDS"
	}
	fmt.Fprintln(tw, head)
	for _, p := range rows {
		energy, gpu, cpu, dur := "-", "-", "-", "-"
		switch {
		case p.Unreadable != "":
			energy = "unreadable report"
		case p.Joules != nil:
			energy, gpu = energyreport.Human(*p.Joules), energyreport.Human(*p.GPUJoules)
			if p.GPUEstimated {
				gpu += " (partly estimated)"
			}
			if p.CPUJoules != nil {
				cpu = energyreport.Human(*p.CPUJoules) + " (estimated)"
			}
			dur = p.Until.Sub(*p.Since).Round(time.Second).String()
		case p.State == "running":
			energy = "at its end"
		}
		row := []string{p.Namespace, p.Name, orDash(p.Node), p.State, strconv.Itoa(p.GPUs), energy, gpu, cpu, dur}
		if wide {
			row = append(row, orDash(strings.Join(p.GPUIDs, ",")))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}
