package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"joulie.io/joulie/test/energy/sim"
	"joulie.io/joulie/test/energy/workload"
)

// progress shows which runs are under way, how far each has simulated and
// when all should be done. On a terminal it rewrites one line; into a file
// or a pipe (make's log, CI) it prints a plain line now and then, so the
// log stays readable.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	total    int
	finished int
	began    time.Time
	last     time.Time
	running  map[int]*runState
	next     int
	now      func() time.Time
}

type runState struct {
	arm       sim.Arm
	level     float64 // 0 for a trace
	seed      int64
	span      time.Duration
	simulated time.Duration
	jobs      float64 // share of the jobs completed, for display
}

// share is how far the run is: its simulated time over its expected span,
// at most 1. The share of jobs completed is no measure of it: a replayed
// trace's many short pods finish long before its few long ones.
func (r *runState) share() float64 {
	if r.span <= 0 {
		return 0
	}
	return min(max(float64(r.simulated)/float64(r.span), 0), 1)
}

// runSpan is the simulated time a run of jobs is expected to take: the
// last arrival plus the 95th percentile of the jobs' work. The few longer
// jobs run on past it; a run there shows 100% until it ends.
func runSpan(jobs []workload.Job) time.Duration {
	if len(jobs) == 0 {
		return 0
	}
	var last time.Duration
	work := make([]time.Duration, len(jobs))
	for i, j := range jobs {
		last = max(last, j.Arrival)
		work[i] = j.Work
	}
	slices.Sort(work)
	return last + work[(len(work)-1)*95/100]
}

// Plain lines are at most this frequent, terminal redraws at most this.
const (
	plainEvery    = 15 * time.Second
	terminalEvery = 200 * time.Millisecond
)

// newProgress starts the clock of the ETA; now is time.Now but in tests.
func newProgress(w io.Writer, terminal bool, total int, now func() time.Time) *progress {
	return &progress{w: w, terminal: terminal, total: total, running: map[int]*runState{}, now: now, began: now()}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// start registers a run of arm at level (0 for a trace) whose simulated
// span is expected to be span (runSpan).
func (p *progress) start(arm sim.Arm, level float64, seed int64, span time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	p.running[p.next] = &runState{arm: arm, level: level, seed: seed, span: span}
	return p.next
}

// name is the run's arm, load level and seed.
func (r *runState) name() string {
	if r.level > 0 {
		return fmt.Sprintf("%s at level %g, seed %d", r.arm, r.level, r.seed)
	}
	return fmt.Sprintf("%s, seed %d", r.arm, r.seed)
}

// update takes the simulator's report: the simulated time reached, and
// the share of the jobs completed, which is shown but not used for the
// ETA.
func (p *progress) update(id int, simulated time.Duration, jobsDone float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.running[id]
	if r == nil {
		return
	}
	r.simulated, r.jobs = simulated, min(max(jobsDone, 0), 1)
	p.show(false)
}

func (p *progress) finish(id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.running[id]
	if r == nil {
		return
	}
	delete(p.running, id)
	p.finished++
	p.show(true)
	if !p.terminal {
		fmt.Fprintf(p.w, "done: %s (%d of %d runs)\n", r.name(), p.finished, p.total)
	}
}

// done ends the terminal's updating line.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal {
		fmt.Fprintln(p.w)
	}
}

func (p *progress) show(force bool) {
	now := p.now()
	every := plainEvery
	if p.terminal {
		every = terminalEvery
	}
	if !force && now.Sub(p.last) < every {
		return
	}
	if !p.terminal && force {
		return // finish prints its own plain line
	}
	p.last = now
	line := p.line(now)
	if p.terminal {
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
}

// line is, for each run under way, its arm, level, seed, simulated time out of
// its expected span and share of jobs completed, then the runs finished
// and the estimated time left: the wall time so far scaled by the share
// of the work left, counting each run under way by its simulated time
// over its span.
func (p *progress) line(now time.Time) string {
	var parts []string
	frac := float64(p.finished)
	for id := 1; id <= p.next; id++ {
		if r := p.running[id]; r != nil {
			parts = append(parts, fmt.Sprintf("%s: %s of ~%s (%.0f%%, %.0f%% of jobs done)", r.name(), simTime(r.simulated), simTime(r.span), 100*r.share(), 100*r.jobs))
			frac += r.share()
		}
	}
	frac /= float64(p.total)
	eta := "ETA unknown"
	if elapsed := now.Sub(p.began); frac > 0 && elapsed > 0 {
		eta = "ETA " + (time.Duration(float64(elapsed) * (1 - frac) / frac)).Round(time.Second).String()
	}
	return fmt.Sprintf("[%d/%d runs done, %s] %s", p.finished, p.total, eta, strings.Join(parts, "; "))
}

func simTime(d time.Duration) string {
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
