package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func hardwareCommand() *cli.Command {
	return &cli.Command{
		Name:      "hardware",
		Usage:     "the hardware the agent discovered, as it publishes it in NodeHardware",
		ArgsUsage: " ",
		Description: "Shows the CPU and GPU models, their catalog entries, cap ranges,\n" +
			"the controls and telemetry the agent can use, and what it could not\n" +
			"discover. Needs root or membership in the socket's group.",
		Flags: []cli.Flag{outputFlag()},
		Action: func(c *cli.Context) error {
			client, output, err := daemonCommand(c)
			if err != nil {
				return err
			}
			hw, err := client.Hardware(c.Context)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(c.App.Writer, hw)
			}
			return writeHardware(c.App.Writer, hw)
		},
	}
}

func writeHardware(w io.Writer, hw joulie.NodeHardwareStatus) error {
	var s sheet
	cpu := hw.CPU
	model := orDash(cpu.Model)
	if cpu.Vendor != "" {
		model += " (" + cpu.Vendor + ")"
	}
	s.add("CPU", "%s", model)
	s.add("  Catalog", "%s", catalogEntry(cpu.CatalogModel, cpu.Exactness))
	s.add("  Topology", "%s", topology(cpu))
	s.add("  Cap range", "%s", capRange(cpu.CapRange, "package"))
	for _, p := range cpu.Packages {
		line := orDash(p.Zone)
		if p.CurrentCapWatts != nil {
			line += ", cap " + watts(*p.CurrentCapWatts)
		}
		if p.LimitsWritable {
			line += ", limits writable"
		} else {
			line += ", limits read-only"
		}
		s.add(fmt.Sprintf("    package-%d", p.ID), "%s", line)
	}
	if f := cpu.Frequency; f != nil {
		line := orDash(f.Driver) + "/" + orDash(f.Governor) + fmt.Sprintf(", %d-%d MHz", f.MinKHz/1000, f.MaxKHz/1000)
		if f.BaseKHz > 0 {
			line += fmt.Sprintf(" (base %d)", f.BaseKHz/1000)
		}
		s.add("  Frequency", "%s", line)
	}
	s.add("  Control", "%s", control(cpu.Control))
	s.add("  Telemetry", "%s", telemetry(cpu.Telemetry))

	if g := hw.GPU; g == nil || g.Count == 0 {
		s.add("GPU", "none")
	} else {
		line := fmt.Sprintf("%d × %s", g.Count, orDash(g.Model))
		if g.Vendor != "" {
			line += " (" + g.Vendor + ")"
		}
		s.add("GPU", "%s", line)
		s.add("  Catalog", "%s", catalogEntry(g.CatalogModel, g.Exactness))
		s.add("  Cap range", "%s", capRange(g.CapRange, "device"))
		s.add("  Control", "%s", control(g.Control))
		s.add("  Telemetry", "%s", telemetry(g.Telemetry))
		for _, d := range g.Devices {
			line := "cap unknown"
			if d.CurrentCapWatts != nil {
				line = "cap " + watts(*d.CurrentCapWatts)
			}
			if d.CapRange != nil {
				line += " (range " + wattsRange(d.CapRange.MinWatts, d.CapRange.MaxWatts) + ")"
			}
			if d.PCIBusID != "" {
				line += ", " + d.PCIBusID
			}
			s.add(fmt.Sprintf("    GPU %d", d.Index), "%s", line)
		}
	}
	if hw.MemoryBytes > 0 {
		s.add("Memory", "%s GiB", trimZero(strconv.FormatFloat(float64(hw.MemoryBytes)/(1<<30), 'f', 1, 64)))
	}
	s.add("Quality", "%s", orDash(string(hw.Quality)))
	if len(hw.Warnings) == 0 {
		s.add("Warnings", "none")
	} else {
		s.add("Warnings", "%s", hw.Warnings[0])
		for _, warning := range hw.Warnings[1:] {
			s.add("", "%s", warning)
		}
	}
	return s.write(w)
}

func orDash(v string) string {
	if v == "" {
		return "-"
	}
	return v
}

func catalogEntry(model string, ex joulie.Exactness) string {
	if model == "" {
		return "not resolved"
	}
	if ex == "" {
		return model
	}
	return model + " (" + string(ex) + ")"
}

func topology(cpu joulie.CPUHardware) string {
	parts := []string{plural(int(cpu.Sockets), "socket", "sockets")}
	if cpu.CoresPerSocket > 0 {
		parts[0] += fmt.Sprintf(" × %d cores", cpu.CoresPerSocket)
	}
	if cpu.TotalCores > 0 {
		parts = append(parts, fmt.Sprintf("%d cores", cpu.TotalCores))
	}
	if cpu.LogicalCPUs > 0 {
		parts = append(parts, fmt.Sprintf("%d logical CPUs", cpu.LogicalCPUs))
	}
	return strings.Join(parts, ", ")
}

func capRange(r *joulie.PowerRange, unit string) string {
	if r == nil {
		return "unknown"
	}
	line := wattsRange(r.MinWatts, r.MaxWatts) + " per " + unit
	if r.DefaultWatts > 0 {
		line += ", default " + watts(r.DefaultWatts)
	}
	if r.Source != "" {
		line += " (from " + r.Source + ")"
	}
	return line
}

func control(c joulie.ControlCapability) string {
	line := orDash(string(c.Backend))
	if len(c.Available) > 0 {
		names := make([]string, len(c.Available))
		for i, b := range c.Available {
			names[i] = string(b)
		}
		line += " (available: " + strings.Join(names, ", ") + ")"
	}
	if c.Reason != "" {
		line += ": " + c.Reason
	}
	return line
}

func telemetry(t joulie.TelemetryCapability) string {
	line := orDash(string(t.Source))
	if t.Reason != "" {
		line += ": " + t.Reason
	}
	return line
}
