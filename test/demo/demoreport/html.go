package demoreport

import (
	"bytes"
	"fmt"
	"html/template"
	"time"

	"gonum.org/v1/plot/vg"
)

// figure is one embedded plot.
type figure struct {
	Title string
	// Legend names the colours, as the page's own text.
	Legend template.HTML
	URI    template.URL
}

const (
	profileLegend = `<span class="performance">&#9632; performance</span> <span class="draining">&#9632; draining</span> <span class="eco">&#9632; eco</span>` +
		` <span class="parking">&#9632; parking</span> <span class="parked">&#9632; parked (off)</span> <span class="waking">&#9632; waking</span>` +
		` <span class="booting">&#9632; booting</span> <span class="wake-failed">&#9632; wake-failed</span>`
	statesLegend = `one line per power state; awake counts the nodes that are on, whatever their profile`
	classLegend  = `<span class="perfpods">&#9632; performance pods</span> <span class="stdpods">&#9632; standard pods</span>`
)

type runView struct {
	Run
	Figures []figure
}

type pageData struct {
	*Report
	Power    figure
	Duration figure
	Views    []runView
}

// HTML renders report.html: one self-contained page, its plots embedded
// as SVG data: URIs, no script or style fetched from anywhere.
func (r *Report) HTML() ([]byte, error) {
	d := pageData{Report: r}
	pp, err := powerPlot(r.Runs)
	if err != nil {
		return nil, err
	}
	if d.Power.URI, err = svgURI(pp, 9*vg.Inch, 4*vg.Inch); err != nil {
		return nil, fmt.Errorf("render the power plot: %w", err)
	}
	d.Power.Title = "Cluster power over time"
	dp, err := durationPlot(r.Runs)
	if err != nil {
		return nil, err
	}
	if d.Duration.URI, err = svgURI(dp, 9*vg.Inch, 4*vg.Inch); err != nil {
		return nil, fmt.Errorf("render the duration plot: %w", err)
	}
	d.Duration.Title = "Run time over work, per class"
	for _, run := range r.Runs {
		rv := runView{Run: run}
		prof, err := profilePlot(run)
		if err != nil {
			return nil, err
		}
		rows := vg.Length(len(run.Nodes))
		uri, err := svgURI(prof, 9*vg.Inch, 1.2*vg.Inch+rows*0.28*vg.Inch)
		if err != nil {
			return nil, fmt.Errorf("render the profile plot of %s: %w", run.Name, err)
		}
		rv.Figures = append(rv.Figures, figure{"Profile and power state per node", profileLegend, uri})
		states, err := statesPlot(run)
		if err != nil {
			return nil, err
		}
		if uri, err = svgURI(states, 9*vg.Inch, 3*vg.Inch); err != nil {
			return nil, fmt.Errorf("render the power state plot of %s: %w", run.Name, err)
		}
		rv.Figures = append(rv.Figures, figure{"Nodes per power state", statesLegend, uri})
		pods, err := podsPlot(run)
		if err != nil {
			return nil, err
		}
		if uri, err = svgURI(pods, 9*vg.Inch, 4*vg.Inch); err != nil {
			return nil, fmt.Errorf("render the pods plot of %s: %w", run.Name, err)
		}
		rv.Figures = append(rv.Figures, figure{"Where pods ran", classLegend, uri})
		d.Views = append(d.Views, rv)
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("render %s: %w", FileHTML, err)
	}
	return buf.Bytes(), nil
}

var page = template.Must(template.New(FileHTML).Funcs(template.FuncMap{
	"kj":   func(j float64) string { return fmt.Sprintf("%.1f", j/1000) },
	"kw":   func(w float64) string { return fmt.Sprintf("%.2f", w/1000) },
	"f1":   func(x float64) string { return fmt.Sprintf("%.1f", x) },
	"f2":   func(x float64) string { return fmt.Sprintf("%.2f", x) },
	"secs": secs,
	"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"cap": func(pct float64) string {
		if pct >= 100 {
			return "none"
		}
		return fmt.Sprintf("%.0f%%", pct)
	},
	"profile": changeProfile,
	"minutes": func(s float64) float64 { return s / 60 },
	"neg":     func(x float64) float64 { return -x },
	// costs is each class's costs, by class name (range goes in name
	// order: performance, then standard).
	"costs": func(c *Comparison) map[string]ClassCost {
		return map[string]ClassCost{ClassPerformance: c.Performance, ClassStandard: c.Standard}
	},
	"pct": func(part, whole float64) string {
		if whole <= 0 {
			return "-"
		}
		return fmt.Sprintf("%+.1f%%", 100*part/whole)
	},
}).Parse(pageTemplate))

// secs shows a time in seconds since the start, or "-" for none (-1).
func secs(x float64) string {
	if x < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", x)
}

const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Joulie demo report</title>
<style>
body { font-family: sans-serif; margin: 2em auto; max-width: 70em; color: #222; background: #fff; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
img { display: block; max-width: 100%; margin: 1em 0; }
.performance { color: #d64f2a; } .eco { color: #3a9a5b; } .draining { color: #e8a838; }
.perfpods { color: #8e3bb8; } .stdpods { color: #3b78b8; }
.parking { color: #9a9a9a; } .parked { color: #4a4a4a; } .waking { color: #7fb3e0; } .booting { color: #2f6fb0; } .wake-failed { color: #000; }
details { margin: 1em 0; }
</style>
</head>
<body>
<h1>Joulie demo report</h1>
<p>Started {{when .Started}} on the {{.Cluster}} cluster.
Workload: {{.Workload.Jobs}} pods from seed {{.Workload.Seed}}, arriving over {{secs .Workload.ArrivalsSeconds}} s
(workload hash <code>{{.Workload.Hash}}</code>).</p>

<h2>Summary</h2>
<table>
<tr><th>run</th><th>duration (s)</th><th>energy (kJ)</th><th>mean power (kW)</th><th>peak power (kW)</th>
<th>pods done</th><th>performance pods on eco nodes (most at once)</th><th>performance pods started on eco / draining nodes</th><th>eco nodes capped (pool / daemon)</th>
<th>parks / wakes</th><th>node-minutes parked</th></tr>
{{range .Runs}}<tr><td>{{.Name}}</td><td>{{secs .Summary.DurationSeconds}}</td><td>{{kj .Summary.EnergyJ}}</td>
<td>{{kw .Summary.MeanPowerW}}</td><td>{{kw .Summary.PeakPowerW}}</td><td>{{.Summary.Done}} of {{.Summary.Pods}}</td>
<td>{{.Summary.PerfOnEcoMax}}</td><td>{{.Summary.PerfStartedOnEco}} / {{.Summary.PerfStartedDraining}}</td><td>{{index .Summary.EcoCappedNodes "pool"}} / {{index .Summary.EcoCappedNodes "daemon"}}</td>
<td>{{.Summary.Parks}} / {{.Summary.Wakes}} ({{.Summary.WakesByBMC}} through a BMC)</td><td>{{f1 (minutes .Summary.ParkedNodeSeconds)}}</td></tr>
{{end}}</table>
<p>A draining node is labelled eco, so the scheduler places no new performance pod there, and keeps its performance caps until the performance pods placed before have finished: a pod bound just before the drain began may start there, uncapped.</p>
{{with .Comparison}}
<h2>What Joulie saved, and what it cost</h2>
{{if .Why}}<p>No comparison: {{.Why}}.</p>{{else}}
<p>The same {{.Pods}} pods with Joulie and without it (the default scheduler, no caps, every node on), each run's energy counted until its last pod finished
({{secs .JoulieSeconds}} s with Joulie, {{secs .BaselineSeconds}} s without).
Energy saved with Joulie against the run without it: <strong>{{f1 .SavedPct}}%</strong>.
The saving is taken apart by accounting: parking is what the parked nodes did not draw against their idle draw, a boot's draw counted against it;
caps what the caps kept from being drawn at the same loads; placement and the rest is what remains, where the pods ran less what capped work cost in running longer.</p>
<table>
<tr><th></th><th>energy (kJ)</th><th>against the run without Joulie</th></tr>
<tr><td>without Joulie</td><td>{{kj .BaselineJ}}</td><td></td></tr>
<tr><td>with Joulie</td><td>{{kj .JoulieJ}}</td><td>{{pct (neg .SavedJ) .BaselineJ}}</td></tr>
<tr><td>saved</td><td>{{kj .SavedJ}}</td><td>{{pct .SavedJ .BaselineJ}}</td></tr>
<tr><td>&nbsp;&nbsp;by parking</td><td>{{kj .ParkingJ}}</td><td>{{pct .ParkingJ .BaselineJ}}</td></tr>
<tr><td>&nbsp;&nbsp;by caps</td><td>{{kj .CapsJ}}</td><td>{{pct .CapsJ .BaselineJ}}</td></tr>
<tr><td>&nbsp;&nbsp;by placement and the rest</td><td>{{kj .PlacementJ}}</td><td>{{pct .PlacementJ .BaselineJ}}</td></tr>
</table>
<table>
<tr><th>class</th><th>mean wait (s), with / without</th><th>p95 wait (s), with / without</th><th>run time / work, with / without</th><th>waited for a boot</th></tr>
{{range $name, $c := costs .}}<tr><td>{{$name}}</td><td>{{f1 $c.Joulie.MeanWaitSeconds}} / {{f1 $c.Baseline.MeanWaitSeconds}}</td><td>{{f1 $c.Joulie.P95WaitSeconds}} / {{f1 $c.Baseline.P95WaitSeconds}}</td><td>{{f2 $c.Joulie.MeanStretch}} / {{f2 $c.Baseline.MeanStretch}}</td><td>{{$c.Joulie.WaitedForBoot}}</td></tr>
{{end}}
</table>
{{end}}{{end}}

<h2>{{.Power.Title}}</h2>
<img src="{{.Power.URI}}" alt="{{.Power.Title}}">

<h2>Time per class</h2>
<table>
<tr><th>run / class</th><th>pods</th><th>done</th><th>mean wait (s)</th><th>mean run time (s)</th><th>p95 run time (s)</th><th>mean run time / work</th></tr>
{{range $r := .Runs}}{{range .Summary.Classes}}<tr><td>{{$r.Name}} / {{.Class}}</td><td>{{.Pods}}</td><td>{{.Done}}</td>
<td>{{f1 .MeanWaitSeconds}}</td><td>{{f1 .MeanRanSeconds}}</td><td>{{f1 .P95RanSeconds}}</td><td>{{f2 .MeanStretch}}</td></tr>
{{end}}{{end}}</table>
<img src="{{.Duration.URI}}" alt="{{.Duration.Title}}">

{{range .Views}}
<h2>Run {{.Name}}</h2>
{{range .Figures}}<h3>{{.Title}}</h3>
<p>{{.Legend}}</p>
<img src="{{.URI}}" alt="{{.Title}}">
{{end}}
<h3>Nodes</h3>
<table>
<tr><th>node</th><th>family</th><th>path</th><th>energy (kJ)</th><th>pods (performance / standard)</th><th>changes (s: profile, power state when not awake, CPU cap, GPU cap)</th></tr>
{{range .Nodes}}<tr><td>{{.Name}}</td><td>{{.Family}}</td><td>{{.Path}}</td><td>{{kj .EnergyJ}}</td><td>{{.PerfPods}} / {{.StdPods}}</td>
<td>{{range $i, $c := .Timeline}}{{if $i}}; {{end}}{{secs .T}}: <span class="{{profile .}}">{{profile .}}</span>{{if and .PowerState (ne .PowerState "awake")}} <span class="{{.PowerState}}">{{.PowerState}}</span>{{with .WokenBy}} ({{.}}){{end}}{{end}} {{cap .CPUCapPct}}/{{cap .GPUCapPct}}{{end}}</td></tr>
{{end}}</table>
<details><summary>Every pod of run {{.Name}} ({{len .Pods}})</summary>
<table>
<tr><th>pod</th><th>class</th><th>boundness</th><th>GPUs</th><th>node</th><th>node's profile at start</th><th>created (s)</th><th>started (s)</th><th>finished (s)</th><th>work (s)</th><th>phase</th></tr>
{{range .Pods}}<tr><td>{{.Name}}</td><td>{{.Class}}</td><td>{{.Boundness}}</td><td>{{.GPUs}}</td><td>{{.Node}}</td><td class="{{.ProfileAtStart}}">{{.ProfileAtStart}}</td>
<td>{{secs .Created}}</td><td>{{secs .Started}}</td><td>{{secs .Finished}}</td><td>{{secs .WorkSeconds}}</td><td>{{.Phase}}</td></tr>
{{end}}</table>
</details>
{{end}}

{{with .KubectlJoulieStatus}}
<h2>kubectl joulie status at the end of the Joulie run</h2>
<pre>{{.}}</pre>
{{end}}
<h2>Settings shown on screen</h2>
<table>
<tr><th>component</th><th>setting</th><th>value</th></tr>
{{range .Settings}}<tr><td>{{.Component}}</td><td>{{.Name}}</td><td>{{.Value}}</td></tr>
{{end}}</table>
<p>The same data is in report.json next to this page.</p>
<script>
// Marks the page for the demo's own test, which renders it in a headless
// browser: every embedded plot must have decoded.
window.addEventListener("load", function () {
  var broken = 0;
  for (var img of document.images) { if (!img.complete || img.naturalWidth === 0) broken++; }
  document.documentElement.dataset.images = broken === 0 ? "ok" : "broken:" + broken;
});
</script>
</body>
</html>
`
