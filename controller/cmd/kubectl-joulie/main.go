// Command kubectl-joulie is the kubectl plugin `kubectl joulie`: Joulie's
// state from an operator's workstation, read-only.
//
//	kubectl joulie status [-w] [-o wide|json|yaml] [-l SELECTOR]
//	kubectl joulie explain POD [-n NAMESPACE] [-o json|yaml]
//	kubectl joulie pods [-A | -n NAMESPACE] [-o wide|json|yaml]
//
// It is a thin shell: the pod's class comes from pkg/workload, the nodes'
// view, filter and score from pkg/scoring (the very functions
// joulie-extender runs), the energy reports from pkg/energyreport, and
// the objects from the API server through the generated clients. The
// usual kubectl flags (--kubeconfig, --context, -n, --as, ...) come from
// k8s.io/cli-runtime, which also brings cobra: this one program follows
// kubectl's conventions rather than urfave/cli's, since its flags are
// kubectl's. It needs the chart's ClusterRole joulie-viewer, or get,
// list and watch on Joulie's resources, nodes, pods and events.
//
// Exit codes: 0 success, 1 runtime failure (the message says what to do),
// 2 bad usage.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"joulie.io/joulie/pkg/version"
)

func main() {
	os.Exit(run(os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}

// usageError is a command line the plugin cannot run: exit status 2.
type usageError struct{ error }

// run runs the plugin with args and returns its exit status.
func run(args []string, streams genericiooptions.IOStreams) int {
	root := newRootCommand(streams)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintf(streams.ErrOut, "kubectl joulie: %v\n", err)
	if _, ok := errors.AsType[usageError](err); ok {
		return 2
	}
	return 1
}

func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		// kubectl runs the plugin as kubectl-joulie; its help should
		// show the command as typed.
		Use:         "kubectl-joulie",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl joulie"},
		Short:       "Joulie's power state of the cluster: nodes, placement decisions, per-pod energy",
		Long: "kubectl joulie shows what Joulie does with the cluster's power: each managed node's profile, " +
			"power state, caps and power (status), why the scheduler extender filters and scores nodes as it does " +
			"for a pod (explain), and what pods used (pods). It only reads.",
		Version:           version.Version,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	flags.AddFlags(root.PersistentFlags())
	root.AddCommand(newStatusCommand(flags, streams), newExplainCommand(flags, streams), newPodsCommand(flags, streams))
	return root
}

// checkOutput refuses an -o the command does not know.
func checkOutput(output string, allowed ...string) error {
	for _, a := range allowed {
		if output == a {
			return nil
		}
	}
	return usageError{fmt.Errorf("unknown output format %q: use %s, or none for the table", output, strings.Join(allowed[1:], ", "))}
}
