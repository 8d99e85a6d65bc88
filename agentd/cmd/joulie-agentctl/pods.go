package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/agentd/internal/localapi"
	"joulie.io/joulie/pkg/energyreport"
)

func podsCommand() *cli.Command {
	return &cli.Command{
		Name:      "pods",
		Usage:     "each pod's energy on this host: its GPUs, watts now and joules so far",
		ArgsUsage: " ",
		Description: "GPU figures are measured by the GPUs' energy counters, each GPU's energy\n" +
			"going to the pod the kubelet says holds it (a shared GPU split by the\n" +
			"replicas each pod holds). CPU figures are an estimate: the CPU packages'\n" +
			"energy by the pod's share of CPU time. Pods that ended stay listed for a\n" +
			"while with their totals. Largest energy first. Needs root or membership\n" +
			"in the socket's group.",
		Flags: []cli.Flag{outputFlag()},
		Action: func(c *cli.Context) error {
			client, output, err := daemonCommand(c)
			if err != nil {
				return err
			}
			r, err := client.Pods(c.Context)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(c.App.Writer, r)
			}
			return writePods(c.App.Writer, r)
		},
	}
}

// total is a pod's energy, the estimate included, for the order.
func total(p localapi.PodEnergy) float64 {
	t := p.GPUJoules
	if p.CPUJoulesEstimate != nil {
		t += *p.CPUJoulesEstimate
	}
	return t
}

func writePods(w io.Writer, r localapi.PodsReport) error {
	fmt.Fprintf(w, "Kubelet:  %s\nCPU:      %s\n\n", r.Kubelet, r.CPU)
	if len(r.Pods) == 0 {
		_, err := fmt.Fprintln(w, "No pods.")
		return err
	}
	pods := slices.Clone(r.Pods)
	slices.SortStableFunc(pods, func(a, b localapi.PodEnergy) int {
		return cmp.Or(cmp.Compare(total(b), total(a)), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tSTATE\tGPUS\tGPU W\tGPU ENERGY\tCPU W (EST.)\tCPU ENERGY (EST.)")
	for _, p := range pods {
		state := "running"
		if p.Ended {
			state = "ended"
		}
		gpuEnergy := energyreport.Human(p.GPUJoules)
		if p.GPUEstimated {
			gpuEnergy += " *"
		}
		cpuW, cpuE := "-", "-"
		if p.CPUWattsEstimate != nil {
			cpuW, cpuE = watts(*p.CPUWattsEstimate), energyreport.Human(*p.CPUJoulesEstimate)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, state, gpuList(p.GPUs),
			watts(p.GPUWatts), gpuEnergy, cpuW, cpuE)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if slices.ContainsFunc(pods, func(p localapi.PodEnergy) bool { return p.GPUEstimated }) {
		fmt.Fprintln(w, "\n* partly integrated from power readings (a GPU without an energy counter, or a counter reset)")
	}
	if len(r.UnattributedGPUJoules) > 0 {
		ids := make([]string, 0, len(r.UnattributedGPUJoules))
		for id := range r.UnattributedGPUJoules {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = id + " " + energyreport.Human(r.UnattributedGPUJoules[id])
		}
		fmt.Fprintf(w, "\nGPU energy while no pod held the device: %s\n", strings.Join(parts, ", "))
	}
	return nil
}

// gpuList shortens GPU UUIDs to what tells them apart on one host.
func gpuList(ids []string) string {
	if len(ids) == 0 {
		return "-"
	}
	short := make([]string, len(ids))
	for i, id := range ids {
		if len(id) > 12 {
			id = id[:12] + "…"
		}
		short[i] = id
	}
	return strings.Join(short, ",")
}
