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
	"gonum.org/v1/plot/vg/draw"

	"joulie.io/joulie/test/energy/sim"
)

// Plot files written next to report.md.
const (
	PlotEnergy     = "energy-by-arm.png"
	PlotBreakdown  = "energy-breakdown.png"
	PlotPower      = "power-week.png"
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
	type plotFile struct {
		name string
		make func(*Stats) (*plot.Plot, error)
		w, h vg.Length
	}
	files := []plotFile{
		{PlotEnergy, energyPlot, 9 * vg.Inch, 4.5 * vg.Inch},
		{PlotBreakdown, breakdownPlot, 9 * vg.Inch, 5 * vg.Inch},
		{PlotPower, powerPlot, 9 * vg.Inch, 4.5 * vg.Inch},
	}
	for _, c := range Classes {
		files = append(files, plotFile{PlotStretch(c), func(st *Stats) (*plot.Plot, error) { return stretchPlot(st, c) }, 7 * vg.Inch, 4.5 * vg.Inch})
	}
	var names []string
	for _, f := range files {
		p, err := f.make(st)
		if err != nil {
			return nil, err
		}
		if err := p.Save(f.w, f.h, filepath.Join(dir, f.name)); err != nil {
			return nil, fmt.Errorf("write %s: %w", f.name, err)
		}
		names = append(names, f.name)
	}
	return names, nil
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
	l := st.Headline
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Energy per core-hour in the steady-state window, level %s, mean of %d seeds, 95%% CI", levelName(l.Level), len(l.Seeds))
	p.Y.Label.Text = "kWh per core-hour"
	var m meanErrs
	var names []string
	for _, a := range l.Arms {
		var e []float64
		for _, seed := range l.Seeds {
			e = append(e, l.Run(a, seed).KWhPerCoreHour)
		}
		_, mean, lo, hi := MeanCI(e)
		if math.IsNaN(mean) {
			mean = 0
		}
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
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	// Room above the highest interval, below the title.
	var top float64
	for i := range m.y {
		top = max(top, m.y[i]+m.hi[i])
	}
	p.Y.Min, p.Y.Max = 0, max(top*1.08, 1e-9)
	slantLabels(p)
	return p, nil
}

// slantLabels turns the arms' names on the X axis, which overlap when
// level at nine arms.
func slantLabels(p *plot.Plot) {
	p.X.Tick.Label.Rotation = math.Pi / 8
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
}

// breakdownParts are the stacked parts of the breakdown plot, bottom up.
var breakdownParts = []struct {
	name string
	get  func(sim.Parts) float64
}{
	{"idle, awake", func(q sim.Parts) float64 { return q.IdleAwake }},
	{"dynamic (above idle)", func(q sim.Parts) float64 { return q.Dynamic }},
	{"booting, shutting down", func(q sim.Parts) float64 { return q.Booting }},
	{"off", func(q sim.Parts) float64 { return q.Off }},
}

func breakdownPlot(st *Stats) (*plot.Plot, error) {
	l := st.Headline
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Where the steady-state window's energy goes, level %s, mean of %d seeds", levelName(l.Level), len(l.Seeds))
	p.Y.Label.Text = "kWh"
	var below *plotter.BarChart
	type legendEntry struct {
		name  string
		thumb plot.Thumbnailer
	}
	var legend []legendEntry
	top := 0.0
	for i, part := range breakdownParts {
		vals := make(plotter.Values, len(l.Arms))
		for k, a := range l.Arms {
			var sum float64
			for _, seed := range l.Seeds {
				sum += part.get(l.Run(a, seed).Parts)
			}
			vals[k] = sum / float64(len(l.Seeds))
		}
		bars, err := plotter.NewBarChart(vals, vg.Points(30))
		if err != nil {
			return nil, fmt.Errorf("breakdown plot: %w", err)
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		if below != nil {
			bars.StackOn(below)
		}
		below = bars
		p.Add(bars)
		legend = append(legend, legendEntry{part.name, bars})
	}
	// The legend lists the parts top down, as the bars stack them.
	for _, e := range slices.Backward(legend) {
		p.Legend.Add(e.name, e.thumb)
	}
	for _, a := range l.Arms {
		var sum float64
		for _, seed := range l.Seeds {
			sum += l.Run(a, seed).EnergyKWh
		}
		top = max(top, sum/float64(len(l.Seeds)))
	}
	// Room above the tallest bar for the legend, which sits at the top.
	p.Y.Min, p.Y.Max = 0, max(top*1.45, 1e-9)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
	p.Legend.YOffs = -vg.Points(4)
	names := make([]string, len(l.Arms))
	for i, a := range l.Arms {
		names[i] = string(a)
	}
	p.NominalX(names...)
	// Whole bars at both ends.
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	slantLabels(p)
	return p, nil
}

func stretchPlot(st *Stats, class string) (*plot.Plot, error) {
	l := st.Headline
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Completion time against arm %s, %s jobs, level %s, all seeds", sim.ArmDefault, class, levelName(l.Level))
	p.X.Label.Text = "stretch (completion time / completion time in " + string(sim.ArmDefault) + ")"
	p.Y.Label.Text = "fraction of jobs at or below"
	p.Legend.Top = false
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, a := range l.Arms {
		var xs []float64
		for _, seed := range l.Seeds {
			xs = append(xs, l.Run(a, seed).stretch[class]...)
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
	// The legend, nine arms tall, sits bottom right in room kept free
	// right of the lines (half the lines' range again), where it covers
	// none of them.
	if lo > 0 && hi/lo > 10 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Min, p.X.Max = lo, hi*math.Sqrt(hi/lo)
	} else if hi > lo {
		// Keep lines at the range's ends off the axes.
		pad := (hi - lo) / 20
		p.X.Min, p.X.Max = lo-pad, hi+(hi-lo)/2
		p.X.Tick.Marker = fineTicks{}
	}
	// The lines rise to 1 at the right; the legend sits bottom right,
	// below them.
	p.Y.Min = -0.02
	return p, nil
}

func powerPlot(st *Stats) (*plot.Plot, error) {
	l := st.Headline
	seed := l.Seeds[0]
	arms := powerPlotArms(l)
	// The first week, or the run if it is shorter: the seed's drain
	// window is the latest completion of any arm.
	span := PowerSpan
	if r := l.Run(l.Arms[0], seed); r.Drain.Window < span {
		span = r.Drain.Window
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Cluster IT power, level %s, seed %d, first %s h (each point the mean over 1/%d of it)", levelName(l.Level), seed, strconv.FormatFloat(span.Hours(), 'g', 4, 64), powerPoints)
	p.X.Label.Text = "hours since the start"
	if span > 48*time.Hour {
		p.X.Tick.Marker = dayTicks{}
	}
	p.Y.Label.Text = "kW"
	p.Y.Tick.Marker = roundTicks{}
	// From zero, so the gap between arms reads at its true size; the
	// legend sits in the empty bottom.
	p.Y.Min = 0
	p.Legend.Top = false
	var top float64
	for _, a := range arms {
		r := l.Run(a, seed)
		pts, err := powerSlices(r.power, span, powerPoints)
		if err != nil {
			return nil, fmt.Errorf("power plot of arm %s: %w", a, err)
		}
		for _, pt := range pts {
			top = max(top, pt.Y)
		}
		if err := addLine(p, slices.Index(l.Arms, a), string(a), pts); err != nil {
			return nil, fmt.Errorf("power plot: %w", err)
		}
	}
	p.Y.Max = max(top*1.05, 1e-9)
	return p, nil
}

// powerPlotArms are the arms of PowerArms the level ran.
func powerPlotArms(l *Level) []sim.Arm {
	var arms []sim.Arm
	for _, a := range PowerArms {
		if l.Has(a) {
			arms = append(arms, a)
		}
	}
	return arms
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

// dayTicks mark every day, labelled in hours, and every 6 hours between.
type dayTicks struct{}

func (dayTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for x := math.Ceil(lo/6) * 6; x <= hi; x += 6 {
		t := plot.Tick{Value: x}
		if math.Mod(x, 24) == 0 {
			t.Label = strconv.FormatFloat(x, 'f', 0, 64)
		}
		ts = append(ts, t)
	}
	return ts
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

// roundTicks label four to ten values a round step apart (1, 2, 2.5 or
// 5 times a power of ten), where gonum's default labels as few as two: a
// power axis from 0 to 262 kW read 0.00 and 250.00 alone.
type roundTicks struct{}

func (roundTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	step := 0.0
	for e := math.Floor(math.Log10(hi - lo)); step == 0; e-- {
		for _, m := range []float64{5, 2.5, 2, 1} {
			if s := m * math.Pow(10, e); (hi-lo)/s >= 4 {
				step = s
				break
			}
		}
	}
	var ts []plot.Tick
	first := math.Ceil(lo / step)
	for k := first; k*step <= hi+step*1e-9; k++ {
		v := k * step
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
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
