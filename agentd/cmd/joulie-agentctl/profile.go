package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/agentd/internal/localapi"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func profileCommand() *cli.Command {
	return &cli.Command{
		Name:      "profile",
		Usage:     "the power target in force and where it came from",
		ArgsUsage: " ",
		Description: "The source is cluster (the node's NodePowerProfile), standalone (the\n" +
			"daemon's config), override (set with `profile set`), failsafe, paused\n" +
			"(after `restore`) or none (nothing received yet).\n" +
			"Needs root or membership in the socket's group.",
		Flags: []cli.Flag{outputFlag()},
		Action: func(c *cli.Context) error {
			client, output, err := daemonCommand(c)
			if err != nil {
				return err
			}
			p, err := client.Profile(c.Context)
			if err != nil {
				return err
			}
			return writeProfileAs(c.App.Writer, output, p)
		},
		Subcommands: []*cli.Command{profileSetCommand()},
	}
}

func profileSetCommand() *cli.Command {
	return &cli.Command{
		Name:      "set",
		Usage:     "override the standalone profile on this host (standalone mode, root)",
		ArgsUsage: " ",
		Description: "Replaces the whole target: a class without a cap flag is left\n" +
			"uncapped (CPU) or at its default limits (GPU). When both watts and a\n" +
			"percentage are given, the watts win, as in NodePowerProfile.\n" +
			"--clear drops the override and goes back to standalone.profile of\n" +
			"the daemon's config. The override lives in the daemon's memory: it\n" +
			"does not survive a restart of joulie-agentd.\n" +
			"In cluster mode the NodePowerProfile decides; use kubectl.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "profile", Usage: "performance or eco"},
			&cli.Float64Flag{Name: "cpu-pct", Usage: "cap each CPU package at this percentage of its maximum (0-100)", DefaultText: "none"},
			&cli.Float64Flag{Name: "cpu-watts", Usage: "cap each CPU package at this many watts", DefaultText: "none"},
			&cli.Float64Flag{Name: "gpu-pct", Usage: "cap each GPU at this percentage of its maximum (0-100)", DefaultText: "none"},
			&cli.Float64Flag{Name: "gpu-watts", Usage: "cap each GPU at this many watts", DefaultText: "none"},
			&cli.BoolFlag{Name: "clear", Usage: "drop the override: back to the configured standalone profile"},
			outputFlag(),
		},
		Action: func(c *cli.Context) error {
			client, output, err := daemonCommand(c)
			if err != nil {
				return err
			}
			if c.Bool("clear") {
				for _, name := range []string{"profile", "cpu-pct", "cpu-watts", "gpu-pct", "gpu-watts"} {
					if c.IsSet(name) {
						return usageError("--clear goes back to the configured profile and takes no --%s", name)
					}
				}
				p, err := client.ClearProfile(c.Context)
				if err != nil {
					return err
				}
				return writeProfileAs(c.App.Writer, output, p)
			}
			spec, err := specFromFlags(c)
			if err != nil {
				return err
			}
			p, err := client.SetProfile(c.Context, spec)
			if err != nil {
				return err
			}
			return writeProfileAs(c.App.Writer, output, p)
		},
	}
}

// specFromFlags builds the target of `profile set`, refusing what the
// CRD would refuse with the flag's name rather than the JSON path.
func specFromFlags(c *cli.Context) (joulie.NodePowerProfileSpec, error) {
	var spec joulie.NodePowerProfileSpec
	switch p := joulie.Profile(c.String("profile")); p {
	case joulie.ProfilePerformance, joulie.ProfileEco:
		spec.Profile = p
	case "":
		return spec, usageError("profile set needs --profile performance|eco (or --clear)")
	default:
		return spec, usageError("--profile must be performance or eco, not %q", p)
	}
	flag := func(name string, max float64) (*float64, error) {
		if !c.IsSet(name) {
			return nil, nil
		}
		v := c.Float64(name)
		if !(v >= 0) || v > max {
			if max == 100 {
				return nil, usageError("--%s must be from 0 to 100, not %g", name, v)
			}
			return nil, usageError("--%s must be 0 or more, not %g", name, v)
		}
		return &v, nil
	}
	cpuPct, err := flag("cpu-pct", 100)
	if err != nil {
		return spec, err
	}
	cpuW, err := flag("cpu-watts", maxWatts)
	if err != nil {
		return spec, err
	}
	gpuPct, err := flag("gpu-pct", 100)
	if err != nil {
		return spec, err
	}
	gpuW, err := flag("gpu-watts", maxWatts)
	if err != nil {
		return spec, err
	}
	if cpuPct != nil || cpuW != nil {
		spec.CPU = &joulie.CPUPowerTarget{PackagePowerCapWatts: cpuW, PackagePowerCapPctOfMax: cpuPct}
	}
	if gpuPct != nil || gpuW != nil {
		spec.GPU = &joulie.GPUPowerTarget{PowerCap: &joulie.GPUPowerCap{CapWattsPerGpu: gpuW, CapPctOfMax: gpuPct}}
	}
	if err := localapi.ValidateSpec(spec); err != nil {
		return spec, usageError("%v", err)
	}
	return spec, nil
}

// maxWatts bounds the watts flags only against nonsense (Inf); the agent
// clamps real values to the hardware's range.
const maxWatts = 1e9

func writeProfileAs(w io.Writer, output string, p localapi.ProfileState) error {
	if output == "json" {
		return writeJSON(w, p)
	}
	var s sheet
	s.add("Node", "%s", p.Node)
	if p.Standalone {
		s.add("Mode", "standalone")
	} else {
		s.add("Mode", "cluster (NodePowerProfile %s)", p.Node)
	}
	switch p.Source {
	case localapi.SourceOverride:
		s.add("Source", "override, set with `joulie-agentctl profile set`; `profile set --clear` goes back to the configured profile")
	case localapi.SourceStandalone:
		s.add("Source", "standalone, from the daemon's config (standalone.profile)")
	case localapi.SourceCluster:
		if p.Generation > 0 {
			s.add("Source", "cluster, NodePowerProfile %s generation %d", p.Node, p.Generation)
		} else {
			s.add("Source", "cluster, NodePowerProfile %s", p.Node)
		}
	case localapi.SourcePaused:
		s.add("Source", "paused: the originals were restored; nothing is enforced until the target changes")
	case localapi.SourceNone:
		s.add("Source", "none: no target received yet")
	case localapi.SourceFailsafe:
		s.add("Source", "failsafe: the agent lost its desired state (see `joulie-agentctl status`)")
	default:
		s.add("Source", "%s", orDash(string(p.Source)))
	}
	s.add("Profile", "%s", orDash(string(p.Spec.Profile)))
	s.add("CPU cap", "%s", cpuTarget(p.Spec.CPU))
	if c := p.Spec.CPU; c != nil && c.Reason != "" {
		s.add("", "why: %s", c.Reason)
	}
	s.add("GPU cap", "%s", gpuTarget(p.Spec.GPU))
	if g := p.Spec.GPU; g != nil && g.Reason != "" {
		s.add("", "why: %s", g.Reason)
	}
	return s.write(w)
}

func cpuTarget(t *joulie.CPUPowerTarget) string {
	if t == nil {
		return "none: the CPUs are left uncapped"
	}
	return capTarget(t.PackagePowerCapWatts, t.PackagePowerCapPctOfMax, "package", "the CPUs are left uncapped")
}

func gpuTarget(t *joulie.GPUPowerTarget) string {
	if t == nil || t.PowerCap == nil {
		return "none: the GPUs stay at their default limits"
	}
	return capTarget(t.PowerCap.CapWattsPerGpu, t.PowerCap.CapPctOfMax, "device", "the GPUs stay at their default limits")
}

func capTarget(w, p *float64, unit, none string) string {
	switch {
	case w != nil && p != nil:
		return watts(*w) + " per " + unit + " (the watts win over " + pct(*p) + " of max)"
	case w != nil:
		return watts(*w) + " per " + unit
	case p != nil:
		return pct(*p) + " of each " + unit + "'s maximum"
	}
	return "none: " + none
}
