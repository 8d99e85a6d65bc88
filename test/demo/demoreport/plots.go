package demoreport

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Colours of the profiles, the same in every plot and in the page's
// legend: performance warm, draining between, eco green.
var profileColors = map[string]color.RGBA{
	ProfilePerformance: {R: 0xd6, G: 0x4f, B: 0x2a, A: 0xff},
	ProfileDraining:    {R: 0xe8, G: 0xa8, B: 0x38, A: 0xff},
	ProfileEco:         {R: 0x3a, G: 0x9a, B: 0x5b, A: 0xff},
}

// Colours of the power states other than awake, which the profile plot
// draws over the profile's colour: greys while the node goes off or is
// off, blues while it comes back.
var stateColors = map[string]color.RGBA{
	StateAwake:      {R: 0xd6, G: 0x4f, B: 0x2a, A: 0xff},
	StateParking:    {R: 0x9a, G: 0x9a, B: 0x9a, A: 0xff},
	StateParked:     {R: 0x4a, G: 0x4a, B: 0x4a, A: 0xff},
	StateWaking:     {R: 0x7f, G: 0xb3, B: 0xe0, A: 0xff},
	StateBooting:    {R: 0x2f, G: 0x6f, B: 0xb0, A: 0xff},
	StateWakeFailed: {R: 0x00, G: 0x00, B: 0x00, A: 0xff},
}

var classColors = map[string]color.RGBA{
	ClassPerformance: {R: 0x8e, G: 0x3b, B: 0xb8, A: 0xff},
	ClassStandard:    {R: 0x3b, G: 0x78, B: 0xb8, A: 0xff},
}

// svgURI renders p as an SVG data: URI, which an <img> shows without
// fetching anything.
func svgURI(p *plot.Plot, w, h vg.Length) (template.URL, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", err
	}
	// The URI is built here from the plot's own bytes, so it is safe to
	// put in src as it is.
	return template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())), nil
}

// powerPlot draws the cluster's power over time, one line per run.
func powerPlot(runs []Run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Cluster power"
	p.X.Label.Text = "minutes since the run's start"
	p.Y.Label.Text = "kW"
	p.Y.Min = 0
	p.Legend.Top = false
	p.Legend.Left = true
	for i, r := range runs {
		pts := make(plotter.XYs, 0, len(r.Samples))
		for _, s := range r.Samples {
			pts = append(pts, plotter.XY{X: s.T / 60, Y: s.PowerW / 1000})
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("power plot of run %s: %w", r.Name, err)
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s: %.0f kJ", r.Name, r.Summary.EnergyJ/1000), l)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// profilePlot draws each node's profile over the run as a bar of
// coloured segments, one row per node.
func profilePlot(r Run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Node profiles and power states over time (" + r.Name + ")"
	p.X.Label.Text = "minutes since the run's start"
	end := r.Summary.DurationSeconds
	names := make([]string, len(r.Nodes))
	for i, n := range r.Nodes {
		// Row 0 at the bottom; the first node goes on top.
		y := float64(len(r.Nodes) - 1 - i)
		// The browser's font may be wider than the one the plot measured
		// its margin with: keep the labels short (the page's node table
		// has the path).
		names[len(r.Nodes)-1-i] = n.Name
		for k, c := range n.Timeline {
			to := end
			if k+1 < len(n.Timeline) {
				to = n.Timeline[k+1].T
			}
			if to <= c.T {
				continue
			}
			l, err := plotter.NewLine(plotter.XYs{{X: c.T / 60, Y: y}, {X: to / 60, Y: y}})
			if err != nil {
				return nil, fmt.Errorf("profile plot of %s: %w", n.Name, err)
			}
			l.Color = profileColors[changeProfile(c)]
			if c.PowerState != "" && c.PowerState != StateAwake {
				l.Color = stateColors[c.PowerState]
			}
			l.Width = vg.Points(9)
			p.Add(l)
		}
	}
	// The page prints the colours' legend above the plot, where it
	// cannot hide a node's row.
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.7, float64(len(r.Nodes))-0.3
	p.X.Min, p.X.Max = 0, max(end/60, 1e-3)
	return p, nil
}

// statesPlot draws how many nodes were in each power state over the run,
// one line per state that occurred.
func statesPlot(r Run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Nodes per power state (" + r.Name + ")"
	p.X.Label.Text = "minutes since the run's start"
	p.Y.Label.Text = "nodes"
	p.Y.Min = 0
	p.Legend.Top = true
	drawn := false
	for _, st := range States {
		seen := false
		pts := make(plotter.XYs, 0, len(r.Samples))
		for _, s := range r.Samples {
			seen = seen || s.States[st] > 0
			pts = append(pts, plotter.XY{X: s.T / 60, Y: float64(s.States[st])})
		}
		if !seen {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("power state plot of run %s: %w", r.Name, err)
		}
		l.Color = stateColors[st]
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(st, l)
		drawn = true
	}
	if !drawn {
		p.X.Max, p.Y.Max = 1, 1 // an empty run still draws its axes
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// changeProfile is a timeline entry's profile as the plots colour it.
func changeProfile(c NodeChange) string {
	if c.Draining {
		return ProfileDraining
	}
	if c.Profile == "" {
		return ProfilePerformance
	}
	return c.Profile
}

// podsPlot draws how many pods of each class ran on each node.
func podsPlot(r Run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Pods per node by class (" + r.Name + ")"
	p.Y.Label.Text = "pods started"
	perf := make(plotter.Values, len(r.Nodes))
	std := make(plotter.Values, len(r.Nodes))
	names := make([]string, len(r.Nodes))
	for i, n := range r.Nodes {
		perf[i], std[i], names[i] = float64(n.PerfPods), float64(n.StdPods), n.Name
	}
	w := vg.Points(14)
	bp, err := plotter.NewBarChart(perf, w)
	if err != nil {
		return nil, fmt.Errorf("pods plot: %w", err)
	}
	bs, err := plotter.NewBarChart(std, w)
	if err != nil {
		return nil, fmt.Errorf("pods plot: %w", err)
	}
	bp.Color, bs.Color = classColors[ClassPerformance], classColors[ClassStandard]
	bp.LineStyle.Width, bs.LineStyle.Width = 0, 0
	bs.StackOn(bp)
	p.Add(bp, bs)
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.8
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	return p, nil
}

// durationPlot draws, per class and run, the spread of how long pods ran
// relative to their work at full speed (1 = not slowed).
func durationPlot(runs []Run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "How much longer pods ran than their work at full speed"
	p.Y.Label.Text = "run time / work"
	var names []string
	w := vg.Points(26)
	x := 0.0
	for _, class := range []string{ClassPerformance, ClassStandard} {
		for i, r := range runs {
			var vs plotter.Values
			for _, pod := range r.Pods {
				if d := pod.Ran(); pod.Class == class && d >= 0 && pod.WorkSeconds > 0 {
					vs = append(vs, d/pod.WorkSeconds)
				}
			}
			names = append(names, class+"\n"+r.Name)
			if len(vs) == 0 {
				// No box, but its slot and label keep the others in step.
				x++
				continue
			}
			b, err := plotter.NewBoxPlot(w, x, vs)
			if err != nil {
				return nil, fmt.Errorf("duration plot: %w", err)
			}
			b.FillColor = plotutil.Color(i)
			p.Add(b)
			x++
		}
	}
	if len(names) > 0 {
		p.NominalX(names...)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}
