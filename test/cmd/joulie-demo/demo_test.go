package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"joulie.io/joulie/test/demo/demoreport"
	"joulie.io/joulie/test/harness"
)

// The demo's short mode, as make test runs it: the real joulie-demo
// binary (built without the race detector, as make demo builds it) with
// a handful of nodes for a minute. Its report must show Joulie keeping its
// promises, its HTML must render in a real browser, and once it exits
// nothing it started may remain: no process, no listener, no temporary
// directory.
func TestShortDemo(t *testing.T) {
	// Beside the compare test: each demo spends most of its time waiting
	// on its own clock, so two at once save make check a minute and a
	// half on two cores.
	t.Parallel()
	// Six nodes, two of them daemon nodes: the fleet numbers a family's
	// daemon nodes after its pool nodes (sim-h100-2, sim-l40s-2). The
	// four pool nodes are parkable: the idle cluster parks those beyond
	// each family's reserve before the workload, whose pods wake them.
	// Which nodes go eco depends on the moments the workload leaves a
	// family a node to spare: in a 25 s run two or three nodes, of either
	// path (a daemon node, never parked, is its family's warm reserve
	// most of the run; a pool node may be parked or booting instead).
	// Asking for a given path failed one run in two or three under make
	// check's load, whichever path was asked for. So the run must show a
	// node capped eco, and every node, either path, capped within 5 s of
	// going eco; that each path can cap at all is
	// TestEcoCapsBothPathsAndSlowsPods's (test/demo/fleet), where the
	// fleet is driven directly.
	out, _ := runDemo(t, nil, "--compare=false", "--duration", "70s", "--nodes", "6", "--daemon-nodes", "2", "--max-pods", "150", "--boot-time", "8s")

	// What the report says.
	rep, err := demoreport.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Name != demoreport.RunJoulie {
		t.Fatalf("runs %d, want one run with Joulie", len(rep.Runs))
	}
	run := rep.Runs[0]
	t.Logf("%d pods, %d done in %.0f s; %.0f kJ; eco nodes capped by path %v; %d parks, %d wakes; performance pods started on eco nodes %d, on draining ones %d",
		run.Summary.Pods, run.Summary.Done, run.Summary.DurationSeconds, run.Summary.EnergyJ/1000, run.Summary.EcoCappedNodes,
		run.Summary.Parks, run.Summary.Wakes, run.Summary.PerfStartedOnEco, run.Summary.PerfStartedDraining)
	for _, e := range run.Check(demoreport.Expect{EcoCapWithin: 5, AllDone: true, ParkAndWake: true}) {
		t.Error(e)
	}
	capped := 0
	for _, n := range run.Summary.EcoCappedNodes {
		capped += n
	}
	if capped == 0 {
		t.Error("no node was seen capped eco")
	}
	// sim-epyc-1, the first pool node, has a BMC (an ipmi_sim): every
	// boot of it is the controller's IPMI power up, every other node's a
	// Wake-on-LAN packet. Which nodes the run parks depends on when the
	// workload leaves them empty (one run in six this session, under make check's load,
	// parked only the GPU families' nodes), so the run is not asked to
	// wake both kinds; the BMC wake itself is the integration tests'
	// (ipmi_sim), and the demo's fleet tests' (TestBMCNodeIsWokenThroughIPMI).
	boots := map[string]int{}
	for _, n := range run.Nodes {
		prev := ""
		for _, c := range n.Timeline {
			if c.PowerState == demoreport.StateBooting && prev != demoreport.StateBooting {
				want := demoreport.WokenByLAN
				if n.Name == "sim-epyc-1" {
					want = demoreport.WokenByBMC
				}
				if c.WokenBy != want {
					t.Errorf("%s booted at %.0f s, woken by %q; want %q", n.Name, c.T, c.WokenBy, want)
				}
				boots[c.WokenBy]++
			}
			prev = c.PowerState
		}
	}
	t.Logf("boots by what woke them: %v", boots)
	// Only pool nodes are parkable: a daemon node's agent runs on this
	// machine's host path.
	for _, n := range run.Nodes {
		for _, c := range n.Timeline {
			if n.Path == "daemon" && c.PowerState != demoreport.StateAwake {
				t.Errorf("daemon node %s was %s at %.0f s", n.Name, c.PowerState, c.T)
			}
		}
	}
	if run.Summary.Pods < 20 {
		t.Errorf("only %d pods: the short mode should still run a real workload", run.Summary.Pods)
	}
	// The operator's view at the end of the run: kubectl joulie status
	// against the demo's cluster, every node listed, no performance pod
	// under an eco cap.
	t.Logf("kubectl joulie status at the end of the run:\n%s", rep.KubectlJoulieStatus)
	for _, want := range []string{"NODE", "sim-epyc-1", "sim-h100-2", "Power now: ", "Performance pods on eco nodes: 0\n"} {
		if !strings.Contains(rep.KubectlJoulieStatus, want) {
			t.Errorf("the report's kubectl joulie status lacks %q:\n%s", want, rep.KubectlJoulieStatus)
		}
	}

	// And the page, as a reader's browser shows it.
	problems, err := demoreport.BrowserCheck(t.Context(), filepath.Join(out, demoreport.FileHTML), filepath.Join(out, "demoreport.png"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("demoreport.html: %s", p)
	}
}

// demoBinaries builds joulie-demo (as make demo does, without the race
// detector) and the product programs it runs into a directory of t; the
// builds come from Go's cache after the first.
func demoBinaries(t *testing.T) string {
	t.Helper()
	bins := t.TempDir()
	for _, pkg := range []string{"agentd/cmd/joulie-agentd", "controller/cmd/joulie-controller", "extender/cmd/joulie-extender", "controller/cmd/kubectl-joulie"} {
		if err := harness.Build("joulie.io/joulie/"+pkg, filepath.Join(bins, filepath.Base(pkg))); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", filepath.Join(bins, "joulie-demo"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build joulie-demo: %v\n%s", err, out)
	}
	return bins
}

// runDemo runs the real joulie-demo binary with args and returns its
// report directory, after checking that it exited 0, said where the
// report is, and left nothing behind: no process of its tree, no port
// they listened on, nothing in its TMPDIR. interrupt, if given, is called
// with each line of its output and may send it a signal.
func runDemo(t *testing.T, interrupt func(line string, p *os.Process), args ...string) (dir, stdout string) {
	t.Helper()
	helm, err := harness.PinnedHelm("../../..")
	if err != nil {
		t.Fatal(err)
	}
	bins := demoBinaries(t)

	tmp := t.TempDir() // the demo's TMPDIR: it must be empty afterwards
	out := filepath.Join(t.TempDir(), "report")
	cmd := exec.Command(filepath.Join(bins, "joulie-demo"), append(args,
		"--out", out, "--bin-dir", bins, "--helm", helm, "--chart", "../../../packaging/helm/joulie")...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// While it runs, note every process of its tree and every port they
	// listen on, to look for them once it has exited.
	seen := newProcessWatch(cmd.Process.Pid)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			seen.scan()
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	})
	var printed strings.Builder
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if interrupt != nil {
			interrupt(sc.Text(), cmd.Process)
		}
	}
	err = cmd.Wait()
	close(stop)
	wg.Wait()
	t.Logf("joulie-demo ran %s", time.Since(started).Round(time.Second))
	if err != nil {
		t.Fatalf("joulie-demo: %v\nstdout:\n%s\nstderr:\n%s", err, printed.String(), stderr.String())
	}
	if !strings.Contains(printed.String(), "report: "+out) {
		t.Errorf("joulie-demo did not say where the report is:\n%s", printed.String())
	}

	// Nothing left behind.
	if len(seen.pids) < 4 {
		t.Errorf("saw only %d processes of the demo; the watch is not seeing the agents and programs", len(seen.pids))
	}
	for pid, name := range seen.pids {
		if alive(pid, name) {
			t.Errorf("process %d (%s) outlived the demo", pid, name)
		}
	}
	if len(seen.sockets) < 3 {
		t.Errorf("saw only %d listening sockets of the demo (%v): the watch is not seeing them", len(seen.sockets), seen.sockets)
	}
	// By socket, not by port: a demo running beside this one may listen
	// on a port this one has freed.
	now := socketInodes()
	for inode, l := range seen.sockets {
		if _, ok := now[inode]; ok {
			t.Errorf("port %d (opened by %s) still listens after the demo", l.port, l.owner)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("the demo left %v in its temporary directory", names)
	}
	return out, printed.String()
}

// The default run is the comparison: the same workload replayed without
// Joulie, two runs in one report, the second with no cap applied
// anywhere, both over every pod of the one job list, and at the end what
// Joulie saved, taken apart, and what it cost, on screen and in the
// report.
func TestDefaultRunComparesWithoutJoulie(t *testing.T) {
	t.Parallel()
	out, printed := runDemo(t, nil, "--duration", "50s", "--nodes", "4", "--daemon-nodes", "2", "--max-pods", "60", "--boot-time", "5s")
	rep, err := demoreport.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 || rep.Runs[0].Name != demoreport.RunJoulie || rep.Runs[1].Name != demoreport.RunBaseline {
		var names []string
		for _, r := range rep.Runs {
			names = append(names, r.Name)
		}
		t.Fatalf("runs %v, want [%s %s]", names, demoreport.RunJoulie, demoreport.RunBaseline)
	}
	for _, run := range rep.Runs {
		if run.Summary.Pods != rep.Workload.Jobs {
			t.Errorf("run %s created %d pods of the workload's %d", run.Name, run.Summary.Pods, rep.Workload.Jobs)
		}
		if len(run.Samples) < 5 {
			t.Errorf("run %s has %d samples", run.Name, len(run.Samples))
		}
	}
	// The comparison: of the two runs' own figures, its parts adding up,
	// and printed as the report holds it.
	c := rep.Comparison
	if c == nil {
		t.Fatal("the report holds no comparison")
	}
	if c.Why != "" {
		t.Fatalf("no comparison: %s", c.Why)
	}
	j, b := rep.Runs[0].Summary, rep.Runs[1].Summary
	t.Logf("the comparison as printed:\n%s", c.Text())
	if c.JoulieJ != j.EnergyJ || c.BaselineJ != b.EnergyJ || c.ParkingJ != j.ParkingSavedJ-b.ParkingSavedJ || c.CapsJ != j.CapsSavedJ-b.CapsSavedJ {
		t.Errorf("comparison %+v is not of the runs' figures (with Joulie %+v, without %+v)", c, j, b)
	}
	if sum := c.ParkingJ + c.CapsJ + c.PlacementJ; sum < c.SavedJ-1 || sum > c.SavedJ+1 {
		t.Errorf("parts %.0f + %.0f + %.0f J do not add up to the saving %.0f J", c.ParkingJ, c.CapsJ, c.PlacementJ, c.SavedJ)
	}
	// Without Joulie nothing is parked or capped; with it, a run that
	// parked nodes saved by it, and one that capped eco nodes by that.
	if b.ParkingSavedJ != 0 || b.CapsSavedJ != 0 {
		t.Errorf("without Joulie the fleet counted %.0f J saved by parking and %.0f J by caps", b.ParkingSavedJ, b.CapsSavedJ)
	}
	if j.CapsSavedJ <= 0 {
		t.Errorf("with Joulie the caps saved %.0f J", j.CapsSavedJ)
	}
	if j.ParkedNodeSeconds > 0 && c.ParkingJ <= 0 {
		t.Errorf("nodes were parked for %.0f s, yet parking saved %.0f J", j.ParkedNodeSeconds, c.ParkingJ)
	}
	for _, line := range c.Lines() {
		if !strings.Contains(printed, line+"\n") {
			t.Errorf("joulie-demo did not print %q", line)
		}
	}
	// The operator's view is taken on a settled cluster, or the demo says
	// a change is in flight.
	if strings.Contains(rep.KubectlJoulieStatus, "the agent has not applied generation") && !strings.Contains(printed, "change in flight") {
		t.Errorf("the final kubectl joulie status shows an agent behind and the demo did not say a change was in flight:\n%s", rep.KubectlJoulieStatus)
	}
	if n := len(rep.Runs[0].Summary.EcoCappedNodes); n == 0 {
		t.Errorf("the run with Joulie capped no eco node")
	}
	// Without Joulie no agent may hold a cap, whatever profile a node
	// still carries from the first run, and every node is on: the ones
	// the first run parked were switched on before it.
	for _, n := range rep.Runs[1].Nodes {
		for _, c := range n.Timeline {
			if c.CPUCapPct < 99.5 || c.GPUCapPct < 99.5 {
				t.Errorf("without Joulie, node %s was capped at %.0f s: CPU %.0f%%, GPU %.0f%%", n.Name, c.T, c.CPUCapPct, c.GPUCapPct)
				break
			}
			if c.PowerState != demoreport.StateAwake {
				t.Errorf("without Joulie, node %s was %s at %.0f s", n.Name, c.PowerState, c.T)
				break
			}
		}
	}
}

// Ctrl-C ends the run early; the demo still writes the report of what it
// saw and leaves nothing behind.
func TestInterruptedDemoStillReports(t *testing.T) {
	if testing.Short() {
		// It runs alone, after the two parallel demos, so its run adds
		// to make check's whole.
		t.Skip("a demo of its own, interrupted: make check-full runs it")
	}
	var progress int
	var sent bool
	out, _ := runDemo(t, func(line string, p *os.Process) {
		// The run's second progress line, 10 s in: pods are under way.
		if strings.HasPrefix(line, "[joulie ") {
			progress++
		}
		if !sent && progress == 2 {
			sent = true
			_ = p.Signal(syscall.SIGINT)
		}
	}, "--compare=false", "--duration", "5m", "--nodes", "4", "--daemon-nodes", "2", "--max-pods", "100", "--parking=false")
	if !sent {
		t.Fatal("the run printed no progress line to interrupt at")
	}
	rep, err := demoreport.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || len(rep.Runs[0].Samples) < 5 {
		t.Fatalf("the interrupted run's report holds %d runs", len(rep.Runs))
	}
	run := rep.Runs[0]
	if d := run.Summary.DurationSeconds; d < 5 || d > 60 {
		t.Errorf("the run lasted %.0f s, want it ended soon after the interrupt", d)
	}
	if run.Summary.Pods != rep.Workload.Jobs || run.Summary.Done >= run.Summary.Pods {
		t.Errorf("%d of %d pods done (of %d jobs): the interrupt should have left some undone", run.Summary.Done, run.Summary.Pods, rep.Workload.Jobs)
	}
}

// processWatch remembers the processes of a tree and the TCP sockets
// they listen on.
type processWatch struct {
	root    int
	pids    map[int]string      // pid to command name
	sockets map[string]listener // by socket inode
}

// listener is a listening socket's port and the command that held it.
type listener struct {
	port  int
	owner string
}

func newProcessWatch(root int) *processWatch {
	return &processWatch{root: root, pids: map[int]string{}, sockets: map[string]listener{}}
}

func (w *processWatch) scan() {
	parents := map[int]int{}
	names := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces.
		s := string(stat)
		end := strings.LastIndexByte(s, ')')
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		parents[pid] = ppid
		names[pid] = s[strings.IndexByte(s, '(')+1 : end]
	}
	inTree := func(pid int) bool {
		for p := pid; p > 1; p = parents[p] {
			if p == w.root {
				return true
			}
		}
		return false
	}
	sockets := socketInodes()
	for pid, name := range names {
		if !inTree(pid) {
			continue
		}
		w.pids[pid] = name
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			inode := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
			if port, ok := sockets[inode]; ok {
				w.sockets[inode] = listener{port: port, owner: name}
			}
		}
	}
}

// socketInodes maps the inode of every listening TCP socket to its port.
func socketInodes() map[string]int {
	out := map[string]int{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		forEachListener(f, func(port int, inode string) { out[inode] = port })
	}
	return out
}

func forEachListener(file string, fn func(port int, inode string)) {
	f, err := os.Open(file)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// local_address is ADDR:PORT in hex; state 0A is LISTEN.
		if len(fields) < 10 || fields[3] != "0A" {
			continue
		}
		local := fields[1]
		port, err := strconv.ParseInt(local[strings.LastIndexByte(local, ':')+1:], 16, 32)
		if err != nil {
			continue
		}
		fn(int(port), fields[9])
	}
}

// alive says whether pid is a running (not zombie) process named name:
// another name means the number went to someone else's new process.
func alive(pid int, name string) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	end := strings.LastIndexByte(s, ')')
	fields := strings.Fields(s[end+1:])
	return len(fields) > 0 && fields[0] != "Z" && s[strings.IndexByte(s, '(')+1:end] == name
}
