package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"joulie.io/joulie/agentd/internal/localapi"
	joulie "joulie.io/joulie/pkg/apis/joulie/v1alpha1"
)

func statusCommand(now func() time.Time) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "what the agent enforces now, and how it went",
		ArgsUsage: " ",
		Description: "Shows the profile in force and its source, the outcome of the CPU and\n" +
			"GPU caps, measured power, the last sync with the cluster and the\n" +
			"failsafe. Needs root or membership in the socket's group.",
		Flags: []cli.Flag{outputFlag()},
		Action: func(c *cli.Context) error {
			client, output, err := daemonCommand(c)
			if err != nil {
				return err
			}
			st, err := client.Status(c.Context)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(c.App.Writer, st)
			}
			return writeStatus(c.App.Writer, st, now())
		},
	}
}

func writeStatus(w io.Writer, st localapi.Status, now time.Time) error {
	var s sheet
	s.add("Node", "%s", st.Node)
	s.add("Agent version", "%s", st.Version)
	if st.Standalone {
		s.add("Mode", "standalone")
	} else {
		mode := "cluster (NodePowerProfile " + st.Node
		if st.ObservedGeneration > 0 {
			mode += fmt.Sprintf(", generation %d applied", st.ObservedGeneration)
		}
		s.add("Mode", "%s)", mode)
	}
	switch {
	case st.Source == localapi.SourcePaused:
		s.add("Profile", "none: enforcement paused after a restore, until the target changes")
	case st.Profile == "":
		s.add("Profile", "none yet: no target received")
	default:
		s.add("Profile", "%s (from %s)", st.Profile, st.Source)
	}
	addPower(&s, st, now)
	cpuWhy, gpuWhy := st.CPUCapReason, st.GPUCapReason
	if st.PowerState == joulie.PowerParked {
		// The caps are restored for the park: why the controller chose
		// them would read as if they were in force.
		cpuWhy, gpuWhy = "", ""
	}
	addControl(&s, "CPU", "package", st.CPU, st.CPUMode, cpuWhy)
	addControl(&s, "GPU", "device", st.GPU, "", gpuWhy)
	if mp := st.MeasuredPower; mp != nil {
		var parts []string
		if mp.CPUPowerWatts != nil {
			parts = append(parts, "CPU "+watts(*mp.CPUPowerWatts))
		}
		if mp.GPUPowerWatts != nil {
			parts = append(parts, "GPU "+watts(*mp.GPUPowerWatts))
		}
		line := watts(mp.NodePowerWatts)
		if len(parts) > 0 {
			line += " (" + strings.Join(parts, ", ") + ")"
		}
		if !mp.Time.IsZero() {
			line += ", read " + age(now, mp.Time.Time)
		}
		s.add("Measured power", "%s", line)
	} else {
		s.add("Measured power", "no reading")
	}
	if !st.Standalone {
		if st.LastSync == nil {
			s.add("Last sync", "never")
		} else {
			s.add("Last sync", "%s", age(now, st.LastSync.Time))
		}
		if st.SyncError != "" {
			s.add("Sync error", "%s", st.SyncError)
		}
	}
	if st.EcoGuard != "" {
		s.add("Eco guard", "%s", st.EcoGuard)
	}
	s.add("Failsafe", "%s", failsafe(st.Failsafe, now))
	if st.OriginalsRecorded == 0 {
		s.add("Originals", "none recorded: the host is as joulie-agentd found it")
	} else {
		s.add("Originals", "%s recorded; `joulie-agentctl restore` puts them back", plural(st.OriginalsRecorded, "control", "controls"))
	}
	return s.write(w)
}

// addPower shows the power state the agent reports, why when a park is
// under way, and the Wake-on-LAN targets it sends packets to.
func addPower(s *sheet, st localapi.Status, now time.Time) {
	if st.PowerState != "" {
		line := string(st.PowerState)
		for _, c := range st.Conditions {
			if c.Type == "Parked" {
				line += fmt.Sprintf(" (park %s: %s)", c.Reason, c.Message)
			}
		}
		s.add("Power state", "%s", line)
	}
	for i, w := range st.WakeOnLAN {
		label := ""
		if i == 0 {
			label = "Wake-on-LAN"
		}
		line := w.MAC + ": " + plural(int(w.PacketsSent), "packet", "packets") + " sent"
		if w.LastSent != nil {
			line += ", last " + age(now, w.LastSent.Time)
		}
		if w.LastError != "" {
			line += fmt.Sprintf("; %s, last: %s", plural(int(w.Errors), "error", "errors"), w.LastError)
		}
		s.add(label, "%s", line)
	}
}

// addControl shows one device class's outcome: backend, result, cap and
// throttle on one line, the message under it, why the controller chose
// the cap (reason, when it says), then every device that did not apply.
func addControl(s *sheet, label, unit string, cs *joulie.ControlStatus, mode joulie.ControlBackend, reason string) {
	if cs == nil {
		if mode != "" {
			s.add(label, "%s, nothing enforced yet", mode)
		} else {
			s.add(label, "nothing enforced yet")
		}
		if reason != "" {
			s.add("", "why: %s", reason)
		}
		return
	}
	backend := cs.Backend
	if backend == "" {
		backend = mode
	}
	parts := []string{string(cs.Result)}
	if backend != "" && backend != joulie.BackendNone {
		parts = append([]string{string(backend)}, parts...)
	}
	if cs.AppliedCapWatts != nil {
		parts = append(parts, "cap "+watts(*cs.AppliedCapWatts)+" per "+unit)
	}
	if cs.ThrottlePct != nil {
		parts = append(parts, "throttle "+pct(*cs.ThrottlePct)+" of CPUs")
	}
	switch {
	case cs.Message == "":
		s.add(label, "%s", strings.Join(parts, ", "))
	case len(parts) == 1:
		// Nothing but a result: the message fits beside it.
		s.add(label, "%s: %s", parts[0], cs.Message)
	default:
		s.add(label, "%s", strings.Join(parts, ", "))
		s.add("", "%s", cs.Message)
	}
	if reason != "" {
		s.add("", "why: %s", reason)
	}
	for _, d := range cs.Devices {
		if d.Result == joulie.ResultApplied || d.Result == joulie.ResultNone {
			continue
		}
		line := string(d.Result)
		// A reason the class message already gives (eight GPUs without a
		// driver) is not repeated per device.
		if d.Message != "" && !strings.Contains(cs.Message, d.Message) {
			line += ": " + d.Message
		}
		s.add("  "+deviceName(label, d.ID), "%s", line)
	}
}

// deviceName labels a device as an operator would: "package-0" is clear,
// a bare GPU index is not.
func deviceName(class, id string) string {
	if class == "GPU" {
		return "GPU " + id
	}
	return id
}

func failsafe(f localapi.FailsafeState, now time.Time) string {
	if !f.Active {
		if f.Mode == "" {
			return "inactive"
		}
		return "inactive (mode " + f.Mode + ")"
	}
	line := "ACTIVE"
	if f.Mode != "" {
		line += " (mode " + f.Mode + ")"
	}
	if f.Since != nil {
		line += ", entered " + age(now, f.Since.Time)
	}
	if f.Reason != "" {
		line += ": " + f.Reason
	}
	return line
}
