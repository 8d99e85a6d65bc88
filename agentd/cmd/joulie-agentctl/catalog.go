package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/prometheus/procfs"
	"github.com/urfave/cli/v2"

	"joulie.io/joulie/pkg/catalog"
)

// resolution is one model string and the catalog entry it resolved to. JSON
// names follow the API types (NodeHardware's catalogModel and exactness).
type resolution struct {
	Kind         string            `json:"kind"`
	Model        string            `json:"model"`
	CatalogModel string            `json:"catalogModel"`
	Name         string            `json:"name"`
	Exactness    catalog.Exactness `json:"exactness"`
	TDPWatts     float64           `json:"tdpWatts"`
	CapMinWatts  float64           `json:"capMinWatts"`
	CapMaxWatts  float64           `json:"capMaxWatts"`
	Density      float64           `json:"density"`
}

func catalogCommand() *cli.Command {
	return &cli.Command{
		Name:      "catalog",
		Usage:     "resolve CPU and GPU models against Joulie's hardware catalog",
		ArgsUsage: " ",
		Description: "Without --cpu or --gpu, resolves this host's CPU model from\n" +
			"<host-root>/proc/cpuinfo. Figures are per CPU package and per GPU.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "host-root", Value: "/", EnvVars: []string{"JOULIE_HOST_ROOT"},
				Usage: "directory under which proc/ is read"},
			&cli.StringSliceFlag{Name: "cpu", Usage: "a CPU model name to resolve (repeatable)"},
			&cli.StringSliceFlag{Name: "gpu", Usage: "a GPU model name to resolve (repeatable)"},
			outputFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError("catalog takes no arguments; use --cpu or --gpu (got %q)", c.Args().First())
			}
			output, err := outputFormat(c)
			if err != nil {
				return err
			}
			cpus, gpus := c.StringSlice("cpu"), c.StringSlice("gpu")
			if len(cpus) == 0 && len(gpus) == 0 {
				model, err := hostCPUModel(c.String("host-root"))
				if err != nil {
					return cli.Exit(err.Error(), exitFailure)
				}
				cpus = []string{model}
			}
			rows := resolveAll(catalog.Default(), cpus, gpus)
			if output == "json" {
				return writeJSON(c.App.Writer, rows)
			}
			return writeTable(c.App.Writer, rows)
		},
	}
}

// hostCPUModel reads the CPU model name the kernel reports.
func hostCPUModel(hostRoot string) (string, error) {
	procDir := filepath.Join(hostRoot, "proc")
	fs, err := procfs.NewFS(procDir)
	if err != nil {
		return "", fmt.Errorf("open %s: %w (is --host-root right?)", procDir, err)
	}
	infos, err := fs.CPUInfo()
	if err != nil {
		return "", fmt.Errorf("read %s/cpuinfo: %w", procDir, err)
	}
	for _, info := range infos {
		if name := strings.TrimSpace(info.ModelName); name != "" {
			return name, nil
		}
	}
	return "", errors.New(procDir + "/cpuinfo names no CPU model; pass one with --cpu")
}

func resolveAll(cat *catalog.Catalog, cpus, gpus []string) []resolution {
	rows := make([]resolution, 0, len(cpus)+len(gpus))
	for _, raw := range cpus {
		e, ex := cat.ResolveCPU(raw)
		rows = append(rows, resolution{"cpu", raw, e.ID, e.Name, ex, e.TDPWatts, e.CapMinWatts, e.CapMaxWatts, e.Density})
	}
	for _, raw := range gpus {
		e, ex := cat.ResolveGPU(raw)
		rows = append(rows, resolution{"gpu", raw, e.ID, e.Name, ex, e.TDPWatts, e.CapMinWatts, e.CapMaxWatts, e.Density})
	}
	return rows
}

func writeTable(w io.Writer, rows []resolution) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tMODEL\tCATALOG\tEXACTNESS\tTDP-W\tCAP-RANGE-W\tDENSITY")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%g\t%g-%g\t%.3f\n",
			r.Kind, r.Model, r.CatalogModel, r.Exactness, r.TDPWatts, r.CapMinWatts, r.CapMaxWatts, r.Density)
	}
	return tw.Flush()
}
