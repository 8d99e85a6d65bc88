package workload

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"joulie.io/joulie/pkg/catalog"
)

// The columns of the two lists of Alibaba's cluster-trace-gpu-v2023
// (openb_pod_list_*.csv and openb_node_list_*.csv). Other columns are
// ignored; these must all be there, in any order.
var (
	podColumns  = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}
	nodeColumns = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}
)

// maxErrors bounds the errors reported for one file: past it, the file is
// most likely not in the schema at all.
const maxErrors = 20

// TraceOptions tune how a pod list is replayed.
type TraceOptions struct {
	// Seed draws each pod's boundness class, from the seed and the pod's
	// name, so that a pod keeps its class whatever the row order.
	Seed int64
	// GPUMix and CPUMix are the boundness mixes of pods with and without
	// GPUs; nil takes DefaultGPUMix and DefaultCPUMix.
	GPUMix, CPUMix Mix
	// Start and End choose a part of the trace, in the trace's clock
	// (seconds from its start, as a Duration): only pods created in
	// [Start, End) are replayed, and pods running past End are cut at it;
	// a pod created before Start that had not ended by then (running, or
	// still waiting to be scheduled) is replayed too, arriving at Start
	// with the part of its run left after Start, as a cluster at Start
	// holds it. End 0 is no end: the latest time in the pod list ends the
	// trace. Arrivals count from the first replayed pod's creation (Start
	// when a pod is carried over), which arrives at 0.
	Start, End time.Duration
}

// PodStats says what a pod list held and what became of each pod.
type PodStats struct {
	File string
	// Rows is the number of pods in the file; Jobs the number replayed.
	Rows, Jobs int
	// NeverScheduled pods have no scheduled_time; ZeroWork pods ran for
	// 0 s; BeforeStart pods were created before TraceOptions.Start and
	// had ended by then, AfterEnd pods were created at or after End. None
	// is replayed.
	NeverScheduled, ZeroWork, BeforeStart, AfterEnd int
	// RunningAtStart pods were created and scheduled before Start and ran
	// past it; PendingAtStart pods were created before Start and scheduled
	// after it. Both are replayed from Start: a running one with the rest
	// of its run, a pending one with all of it.
	RunningAtStart, PendingAtStart int
	// Truncated jobs were still running at their end: pod_phase Running,
	// no deletion_time, or deleted after End.
	Truncated int
	// SharedGPU jobs asked for part of a GPU and were given whole ones.
	SharedGPU int
	// Origin is the creation time of the first replayed pod, in the
	// trace's clock; arrivals count from it. Start is TraceOptions.Start
	// and End the trace's end: TraceOptions.End, or the latest time in
	// the file.
	Origin, Start, End time.Duration
}

// Warnings says, in sentences for a report, what the replay changed or
// left out.
func (s PodStats) Warnings() []string {
	var w []string
	if s.SharedGPU > 0 {
		w = append(w, fmt.Sprintf("%s: %d of %d replayed pods asked for part of a GPU (gpu_milli below 1000) and were given whole GPUs, so their GPU demand is overstated", s.File, s.SharedGPU, s.Jobs))
	}
	if s.Truncated > 0 {
		w = append(w, fmt.Sprintf("%s: %s still running at the end of the trace, cut there; their work is a lower bound", s.File, plural(s.Truncated, "pod")))
	}
	if s.NeverScheduled > 0 {
		w = append(w, fmt.Sprintf("%s: %s never scheduled (no scheduled_time), not replayed", s.File, plural(s.NeverScheduled, "pod")))
	}
	if s.ZeroWork > 0 {
		w = append(w, fmt.Sprintf("%s: %s that ran for 0 s, not replayed", s.File, plural(s.ZeroWork, "pod")))
	}
	if s.BeforeStart > 0 {
		w = append(w, fmt.Sprintf("%s: %s created and ended before the chosen start (%v), not replayed", s.File, plural(s.BeforeStart, "pod"), s.Start))
	}
	if n := s.RunningAtStart + s.PendingAtStart; n > 0 {
		w = append(w, fmt.Sprintf("%s: %s created before the chosen start (%v) had not ended by then (%d running, %d waiting to be scheduled); they arrive at the start, a running pod with only the part of its run left after it", s.File, plural(n, "pod"), s.Start, s.RunningAtStart, s.PendingAtStart))
	}
	if s.AfterEnd > 0 {
		w = append(w, fmt.Sprintf("%s: %s created at or after the end of the trace (%v), not replayed", s.File, plural(s.AfterEnd, "pod"), s.End))
	}
	return w
}

// plural writes "1 pod", "2 pods".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// ReadPods reads a pod list file; see ParsePods.
func ReadPods(path string, opts TraceOptions) ([]Job, PodStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, PodStats{}, fmt.Errorf("read pod list: %w", err)
	}
	defer f.Close()
	return ParsePods(f, path, opts)
}

// podRow is one parsed row of a pod list.
type podRow struct {
	job                        Job
	created, deleted, sched    int64
	hasDeleted, hasSched, runs bool
	line                       int
}

// ParsePods reads a pod list in the schema of cluster-trace-gpu-v2023
// (name is the file's name for errors and stats). A pod becomes a Job as
// follows:
//   - qos LS is performance class; any other value standard;
//   - its work is its recorded running time, deletion_time −
//     scheduled_time; a pod that is Running, or has no deletion_time, runs
//     until the trace's end (deletion_time, if given, is then taken as the
//     moment the trace last saw it) and is marked Truncated;
//   - its arrival is its creation_time, counted from the earliest creation
//     among the replayed pods: those created in [opts.Start, opts.End),
//     and those created before opts.Start that had not ended by then,
//     which arrive at opts.Start and, when they were running then, keep
//     only the part of their run after it;
//   - num_gpu whole GPUs; a pod asking for part of a GPU (gpu_milli from 1
//     to 999) gets a whole one, and counts in SharedGPU;
//   - gpu_spec, '|'-separated, becomes GPUModels;
//   - its boundness is drawn from the options' mixes.
//
// Pods without scheduled_time, and pods that ran for 0 s, are counted and
// left out. Jobs come in order of arrival, ties in file order. Errors name
// the file, line, column and field; a file with errors yields no jobs.
func ParsePods(r io.Reader, name string, opts TraceOptions) ([]Job, PodStats, error) {
	stats := PodStats{File: name}
	var mixErrs []error
	fail := func(format string, args ...any) { mixErrs = append(mixErrs, fmt.Errorf(format, args...)) }
	if opts.GPUMix != nil {
		checkMix(fail, "TraceOptions.GPUMix", opts.GPUMix, true)
	}
	if opts.CPUMix != nil {
		checkMix(fail, "TraceOptions.CPUMix", opts.CPUMix, false)
	}
	switch {
	case opts.Start < 0:
		fail("TraceOptions.Start %v is negative", opts.Start)
	case opts.End < 0:
		fail("TraceOptions.End %v is negative", opts.End)
	case opts.End > 0 && opts.End <= opts.Start:
		fail("TraceOptions.End %v is not after Start %v", opts.End, opts.Start)
	}
	if len(mixErrs) > 0 {
		return nil, stats, errors.Join(mixErrs...)
	}
	t, err := openTable(r, name, podColumns)
	if err != nil {
		return nil, stats, err
	}
	var rows []podRow
	seen := map[string]int{}
	for rec := range t.rows() {
		var p podRow
		p.line, _ = t.r.FieldPos(0)
		j := &p.job
		j.ID = t.text(rec, "name")
		if j.ID == "" {
			t.fail(rec, "name", "empty: every pod needs a name")
		} else if first, dup := seen[j.ID]; dup {
			t.fail(rec, "name", "%q is also the name of the pod on line %d", j.ID, first)
		} else {
			seen[j.ID] = p.line
		}
		j.CPUMilli, _ = t.count(rec, "cpu_milli", false, maxQuantity)
		j.MemoryMiB, _ = t.count(rec, "memory_mib", false, maxQuantity)
		gpus, gpusOK := t.count(rec, "num_gpu", false, maxGPUs)
		milli, milliOK := t.count(rec, "gpu_milli", false, maxQuantity)
		switch {
		case !gpusOK || !milliOK:
		case milli > 1000:
			t.fail(rec, "gpu_milli", "%d is more than one GPU (1000); num_gpu counts whole GPUs", milli)
		case gpus == 0 && milli > 0:
			t.fail(rec, "gpu_milli", "%d with num_gpu 0: a pod sharing a GPU is written num_gpu 1, gpu_milli below 1000", milli)
		case gpus > 0 && milli > 0 && milli < 1000:
			j.SharedGPUMilli = int(milli)
		}
		j.GPUs = int(gpus)
		for m := range strings.SplitSeq(t.text(rec, "gpu_spec"), "|") {
			if m = strings.TrimSpace(m); m != "" {
				j.GPUModels = append(j.GPUModels, m)
			}
		}
		j.Class = Standard
		if strings.EqualFold(t.text(rec, "qos"), "LS") {
			j.Class = Performance
		}
		p.runs = strings.EqualFold(t.text(rec, "pod_phase"), "Running")
		p.created, _ = t.count(rec, "creation_time", false, maxSeconds)
		p.sched, p.hasSched = t.count(rec, "scheduled_time", true, maxSeconds)
		p.deleted, p.hasDeleted = t.count(rec, "deletion_time", true, maxSeconds)
		if p.hasSched && p.sched < p.created {
			t.fail(rec, "scheduled_time", "%d is before creation_time %d", p.sched, p.created)
		}
		if p.hasSched && p.hasDeleted && p.deleted < p.sched {
			t.fail(rec, "deletion_time", "%d is before scheduled_time %d", p.deleted, p.sched)
		}
		rows = append(rows, p)
	}
	stats.Rows = len(rows)
	if err := t.err(); err != nil {
		return nil, stats, err
	}

	end := int64(opts.End / time.Second)
	if opts.End <= 0 {
		for _, p := range rows {
			end = max(end, p.created, p.sched, p.deleted)
		}
	}
	start := int64(opts.Start / time.Second)
	stats.Start = time.Duration(start) * time.Second
	stats.End = time.Duration(end) * time.Second
	gpuMix, cpuMix := opts.GPUMix, opts.CPUMix
	if gpuMix == nil {
		gpuMix = DefaultGPUMix()
	}
	if cpuMix == nil {
		cpuMix = DefaultCPUMix()
	}
	var jobs []Job
	var created []int64
	for _, p := range rows {
		switch {
		case !p.hasSched:
			stats.NeverScheduled++
			continue
		case opts.End > 0 && p.created >= end:
			stats.AfterEnd++
			continue
		}
		stop := p.deleted
		if !p.hasDeleted || p.runs || stop > end {
			p.job.Truncated = true
			if !p.hasDeleted || stop > end {
				stop = end
			}
		}
		begin, arrive := p.sched, p.created
		if p.created < start {
			// Carried over: what a cluster at start holds of the pod.
			switch {
			case stop <= start:
				stats.BeforeStart++
				continue
			case p.sched < start:
				stats.RunningAtStart++
				begin = start
			default:
				stats.PendingAtStart++
			}
			arrive = start
		}
		if stop <= begin {
			stats.ZeroWork++
			continue
		}
		j := p.job
		j.Work = time.Duration(stop-begin) * time.Second
		j.Source = "trace"
		mix := cpuMix
		if j.GPUs > 0 {
			mix = gpuMix
		}
		j.Boundness = pickClass(podDraw(opts.Seed, j.ID), mix, j.GPUs > 0)
		if j.Truncated {
			stats.Truncated++
		}
		if j.SharedGPUMilli > 0 {
			stats.SharedGPU++
		}
		jobs = append(jobs, j)
		created = append(created, arrive)
	}
	if len(jobs) > 0 {
		origin := slices.Min(created)
		stats.Origin = time.Duration(origin) * time.Second
		for i := range jobs {
			jobs[i].Arrival = time.Duration(created[i]-origin) * time.Second
		}
	}
	slices.SortStableFunc(jobs, func(a, b Job) int { return cmp.Compare(a.Arrival, b.Arrival) })
	stats.Jobs = len(jobs)
	return jobs, stats, nil
}

// podDraw is a pod's uniform draw in [0,1) for its boundness: from the
// seed and the pod's name alone.
func podDraw(seed int64, name string) float64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64())).Float64()
}

// ReadNodes reads a node list file; see ParseNodes.
func ReadNodes(path string, cat *catalog.Catalog) ([]Node, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read node list: %w", err)
	}
	defer f.Close()
	return ParseNodes(f, path, cat)
}

// ParseNodes reads a node list in the schema of cluster-trace-gpu-v2023:
// sn is the node's name, cpu_milli and memory_mib its capacity, gpu its
// GPU count and model its GPU model. Each node keeps its own CPU count,
// memory, GPU count and GPU model; the model is resolved in cat
// (catalog.Default() when nil) for GPU and GPUMaxWatts.
//
// Where the catalog lacks a figure the node takes the standard node's,
// with one warning per model naming it and how many nodes carry it:
//   - a GPU model the catalog does not know (the trace's codes such as
//     G2, V100M32, T4) takes the catalog's generic entry as GPU and the
//     standard H100 SXM's board power as GPUMaxWatts; a model of a known
//     family that the catalog does not list takes the family's nearest
//     member, figures included;
//   - the schema names no CPU model, so CPUTDPWatts is the standard
//     node's: 2 × EPYC 9654 on a node without GPUs, 2 × Xeon 8480+ on a
//     GPU node.
//
// Errors name the file, line, column and field.
func ParseNodes(r io.Reader, name string, cat *catalog.Catalog) ([]Node, []string, error) {
	if cat == nil {
		cat = catalog.Default()
	}
	t, err := openTable(r, name, nodeColumns)
	if err != nil {
		return nil, nil, err
	}
	std := standardFigures(cat)
	type unresolved struct {
		ex    catalog.Exactness
		entry catalog.GPU
		nodes int
	}
	var nodes []Node
	var order []string
	models := map[string]*unresolved{}
	seen := map[string]int{}
	var cpuNodes, gpuNodes int // nodes that took a standard CPU figure
	for rec := range t.rows() {
		line, _ := t.r.FieldPos(0)
		n := Node{Name: t.text(rec, "sn"), GPUModel: t.text(rec, "model")}
		if n.Name == "" {
			t.fail(rec, "sn", "empty: every node needs a name")
		} else if first, dup := seen[n.Name]; dup {
			t.fail(rec, "sn", "%q is also the name of the node on line %d", n.Name, first)
		} else {
			seen[n.Name] = line
		}
		n.CPUMilli, _ = t.count(rec, "cpu_milli", false, maxQuantity)
		n.MemoryMiB, _ = t.count(rec, "memory_mib", false, maxQuantity)
		gpus, _ := t.count(rec, "gpu", false, maxGPUs)
		n.GPUs = int(gpus)
		if n.CPUMilli == 0 {
			t.fail(rec, "cpu_milli", "0: a node without CPUs can run nothing")
		}
		if n.GPUs > 0 {
			n.CPUTDPWatts = std.hostCPUWatts
			gpuNodes++
			var ex catalog.Exactness
			n.GPU, ex = cat.ResolveGPU(n.GPUModel)
			n.GPUMaxWatts = n.GPU.TDPWatts
			if ex == catalog.ExactnessGeneric || n.GPUMaxWatts <= 0 {
				n.GPUMaxWatts = std.gpuWatts
			}
			if ex != catalog.ExactnessExact {
				u := models[n.GPUModel]
				if u == nil {
					u = &unresolved{ex: ex, entry: n.GPU}
					models[n.GPUModel] = u
					order = append(order, n.GPUModel)
				}
				u.nodes++
			}
		} else {
			n.CPUTDPWatts = std.cpuWatts
			cpuNodes++
		}
		nodes = append(nodes, n)
	}
	if err := t.err(); err != nil {
		return nil, nil, err
	}
	var warnings []string
	for _, m := range order {
		u := models[m]
		what := fmt.Sprintf("GPU model %q", m)
		if m == "" {
			what = "no GPU model"
		}
		if u.ex == catalog.ExactnessProxy {
			warnings = append(warnings, fmt.Sprintf("%s: %s on %s is not in the hardware catalog; they take the nearest model of its family, %s (%s, %g W)",
				name, what, plural(u.nodes, "node"), u.entry.ID, u.entry.Name, u.entry.TDPWatts))
			continue
		}
		warnings = append(warnings, fmt.Sprintf("%s: %s on %s is not in the hardware catalog; they keep the model's name and their GPU count, take the catalog's %s entry and the standard %s's power, %g W a GPU",
			name, what, plural(u.nodes, "node"), u.entry.ID, std.gpuName, std.gpuWatts))
	}
	if cpuNodes > 0 {
		warnings = append(warnings, fmt.Sprintf("%s: no CPU model on %s without GPUs (the node list has no CPU model column); they keep their CPU count and take the standard CPU node's package power, %d × %s, %g W",
			name, plural(cpuNodes, "node"), standardSockets, std.cpuName, std.cpuWatts))
	}
	if gpuNodes > 0 {
		warnings = append(warnings, fmt.Sprintf("%s: no CPU model on %s with GPUs (the node list has no CPU model column); they keep their CPU count and take the standard GPU node's package power, %d × %s, %g W",
			name, plural(gpuNodes, "node"), standardSockets, std.hostCPUName, std.hostCPUWatts))
	}
	return nodes, warnings, nil
}

// figures are the standard nodes' power figures, from a catalog.
type figures struct {
	cpuWatts, hostCPUWatts, gpuWatts float64
	cpuName, hostCPUName, gpuName    string
}

func standardFigures(cat *catalog.Catalog) figures {
	epyc, _ := cat.ResolveCPU(standardCPUModel)
	xeon, _ := cat.ResolveCPU(standardHostCPUModel)
	h100, _ := cat.ResolveGPU(standardGPUModel)
	return figures{
		cpuWatts: standardSockets * epyc.TDPWatts, hostCPUWatts: standardSockets * xeon.TDPWatts, gpuWatts: h100.TDPWatts,
		cpuName: epyc.Name, hostCPUName: xeon.Name, gpuName: h100.Name,
	}
}

// table reads a CSV file whose first line names its columns, and collects
// errors located by line and column.
type table struct {
	name string
	r    *csv.Reader
	col  map[string]int
	errs []error
	more int // errors past maxErrors
}

func openTable(r io.Reader, name string, columns []string) (*table, error) {
	t := &table{name: name, r: csv.NewReader(r), col: map[string]int{}}
	header, err := t.r.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: the file is empty; its first line must name the columns %s", name, strings.Join(columns, ","))
	}
	if err != nil {
		return nil, t.csvErr(err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\uFEFF") // spreadsheet exports start with a byte-order mark
	}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if _, dup := t.col[h]; dup {
			line, col := t.r.FieldPos(i)
			return nil, fmt.Errorf("%s:%d:%d: column %q appears twice", name, line, col, h)
		}
		t.col[h] = i
	}
	var missing []string
	for _, c := range columns {
		if _, ok := t.col[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s:1:1: the header lacks the columns %s; it must name %s (in any order)",
			name, strings.Join(missing, ","), strings.Join(columns, ","))
	}
	return t, nil
}

// rows yields each record after the header; a malformed line is recorded
// as an error and skipped. It stops at maxErrors errors.
func (t *table) rows() func(func([]string) bool) {
	return func(yield func([]string) bool) {
		for len(t.errs) < maxErrors {
			rec, err := t.r.Read()
			if err == io.EOF {
				return
			}
			if err != nil {
				t.errs = append(t.errs, t.csvErr(err))
				var pe *csv.ParseError
				if errors.As(err, &pe) && pe.Err == csv.ErrFieldCount {
					continue // the next line may be fine
				}
				return
			}
			if !yield(rec) {
				return
			}
		}
		t.more = 1 // at least one more, unread
	}
}

func (t *table) csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if pe.Err == csv.ErrFieldCount {
			return fmt.Errorf("%s:%d:%d: %w (the header has %d)", t.name, pe.Line, pe.Column, pe.Err, len(t.col))
		}
		return fmt.Errorf("%s:%d:%d: %w", t.name, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %w", t.name, err)
}

func (t *table) fail(rec []string, column, format string, args ...any) {
	if len(t.errs) >= maxErrors {
		t.more++
		return
	}
	line, col := t.r.FieldPos(t.col[column])
	t.errs = append(t.errs, fmt.Errorf("%s:%d:%d: %s: %s", t.name, line, col, column, fmt.Sprintf(format, args...)))
}

func (t *table) text(rec []string, column string) string {
	return strings.TrimSpace(rec[t.col[column]])
}

// Bounds on the numbers of a trace: far above any real value, and low
// enough that no sum or conversion to a Duration overflows.
const (
	maxSeconds  = 1 << 33 // 272 years
	maxQuantity = 1 << 40
	maxGPUs     = 1024
)

// count parses a whole number from 0 to limit; an empty field is an error
// unless optional, and then reports false.
func (t *table) count(rec []string, column string, optional bool, limit int64) (int64, bool) {
	s := t.text(rec, column)
	if s == "" {
		if !optional {
			t.fail(rec, column, "empty; want a whole number")
		}
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		t.fail(rec, column, "%q is not a whole number", s)
		return 0, false
	case n < 0:
		t.fail(rec, column, "%d is negative", n)
		return 0, false
	case n > limit:
		t.fail(rec, column, "%d is out of range (at most %d)", n, int64(limit))
		return 0, false
	}
	return n, true
}

func (t *table) err() error {
	if t.more > 0 {
		t.errs = append(t.errs, fmt.Errorf("%s: stopped after %d errors", t.name, maxErrors))
	}
	return errors.Join(t.errs...)
}
