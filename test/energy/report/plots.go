package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"joulie.io/joulie/test/energy/sim"
)

// Plot files written next to report.md.
const (
	PlotEnergy     = "energy-by-arm.png"
	PlotPower      = "power-over-time.png"
	plotStretchFmt = "stretch-cdf-%s.png"
)

// PlotStretch is the file of the stretch CDF of a class.
func PlotStretch(class string) string { return fmt.Sprintf(plotStretchFmt, class) }

// Points per line: enough to show the shape, few enough to keep the files
// small at 2,500 nodes and hundreds of thousands of jobs.
const (
	cdfPoints   = 400
	powerPoints = 1000
)

// writePlots writes every plot into dir and returns their file names.
func writePlots(dir string, st *Stats) ([]string, error) {
	var files []string
	p, err := energyPlot(st)
	if err != nil {
		return nil, err
	}
	if err := p.Save(8*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, PlotEnergy)); err != nil {
		return nil, fmt.Errorf("write %s: %w", PlotEnergy, err)
	}
	files = append(files, PlotEnergy)
	for _, c := range Classes {
		p, err := stretchPlot(st, c)
		if err != nil {
			return nil, err
		}
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, PlotStretch(c))); err != nil {
			return nil, fmt.Errorf("write %s: %w", PlotStretch(c), err)
		}
		files = append(files, PlotStretch(c))
	}
	p, err = powerPlot(st)
	if err != nil {
		return nil, err
	}
	if err := p.Save(9*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, PlotPower)); err != nil {
		return nil, fmt.Errorf("write %s: %w", PlotPower, err)
	}
	return append(files, PlotPower), nil
}

// meanErrs holds one bar per arm with its confidence interval, as the
// XYer and YErrorer plotter.YErrorBars draws.
type meanErrs struct {
	y, lo, hi []float64 // lo, hi: distances below and above y
}

func (m meanErrs) Len() int                        { return len(m.y) }
func (m meanErrs) XY(i int) (float64, float64)     { return float64(i), m.y[i] }
func (m meanErrs) YError(i int) (float64, float64) { return m.lo[i], m.hi[i] }

func energyPlot(st *Stats) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("IT energy over the common window, mean of %d seeds, 95%% CI", len(st.Seeds))
	p.Y.Label.Text = "kWh"
	var m meanErrs
	var names []string
	for _, a := range st.Arms {
		var e []float64
		for _, seed := range st.Seeds {
			e = append(e, st.Run(a, seed).EnergyKWh)
		}
		_, mean, lo, hi := MeanCI(e)
		if math.IsNaN(lo) { // one seed: no interval to draw
			lo, hi = mean, mean
		}
		m.y = append(m.y, mean)
		m.lo = append(m.lo, mean-lo)
		m.hi = append(m.hi, hi-mean)
		names = append(names, string(a))
	}
	bars, err := plotter.NewBarChart(plotter.Values(m.y), vg.Points(30))
	if err != nil {
		return nil, fmt.Errorf("energy plot: %w", err)
	}
	bars.Color = plotutil.Color(0)
	errs, err := plotter.NewYErrorBars(m)
	if err != nil {
		return nil, fmt.Errorf("energy plot: %w", err)
	}
	p.Add(bars, errs)
	p.NominalX(names...)
	return p, nil
}

func stretchPlot(st *Stats, class string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Completion time against arm %s, %s jobs, all seeds", sim.ArmDefault, class)
	p.X.Label.Text = "stretch (completion time / completion time in " + string(sim.ArmDefault) + ")"
	p.Y.Label.Text = "fraction of jobs at or below"
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, a := range st.Arms {
		var xs []float64
		for _, seed := range st.Seeds {
			xs = append(xs, st.Run(a, seed).stretch[class]...)
		}
		if len(xs) == 0 {
			continue
		}
		slices.Sort(xs)
		lo, hi = min(lo, xs[0]), max(hi, xs[len(xs)-1])
		pts := make(plotter.XYs, 0, cdfPoints+1)
		for k := 1; k <= cdfPoints; k++ {
			q := float64(k) / cdfPoints
			pts = append(pts, plotter.XY{X: Percentile(xs, q), Y: q})
		}
		if err := addLine(p, i, string(a), pts); err != nil {
			return nil, fmt.Errorf("stretch plot of %s: %w", class, err)
		}
	}
	// A job queued for an hour behind a minute of work stretches 60-fold:
	// over a wide range only a log axis shows both the body and the tail.
	if lo > 0 && hi/lo > 10 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	} else if hi > lo {
		// Keep lines at the range's ends off the axes.
		pad := (hi - lo) / 20
		p.X.Min, p.X.Max = lo-pad, hi+pad
		p.X.Tick.Marker = fineTicks{}
	}
	return p, nil
}

func powerPlot(st *Stats) (*plot.Plot, error) {
	seed := st.Seeds[0]
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Cluster IT power, seed %d (mean over %d equal slices of the window)", seed, powerPoints)
	p.X.Label.Text = "hours since the start"
	p.Y.Label.Text = "kW"
	// From zero, so the gap between arms reads at its true size; the
	// legend sits in the empty bottom.
	p.Y.Min = 0
	for i, a := range st.Arms {
		r := st.Run(a, seed)
		pts, err := powerSlices(r.power, r.Window, powerPoints)
		if err != nil {
			return nil, fmt.Errorf("power plot of arm %s: %w", a, err)
		}
		if err := addLine(p, i, string(a), pts); err != nil {
			return nil, fmt.Errorf("power plot: %w", err)
		}
	}
	return p, nil
}

// powerSlices averages the power over n equal slices of [0, window], so a
// line of n points keeps the energy of the full series: a slice's point is
// its energy divided by its length, in kW, at its middle.
func powerSlices(power []sim.Sample, window time.Duration, n int) (plotter.XYs, error) {
	if window <= 0 {
		return nil, fmt.Errorf("empty window")
	}
	pts := make(plotter.XYs, 0, n)
	var prevE float64
	for k := 1; k <= n; k++ {
		end := time.Duration(float64(window) * float64(k) / float64(n))
		start := time.Duration(float64(window) * float64(k-1) / float64(n))
		e, err := EnergyJ(power, end)
		if err != nil {
			return nil, err
		}
		if end > start {
			pts = append(pts, plotter.XY{X: (start + end).Hours() / 2, Y: (e - prevE) / (end - start).Seconds() / 1000})
		}
		prevE = e
	}
	return pts, nil
}

// fineTicks are gonum's default ticks labelled with four significant
// digits: stretches differ in the second decimal, which the default
// labels round away (1.05 shows as 1.1).
type fineTicks struct{}

func (fineTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 4, 64)
		}
	}
	return ts
}

func addLine(p *plot.Plot, i int, name string, pts plotter.XYs) error {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	l.Dashes = plotutil.Dashes(i)
	l.Width = vg.Points(1.2)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}
